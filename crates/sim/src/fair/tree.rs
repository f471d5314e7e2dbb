//! The deadline-ordered runqueue timeline (`cfs_rq->tasks_timeline`, kernel/sched/fair.c v7.3.4).
//!
//! Entities are ordered by virtual deadline with a wrapping (signed-difference) compare, ties
//! after existing equal keys (FIFO). Every node also carries the subtree aggregates the kernel's
//! augmented rbtree keeps (`min_vruntime_cb`): `min_vruntime`, `min_slice`, `max_slice`. They let
//! `pick_eevdf` find the earliest eligible deadline in O(log n) by skipping any subtree whose
//! smallest vruntime is already ineligible.
//!
//! [`Timeline`] is that structure: an AVL tree in an index arena, so it stays deterministic and
//! needs neither `unsafe` nor shared ownership. [`NaiveTimeline`] is a sorted `Vec` kept as the
//! test oracle.

/// What the timeline stores about an entity. Entities in the kernel's tree are never modified
/// in place (they are dequeued first), so a copy taken at insert time stays true.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeKey {
    pub id: u32,
    pub deadline: u64,
    pub vruntime: u64,
    pub slice: u64,
}

/// `a` strictly before `b` in wrapping virtual time (the kernel's `vruntime_cmp(a, "<", b)`).
#[inline]
pub fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// The earlier of two virtual times, so that minima stay right across the `u64` wrap.
#[inline]
fn min_wrapping(a: u64, b: u64) -> u64 {
    if before(b, a) { b } else { a }
}

/// Handle of an inserted node, kept by the caller to remove it again.
pub type NodeIdx = u32;

/// One arena slot. Freed slots keep their stale contents until reused; no live node shares
/// their `seq`, so removing through a stale handle finds nothing and panics.
#[derive(Clone, Debug)]
struct Node {
    key: NodeKey,
    /// Insertion number, the final tie-breaker that makes equal deadlines FIFO.
    seq: u64,
    left: Option<NodeIdx>,
    right: Option<NodeIdx>,
    /// AVL height of the subtree rooted here (a leaf is 1).
    height: u8,
    /// Subtree aggregates, recomputed bottom-up whenever the subtree changes shape.
    min_vruntime: u64,
    min_slice: u64,
    max_slice: u64,
}

/// The augmented, leftmost-cached balanced tree the scheduler picks from. An AVL tree is used
/// instead of the kernel's red-black tree because it is simpler without parent pointers; the
/// in-order sequence, the aggregates and therefore every pick are the same.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    nodes: Vec<Node>,
    free: Vec<NodeIdx>,
    root: Option<NodeIdx>,
    /// The earliest node, cached like `rb_root_cached` because it is the common pick.
    leftmost: Option<NodeIdx>,
    seq: u64,
}

impl Timeline {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.nodes.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// Insert after every existing node whose deadline is not after `key.deadline`, returning
    /// the arena index, which stays valid until the node is removed.
    pub fn insert(&mut self, key: NodeKey) -> NodeIdx {
        self.seq += 1;
        let node = Node {
            key,
            seq: self.seq,
            left: None,
            right: None,
            height: 1,
            min_vruntime: key.vruntime,
            min_slice: key.slice,
            max_slice: key.slice,
        };
        let idx = match self.free.pop() {
            Some(idx) => {
                self.nodes[idx as usize] = node;
                idx
            }
            None => {
                self.nodes.push(node);
                #[allow(clippy::expect_used, reason = "tasks are limited far below 2^32 (setup checks)")]
                let idx = NodeIdx::try_from(self.nodes.len() - 1).expect("timeline arena exceeds u32");
                idx
            }
        };
        self.root = Some(self.insert_at(self.root, idx));
        if self.leftmost.is_none_or(|l| self.precedes(idx, l)) {
            self.leftmost = Some(idx);
        }
        idx
    }

