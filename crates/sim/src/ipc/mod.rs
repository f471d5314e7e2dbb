//! IPC objects with the kernel's wake semantics (spec workloads.md §1.1, §1.3): what a
//! workload's pipes, sockets, futexes and poll sets are, independent of the engine.
//!
//! Every object is a pure state machine: an operation changes the object's state, may queue the
//! calling task on one of its wait queues (the caller then blocks), and appends the wakeups the
//! kernel would issue to a list the engine issues at the end of the system call's kernel time
//! (the kernel wakes after copying and after dropping the object's lock). The engine
//! (`engine/ipc.rs`) owns the timing; it retries an operation when its task is woken, passing
//! `resumed = true` so that the retry continues the same system call.
//!
//! Files: [`waitqueue`] (`wait_queue_head`), [`pipe`], [`skb`] (socket send-buffer accounting
//! shared by) [`unix`] and [`tcp`], [`futex`], [`eventfd`].

pub mod eventfd;
pub mod futex;
pub mod mutex;
pub mod pipe;
pub mod skb;
pub mod tcp;
pub mod unix;
pub mod waitqueue;

pub use eventfd::EventFd;
pub use futex::Futex;
pub use mutex::Mutex;
pub use pipe::Pipe;
pub use tcp::TcpLoopback;
pub use unix::UnixStream;
pub use waitqueue::WaitQueue;

use crate::task::TaskId;

/// An object a workload creates; task programs refer to it by its index in
/// `SimSetup::objects`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectSpec {
    /// An anonymous pipe with `slots` pages (16 by default; 2 over `pipe-user-pages-soft`).
    Pipe { slots: u32 },
    /// One direction of a unix stream socketpair; `sndbuf` is the sending socket's buffer.
    UnixStream { sndbuf: u32 },
    /// One direction of a TCP connection over loopback.
    TcpLoopback { sndbuf: u32 },
    /// A futex word with its wait queue.
    Futex,
    /// An eventfd counter.
    EventFd,
}

impl ObjectSpec {
    /// Whether `Op::Write`/`Op::Read` apply (pipes, sockets, eventfds).
    pub fn is_stream(&self) -> bool {
        !matches!(self, ObjectSpec::Futex)
    }
    /// Whether `poll()`/`epoll` can watch it for readability.
    pub fn is_pollable(&self) -> bool {
        self.is_stream()
    }
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            ObjectSpec::Pipe { slots: 0 } => Err("a pipe needs at least one slot".into()),
            ObjectSpec::UnixStream { sndbuf: 0 } | ObjectSpec::TcpLoopback { sndbuf: 0 } => {
                Err("a socket needs a positive sndbuf".into())
            }
            _ => Ok(()),
        }
    }
}

/// A wakeup an operation asks for: `try_to_wake_up(task, flags)` with `in_task` false when the
/// kernel issues it from softirq context (TCP over loopback).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wake {
    pub task: TaskId,
    /// `WF_*` flags (`crate::fair::wf`): `SYNC` or nothing.
    pub flags: u32,
    pub in_task: bool,
}

/// What one attempt of a read or a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// Bytes copied by this attempt.
    pub bytes: u32,
    /// The caller was queued on the object and must sleep (after issuing the wakes); when woken
    /// it retries with what is left.
    pub blocked: bool,
}

/// Kernel-version switches of the IPC wake paths (spec §1.1, §9.3). These are not scheduler
/// behaviour, so they live here rather than in `SchedConfig`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpcBehavior {
    /// ≥ 6.10 (Xuewen Yan's `ep_poll_callback` patch, in the 7.3 tree): an epoll waiter
    /// inherits WF_SYNC from the source wake. Before: epoll wakes are never sync.
    pub epoll_sync: bool,
    /// Older kernels' `pipe->poll_usage`: any `pipe_poll()` of a pipe makes every later write
    /// wake its readers, not only writes into an empty pipe. 7.3 sets its
    /// `pseudo_edgetrigger` only for EPOLLET, which the program vocabulary has no way to ask
    /// for, so 7.3 is `false`.
    pub pipe_poll_usage: bool,
    /// Socket wakeups (`sock_def_readable`, `unix_write_space`) pass WF_SYNC. True in 7.3;
    /// false models the 2026 RFC "net/sock: Propagate WF_SYNC only when requested".
    pub socket_sync: bool,
}

impl IpcBehavior {
    pub fn v7_3() -> IpcBehavior {
        IpcBehavior { epoll_sync: true, pipe_poll_usage: false, socket_sync: true }
    }
}

