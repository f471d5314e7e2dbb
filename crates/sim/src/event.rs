//! The event queue: a binary heap with a total order (time, then insertion sequence), and
//! beside it a tournament tree of *slots*, events that exist at most once per slot (a CPU's
//! step end, its hrtick).
//!
//! Equal times pop in FIFO order, so a run never depends on heap internals. A slot's event is
//! replaced or cancelled in place, so a CPU whose running step is cut short leaves nothing
//! behind (a hog's one-second step end, cancelled at each preemption, once kept tens of
//! thousands of dead entries in the heap). Other events are cancelled by lazy deletion: they
//! carry a generation that the engine compares with the current one.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::Nanos;

/// One pending event. `key` packs (time, sequence) into one integer so that a single compare
/// orders entries: time in the high 64 bits, insertion sequence in the low 64.
struct Entry<E> {
    key: u128,
    event: E,
}

fn time_of(key: u128) -> Nanos {
    Nanos((key >> 64) as u64)
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

/// Pending events ordered by `(time, insertion sequence)`. O(log n) push and pop; a slot's
/// event is set or cancelled in O(log slots).
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    slots: Slots<E>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self { heap: BinaryHeap::new(), slots: Slots::default(), seq: 0 }
    }
}

impl<E> EventQueue<E> {
    fn next_key(&mut self, at: Nanos) -> u128 {
        assert_ne!(self.seq, u64::MAX, "event sequence exhausted");
        self.seq += 1;
        (u128::from(at.0) << 64) | u128::from(self.seq)
    }
    pub fn push(&mut self, at: Nanos, event: E) {
        let key = self.next_key(at);
        self.heap.push(Entry { key, event });
    }
    /// Arms `slot`'s one event at `at` (ordered as a push made now), cancelling the event the
    /// slot held; returns whether there was one.
    pub fn set_slot(&mut self, slot: u32, at: Nanos, event: E) -> bool {
        let key = self.next_key(at);
        self.slots.set(slot, key, event)
    }
    /// Cancels `slot`'s event; returns whether there was one.
    pub fn clear_slot(&mut self, slot: u32) -> bool {
        self.slots.remove(slot).is_some()
    }
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let slot = match (self.heap.peek(), self.slots.first()) {
            (Some(h), Some((slot, key))) => (key < h.key).then_some(slot),
            (None, s) => s.map(|(slot, _)| slot),
            (Some(_), None) => None,
        };
        if slot.is_some() {
            self.slots.pop_first().map(|(key, e)| (time_of(key), e))
        } else {
            self.heap.pop().map(|e| (time_of(e.key), e.event))
        }
    }
    pub fn peek_time(&mut self) -> Option<Nanos> {
        let h = self.heap.peek().map(|e| e.key);
        let s = self.slots.first().map(|(_, key)| key);
        match (h, s) {
            (Some(a), Some(b)) => Some(time_of(a.min(b))),
            (a, b) => a.or(b).map(time_of),
        }
    }
    pub fn len(&self) -> usize {
        self.heap.len() + self.slots.len
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

const EMPTY: u128 = u128::MAX;

/// A node of the slot tree: the earliest key below it and its slot.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Node {
    key: u128,
    slot: u32,
}

/// The slot events: a tournament tree over the slots, each node holding the earliest key below
/// it and its slot, so setting or cancelling a slot replays one leaf-to-root path (stopping
/// where a node comes out unchanged: a CPU that is not the earliest rarely climbs far) and the
/// earliest slot event is at the root.
struct Slots<E> {
    /// Node 1 is the root, node `leaves + s` slot `s`'s leaf (`EMPTY` when it has no event).
    nodes: Vec<Node>,
    events: Vec<Option<E>>,
    /// A power of two, at least 2.
    leaves: usize,
    len: usize,
    /// A slot popped whose path still holds its key: a step end popped is usually followed by
    /// the same CPU's next step end, which then replays the path once instead of twice.
    ghost: Option<usize>,
}

impl<E> Default for Slots<E> {
    fn default() -> Self {
        let mut s = Slots { nodes: Vec::new(), events: Vec::new(), leaves: 0, len: 0, ghost: None };
        s.grow(2);
        s
    }
}

impl<E> Slots<E> {
    /// The earliest slot and its key.
    fn first(&mut self) -> Option<(u32, u128)> {
        self.settle();
        let root = self.nodes[1];
        (self.len > 0).then_some((root.slot, root.key))
    }