    /// Remove the node `insert` returned `idx` for. Panics if it is no longer in the tree.
    pub fn remove(&mut self, idx: NodeIdx) -> NodeKey {
        self.root = self.remove_at(self.root, idx);
        if self.leftmost == Some(idx) {
            self.leftmost = self.first();
        }
        self.free.push(idx);
        self.node(idx).key
    }

    pub fn leftmost(&self) -> Option<NodeKey> {
        self.leftmost.map(|i| self.node(i).key)
    }

    pub fn min_vruntime(&self) -> Option<u64> {
        self.root.map(|i| self.node(i).min_vruntime)
    }

    pub fn min_slice(&self) -> Option<u64> {
        self.root.map(|i| self.node(i).min_slice)
    }

    pub fn max_slice(&self) -> Option<u64> {
        self.root.map(|i| self.node(i).max_slice)
    }

    /// The earliest-deadline entity whose vruntime is eligible (FIFO among equal deadlines).
    ///
    /// This is the heap descent of the kernel's `pick_eevdf`: it relies on `eligible` being
    /// monotone (anything before an eligible vruntime is eligible too), so a left subtree whose
    /// minimum vruntime is eligible is known to hold the answer.
    pub fn pick_eligible(&self, eligible: impl Fn(u64) -> bool) -> Option<NodeKey> {
        if let Some(first) = self.leftmost().filter(|k| eligible(k.vruntime)) {
            return Some(first);
        }
        let mut next = self.root;
        while let Some(i) = next {
            let node = self.node(i);
            if node.left.is_some_and(|l| eligible(self.node(l).min_vruntime)) {
                next = node.left;
                continue;
            }
            if eligible(node.key.vruntime) {
                return Some(node.key);
            }
            next = node.right;
        }
        None
    }