/// Kernel CPU time of each operation on top of `Costs::syscall_ns` (charged once per system
/// call), `Costs::copy_ns_per_kib` (per byte copied) and the waker's `try_to_wake_up` cost per
/// wakee (`Costs::wakeup_local_ns` or `wakeup_remote_ipi_ns`). The defaults are workloads.md
/// §10.2's per-operation estimates minus the syscall and copy parts **\[estimate\]**; every
/// attempt is charged (a read that blocks and retries pays its base twice, once per pass through
/// the object's lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpcCosts {
    /// `anon_pipe_write` (§10.2: 0.35 µs for ≤ 100 B without wake).
    pub pipe_write_ns: u64,
    /// `anon_pipe_read` (§10.2: 0.30 µs).
    pub pipe_read_ns: u64,
    /// `unix_stream_sendmsg` of one skb (§10.2: 0.7 µs for 100 B).
    pub unix_send_ns: u64,
    /// `unix_stream_recvmsg` (§10.2: 0.6 µs).
    pub unix_recv_ns: u64,
    /// `tcp_sendmsg` including the inline NET_RX softirq receive on the sender's CPU (§10.2:
    /// 2.5 µs for 1 B).
    pub tcp_send_ns: u64,
    /// `tcp_recvmsg` (§10.2: 0.8 µs).
    pub tcp_recv_ns: u64,
    /// `eventfd_write` / `eventfd_read`.
    pub eventfd_ns: u64,
    /// `FUTEX_WAIT` up to blocking (§10.2: 0.4 µs).
    pub futex_wait_ns: u64,
    /// `FUTEX_WAKE` without the wakeups themselves (§10.2: 0.4 µs with one waiter, which the
    /// per-wakee ttwu cost already covers).
    pub futex_wake_ns: u64,
    /// One pass of `do_poll()` / `ep_poll()` over the watched objects.
    pub poll_ns: u64,
    /// `fork`/`clone` up to `wake_up_new_task` (not in §10.2; 0 by default, creation is not
    /// part of any benchmark's measurement).
    pub spawn_ns: u64,
    /// One `wait()` pass (reaping a child).
    pub wait_ns: u64,
}

impl IpcCosts {
    pub fn x86_server() -> IpcCosts {
        IpcCosts {
            pipe_write_ns: 250,
            pipe_read_ns: 200,
            unix_send_ns: 600,
            unix_recv_ns: 500,
            tcp_send_ns: 2_400,
            tcp_recv_ns: 700,
            eventfd_ns: 150,
            futex_wait_ns: 300,
            futex_wake_ns: 0,
            poll_ns: 200,
            spawn_ns: 0,
            wait_ns: 100,
        }
    }
    /// No cost beyond the syscall, the copy and the wakeups.
    pub fn zero() -> IpcCosts {
        IpcCosts {
            pipe_write_ns: 0,
            pipe_read_ns: 0,
            unix_send_ns: 0,
            unix_recv_ns: 0,
            tcp_send_ns: 0,
            tcp_recv_ns: 0,
            eventfd_ns: 0,
            futex_wait_ns: 0,
            futex_wake_ns: 0,
            poll_ns: 0,
            spawn_ns: 0,
            wait_ns: 0,
        }
    }
}

/// The IPC model's parameters: `Sim::new` starts from [`IpcParams::v7_3`];
/// `Sim::set_ipc_params` replaces them before the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpcParams {
    pub behavior: IpcBehavior,
    pub costs: IpcCosts,
}

impl IpcParams {
    pub fn v7_3() -> IpcParams {
        IpcParams { behavior: IpcBehavior::v7_3(), costs: IpcCosts::x86_server() }
    }
}

/// A live IPC object.
#[derive(Clone, Debug)]
pub enum Object {
    Pipe(Pipe),
    Unix(UnixStream),
    Tcp(TcpLoopback),
    Futex(Futex),
    EventFd(EventFd),
}

impl Object {
    pub fn new(spec: &ObjectSpec, behavior: &IpcBehavior) -> Object {
        match *spec {
            ObjectSpec::Pipe { slots } => Object::Pipe(Pipe::new(slots)),
            ObjectSpec::UnixStream { sndbuf } => Object::Unix(UnixStream::new(sndbuf, behavior.socket_sync)),
            ObjectSpec::TcpLoopback { sndbuf } => Object::Tcp(TcpLoopback::new(sndbuf, behavior.socket_sync)),
            ObjectSpec::Futex => Object::Futex(Futex::new()),
            ObjectSpec::EventFd => Object::EventFd(EventFd::new()),
        }
    }

    /// `write()`/`send()` of `len` bytes by `t` (what is left of them on a retry).
    pub fn write(&mut self, t: TaskId, len: u32, resumed: bool, wakes: &mut Vec<Wake>) -> Transfer {
        match self {
            Object::Pipe(p) => p.write(t, len, resumed, wakes),
            Object::Unix(u) => u.write(t, len, wakes),
            Object::Tcp(s) => s.write(t, len, wakes),
            Object::EventFd(e) => e.write(wakes),
            Object::Futex(_) => panic!("write() on a futex (rejected by validation)"),
        }
    }

    /// `read()`/`recv()` of up to `len` bytes by `t`.
    pub fn read(&mut self, t: TaskId, len: u32, resumed: bool, wakes: &mut Vec<Wake>) -> Transfer {
        match self {
            Object::Pipe(p) => p.read(t, len, resumed, wakes),
            Object::Unix(u) => u.read(t, len, wakes),
            Object::Tcp(s) => s.read(t, len, wakes),
            Object::EventFd(e) => e.read(t),
            Object::Futex(_) => panic!("read() on a futex (rejected by validation)"),
        }
    }

