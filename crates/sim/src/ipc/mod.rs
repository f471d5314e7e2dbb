//! IPC objects with the kernel's wake semantics (spec workloads.md §1.1, §1.3): what a
//! workload's pipes, sockets, futexes and poll sets are, independent of the engine.

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