    /// The nodes in tree (deadline, then FIFO) order.
    pub fn iter(&self) -> impl Iterator<Item = NodeKey> + '_ {
        let mut stack = Vec::new();
        let mut next = self.root;
        std::iter::from_fn(move || {
            while let Some(i) = next {
                stack.push(i);
                next = self.node(i).left;
            }
            let i = stack.pop()?;
            next = self.node(i).right;
            Some(self.node(i).key)
        })
    }

    fn node(&self, i: NodeIdx) -> &Node {
        &self.nodes[i as usize]
    }

    fn node_mut(&mut self, i: NodeIdx) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    fn height(&self, i: Option<NodeIdx>) -> u8 {
        i.map_or(0, |i| self.node(i).height)
    }

    /// Left height minus right height; AVL keeps it within -1..=1.
    fn balance(&self, i: NodeIdx) -> i16 {
        let n = self.node(i);
        i16::from(self.height(n.left)) - i16::from(self.height(n.right))
    }

    /// Tree order: `a` sorts before `b` by wrapping deadline, then by insertion.
    fn precedes(&self, a: NodeIdx, b: NodeIdx) -> bool {
        let (a, b) = (self.node(a), self.node(b));
        before(a.key.deadline, b.key.deadline) || (a.key.deadline == b.key.deadline && a.seq < b.seq)
    }

    /// The earliest node, found by descending (only needed when the cached one leaves).
    fn first(&self) -> Option<NodeIdx> {
        let mut i = self.root?;
        while let Some(l) = self.node(i).left {
            i = l;
        }
        Some(i)
    }

    /// Recompute `i`'s height and aggregates from its children (the kernel's
    /// `min_vruntime_update`); the children must already be up to date.
    fn update(&mut self, i: NodeIdx) {
        let n = self.node(i);
        let (mut height, mut min_vruntime) = (0, n.key.vruntime);
        let (mut min_slice, mut max_slice) = (n.key.slice, n.key.slice);
        for c in [n.left, n.right].into_iter().flatten().map(|c| self.node(c)) {
            height = height.max(c.height);
            min_vruntime = min_wrapping(min_vruntime, c.min_vruntime);
            min_slice = min_slice.min(c.min_slice);
            max_slice = max_slice.max(c.max_slice);
        }
        let n = self.node_mut(i);
        (n.height, n.min_vruntime) = (height + 1, min_vruntime);
        (n.min_slice, n.max_slice) = (min_slice, max_slice);
    }

    /// Rotate `i`'s left child up, updating both nodes like the kernel's augmented rotate
    /// callback; returns the new subtree root.
    #[allow(clippy::expect_used, reason = "a right rotation is applied only to a node with a left child (AVL)")]
    fn rotate_right(&mut self, i: NodeIdx) -> NodeIdx {
        let l = self.node(i).left.expect("rotate_right needs a left child");
        self.node_mut(i).left = self.node(l).right;
        self.node_mut(l).right = Some(i);
        self.update(i);
        self.update(l);
        l
    }

    /// Mirror image of [`Self::rotate_right`].
    #[allow(clippy::expect_used, reason = "a left rotation is applied only to a node with a right child (AVL)")]
    fn rotate_left(&mut self, i: NodeIdx) -> NodeIdx {
        let r = self.node(i).right.expect("rotate_left needs a right child");
        self.node_mut(i).right = self.node(r).left;
        self.node_mut(r).left = Some(i);
        self.update(i);
        self.update(r);
        r
    }

    /// Restore the AVL invariant at `i` after one of its subtrees changed height by at most
    /// one, and refresh its aggregates; returns the new subtree root.
    #[allow(clippy::expect_used, reason = "a node with balance >= 2 has a left child and <= -2 a right child")]
    fn rebalance(&mut self, i: NodeIdx) -> NodeIdx {
        self.update(i);
        match self.balance(i) {
            2.. => {
                let l = self.node(i).left.expect("left-heavy node has a left child");
                if self.balance(l) < 0 {
                    self.node_mut(i).left = Some(self.rotate_left(l));
                }
                self.rotate_right(i)
            }
            ..=-2 => {
                let r = self.node(i).right.expect("right-heavy node has a right child");
                if self.balance(r) > 0 {
                    self.node_mut(i).right = Some(self.rotate_right(r));
                }
                self.rotate_left(i)
            }
            _ => i,
        }
    }

    /// Link the detached node `new` into subtree `sub`; returns the new subtree root.
    fn insert_at(&mut self, sub: Option<NodeIdx>, new: NodeIdx) -> NodeIdx {
        let Some(s) = sub else { return new };
        if self.precedes(new, s) {
            let l = self.insert_at(self.node(s).left, new);
            self.node_mut(s).left = Some(l);
        } else {
            let r = self.insert_at(self.node(s).right, new);
            self.node_mut(s).right = Some(r);
        }
        self.rebalance(s)
    }

    /// Unlink `target` from subtree `sub`, splicing in its successor node (not its key, so
    /// every other handle stays valid); returns the new subtree root. Nothing is modified
    /// before the panic if `target` is absent.
    #[allow(
        clippy::expect_used,
        reason = "removing an absent node is a caller bug; the oracle tests cover every caller"
    )]
    fn remove_at(&mut self, sub: Option<NodeIdx>, target: NodeIdx) -> Option<NodeIdx> {
        let s = sub.expect("node in timeline");
        let (left, right) = (self.node(s).left, self.node(s).right);
        if s == target {
            return match (left, right) {
                (l, None) => l,
                (None, r) => r,
                (l, Some(r)) => {
                    let (rest, succ) = self.remove_first(r);
                    let n = self.node_mut(succ);
                    (n.left, n.right) = (l, rest);
                    Some(self.rebalance(succ))
                }
            };
        }
        if self.precedes(target, s) {
            self.node_mut(s).left = self.remove_at(left, target);
        } else {
            self.node_mut(s).right = self.remove_at(right, target);
        }
        Some(self.rebalance(s))
    }

    /// Detach the earliest node of subtree `s`; returns the remaining subtree and that node.
    fn remove_first(&mut self, s: NodeIdx) -> (Option<NodeIdx>, NodeIdx) {
        let Some(l) = self.node(s).left else {
            return (self.node(s).right, s);
        };
        let (rest, first) = self.remove_first(l);
        self.node_mut(s).left = rest;
        (Some(self.rebalance(s)), first)
    }
}

