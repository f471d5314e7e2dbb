//! The crate's only `unsafe` code: `fork()` and `_exit()`, which neither rustix nor std offer
//! safely.
//!
//! The benchmarks fork their workers (perf's `fork()`, rt-tests' `fork()`), so native mode does
//! too rather than re-executing the binary: a re-exec would add an `execve` and a dynamic load to
//! the measured interval, which perf starts before it forks.
//!
//! # Safety contract
//!
//! schedlab is multi-threaded (the Ctrl-C handler thread, maybe others), and after `fork()` only
//! the calling thread exists in the child; a lock held by another thread at that moment (the
//! allocator's, stdio's) stays locked forever there. So a forked child runs only code that
//! takes no lock and does not allocate: raw system calls through rustix on file descriptors and
//! buffers prepared by the parent before the fork, then [`exit_now`]. [`fork_child`] enforces the
//! shape: the closure gets no way to return into the parent's code.

use rustix::process::{Pid, Signal};

/// Forks; the child sets `PR_SET_PDEATHSIG` to SIGKILL (so it dies with the parent, even one
/// killed by SIGKILL), runs `child` and exits with its status without running destructors or
/// flushing stdio. Returns the child's pid in the parent.
///
/// `child` must follow the module's contract: no allocation, no locks, no stdio.
pub fn fork_child<F: FnOnce() -> i32>(child: F) -> std::io::Result<Pid> {
    let parent = rustix::process::getpid();
    // SAFETY: fork() has no memory-safety preconditions of its own; the hazards of a
    // multi-threaded parent are handled by the contract above (the child runs only `child`,
    // which must be lock- and allocation-free, and leaves through _exit).
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // Die with the parent; if it is already gone (the race prctl's man page describes),
            // leave now.
            if rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).is_err()
                || rustix::process::getppid() != Some(parent)
            {
                exit_now(111);
            }
            // A panic must never unwind out of here into the parent's code (it would run on
            // in the child); a panicking child exits with 101, like a panicking Rust program.
            let status = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(101);
            exit_now(status)
        }
        // SAFETY: a positive return of fork() is the child's pid.
        n => Ok(unsafe { Pid::from_raw_unchecked(n) }),
    }
}

/// `_exit(2)`: leaves the process at once, without atexit handlers, destructors or stdio
/// flushing (the parent's buffered output must not be written twice).
pub fn exit_now(status: i32) -> ! {
    // SAFETY: _exit has no preconditions and does not return.
    unsafe { libc::_exit(status) }
}

/// Closes, in a forked child, a descriptor that the parent's memory image owns (an `OwnedFd`
/// the child will never drop, since it leaves through [`exit_now`]): rt-tests' receivers close
/// their copy of their channel's write end.
pub fn close_inherited(fd: rustix::fd::BorrowedFd<'_>) {
    use rustix::fd::AsRawFd;
    // SAFETY: the descriptor is open (it is borrowed), and in the child nothing else uses or
    // closes it afterwards: the owning `OwnedFd` belongs to the parent's code, which does not
    // run in the child.
    unsafe { rustix::io::close(fd.as_raw_fd()) }
}