    /// Takes the earliest slot's event (the slot left a ghost).
    fn pop_first(&mut self) -> Option<(u128, E)> {
        let (slot, key) = self.first()?;
        let s = slot as usize;
        let e = self.events[s].take()?;
        self.len -= 1;
        self.ghost = Some(s);
        Some((key, e))
    }

    /// Clears a ghost's path.
    fn settle(&mut self) {
        if let Some(s) = self.ghost.take() {
            self.replay(s, EMPTY);
        }
    }

    fn set(&mut self, slot: u32, key: u128, event: E) -> bool {
        let s = slot as usize;
        if self.ghost == Some(s) {
            self.ghost = None;
        } else {
            self.settle();
        }
        if s >= self.leaves {
            self.grow(s + 1);
        }
        let had = self.events[s].is_some();
        self.len += usize::from(!had);
        self.events[s] = Some(event);
        self.replay(s, key);
        had
    }

    fn remove(&mut self, slot: u32) -> Option<(u128, E)> {
        self.settle();
        let s = slot as usize;
        let e = self.events.get_mut(s)?.take()?;
        let key = self.nodes[self.leaves + s].key;
        self.len -= 1;
        self.replay(s, EMPTY);
        Some((key, e))
    }

    /// Sets slot `s`'s key and recomputes its path up to the first node that does not change.
    fn replay(&mut self, s: usize, key: u128) {
        let mut j = self.leaves + s;
        self.nodes[j].key = key;
        while j > 1 {
            let p = j / 2;
            let (a, b) = (self.nodes[2 * p], self.nodes[2 * p + 1]);
            let w = if b.key < a.key { b } else { a };
            if self.nodes[p] == w {
                break;
            }
            self.nodes[p] = w;
            j = p;
        }
    }

    /// Room for `n` slots: the leaves doubled until they fit, every inner node recomputed.
    fn grow(&mut self, n: usize) {
        let leaves = n.next_power_of_two().max(2);
        let mut nodes = vec![Node { key: EMPTY, slot: 0 }; 2 * leaves];
        for (s, leaf) in nodes[leaves..].iter_mut().enumerate() {
            leaf.slot = s as u32;
            if s < self.leaves {
                leaf.key = self.nodes[self.leaves + s].key;
            }
        }
        for p in (1..leaves).rev() {
            let (a, b) = (nodes[2 * p], nodes[2 * p + 1]);
            nodes[p] = if b.key < a.key { b } else { a };
        }
        self.nodes = nodes;
        self.events.resize_with(leaves, || None);
        self.leaves = leaves;
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

        /// Plain events and slot events (set, replaced, cancelled) interleaved with pops,
        /// against a sorted-list oracle in which setting a slot removes its earlier event:
        /// each pop returns the earliest live `(time, push index)`, whichever structure holds it.
        #[test]
        fn slots_replace_and_cancel_in_place(ops in proptest::collection::vec((0u8..4, 0u64..50, 0u32..6), 0..400)) {
            let mut q = EventQueue::default();
            // (time, push index, slot or u32::MAX)
            let mut oracle: Vec<(u64, usize, u32)> = Vec::new();
            for (i, &(op, t, slot)) in ops.iter().enumerate() {
                match op {
                    0 => {
                        q.push(Nanos(t), i);
                        oracle.push((t, i, u32::MAX));
                    }
                    1 => {
                        let had = oracle.iter().any(|o| o.2 == slot);
                        prop_assert_eq!(q.set_slot(slot, Nanos(t), i), had);
                        oracle.retain(|o| o.2 != slot);
                        oracle.push((t, i, slot));
                    }
                    2 => {
                        let had = oracle.iter().any(|o| o.2 == slot);
                        prop_assert_eq!(q.clear_slot(slot), had);
                        oracle.retain(|o| o.2 != slot);
                    }
                    _ => {
                        oracle.sort_unstable();
                        let want = (!oracle.is_empty()).then(|| oracle.remove(0)).map(|o| (o.0, o.1));
                        prop_assert_eq!(q.pop().map(|(t, i)| (t.0, i)), want);
                    }
                }
                prop_assert_eq!(q.len(), oracle.len());
                prop_assert_eq!(q.peek_time().map(|t| t.0), oracle.iter().map(|p| p.0).min());
            }
        }
    }
}