/// The obviously correct timeline: a sorted `Vec` scanned linearly. It is the oracle the
/// tests compare [`Timeline`] against, and its handle is the entity id, so ids must be unique.
#[derive(Clone, Debug, Default)]
pub struct NaiveTimeline {
    nodes: Vec<NodeKey>,
}

impl NaiveTimeline {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Insert after every existing node whose deadline is not after `key.deadline`.
    pub fn insert(&mut self, key: NodeKey) -> NodeIdx {
        let pos = self.nodes.partition_point(|k| !before(key.deadline, k.deadline));
        self.nodes.insert(pos, key);
        key.id
    }

    #[allow(clippy::expect_used, reason = "the naive oracle removes only nodes it holds")]
    pub fn remove(&mut self, idx: NodeIdx) -> NodeKey {
        let pos = self.nodes.iter().position(|k| k.id == idx).expect("node in timeline");
        self.nodes.remove(pos)
    }

    pub fn leftmost(&self) -> Option<NodeKey> {
        self.nodes.first().copied()
    }

    pub fn min_vruntime(&self) -> Option<u64> {
        self.nodes.iter().map(|k| k.vruntime).reduce(min_wrapping)
    }

    pub fn min_slice(&self) -> Option<u64> {
        self.nodes.iter().map(|k| k.slice).min()
    }

    pub fn max_slice(&self) -> Option<u64> {
        self.nodes.iter().map(|k| k.slice).max()
    }

    /// The earliest-deadline entity whose vruntime is eligible (FIFO among equal deadlines).
    pub fn pick_eligible(&self, eligible: impl Fn(u64) -> bool) -> Option<NodeKey> {
        self.nodes.iter().copied().find(|k| eligible(k.vruntime))
    }

    pub fn iter(&self) -> impl Iterator<Item = NodeKey> + '_ {
        self.nodes.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::sample::Index;

    /// 2^64 - 2^20: keys offset from here by up to 2^21 straddle the wrap point.
    const WRAP_BASE: u64 = 0u64.wrapping_sub(1 << 20);

    fn key(id: u32, deadline: u64, vruntime: u64) -> NodeKey {
        NodeKey { id, deadline, vruntime, slice: 1 }
    }

    /// Check every node's height and aggregates against a recomputation from its children and
    /// the AVL balance; returns the subtree's height and node count.
    fn check_subtree(t: &Timeline, i: Option<NodeIdx>) -> (u8, usize) {
        let Some(i) = i else { return (0, 0) };
        let n = t.node(i);
        let (lh, lcount) = check_subtree(t, n.left);
        let (rh, rcount) = check_subtree(t, n.right);
        assert!(lh.abs_diff(rh) <= 1, "node {i} unbalanced: {lh} vs {rh}");
        assert_eq!(n.height, lh.max(rh) + 1, "height of {i}");
        let kids = || [n.left, n.right].into_iter().flatten().map(|c| t.node(c));
        let min_vruntime = kids().map(|c| c.min_vruntime).fold(n.key.vruntime, min_wrapping);
        assert_eq!(n.min_vruntime, min_vruntime, "min_vruntime of {i}");
        assert_eq!(n.min_slice, kids().map(|c| c.min_slice).fold(n.key.slice, u64::min));
        assert_eq!(n.max_slice, kids().map(|c| c.max_slice).fold(n.key.slice, u64::max));
        (n.height, lcount + rcount + 1)
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert { deadline: u64, vruntime: u64, slice: u64 },
        Remove(Index),
        Pick(u64),
    }

