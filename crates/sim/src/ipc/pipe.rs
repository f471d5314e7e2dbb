//! Anonymous pipes: `anon_pipe_write()` and `anon_pipe_read()` (fs/pipe.c v7.3; spec
//! workloads.md §1.1, §1.3, §2.3).
//!
//! - The pipe is a ring of `slots` page buffers of 4096 bytes (`pipe->max_usage`).
//! - A write first merges `len % 4096` bytes into the last buffer if the pipe was not empty and
//!   that buffer has room (`PIPE_BUF_FLAG_CAN_MERGE`; this also works when every slot is used),
//!   then fills new buffers of up to a page each while slots are free. When the pipe is full with
//!   data left, the writer wakes the readers if the pipe was empty when it started (or after its
//!   last sleep) and sleeps as an exclusive waiter on `wr_wait`; the rest is written when woken
//!   (no merge step on that path: the kernel is inside its loop).
//! - At the end of a write, readers are woken (`rd_wait`, WF_SYNC, one exclusive reader plus
//!   all pollers) only if the pipe was empty before the write (`was_empty`), or on every write
//!   when `poll_usage` is set (older kernels, see `IpcBehavior::pipe_poll_usage`). A writer that
//!   slept and leaves room wakes the next writer (`wake_next_writer`).
//! - A read copies up to `len` bytes across buffers. Releasing a whole buffer of a **full**
//!   pipe wakes one writer (WF_SYNC) at the end of the read; partial reads of a buffer never
//!   do. An empty pipe makes the reader sleep as an exclusive waiter on `rd_wait`; a reader that
//!   slept and leaves data behind wakes the next reader (`wake_next_reader`).
//!
//! Not modelled: O_NONBLOCK, packet mode, closed ends (writers and readers always exist), the
//! 7.3 `pseudo_edgetrigger` (set only by EPOLLET polls).

use std::collections::VecDeque;

use super::{Mutex, Transfer, WaitQueue, Wake};
use crate::fair::wf;
use crate::task::TaskId;

/// `PAGE_SIZE`.
pub const PAGE: u32 = 4096;

/// One `struct pipe_buffer`: `offset` and `len` within its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Buf {
    offset: u32,
    len: u32,
}

/// An anonymous pipe.
#[derive(Clone, Debug)]
pub struct Pipe {
    slots: u32,
    /// Used buffers, tail (oldest) first.
    bufs: VecDeque<Buf>,
    pub(super) rd_wait: WaitQueue,
    pub(super) wr_wait: WaitQueue,
    /// Older kernels' `pipe->poll_usage` (every write wakes the readers).
    pub poll_usage: bool,
    /// `pipe->mutex`, held by the engine across the locked part of each read and write.
    pub mutex: Mutex,
}

impl Pipe {
    pub fn new(slots: u32) -> Pipe {
        assert!(slots > 0, "a pipe needs at least one slot");
        Pipe {
            slots,
            bufs: VecDeque::with_capacity(slots as usize),
            rd_wait: WaitQueue::new(),
            wr_wait: WaitQueue::new(),
            poll_usage: false,
            mutex: Mutex::new(),
        }
    }

    /// `pipe_full()`.
    pub fn full(&self) -> bool {
        self.bufs.len() as u32 >= self.slots
    }
    /// `pipe_readable()` (writers always exist here).
    pub fn readable(&self) -> bool {
        !self.bufs.is_empty()
    }
    /// Bytes queued.
    pub fn bytes(&self) -> u32 {
        self.bufs.iter().map(|b| b.len).sum()
    }
    /// Slots in use.
    pub fn used_slots(&self) -> u32 {
        self.bufs.len() as u32
    }
    /// Tasks sleeping for room (tests).
    pub fn blocked_writers(&self) -> usize {
        self.wr_wait.len()
    }

