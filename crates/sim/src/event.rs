//! The event queue: a binary heap with a total order (time, then insertion sequence).
//!
//! Equal times pop in FIFO order, so a run never depends on heap internals. Cancellation is by
//! lazy deletion: events carry a generation that the engine compares with the current one.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::Nanos;

/// One pending event. `key` packs (time, sequence) into one integer so that a single compare
/// orders entries: time in the high 64 bits, insertion sequence in the low 64.
struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    fn at(&self) -> Nanos {
        Nanos((self.key >> 64) as u64)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed so that `BinaryHeap` (a max-heap) pops the earliest entry first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// Pending events ordered by `(time, insertion sequence)`. O(log n) push and pop.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self { heap: BinaryHeap::new(), seq: 0 }
    }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, at: Nanos, event: E) {
        assert_ne!(self.seq, u64::MAX, "event sequence exhausted");
        self.seq += 1;
        self.heap.push(Entry { key: (u128::from(at.0) << 64) | u128::from(self.seq), event });
    }
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.heap.pop().map(|e| (e.at(), e.event))
    }
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| e.at())
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The queue against its oracle: a stable sort of the pushed `(time, index)` pairs.
        #[test]
        fn pops_in_time_then_fifo_order(times in proptest::collection::vec(0u64..20, 0..200)) {
            let mut q = EventQueue::default();
            for (i, t) in times.iter().enumerate() {
                q.push(Nanos(*t), i);
            }
            let mut oracle: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
            oracle.sort_by_key(|(t, _)| *t);
            let popped: Vec<(u64, usize)> = std::iter::from_fn(|| q.pop()).map(|(t, i)| (t.0, i)).collect();
            prop_assert_eq!(popped, oracle);
        }

        /// Pushes and pops interleaved (as the engine does) against a sorted-list oracle: each
        /// pop returns the earliest pending `(time, push index)`.
        #[test]
        fn interleaved_pushes_and_pops(ops in proptest::collection::vec(proptest::option::of(0u64..50), 0..400)) {
            let mut q = EventQueue::default();
            let mut oracle: Vec<(u64, usize)> = Vec::new();
            for (i, op) in ops.iter().enumerate() {
                match op {
                    Some(t) => {
                        q.push(Nanos(*t), i);
                        oracle.push((*t, i));
                    }
                    None => {
                        oracle.sort_unstable();
                        let want = (!oracle.is_empty()).then(|| oracle.remove(0));
                        prop_assert_eq!(q.pop().map(|(t, i)| (t.0, i)), want);
                    }
                }
                prop_assert_eq!(q.len(), oracle.len());
                prop_assert_eq!(q.peek_time().map(|t| t.0), oracle.iter().map(|p| p.0).min());
            }
        }
    }
}