    /// The sleeping lock every read and write of the object takes: `pipe->mutex`. The others
    /// have none here: unix stream senders and eventfds serialise on spinlocks the scheduler
    /// does not see; the sleeping locks of sockets (a unix receiver's `u->iolock`, TCP's
    /// `lock_sock()`) are taken by one task each in the modelled workloads (**deviation** for a
    /// socket shared by several readers or TCP senders).
    pub fn mutex_mut(&mut self) -> Option<&mut Mutex> {
        match self {
            Object::Pipe(p) => Some(&mut p.mutex),
            _ => None,
        }
    }

    /// Whether the object has that lock ([`Object::mutex_mut`] is `Some` exactly then).
    pub fn has_mutex(&self) -> bool {
        matches!(self, Object::Pipe(_))
    }

    /// Whether a call about to sleep on this object passes a `might_sleep()` first: pipes
    /// wait in `wait_event_interruptible_exclusive()` (fs/pipe.c v7.3.4 `anon_pipe_read`,
    /// `anon_pipe_write`), whose `might_sleep()` is a preemption point under
    /// PREEMPT_VOLUNTARY (`might_resched()`) before the task queues itself.
    pub fn might_sleep_before_wait(&self) -> bool {
        matches!(self, Object::Pipe(_))
    }

    /// Takes `t` off the object's wait queues: it was preempted before its `prepare_to_wait()`
    /// and will retry the read or write when it runs again.
    pub fn cancel_wait(&mut self, t: TaskId) {
        match self {
            Object::Pipe(p) => {
                p.rd_wait.remove(t);
                p.wr_wait.remove(t);
            }
            Object::Unix(u) => {
                u.dir.rd_wait.remove(t);
                u.dir.wr_wait.remove(t);
            }
            Object::Tcp(s) => {
                s.dir.rd_wait.remove(t);
                s.dir.wr_wait.remove(t);
            }
            Object::EventFd(e) => e.wqh.remove(t),
            // Validation keeps reads and writes off futexes.
            Object::Futex(_) => {}
        }
    }

    /// `EPOLLIN` of the object's `poll()` method.
    pub fn readable(&self) -> bool {
        match self {
            Object::Pipe(p) => p.readable(),
            Object::Unix(u) => u.readable(),
            Object::Tcp(s) => s.readable(),
            Object::EventFd(e) => e.readable(),
            Object::Futex(_) => false,
        }
    }

    /// The queue a reader's `poll_wait()` registers on.
    fn read_queue(&mut self) -> &mut WaitQueue {
        match self {
            Object::Pipe(p) => &mut p.rd_wait,
            Object::Unix(u) => &mut u.dir.rd_wait,
            Object::Tcp(s) => &mut s.dir.rd_wait,
            Object::EventFd(e) => &mut e.wqh,
            Object::Futex(_) => panic!("poll() on a futex (rejected by validation)"),
        }
    }

    /// `poll_wait()` for readability: `t` becomes a non-exclusive poll entry on the reader side
    /// (idempotent within one system call). `keep_sync` false drops WF_SYNC from the wakes it
    /// receives (epoll before 6.10). `poll_usage` models the older pipes' `pipe_poll()` side
    /// effect ([`IpcBehavior::pipe_poll_usage`]).
    pub fn poll_register(&mut self, t: TaskId, keep_sync: bool, poll_usage: bool) {
        if let Object::Pipe(p) = self
            && poll_usage
        {
            p.poll_usage = true;
        }
        self.read_queue().add_poll(t, keep_sync);
    }

    /// `poll_freewait()`: removes `t`'s poll entry.
    pub fn poll_unregister(&mut self, t: TaskId) {
        self.read_queue().remove(t);
    }

    /// Whether `t` is queued on any wait queue of this object (tests and checks).
    pub fn is_queued(&self, t: TaskId) -> bool {
        match self {
            Object::Pipe(p) => p.rd_wait.contains(t) || p.wr_wait.contains(t),
            Object::Unix(u) => u.dir.rd_wait.contains(t) || u.dir.wr_wait.contains(t),
            Object::Tcp(s) => s.dir.rd_wait.contains(t) || s.dir.wr_wait.contains(t),
            Object::EventFd(e) => e.wqh.contains(t),
            Object::Futex(f) => f.is_waiting(t),
        }
    }

    /// Base kernel cost of one write / read attempt (see [`IpcCosts`]).
    pub fn write_cost(&self, c: &IpcCosts) -> u64 {
        match self {
            Object::Pipe(_) => c.pipe_write_ns,
            Object::Unix(_) => c.unix_send_ns,
            Object::Tcp(_) => c.tcp_send_ns,
            Object::EventFd(_) => c.eventfd_ns,
            Object::Futex(_) => c.futex_wake_ns,
        }
    }
    pub fn read_cost(&self, c: &IpcCosts) -> u64 {
        match self {
            Object::Pipe(_) => c.pipe_read_ns,
            Object::Unix(_) => c.unix_recv_ns,
            Object::Tcp(_) => c.tcp_recv_ns,
            Object::EventFd(_) => c.eventfd_ns,
            Object::Futex(_) => c.futex_wait_ns,
        }
    }
}
