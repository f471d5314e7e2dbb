//! A sleeping lock: `struct mutex` of kernel/locking/mutex.c (v6.12 to v7.3.4 alike), as
//! `pipe->mutex` serialises every read and write of a pipe (fs/pipe.c `anon_pipe_read`,
//! `anon_pipe_write`).
//!
//! What the scheduler sees of it: a task that finds the lock taken spins while the owner runs
//! on a CPU (`mutex_optimistic_spin()`, decided by the engine, which knows who is on a CPU)
//! and otherwise sleeps `TASK_UNINTERRUPTIBLE` on the FIFO wait list. `mutex_unlock()` of a
//! contended lock (`__mutex_unlock_slowpath()`) wakes the first waiter with a plain
//! `wake_up_process()` (no WF_SYNC), leaving the lock free for whoever gets there first — a
//! spinner or a new caller may take it before the woken waiter runs. A first waiter that wakes
//! and still finds the lock taken sets `MUTEX_FLAG_HANDOFF` (`__mutex_trylock_or_handoff()`),
//! and the next unlock gives the lock to it directly (`__mutex_handoff()`), so it cannot be
//! starved. Proxy execution (`CONFIG_SCHED_PROXY_EXEC`, off in distribution kernels) is not
//! modelled.

use std::collections::VecDeque;

use crate::task::TaskId;

/// `struct mutex`: the owner, the `MUTEX_FLAG_HANDOFF` bit and the wait list.
#[derive(Clone, Debug, Default)]
pub struct Mutex {
    owner: Option<TaskId>,
    handoff: bool,
    waiters: VecDeque<TaskId>,
}

impl Mutex {
    pub fn new() -> Mutex {
        Mutex::default()
    }

    /// The task holding the lock (after a handoff, the waiter it was given to, which may not
    /// have run yet).
    pub fn owner(&self) -> Option<TaskId> {
        self.owner
    }

    /// Tasks asleep on (or woken from and not yet back to) the lock, first waiter first.
    pub fn waiters(&self) -> usize {
        self.waiters.len()
    }

    /// `__mutex_trylock_or_handoff(lock, handoff)`: takes the lock if it is free or was handed
    /// to `t`. `woken_first` is true for the first waiter retrying after its wakeup: failing,
    /// it sets the handoff flag. Returns whether `t` holds the lock.
    pub fn trylock(&mut self, t: TaskId, woken_first: bool) -> bool {
        match self.owner {
            Some(o) if o == t => true,
            Some(_) => {
                if woken_first && self.waiters.front() == Some(&t) {
                    self.handoff = true;
                }
                false
            }
            None => {
                self.owner = Some(t);
                // __mutex_remove_waiter() at `acquired:` in the slow path.
                if let Some(i) = self.waiters.iter().position(|&w| w == t) {
                    self.waiters.remove(i);
                }
                true
            }
        }
    }

    /// Whether `t` is the first waiter (`__mutex_waiter_is_first()`).
    pub fn is_first_waiter(&self, t: TaskId) -> bool {
        self.waiters.front() == Some(&t)
    }

    /// `__mutex_add_waiter()`: queues `t` at the tail unless it is already queued (a woken
    /// waiter that lost the race keeps its place).
    pub fn add_waiter(&mut self, t: TaskId) {
        if !self.waiters.contains(&t) {
            self.waiters.push_back(t);
        }
    }

    /// `mutex_unlock()` by the owner `t`: returns the waiter to wake, if any. With the handoff
    /// flag set the lock passes to that waiter (`__mutex_handoff()`); otherwise it is released.
    pub fn unlock(&mut self, t: TaskId) -> Option<TaskId> {
        debug_assert_eq!(self.owner, Some(t), "mutex unlocked by a task that does not hold it");
        self.owner = None;
        let first = *self.waiters.front()?;
        if std::mem::take(&mut self.handoff) {
            self.waiters.pop_front();
            self.owner = Some(first);
        }
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: TaskId = TaskId(0);
    const B: TaskId = TaskId(1);
    const C: TaskId = TaskId(2);

    #[test]
    fn an_uncontended_lock_wakes_nobody() {
        let mut m = Mutex::new();
        assert!(m.trylock(A, false));
        assert!(!m.trylock(B, false));
        assert_eq!(m.unlock(A), None);
        assert_eq!(m.owner(), None);
    }

    #[test]
    fn unlock_wakes_the_first_waiter_but_a_newcomer_may_steal_the_lock() {
        let mut m = Mutex::new();
        assert!(m.trylock(A, false));
        assert!(!m.trylock(B, false));
        m.add_waiter(B);
        assert!(!m.trylock(C, false));
        m.add_waiter(C);
        assert_eq!(m.unlock(A), Some(B));
        // B is woken but has not run: A takes the lock again first.
        assert!(m.trylock(A, false));
        // B runs, fails as the first waiter, and asks for a handoff.
        assert!(!m.trylock(B, true));
        assert_eq!(m.waiters(), 2);
        assert_eq!(m.unlock(A), Some(B));
        assert_eq!(m.owner(), Some(B), "the handoff gives the lock to the first waiter");
        assert!(!m.trylock(A, false), "nobody steals a handed-off lock");
        assert!(m.trylock(B, true));
        assert_eq!(m.waiters(), 1);
        assert_eq!(m.unlock(B), Some(C));
        assert!(m.trylock(C, true));
        assert_eq!(m.waiters(), 0);
    }

    #[test]
    fn only_the_first_waiter_sets_the_handoff_flag() {
        let mut m = Mutex::new();
        assert!(m.trylock(A, false));
        m.add_waiter(B);
        m.add_waiter(C);
        assert!(!m.trylock(C, true));
        assert_eq!(m.unlock(A), Some(B));
        assert_eq!(m.owner(), None, "C is not first: no handoff");
        m.add_waiter(B);
        assert_eq!(m.waiters(), 2, "a waiter is queued once");
    }
}