    /// `anon_pipe_write()` of `len` bytes (what is left of them when `resumed`, i.e. after a
    /// sleep inside the same call).
    pub fn write(&mut self, t: TaskId, len: u32, resumed: bool, wakes: &mut Vec<Wake>) -> Transfer {
        if len == 0 {
            return Transfer { bytes: 0, blocked: false };
        }
        // After a sleep, was_empty is re-evaluated and the next writer is woken if room is left.
        let was_empty = self.bufs.is_empty();
        let mut wake_next_writer = resumed;
        let mut left = len;
        if !resumed {
            let chars = len % PAGE;
            if chars != 0
                && let Some(last) = self.bufs.back_mut()
                && last.offset + last.len + chars <= PAGE
            {
                last.len += chars;
                left -= chars;
            }
        }
        while left > 0 {
            if !self.full() {
                let n = left.min(PAGE);
                self.bufs.push_back(Buf { offset: 0, len: n });
                left -= n;
                continue;
            }
            // Full: wake the readers if we found the pipe empty, then sleep for room.
            if was_empty {
                self.rd_wait.wake(1, wf::SYNC, true, wakes);
            }
            self.wr_wait.add_exclusive(t);
            return Transfer { bytes: len - left, blocked: true };
        }
        if self.full() {
            wake_next_writer = false;
        }
        if was_empty || self.poll_usage {
            self.rd_wait.wake(1, wf::SYNC, true, wakes);
        }
        if wake_next_writer {
            self.wr_wait.wake(1, wf::SYNC, true, wakes);
        }
        Transfer { bytes: len, blocked: false }
    }

