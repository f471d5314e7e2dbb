//! The event queue: a binary heap with a total order (time, then insertion sequence), and
//! beside it a 4-ary tournament tree of *slots*, events that exist at most once per slot (a
//! CPU's step end, its hrtick).
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
/// orders entries: time in the high 64 bits, then the insertion sequence, then (for a slot's
/// event) the slot in the low [`SLOT_BITS`]; the sequence is unique, so the slot bits never
/// decide an order.
struct Entry<E> {
    key: u128,
    event: E,
}

fn time_of(key: u128) -> Nanos {
    Nanos((key >> 64) as u64)
}

/// Bits of a key below the sequence: room for a slot number (two slots per CPU).
const SLOT_BITS: u32 = 20;
const SLOT_MASK: u128 = (1 << SLOT_BITS) - 1;

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
        assert!(self.seq < u64::MAX >> SLOT_BITS, "event sequence exhausted");
        self.seq += 1;
        (u128::from(at.0) << 64) | (u128::from(self.seq) << SLOT_BITS)
    }
    pub fn push(&mut self, at: Nanos, event: E) {
        let key = self.next_key(at);
        self.heap.push(Entry { key, event });
    }
    /// Arms `slot`'s one event at `at` (ordered as a push made now), cancelling the event the
    /// slot held; returns whether there was one.
    pub fn set_slot(&mut self, slot: u32, at: Nanos, event: E) -> bool {
        assert!(u128::from(slot) <= SLOT_MASK, "slot {slot} out of range");
        let key = self.next_key(at) | u128::from(slot);
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

/// The slot events: a 4-ary tournament tree over the slots whose nodes are keys (each holds
/// the earliest key below it; a key's low bits name its slot), so setting or cancelling a slot
/// replays one leaf-to-root path, one cache line of four children per level, stopping at the
/// first node that comes out unchanged (a CPU that is not the earliest rarely climbs far), and
/// the earliest slot event is at the root.
struct Slots<E> {
    /// Node 0 is the root, node `(i - 1) / 4` the parent of `i`, node `first_leaf + s` slot
    /// `s`'s leaf (`EMPTY` when it has no event).
    nodes: Vec<u128>,
    events: Vec<Option<E>>,
    first_leaf: usize,
    len: usize,
    /// A slot popped whose path still holds its key: a step end popped is usually followed by
    /// the same CPU's next step end, which then replays the path once instead of twice.
    ghost: Option<usize>,
}

impl<E> Default for Slots<E> {
    fn default() -> Self {
        let mut s = Slots { nodes: Vec::new(), events: Vec::new(), first_leaf: 0, len: 0, ghost: None };
        s.grow(4);
        s
    }
}

impl<E> Slots<E> {
    /// The earliest slot and its key.
    fn first(&mut self) -> Option<(u32, u128)> {
        self.settle();
        let root = self.nodes[0];
        (self.len > 0).then_some(((root & SLOT_MASK) as u32, root))
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
        if s >= self.events.len() {
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
        let key = self.nodes[self.first_leaf + s];
        self.len -= 1;
        self.replay(s, EMPTY);
        Some((key, e))
    }

    /// The earliest of node `p`'s four children.
    #[inline]
    fn winner(&self, p: usize) -> u128 {
        let c = &self.nodes[4 * p + 1..4 * p + 5];
        c[0].min(c[1]).min(c[2].min(c[3]))
    }

    /// Sets slot `s`'s key and recomputes its path up to the first node that does not change.
    fn replay(&mut self, s: usize, key: u128) {
        let mut j = self.first_leaf + s;
        self.nodes[j] = key;
        while j > 0 {
            let p = (j - 1) / 4;
            let w = self.winner(p);
            if self.nodes[p] == w {
                break;
            }
            self.nodes[p] = w;
            j = p;
        }
    }

    /// Room for `n` slots: the leaves multiplied by four until they fit, every inner node
    /// recomputed.
    fn grow(&mut self, n: usize) {
        let mut leaves = 4;
        while leaves < n {
            leaves *= 4;
        }
        let first_leaf = (leaves - 1) / 3;
        let mut nodes = vec![EMPTY; first_leaf + leaves];
        let old = self.events.len();
        nodes[first_leaf..first_leaf + old].copy_from_slice(&self.nodes[self.first_leaf..self.first_leaf + old]);
        self.nodes = nodes;
        self.first_leaf = first_leaf;
        for p in (0..first_leaf).rev() {
            self.nodes[p] = self.winner(p);
        }
        self.events.resize_with(leaves, || None);
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
            check_slots(&ops)?;
        }

        /// The same over hundreds of slots (three levels of the tree) and few distinct times,
        /// so that equal times meet at every level and only the sequence orders them.
        #[test]
        fn many_slots_keep_fifo_order_of_equal_times(ops in proptest::collection::vec((0u8..4, 0u64..6, 0u32..600), 0..600)) {
            check_slots(&ops)?;
        }
    }

    fn check_slots(ops: &[(u8, u64, u32)]) -> Result<(), TestCaseError> {
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
        Ok(())
    }
}
