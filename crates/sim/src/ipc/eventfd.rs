//! An eventfd counter: `eventfd_write()` and `eventfd_read_iter()` (fs/eventfd.c v7.3; spec
//! workloads.md §1.1).
//!
//! - A write adds 1 to the counter (an 8-byte write of the value 1; the program's byte count
//!   is not a value) and, if anybody waits, wakes **every** waiter on `ctx->wqh`
//!   (`wake_up_locked_poll`: blocked readers and pollers) **without WF_SYNC**.
//! - A read (non-semaphore mode) takes the whole counter and returns; at 0 the reader sleeps
//!   as a non-exclusive waiter added at the tail (`wait_event_interruptible_locked_irq`). All
//!   woken readers retry; the first to run consumes the count, the others sleep again.
//!
//! Not modelled: semaphore mode, counter overflow (writers never block), the `EPOLLOUT` wake a
//! read issues (only writers blocked on overflow or `POLLOUT` pollers would see it).

use super::{Transfer, WaitQueue, Wake};
use crate::task::TaskId;

/// Bytes an eventfd read or write copies.
pub const EVENTFD_BYTES: u32 = 8;

/// An eventfd.
#[derive(Clone, Debug, Default)]
pub struct EventFd {
    count: u64,
    pub(super) wqh: WaitQueue,
}

impl EventFd {
    pub fn new() -> EventFd {
        EventFd::default()
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn readable(&self) -> bool {
        self.count > 0
    }

    /// `eventfd_write()` of the value 1.
    pub fn write(&mut self, wakes: &mut Vec<Wake>) -> Transfer {
        self.count += 1;
        self.wqh.wake(0, 0, true, wakes);
        Transfer { bytes: EVENTFD_BYTES, blocked: false }
    }

    /// `eventfd_read_iter()`: takes the counter, or sleeps while it is 0.
    pub fn read(&mut self, t: TaskId) -> Transfer {
        if self.count == 0 {
            self.wqh.add_tail(t);
            return Transfer { bytes: 0, blocked: true };
        }
        self.count = 0;
        Transfer { bytes: EVENTFD_BYTES, blocked: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_wakes_all_readers_and_pollers_without_sync() {
        let mut e = EventFd::new();
        assert!(e.read(TaskId(0)).blocked);
        assert!(e.read(TaskId(1)).blocked);
        e.wqh.add_poll(TaskId(2), true);
        let mut w = Vec::new();
        e.write(&mut w);
        let woken: Vec<(u32, u32)> = w.iter().map(|x| (x.task.0, x.flags)).collect();
        assert_eq!(woken, [(2, 0), (0, 0), (1, 0)]);
        e.write(&mut w);
        assert_eq!(e.count(), 2);
        assert_eq!(e.read(TaskId(0)).bytes, 8);
        assert!(e.read(TaskId(1)).blocked, "the count was consumed");
    }
}
