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

/// No node (a missing child, the root's parent, an empty tree).
const NIL: NodeIdx = NodeIdx::MAX;

/// One arena slot. A freed slot keeps its stale contents, with height 0, until reused.
///
/// One cache line per node (56 bytes of fields, aligned to 64): a descent or a fix-up touches
/// one line per level, where the 72-byte node it replaced straddled two. The slices fit 32
/// bits because the kernel's do: `se->slice` is `sysctl_sched_base_slice` (an `unsigned
/// int`), a `sched_attr` runtime clamped to 0.1-100 ms, or a group's smallest queued slice.
#[derive(Clone, Debug)]
#[repr(align(64))]
struct Node {
    deadline: u64,
    left: NodeIdx,
    right: NodeIdx,
    parent: NodeIdx,
    id: u32,
    vruntime: u64,
    /// Subtree aggregates (the kernel's `min_vruntime_cb`), recomputed bottom-up along the
    /// path a change touched.
    min_vruntime: u64,
    slice: u32,
    min_slice: u32,
    max_slice: u32,
    /// AVL height of the subtree rooted here (a leaf is 1).
    height: u8,
}

/// A slice as the node stores it (see [`Node`]).
fn narrow(slice: u64) -> u32 {
    #[allow(clippy::expect_used, reason = "every slice the model builds is bounded as the kernel's (Node's comment)")]
    u32::try_from(slice).expect("an entity's slice fits the kernel's 32-bit sysctl")
}

impl Node {
    fn key(&self) -> NodeKey {
        NodeKey { id: self.id, deadline: self.deadline, vruntime: self.vruntime, slice: u64::from(self.slice) }
    }

    /// What a parent reads of this subtree: if none of it changed, no ancestor changes.
    fn summary(&self) -> (u8, u64, u32, u32) {
        (self.height, self.min_vruntime, self.min_slice, self.max_slice)
    }
}

/// The augmented, leftmost-cached balanced tree the scheduler picks from. An AVL tree is used
/// instead of the kernel's red-black tree; the in-order sequence, the aggregates and therefore
/// every pick are the same. Nodes have parent links, so that, as in the kernel's
/// `rb_add_augmented_cached`/`rb_erase_augmented_cached`, an insert descends once and a removal
/// not at all, and the fix-up walks up only while a subtree's height or aggregates change
/// (the kernel's augment `propagate` stops the same way).
#[derive(Clone, Debug)]
pub struct Timeline {
    nodes: Vec<Node>,
    free: Vec<NodeIdx>,
    root: NodeIdx,
    /// The earliest node, cached like `rb_root_cached` because it is the common pick.
    leftmost: NodeIdx,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline { nodes: Vec::new(), free: Vec::new(), root: NIL, leftmost: NIL }
    }
}