    /// Offsets from the case's base: a tiny range for many exact ties, a wide one to spread
    /// keys across the wrap point.
    fn offset() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..8, 0u64..1 << 21]
    }

    fn op() -> impl Strategy<Value = Op> {
        let slice = prop_oneof![1u64..4, any::<u64>()];
        prop_oneof![
            4 => (offset(), offset(), slice)
                .prop_map(|(deadline, vruntime, slice)| Op::Insert { deadline, vruntime, slice }),
            2 => any::<Index>().prop_map(Op::Remove),
            2 => offset().prop_map(Op::Pick),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn matches_naive(
            base in prop_oneof![Just(WRAP_BASE), any::<u64>()],
            ops in prop::collection::vec(op(), 1..300),
        ) {
            let (mut tree, mut naive) = (Timeline::new(), NaiveTimeline::new());
            let mut handles = Vec::new();
            let mut peak = 0;
            for (id, op) in (0..).zip(ops) {
                match op {
                    Op::Insert { deadline, vruntime, slice } => {
                        let (deadline, vruntime) = (base.wrapping_add(deadline), base.wrapping_add(vruntime));
                        let key = NodeKey { id, deadline, vruntime, slice };
                        handles.push((tree.insert(key), naive.insert(key)));
                    }
                    Op::Remove(i) if !handles.is_empty() => {
                        let (t, n) = handles.swap_remove(i.index(handles.len()));
                        prop_assert_eq!(tree.remove(t), naive.remove(n));
                    }
                    Op::Remove(_) => {}
                    Op::Pick(t) => {
                        // Offset 0 puts the threshold before every vruntime, so nothing is eligible.
                        let threshold = base.wrapping_add(t).wrapping_sub(1);
                        let eligible = |v: u64| !before(threshold, v);
                        prop_assert_eq!(tree.pick_eligible(eligible), naive.pick_eligible(eligible));
                    }
                }
                let (_, count) = check_subtree(&tree, tree.root);
                peak = peak.max(tree.len());
                prop_assert_eq!(count, tree.len());
                prop_assert!(tree.nodes.len() <= peak, "freed arena slots are reused");
                prop_assert_eq!(tree.len(), naive.len());
                prop_assert_eq!(tree.is_empty(), naive.is_empty());
                prop_assert!(tree.iter().eq(naive.iter()));
                prop_assert_eq!(tree.leftmost(), naive.leftmost());
                prop_assert_eq!(tree.min_vruntime(), naive.min_vruntime());
                prop_assert_eq!(tree.min_slice(), naive.min_slice());
                prop_assert_eq!(tree.max_slice(), naive.max_slice());
            }
        }
    }

    #[test]
    fn equal_deadlines_are_fifo() {
        let mut t = Timeline::new();
        let handles: Vec<_> = (0..4).map(|id| t.insert(key(id, 10, 100 - u64::from(id)))).collect();
        let early = t.insert(key(9, 9, 100));
        t.remove(handles[1]);
        t.insert(key(4, 10, 0));
        let ids: Vec<_> = t.iter().map(|k| k.id).collect();
        assert_eq!(ids, [9, 0, 2, 3, 4]);
        // Among the eligible equal deadlines, the earliest inserted wins.
        assert_eq!(t.pick_eligible(|v| v <= 98).map(|k| k.id), Some(2));
        t.remove(early);
        assert_eq!(t.leftmost().map(|k| k.id), Some(0));
    }

    #[test]
    fn deadlines_order_across_the_wrap() {
        let mut t = Timeline::new();
        let entities = [(2, 0, 0), (0, u64::MAX - 1, 6), (3, 1, 1), (1, u64::MAX, u64::MAX)];
        for (id, deadline, vruntime) in entities {
            t.insert(key(id, deadline, vruntime));
        }
        let ids: Vec<_> = t.iter().map(|k| k.id).collect();
        assert_eq!(ids, [0, 1, 2, 3]);
        assert_eq!(t.leftmost().map(|k| k.deadline), Some(u64::MAX - 1));
        assert_eq!(t.min_vruntime(), Some(u64::MAX));
        // Only u64::MAX and 0 are at or before 0; u64::MAX has the earlier deadline.
        assert_eq!(t.pick_eligible(|v| !before(0, v)).map(|k| k.id), Some(1));
        assert_eq!(t.pick_eligible(|v| !before(u64::MAX - 1, v)), None);
    }
}
