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

use super::skb::SkbQueue;
use super::{Transfer, WaitQueue, Wake};
use crate::fair::wf;
use crate::task::TaskId;

/// Largest payload per skb (`tcp_send_mss` size goal on loopback, 64 KiB).
const MAX_SKB: u32 = 64 * 1024;

/// One direction of a loopback TCP connection.
#[derive(Clone, Debug)]
pub struct TcpLoopback {
    sndbuf: u32,
    /// WF_SYNC on the receiver wake (`IpcBehavior::socket_sync`).
    sync: u32,
    queue: SkbQueue,
    pub(super) rd_wait: WaitQueue,
    pub(super) wr_wait: WaitQueue,
}

impl TcpLoopback {
    pub fn new(sndbuf: u32, socket_sync: bool) -> TcpLoopback {
        assert!(sndbuf > 0, "a socket needs a positive sndbuf");
        TcpLoopback {
            sndbuf,
            sync: if socket_sync { wf::SYNC } else { 0 },
            queue: SkbQueue::default(),
            rd_wait: WaitQueue::new(),
            wr_wait: WaitQueue::new(),
        }
    }

    pub fn wmem(&self) -> u32 {
        self.queue.wmem
    }
    pub fn readable(&self) -> bool {
        !self.queue.is_empty()
    }
    pub fn blocked_senders(&self) -> usize {
        self.wr_wait.len()
    }

    /// `tcp_sendmsg()` of `len` bytes (what is left of them after a sleep).
    pub fn write(&mut self, t: TaskId, len: u32, wakes: &mut Vec<Wake>) -> Transfer {
        let mut sent = 0;
        let mut blocked = false;
        while sent < len {
            if self.queue.wmem >= self.sndbuf {
                self.wr_wait.add(t);
                blocked = true;
                break;
            }
            let chunk = (len - sent).min(MAX_SKB);
            self.queue.push(chunk);
            sent += chunk;
        }
        if sent > 0 {
            // tcp_data_ready() in the NET_RX softirq run at the sender's local_bh_enable().
            self.rd_wait.wake(0, self.sync, false, wakes);
        }
        Transfer { bytes: sent, blocked }
    }

    /// `tcp_recvmsg()` of up to `len` bytes.
    pub fn read(&mut self, t: TaskId, len: u32, wakes: &mut Vec<Wake>) -> Transfer {
        if len == 0 {
            return Transfer { bytes: 0, blocked: false };
        }
        if self.queue.is_empty() {
            self.rd_wait.add(t);
            return Transfer { bytes: 0, blocked: true };
        }
        let copied = self.queue.consume(len, |_| {});
        let wmem = u64::from(self.queue.wmem);
        if !self.wr_wait.is_empty() && u64::from(self.sndbuf) >= wmem + wmem / 2 {
            self.wr_wait.wake(0, 0, false, wakes);
        }
        Transfer { bytes: copied, blocked: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
