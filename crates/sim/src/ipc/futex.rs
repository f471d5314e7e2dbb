//! A futex word with its hash-bucket wait list: `futex_wait()` and `futex_wake()`
//! (kernel/futex/waitwake.c v7.3; spec workloads.md §1.1, §9.2).
//!
//! The program vocabulary has no futex *word*, only `FutexWait` and `FutexWake { n }`, so the
//! word is modelled as a count of pending wakes, like a semaphore:
//! - `wake(n)` wakes up to `n` waiters in FIFO order (the bucket's plist is FIFO among
//!   SCHED_OTHER tasks), through `wake_q` → `wake_up_process()`: **no WF_SYNC**, task context.
//!   If fewer than `n` tasks wait, the shortfall is remembered as pending wakes (a
//!   `sem_post` before the `sem_wait`, or schbench's `fpost` setting the word before the
//!   waiter looks at it), so no wakeup is lost. `n == u32::MAX` is a broadcast
//!   (`pthread_cond_broadcast`, barriers) and leaves nothing pending.
//! - `wait()` consumes a pending wake and returns at once (the word no longer has the expected
//!   value: `-EAGAIN`); otherwise the task queues and sleeps until a wake removes it from the
//!   list. A queued waiter that is woken returns without re-checking (`futex_wait` returns 0).
//!
//! Consequence: a condvar `signal` with nobody waiting is remembered here although the real
//! condvar would lose it; workloads that rely on losing signals must not use `FutexWake` for
//! them.

use std::collections::VecDeque;

use super::Wake;
use crate::task::TaskId;

/// A futex.
#[derive(Clone, Debug, Default)]
pub struct Futex {
    waiters: VecDeque<TaskId>,
    pending: u32,
}

impl Futex {
    pub fn new() -> Futex {
        Futex::default()
    }

    pub fn nr_waiters(&self) -> usize {
        self.waiters.len()
    }
    pub fn pending(&self) -> u32 {
        self.pending
    }
    pub fn is_waiting(&self, t: TaskId) -> bool {
        self.waiters.contains(&t)
    }

    /// `FUTEX_WAIT` by `t`; `resumed` when `t` already queued in this call and was woken.
    /// Returns true if `t` must sleep.
    pub fn wait(&mut self, t: TaskId, resumed: bool) -> bool {
        if resumed {
            // Woken (dequeued by a wake) → done; still queued → a spurious retry, sleep on.
            return self.is_waiting(t);
        }
        if self.pending > 0 {
            self.pending -= 1;
            return false;
        }
        self.waiters.push_back(t);
        true
    }

    /// `FUTEX_WAKE` of up to `n` waiters; returns how many were woken.
    pub fn wake(&mut self, n: u32, wakes: &mut Vec<Wake>) -> u32 {
        let mut woken = 0;
        while woken < n {
            let Some(task) = self.waiters.pop_front() else { break };
            wakes.push(Wake { task, flags: 0, in_task: true });
            woken += 1;
        }
        if n != u32::MAX {
            self.pending = self.pending.saturating_add(n - woken);
        }
        woken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_n_wakes_fifo_without_sync_and_remembers_the_shortfall() {
        let mut f = Futex::new();
        for t in 0..3 {
            assert!(f.wait(TaskId(t), false));
        }
        let mut w = Vec::new();
        assert_eq!(f.wake(2, &mut w), 2);
        assert_eq!(
            w,
            [Wake { task: TaskId(0), flags: 0, in_task: true }, Wake { task: TaskId(1), flags: 0, in_task: true }]
        );
        assert!(!f.wait(TaskId(0), true), "a woken waiter returns");
        assert!(f.wait(TaskId(2), true), "a waiter still queued sleeps on");
        w.clear();
        assert_eq!(f.wake(3, &mut w), 1);
        assert_eq!(f.pending(), 2);
        assert!(!f.wait(TaskId(5), false));
        assert!(!f.wait(TaskId(5), false));
        assert!(f.wait(TaskId(5), false));
    }

    #[test]
    fn broadcast_leaves_nothing_pending() {
        let mut f = Futex::new();
        f.wait(TaskId(0), false);
        let mut w = Vec::new();
        assert_eq!(f.wake(u32::MAX, &mut w), 1);
        assert_eq!(f.pending(), 0);
    }
}
