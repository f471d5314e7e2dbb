//! One direction of a TCP connection over loopback: `tcp_sendmsg()` → `loopback_xmit()` →
//! NET_RX softirq → `tcp_data_ready()` → `sock_def_readable()` on the receiver, and
//! `sk_stream_write_space()` back to the sender (net/ipv4/tcp*.c, drivers/net/loopback.c,
//! net/core/stream.c v7.3; spec workloads.md §1.1, §6.3).
//!
//! - On loopback the receive path runs in NET_RX softirq **inline in the sender's context on
//!   the sender's CPU**, so the receiver is woken with WF_SYNC from softirq context
//!   (`in_task` false; the engine passes the sender as the waker, so `record_wakee` is charged to
//!   it) on every send, if it sleeps (`sk_wait_data`, non-exclusive; pollers too).
//! - Send-side memory: each send is one skb charged by [`skb::truesize`](super::skb::truesize);
//!   a send is admitted while `sk_wmem_queued < sk_sndbuf` (`sk_stream_memory_free`), else the
//!   sender sleeps (`sk_stream_wait_memory`, non-exclusive). **Approximation:** the kernel
//!   uncharges a skb when it is ACKed and the receive window bounds how much is sent; here the
//!   charge lasts until the reader consumes the data (the window update / ACK that the reader's
//!   `tcp_cleanup_rbuf` sends), which merges `sndbuf` and the receiver's buffer into one limit.
//! - Blocked senders are woken **without** WF_SYNC (`sk_stream_write_space` →
//!   `wake_up_interruptible_poll`) when the socket is writable again
//!   (`__sk_stream_is_writeable`: `sndbuf − wmem ≥ wmem / 2`). That ACK is processed in softirq
//!   in the reader's context, so the wake has `in_task` false.
//! - A read copies up to `len` bytes across skbs; an empty queue makes the reader sleep.
//!
//! Not modelled: segmentation by MSS, Nagle and delayed ACKs, ksoftirqd offload under load.

use super::skb::SocketDir;
use super::{Transfer, Wake};
use crate::task::TaskId;

/// Largest payload per skb (`tcp_send_mss` size goal on loopback, 64 KiB).
const MAX_SKB: u32 = 64 * 1024;

/// One direction of a loopback TCP connection.
#[derive(Clone, Debug)]
pub struct TcpLoopback {
    pub(super) dir: SocketDir,
}

impl TcpLoopback {
    pub fn new(sndbuf: u32, socket_sync: bool) -> TcpLoopback {
        TcpLoopback { dir: SocketDir::new(sndbuf, socket_sync) }
    }

    pub fn wmem(&self) -> u32 {
        self.dir.wmem()
    }
    pub fn readable(&self) -> bool {
        self.dir.readable()
    }
    pub fn blocked_senders(&self) -> usize {
        self.dir.blocked_senders()
    }

    /// `tcp_sendmsg()` of `len` bytes (what is left of them after a sleep).
    pub fn write(&mut self, t: TaskId, len: u32, wakes: &mut Vec<Wake>) -> Transfer {
        let mut sent = 0;
        let mut blocked = false;
        while sent < len {
            if self.dir.queue.wmem >= self.dir.sndbuf {
                self.dir.wr_wait.add(t);
                blocked = true;
                break;
            }
            let chunk = (len - sent).min(MAX_SKB);
            self.dir.queue.push(chunk);
            sent += chunk;
        }
        if sent > 0 {
            // tcp_data_ready() in the NET_RX softirq run at the sender's local_bh_enable().
            self.dir.rd_wait.wake(0, self.dir.sync, false, wakes);
        }
        Transfer { bytes: sent, blocked }
    }

    /// `tcp_recvmsg()` of up to `len` bytes.
    pub fn read(&mut self, t: TaskId, len: u32, wakes: &mut Vec<Wake>) -> Transfer {
        if len == 0 {
            return Transfer { bytes: 0, blocked: false };
        }
        if self.dir.queue.is_empty() {
            self.dir.rd_wait.add(t);
            return Transfer { bytes: 0, blocked: true };
        }
        let copied = self.dir.queue.consume(len, |_| {});
        let wmem = u64::from(self.dir.queue.wmem);
        if !self.dir.wr_wait.is_empty() && u64::from(self.dir.sndbuf) >= wmem + wmem / 2 {
            self.dir.wr_wait.wake(0, 0, false, wakes);
        }
        Transfer { bytes: copied, blocked: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fair::wf;

    #[test]
    fn receiver_wake_is_sync_from_softirq_and_sender_wake_is_not_sync() {
        let mut s = TcpLoopback::new(768 * 3, true);
        let mut w = Vec::new();
        assert!(s.read(TaskId(0), 1, &mut w).blocked);
        s.write(TaskId(1), 1, &mut w);
        assert_eq!(w, [Wake { task: TaskId(0), flags: wf::SYNC, in_task: false }]);
        w.clear();
        s.write(TaskId(1), 1, &mut w);
        s.write(TaskId(1), 1, &mut w);
        assert!(s.write(TaskId(1), 1, &mut w).blocked);
        // 2 skbs left: sndbuf − wmem = 2304 − 1536 = 768 ≥ wmem / 2 = 768 → writable.
        s.read(TaskId(0), 1, &mut w);
        assert_eq!(w, [Wake { task: TaskId(1), flags: 0, in_task: false }]);
    }
}
