//! One direction of a unix stream socketpair: `unix_stream_sendmsg()`,
//! `unix_stream_read_generic()`, `sock_def_readable()` and `unix_write_space()`
//! (net/unix/af_unix.c, net/core/sock.c v7.3; spec workloads.md §1.1, §1.3, §2.3).
//!
//! - A send is split into skbs of at most `min(sndbuf/2 − 64, SKB_MAX_HEAD(0) + 32 KiB)`
//!   bytes; each is admitted while the sending socket's `sk_wmem_alloc < sk_sndbuf` (checked
//!   before charging, so the last admitted skb overshoots, `sock_alloc_send_pskb`); at
//!   `wmem ≥ sndbuf` the sender sleeps as a non-exclusive waiter on the sending socket's queue
//!   (`sock_wait_for_wmem`). Skbs are charged by [`skb::truesize`](super::skb::truesize).
//! - Every send that queued data wakes the receiving socket's queue (`sock_def_readable`:
//!   every non-exclusive waiter — blocked readers and pollers — with WF_SYNC). The kernel
//!   wakes once per skb; the first wake empties the queue of sleepers, so one wake per call is
//!   the same.
//! - A read copies up to `len` bytes across skbs (a skb may be consumed partially); each skb
//!   fully consumed is freed, and the reader then wakes **all** blocked senders (WF_SYNC) if
//!   `4 · wmem ≤ sndbuf` (`unix_writable`). An empty queue makes the reader sleep as a
//!   non-exclusive waiter (`unix_stream_data_wait`).
//! - There is no receive-side limit.
//!
//! Not modelled: the reverse direction sharing the same socket queues (its waiters would see
//! this direction's wakes), `MSG_WAITALL`, `SO_RCVLOWAT`, shutdown.

use super::skb::{SKB_MAX_HEAD, SocketDir};
use super::{Transfer, Wake};
use crate::task::TaskId;

/// `UNIX_SKB_FRAGS_SZ` (32 KiB of page frags per skb).
const UNIX_SKB_FRAGS_SZ: u32 = 32 * 1024;

/// One direction of a unix stream socketpair.
#[derive(Clone, Debug)]
pub struct UnixStream {
    pub(super) dir: SocketDir,
}

impl UnixStream {
    pub fn new(sndbuf: u32, socket_sync: bool) -> UnixStream {
        UnixStream { dir: SocketDir::new(sndbuf, socket_sync) }
    }

    pub fn wmem(&self) -> u32 {
        self.dir.wmem()
    }
    pub fn nr_skbs(&self) -> usize {
        self.dir.queue.nr_skbs()
    }
    pub fn readable(&self) -> bool {
        self.dir.readable()
    }
    pub fn blocked_senders(&self) -> usize {
        self.dir.blocked_senders()
    }

    /// Largest skb payload of one send.
    fn max_chunk(&self) -> u32 {
        ((self.dir.sndbuf >> 1).saturating_sub(64)).clamp(1, SKB_MAX_HEAD + UNIX_SKB_FRAGS_SZ)
    }

    /// `unix_stream_sendmsg()` of `len` bytes (what is left of them after a sleep).
    pub fn write(&mut self, t: TaskId, len: u32, wakes: &mut Vec<Wake>) -> Transfer {
        let mut sent = 0;
        let mut blocked = false;
        while sent < len {
            if self.dir.queue.wmem >= self.dir.sndbuf {
                self.dir.wr_wait.add(t);
                blocked = true;
                break;
            }
            let chunk = (len - sent).min(self.max_chunk());
            self.dir.queue.push(chunk);
            sent += chunk;
        }
        if sent > 0 {
            self.dir.rd_wait.wake(0, self.dir.sync, true, wakes);
        }
        Transfer { bytes: sent, blocked }
    }

    /// `unix_stream_recvmsg()` of up to `len` bytes.
    pub fn read(&mut self, t: TaskId, len: u32, wakes: &mut Vec<Wake>) -> Transfer {
        if len == 0 {
            return Transfer { bytes: 0, blocked: false };
        }
        if self.dir.queue.is_empty() {
            self.dir.rd_wait.add(t);
            return Transfer { bytes: 0, blocked: true };
        }
        let (sndbuf, sync) = (self.dir.sndbuf, self.dir.sync);
        let wr_wait = &mut self.dir.wr_wait;
        let copied = self.dir.queue.consume(len, |wmem| {
            // sock_wfree() → unix_write_space(): writable at 25 % and a sleeper waits.
            if u64::from(wmem) * 4 <= u64::from(sndbuf) && !wr_wait.is_empty() {
                wr_wait.wake(0, sync, true, wakes);
            }
        });
        Transfer { bytes: copied, blocked: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fair::wf;

    const R: TaskId = TaskId(0);

    #[test]
    fn admits_while_below_sndbuf_then_blocks() {
        let mut s = UnixStream::new(212_992, true);
        let mut w = Vec::new();
        let mut n = 0;
        while !s.write(TaskId(1), 100, &mut w).blocked {
            n += 1;
        }
        // ⌈212992 / 768⌉ = 278 skbs admitted, the last one overshooting.
        assert_eq!(n, 278);
        assert_eq!(s.nr_skbs(), 278);
        assert!(s.wmem() >= 212_992);
        assert_eq!(s.blocked_senders(), 1);
    }

    #[test]
    fn every_send_wakes_a_sleeping_reader_with_wf_sync() {
        let mut s = UnixStream::new(212_992, true);
        let mut w = Vec::new();
        assert!(s.read(R, 100, &mut w).blocked);
        s.write(TaskId(1), 100, &mut w);
        assert_eq!(w, [Wake { task: R, flags: wf::SYNC, in_task: true }]);
        w.clear();
        // The reader was removed by the wake: the next send finds no sleeper.
        s.write(TaskId(1), 100, &mut w);
        assert!(w.is_empty());
        // A read of D bytes consumes exactly one skb of D bytes.
        assert_eq!(s.read(R, 100, &mut w).bytes, 100);
        assert_eq!(s.nr_skbs(), 1);
    }

    #[test]
    fn all_blocked_senders_wake_at_the_quarter_mark() {
        let sndbuf = 768 * 8;
        let mut s = UnixStream::new(sndbuf, true);
        let mut w = Vec::new();
        for _ in 0..8 {
            assert!(!s.write(TaskId(1), 100, &mut w).blocked);
        }
        for t in 1..=3 {
            assert!(s.write(TaskId(t), 100, &mut w).blocked);
        }
        assert_eq!(s.blocked_senders(), 3);
        // Freeing down to 3 skbs (2304 > 1536) wakes nobody; 2 skbs (1536 ≤ 6144/4) wakes all.
        for _ in 0..5 {
            s.read(R, 100, &mut w);
        }
        assert!(w.is_empty());
        s.read(R, 100, &mut w);
        let woken: Vec<u32> = w.iter().map(|x| x.task.0).collect();
        assert_eq!(woken, [3, 2, 1]); // head insertion: the last sleeper first
        assert!(w.iter().all(|x| x.flags == wf::SYNC));
        assert_eq!(s.blocked_senders(), 0);
    }

    #[test]
    fn large_sends_split_into_skbs() {
        let mut s = UnixStream::new(212_992, false);
        let mut w = Vec::new();
        s.read(R, 1, &mut w);
        s.write(TaskId(1), 100_000, &mut w);
        assert_eq!(s.nr_skbs(), 3); // 36544 + 36544 + 26912
        assert_eq!(w, [Wake { task: R, flags: 0, in_task: true }]);
        w.clear();
        assert_eq!(s.read(R, 200_000, &mut w).bytes, 100_000);
    }
}
