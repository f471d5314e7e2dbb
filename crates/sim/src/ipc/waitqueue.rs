//! Wait queues: `struct wait_queue_head` and `__wake_up_common()` (kernel/sched/wait.c v7.3).
//!
//! The order is the kernel's list order: non-exclusive entries (`prepare_to_wait()`,
//! `add_wait_queue()`, `poll_wait()`) are added at the head, exclusive ones
//! (`prepare_to_wait_exclusive()`) at the tail, and a wake walks from the head, waking every
//! non-exclusive entry and at most `nr_exclusive` exclusive ones. Sleepers use
//! `autoremove_wake_function` (a woken sleeper leaves the queue at once); poll entries
//! (`pollwake`, `ep_poll_callback`) stay until the poll ends. Event-key filtering is not needed:
//! every object keeps its reader and writer sides on separate queues, and pollers only ask for
//! readability.
//!
//! A queued sleeper is always asleep or about to sleep (its state is already
//! `TASK_INTERRUPTIBLE`), so `try_to_wake_up()` succeeds on it and counts against
//! `nr_exclusive`; the engine handles the "about to sleep" case.

use std::collections::VecDeque;

use super::Wake;
use crate::fair::wf;
use crate::task::TaskId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `wait_event*()` / `prepare_to_wait*()` with `autoremove_wake_function`.
    Sleeper { exclusive: bool },
    /// A `poll()` (`pollwake`) or epoll (`ep_poll_callback`) entry; `keep_sync` false drops
    /// WF_SYNC (epoll before 6.10).
    Poll { keep_sync: bool },
}

/// A wait queue head.
#[derive(Clone, Debug, Default)]
pub struct WaitQueue {
    entries: VecDeque<(TaskId, Kind)>,
}

impl WaitQueue {
    pub fn new() -> WaitQueue {
        WaitQueue::default()
    }

    fn has_sleeper(&self, t: TaskId) -> bool {
        self.entries.iter().any(|&(x, k)| x == t && matches!(k, Kind::Sleeper { .. }))
    }

    /// `prepare_to_wait()`: a non-exclusive sleeper at the head (once).
    pub fn add(&mut self, t: TaskId) {
        if !self.has_sleeper(t) {
            self.entries.push_front((t, Kind::Sleeper { exclusive: false }));
        }
    }

    /// `prepare_to_wait_exclusive()`: an exclusive sleeper at the tail (once).
    pub fn add_exclusive(&mut self, t: TaskId) {
        if !self.has_sleeper(t) {
            self.entries.push_back((t, Kind::Sleeper { exclusive: true }));
        }
    }

    /// `__add_wait_queue_entry_tail()` of a non-exclusive sleeper (the `*_locked` waits, e.g.
    /// `eventfd_read`).
    pub fn add_tail(&mut self, t: TaskId) {
        if !self.has_sleeper(t) {
            self.entries.push_back((t, Kind::Sleeper { exclusive: false }));
        }
    }

    /// `poll_wait()` → `add_wait_queue()`: a poll entry at the head (once).
    pub fn add_poll(&mut self, t: TaskId, keep_sync: bool) {
        if !self.entries.iter().any(|&(x, k)| x == t && matches!(k, Kind::Poll { .. })) {
            self.entries.push_front((t, Kind::Poll { keep_sync }));
        }
    }

    /// `finish_wait()` / `poll_freewait()`: removes every entry of `t`.
    pub fn remove(&mut self, t: TaskId) {
        self.entries.retain(|&(x, _)| x != t);
    }

    pub fn contains(&self, t: TaskId) -> bool {
        self.entries.iter().any(|&(x, _)| x == t)
    }

    /// `waitqueue_active()` / `skwq_has_sleeper()` negated.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Tasks in list order (tests).
    pub fn tasks(&self) -> Vec<TaskId> {
        self.entries.iter().map(|&(t, _)| t).collect()
    }

    /// `__wake_up_common()`: wakes every non-exclusive entry and up to `nr_exclusive`
    /// exclusive ones (0 means all, as in the kernel), appending the wakes to `out`. Returns
    /// the number of entries woken.
    pub fn wake(&mut self, nr_exclusive: u32, flags: u32, in_task: bool, out: &mut Vec<Wake>) -> usize {
        let mut left = nr_exclusive;
        let mut woken = 0;
        let mut i = 0;
        while i < self.entries.len() {
            let (task, kind) = self.entries[i];
            woken += 1;
            match kind {
                Kind::Poll { keep_sync } => {
                    let flags = if keep_sync { flags } else { flags & !wf::SYNC };
                    out.push(Wake { task, flags, in_task });
                    i += 1;
                }
                Kind::Sleeper { exclusive } => {
                    out.push(Wake { task, flags, in_task });
                    self.entries.remove(i);
                    if exclusive {
                        left = left.wrapping_sub(1);
                        if left == 0 {
                            break;
                        }
                    }
                }
            }
        }
        woken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: TaskId = TaskId(1);
    const B: TaskId = TaskId(2);
    const C: TaskId = TaskId(3);
    const P: TaskId = TaskId(9);

    #[test]
    fn exclusive_waiters_wake_one_at_a_time_in_fifo_order() {
        let mut q = WaitQueue::new();
        q.add_exclusive(A);
        q.add_exclusive(B);
        q.add_exclusive(A); // already queued
        assert_eq!(q.len(), 2);
        let mut out = Vec::new();
        assert_eq!(q.wake(1, wf::SYNC, true, &mut out), 1);
        assert_eq!(out, [Wake { task: A, flags: wf::SYNC, in_task: true }]);
        assert_eq!(q.tasks(), [B]);
    }

    #[test]
    fn pollers_and_non_exclusive_sleepers_all_wake_head_first() {
        let mut q = WaitQueue::new();
        q.add_exclusive(A);
        q.add_exclusive(B);
        q.add(C);
        q.add_poll(P, true);
        let mut out = Vec::new();
        q.wake(1, wf::SYNC, true, &mut out);
        let woken: Vec<TaskId> = out.iter().map(|w| w.task).collect();
        // Head insertion: the poller (added last) comes first; then C, then one exclusive.
        assert_eq!(woken, [P, C, A]);
        // The poll entry stays; the woken sleepers left.
        assert_eq!(q.tasks(), [P, B]);
        out.clear();
        q.wake(0, 0, false, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(q.tasks(), [P]);
        q.remove(P);
        assert!(q.is_empty());
    }

    #[test]
    fn epoll_entries_before_6_10_drop_wf_sync() {
        let mut q = WaitQueue::new();
        q.add_poll(A, false);
        q.add_poll(B, true);
        let mut out = Vec::new();
        q.wake(1, wf::SYNC, true, &mut out);
        assert_eq!(out[0], Wake { task: B, flags: wf::SYNC, in_task: true });
        assert_eq!(out[1], Wake { task: A, flags: 0, in_task: true });
    }
}