impl Timeline {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.nodes.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.root == NIL
    }

    /// Insert after every existing node whose deadline is not after `key.deadline` (FIFO
    /// among equal deadlines), returning the arena index, which stays valid until the node is
    /// removed.
    pub fn insert(&mut self, key: NodeKey) -> NodeIdx {
        let node = Node {
            deadline: key.deadline,
            left: NIL,
            right: NIL,
            parent: NIL,
            id: key.id,
            vruntime: key.vruntime,
            min_vruntime: key.vruntime,
            slice: narrow(key.slice),
            min_slice: narrow(key.slice),
            max_slice: narrow(key.slice),
            height: 1,
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
                debug_assert!(idx != NIL);
                idx
            }
        };
        if self.root == NIL {
            self.root = idx;
            self.leftmost = idx;
            return idx;
        }
        // The new node sorts after every equal deadline already in the tree, so only a strictly
        // later deadline sends it left.
        let (mut p, mut leftmost) = (self.root, true);
        loop {
            let n = self.node(p);
            if before(key.deadline, n.deadline) {
                if n.left == NIL {
                    self.node_mut(p).left = idx;
                    break;
                }
                p = n.left;
            } else {
                leftmost = false;
                if n.right == NIL {
                    self.node_mut(p).right = idx;
                    break;
                }
                p = n.right;
            }
        }
        self.node_mut(idx).parent = p;
        if leftmost {
            self.leftmost = idx;
        }
        self.fix_up(p, NIL);
        idx
    }

    /// Remove the node `insert` returned `idx` for. Panics if it is no longer in the tree.
    pub fn remove(&mut self, idx: NodeIdx) -> NodeKey {
        let t = self.node(idx);
        // A freed slot has height 0 (a live node's is at least 1) until it is reused.
        assert!(t.height != 0, "node {idx} is not in the timeline");
        let (left, right, parent) = (t.left, t.right, t.parent);
        if self.leftmost == idx {
            // The leftmost node has no left child: its successor is its right subtree's first
            // node, or else its parent.
            self.leftmost = if right != NIL { self.first_from(right) } else { parent };
        }
        if left == NIL || right == NIL {
            let child = if left == NIL { right } else { left };
            self.replace_child(parent, idx, child);
            if child != NIL {
                self.node_mut(child).parent = parent;
            }
            self.fix_up(parent, NIL);
        } else {
            // Splice in the successor node (not its key, so every other handle stays valid). It
            // takes over the removed node's height and aggregates, which are what its new
            // parent last saw of that position.
            let succ = self.first_from(right);
            let start = if succ == right {
                succ
            } else {
                let (sp, sr) = (self.node(succ).parent, self.node(succ).right);
                self.node_mut(sp).left = sr;
                if sr != NIL {
                    self.node_mut(sr).parent = sp;
                }
                self.node_mut(succ).right = right;
                self.node_mut(right).parent = succ;
                sp
            };
            let t = self.node(idx);
            let summary = t.summary();
            let s = self.node_mut(succ);
            s.left = left;
            s.parent = parent;
            (s.height, s.min_vruntime, s.min_slice, s.max_slice) = summary;
            self.node_mut(left).parent = succ;
            self.replace_child(parent, idx, succ);
            self.fix_up(start, succ);
        }
        self.free.push(idx);
        let n = self.node_mut(idx);
        n.height = 0;
        n.key()
    }

    /// Changes the slice of a queued node in place and recomputes the aggregates above it
    /// (`min_vruntime_cb_propagate(&se->run_node, NULL)` after a group entity's `se->slice`
    /// changed, fair.c 6.12.117 / 7.2.12): the order does not depend on the slice.
    pub fn set_slice(&mut self, idx: NodeIdx, slice: u64) {
        assert!(self.node(idx).height != 0, "node {idx} is not in the timeline");
        self.node_mut(idx).slice = narrow(slice);
        let mut i = idx;
        while i != NIL {
            let before = self.node(i).summary();
            self.update(i);
            if self.node(i).summary() == before && i != idx {
                return;
            }
            i = self.node(i).parent;
        }
    }

    pub fn leftmost(&self) -> Option<NodeKey> {
        (self.leftmost != NIL).then(|| self.node(self.leftmost).key())
    }

    pub fn min_vruntime(&self) -> Option<u64> {
        (self.root != NIL).then(|| self.node(self.root).min_vruntime)
    }

    pub fn min_slice(&self) -> Option<u64> {
        (self.root != NIL).then(|| u64::from(self.node(self.root).min_slice))
    }

    pub fn max_slice(&self) -> Option<u64> {
        (self.root != NIL).then(|| u64::from(self.node(self.root).max_slice))
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
        while next != NIL {
            let node = self.node(next);
            if node.left != NIL && eligible(self.node(node.left).min_vruntime) {
                next = node.left;
                continue;
            }
            if eligible(node.vruntime) {
                return Some(node.key());
            }
            next = node.right;
        }
        None
    }

    /// The nodes in tree (deadline, then FIFO) order.
    ///
    /// From the cached leftmost node along the parent links (the kernel's `rb_next()`), so
    /// that a walk allocates nothing: the balancer's `detach_tasks` and every `--check` walk
    /// a tree after many events.
    pub fn iter(&self) -> impl Iterator<Item = NodeKey> + '_ {
        let mut next = self.leftmost;
        std::iter::from_fn(move || {
            if next == NIL {
                return None;
            }
            let i = next;
            next = self.successor(i);
            Some(self.node(i).key())
        })
    }

    /// The node after `i` in tree order: the first of its right subtree, else the nearest
    /// ancestor it lies left of (`rb_next()`).
    fn successor(&self, i: NodeIdx) -> NodeIdx {
        let right = self.node(i).right;
        if right != NIL {
            return self.first_from(right);
        }
        let mut child = i;
        let mut p = self.node(i).parent;
        while p != NIL && self.node(p).right == child {
            child = p;
            p = self.node(p).parent;
        }
        p
    }

    fn node(&self, i: NodeIdx) -> &Node {
        &self.nodes[i as usize]
    }

    fn node_mut(&mut self, i: NodeIdx) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    fn height(&self, i: NodeIdx) -> u8 {
        if i == NIL { 0 } else { self.node(i).height }
    }

    /// Left height minus right height; AVL keeps it within -1..=1.
    fn balance(&self, i: NodeIdx) -> i16 {
        let n = self.node(i);
        i16::from(self.height(n.left)) - i16::from(self.height(n.right))
    }

    /// The earliest node of the subtree rooted at `i`.
    fn first_from(&self, mut i: NodeIdx) -> NodeIdx {
        while self.node(i).left != NIL {
            i = self.node(i).left;
        }
        i
    }

    /// Point `parent`'s link to `old` (or the root, for no parent) at `new`.
    fn replace_child(&mut self, parent: NodeIdx, old: NodeIdx, new: NodeIdx) {
        if parent == NIL {
            self.root = new;
        } else if self.node(parent).left == old {
            self.node_mut(parent).left = new;
        } else {
            self.node_mut(parent).right = new;
        }
    }

    /// Recompute `i`'s height and aggregates from its children (the kernel's
    /// `min_vruntime_update`); the children must already be up to date.
    fn update(&mut self, i: NodeIdx) {
        let n = self.node(i);
        let (mut height, mut min_vruntime) = (0, n.vruntime);
        let (mut min_slice, mut max_slice) = (n.slice, n.slice);
        for c in [n.left, n.right] {
            if c != NIL {
                let c = self.node(c);
                height = height.max(c.height);
                min_vruntime = min_wrapping(min_vruntime, c.min_vruntime);
                min_slice = min_slice.min(c.min_slice);
                max_slice = max_slice.max(c.max_slice);
            }
        }
        let n = self.node_mut(i);
        (n.height, n.min_vruntime) = (height + 1, min_vruntime);
        (n.min_slice, n.max_slice) = (min_slice, max_slice);
    }

    /// Rotate `i`'s left child up, updating both nodes like the kernel's augmented rotate
    /// callback and relinking `i`'s parent; returns the new subtree root.
    fn rotate_right(&mut self, i: NodeIdx) -> NodeIdx {
        let (l, parent) = (self.node(i).left, self.node(i).parent);
        debug_assert!(l != NIL, "a right rotation needs a left child (AVL)");
        let lr = self.node(l).right;
        self.node_mut(i).left = lr;
        if lr != NIL {
            self.node_mut(lr).parent = i;
        }
        self.node_mut(l).right = i;
        self.node_mut(i).parent = l;
        self.node_mut(l).parent = parent;
        self.replace_child(parent, i, l);
        self.update(i);
        self.update(l);
        l
    }

    /// Mirror image of [`Self::rotate_right`].
    fn rotate_left(&mut self, i: NodeIdx) -> NodeIdx {
        let (r, parent) = (self.node(i).right, self.node(i).parent);
        debug_assert!(r != NIL, "a left rotation needs a right child (AVL)");
        let rl = self.node(r).left;
        self.node_mut(i).right = rl;
        if rl != NIL {
            self.node_mut(rl).parent = i;
        }
        self.node_mut(r).left = i;
        self.node_mut(i).parent = r;
        self.node_mut(r).parent = parent;
        self.replace_child(parent, i, r);
        self.update(i);
        self.update(r);
        r
    }

    /// Restore the AVL invariant at `i` after one of its subtrees changed height by at most
    /// one, and refresh its aggregates; returns the new subtree root.
    fn rebalance(&mut self, i: NodeIdx) -> NodeIdx {
        self.update(i);
        match self.balance(i) {
            2.. => {
                let l = self.node(i).left;
                if self.balance(l) < 0 {
                    self.rotate_left(l);
                }
                self.rotate_right(i)
            }
            ..=-2 => {
                let r = self.node(i).right;
                if self.balance(r) > 0 {
                    self.rotate_right(r);
                }
                self.rotate_left(i)
            }
            _ => i,
        }
    }

    /// Rebalance and refresh from `i` up to the root, the same steps, bottom-up, as a
    /// recursive AVL insert or delete takes, but stopping once a subtree's summary is what its
    /// parent already holds: nothing above can change then. Below `must_reach` (the node that
    /// took a removed node's place, whose ancestors all lost that key) the walk skips ahead to
    /// it instead of stopping.
    fn fix_up(&mut self, mut i: NodeIdx, must_reach: NodeIdx) {
        let mut below = must_reach != NIL;
        while i != NIL {
            if i == must_reach {
                below = false;
            }
            let before = self.node(i).summary();
            let sub = self.rebalance(i);
            if self.node(sub).summary() == before {
                if !below {
                    return;
                }
                i = must_reach;
                continue;
            }
            i = self.node(sub).parent;
        }
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
    fn check_subtree(t: &Timeline, i: NodeIdx, parent: NodeIdx) -> (u8, usize) {
        if i == NIL {
            return (0, 0);
        }
        let n = t.node(i);
        assert_eq!(n.parent, parent, "parent link of {i}");
        let (lh, lcount) = check_subtree(t, n.left, i);
        let (rh, rcount) = check_subtree(t, n.right, i);
        assert!(lh.abs_diff(rh) <= 1, "node {i} unbalanced: {lh} vs {rh}");
        assert_eq!(n.height, lh.max(rh) + 1, "height of {i}");
        let kids = || [n.left, n.right].into_iter().filter(|&c| c != NIL).map(|c| t.node(c));
        let min_vruntime = kids().map(|c| c.min_vruntime).fold(n.vruntime, min_wrapping);
        assert_eq!(n.min_vruntime, min_vruntime, "min_vruntime of {i}");
        assert_eq!(n.min_slice, kids().map(|c| c.min_slice).fold(n.slice, u32::min));
        assert_eq!(n.max_slice, kids().map(|c| c.max_slice).fold(n.slice, u32::max));
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

    /// The layout [`Node`]'s comment promises: one cache line per node.
    #[test]
    fn a_node_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Node>(), 64);
        assert_eq!(std::mem::align_of::<Node>(), 64);
    }

    fn op() -> impl Strategy<Value = Op> {
        // Small slices collide (ties in the aggregates); the rest span the kernel's 32 bits.
        let slice = prop_oneof![1u64..4, 1u64..=u64::from(u32::MAX)];
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
                let (_, count) = check_subtree(&tree, tree.root, NIL);
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