    /// `anon_pipe_read()` of up to `len` bytes; `resumed` after a sleep inside the same call.
    pub fn read(&mut self, t: TaskId, len: u32, resumed: bool, wakes: &mut Vec<Wake>) -> Transfer {
        if len == 0 {
            return Transfer { bytes: 0, blocked: false };
        }
        let mut copied = 0;
        let mut wake_writer = false;
        while copied < len {
            let full = self.full();
            let Some(buf) = self.bufs.front_mut() else { break };
            let chars = buf.len.min(len - copied);
            buf.offset += chars;
            buf.len -= chars;
            copied += chars;
            if buf.len == 0 {
                // pipe_update_tail(): a whole slot of a full pipe is released.
                wake_writer |= full;
                self.bufs.pop_front();
            }
        }
        if copied == 0 {
            self.rd_wait.add_exclusive(t);
            return Transfer { bytes: 0, blocked: true };
        }
        let wake_next_reader = resumed && !self.bufs.is_empty();
        if wake_writer {
            self.wr_wait.wake(1, wf::SYNC, true, wakes);
        }
        if wake_next_reader {
            self.rd_wait.wake(1, wf::SYNC, true, wakes);
        }
        Transfer { bytes: copied, blocked: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: TaskId = TaskId(0);
    const W: TaskId = TaskId(1);
    const W2: TaskId = TaskId(2);

    fn sync(t: TaskId) -> Wake {
        Wake { task: t, flags: wf::SYNC, in_task: true }
    }

    #[test]
    fn only_a_write_into_an_empty_pipe_wakes_the_reader() {
        let mut p = Pipe::new(16);
        let mut w = Vec::new();
        assert_eq!(p.read(R, 100, false, &mut w), Transfer { bytes: 0, blocked: true });
        assert_eq!(p.write(W, 100, false, &mut w), Transfer { bytes: 100, blocked: false });
        assert_eq!(w, [sync(R)]);
        w.clear();
        // Not empty any more: merged into the same page, no wake.
        p.write(W, 100, false, &mut w);
        assert!(w.is_empty());
        assert_eq!((p.used_slots(), p.bytes()), (1, 200));
    }

    #[test]
    fn small_writes_merge_forty_per_page() {
        let mut p = Pipe::new(16);
        let mut w = Vec::new();
        for _ in 0..40 {
            p.write(W, 100, false, &mut w);
        }
        assert_eq!(p.used_slots(), 1);
        p.write(W, 100, false, &mut w); // 4100 > 4096: a new slot
        assert_eq!(p.used_slots(), 2);
        // 16 slots × 40 messages fill the pipe; the next write blocks.
        for _ in 41..640 {
            assert!(!p.write(W, 100, false, &mut w).blocked);
        }
        assert!(p.full());
        assert_eq!(p.write(W, 100, false, &mut w), Transfer { bytes: 0, blocked: true });
        assert_eq!(p.blocked_writers(), 1);
    }

    #[test]
    fn a_full_pipe_still_merges_into_its_last_page() {
        let mut p = Pipe::new(2);
        let mut w = Vec::new();
        p.write(W, 4000, false, &mut w);
        p.write(W, 50, false, &mut w); // merged into page 1
        p.write(W, 4000, false, &mut w); // page 2: full now
        assert!(p.full());
        assert_eq!(p.write(W, 96, false, &mut w), Transfer { bytes: 96, blocked: false });
        assert_eq!(p.write(W, 1, false, &mut w), Transfer { bytes: 0, blocked: true });
    }

    #[test]
    fn writers_wake_only_when_a_whole_slot_of_a_full_pipe_is_released() {
        let mut p = Pipe::new(2);
        let mut w = Vec::new();
        for _ in 0..80 {
            p.write(W, 100, false, &mut w);
        }
        assert!(p.write(W, 100, false, &mut w).blocked);
        w.clear();
        // 39 messages of the first page: the slot is not released.
        for _ in 0..39 {
            assert_eq!(p.read(R, 100, false, &mut w).bytes, 100);
        }
        assert!(w.is_empty());
        // The 40th releases the slot (40 × 100 = 4000 bytes, the page holds exactly those).
        p.read(R, 100, false, &mut w);
        assert_eq!(w, [sync(W)]);
        assert_eq!(p.blocked_writers(), 0);
        w.clear();
        // Reading on from a pipe that is not full wakes nobody.
        p.read(R, 4000, false, &mut w);
        assert!(w.is_empty());
    }

    #[test]
    fn partial_write_wakes_the_reader_then_blocks_and_finishes_when_woken() {
        let mut p = Pipe::new(2);
        let mut w = Vec::new();
        assert!(p.read(R, 10_000, false, &mut w).blocked);
        let x = p.write(W, 10_000, false, &mut w);
        assert_eq!(x, Transfer { bytes: 8192, blocked: true });
        assert_eq!(w, [sync(R)]);
        w.clear();
        // The woken reader takes everything: two slots released from a full pipe.
        assert_eq!(p.read(R, 10_000, true, &mut w).bytes, 8192);
        assert_eq!(w, [sync(W)]);
        w.clear();
        // The writer continues with the rest; the pipe was empty again, so the reader is woken.
        p.read(R, 10_000, false, &mut w);
        let x = p.write(W, 10_000 - 8192, true, &mut w);
        assert_eq!(x, Transfer { bytes: 1808, blocked: false });
        assert_eq!(w, [sync(R)]);
    }

    #[test]
    fn woken_writer_that_leaves_room_wakes_the_next() {
        let mut p = Pipe::new(2);
        let mut w = Vec::new();
        p.write(W, 8192, false, &mut w);
        assert!(p.write(W, 10, false, &mut w).blocked);
        assert!(p.write(W2, 10, false, &mut w).blocked);
        w.clear();
        // Two slots released, the first from a full pipe: one exclusive writer is woken.
        p.read(R, 8192, false, &mut w);
        assert_eq!(w, [sync(W)]);
        w.clear();
        // W writes 10 bytes into the empty pipe: wakes readers (none) and, the pipe not being
        // full, the next writer.
        assert!(!p.write(W, 10, true, &mut w).blocked);
        assert_eq!(w, [sync(W2)]);
    }

    #[test]
    fn poll_usage_makes_every_write_wake_pollers() {
        let mut p = Pipe::new(16);
        let mut w = Vec::new();
        p.write(W, 4, false, &mut w);
        p.rd_wait.add_poll(R, true);
        p.write(W, 4, false, &mut w);
        assert!(w.is_empty(), "7.3: a plain poll does not turn on per-write wakeups");
        p.poll_usage = true;
        p.write(W, 4, false, &mut w);
        assert_eq!(w, [sync(R)]);
    }

    #[test]
    fn resumed_reader_leaving_data_wakes_the_next_reader() {
        let mut p = Pipe::new(16);
        let mut w = Vec::new();
        p.read(R, 4, false, &mut w);
        p.read(W2, 4, false, &mut w);
        p.write(W, 8, false, &mut w);
        assert_eq!(w, [sync(R)]);
        w.clear();
        assert_eq!(p.read(R, 4, true, &mut w).bytes, 4);
        assert_eq!(w, [sync(W2)]);
    }
}
