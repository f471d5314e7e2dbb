//! The crate's `unsafe` code, but for the seccomp exit trap's ([`crate::exit_trap`]): `fork()`,
//! `_exit()`, `getrusage()`, a `pre_exec` hook and a shared anonymous mapping (`mmap`),
//! which neither rustix nor std offer safely.
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

/// `sched_setscheduler(2)` of the calling thread to `SCHED_IDLE` (allowed without privilege:
/// it lowers the thread's priority).
pub fn set_sched_idle() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param for the call's duration; pid 0 is this thread.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
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

/// The voluntary and involuntary context switches of every descendant reaped so far
/// (`getrusage(RUSAGE_CHILDREN)`: `ru_nvcsw`, `ru_nivcsw`). The kernel folds a task's `nvcsw`
/// and `nivcsw` (the counters `/proc/<pid>/sched` prints as `nr_voluntary_switches` and
/// `nr_involuntary_switches`) into its thread group when a thread exits and into the parent's
/// `cnvcsw`/`cnivcsw` when a process is reaped (`wait_task_zombie()`), recursively: the
/// difference across a real tool's run is exact for its whole tree, grandchildren included.
pub fn children_switches() -> (u64, u64) {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `struct rusage` into the pointer it is given, which points to
    // one (zero-initialised, so it is valid even if the call failed and wrote nothing).
    let ru = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, ru.as_mut_ptr());
        ru.assume_init()
    };
    (ru.ru_nvcsw.max(0) as u64, ru.ru_nivcsw.max(0) as u64)
}

/// CPU time (user + system) of this process and of its reaped children so far, ns.
pub fn own_cpu_ns() -> u64 {
    let get = |who| {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: as in `children_switches`: a valid, zero-initialised out-pointer.
        let ru = unsafe {
            libc::getrusage(who, ru.as_mut_ptr());
            ru.assume_init()
        };
        let tv = |t: libc::timeval| t.tv_sec.max(0) as u64 * 1_000_000_000 + t.tv_usec.max(0) as u64 * 1_000;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    };
    get(libc::RUSAGE_SELF) + get(libc::RUSAGE_CHILDREN)
}

/// Waits for `child` (`wait4()`) and returns its exit status, its own CPU time (user +
/// system, ns) and its peak resident size (`ru_maxrss`, KiB): the figures of that one process,
/// where `RUSAGE_CHILDREN` would mix every child reaped so far. The `Child` must not be waited
/// for again.
pub fn wait_with_rusage(child: &std::process::Child) -> std::io::Result<(std::process::ExitStatus, u64, u64)> {
    use std::os::unix::process::ExitStatusExt;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    loop {
        // SAFETY: wait4 writes an int status and a `struct rusage` through the two pointers,
        // which point to a live int and a zero-initialised rusage.
        let r = unsafe { libc::wait4(pid, &mut status, 0, ru.as_mut_ptr()) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    // SAFETY: zero-initialised and, after a successful wait4, filled in.
    let ru = unsafe { ru.assume_init() };
    let tv = |t: libc::timeval| t.tv_sec.max(0) as u64 * 1_000_000_000 + t.tv_usec.max(0) as u64 * 1_000;
    Ok((std::process::ExitStatus::from_raw(status), tv(ru.ru_utime) + tv(ru.ru_stime), ru.ru_maxrss.max(0) as u64))
}

/// Makes a real tool started by `cmd` die (SIGKILL) when the thread that spawns it ends, as the
/// built-in workers do, so a SIGKILLed schedlab does not leave a benchmark running.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec; it makes one raw system call
    // (prctl through rustix), which neither allocates nor takes a lock.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).map_err(std::io::Error::from)
        });
    }
}

/// Counters shared between schedlab and the processes it forks: an anonymous `MAP_SHARED`
/// mapping of `len` zeroed `AtomicU64`s, created before the fork, so a child's stores are
/// seen by the parent (a built-in `lat_ctx` leader's repetition times, a netperf client's
/// transaction count). Storing to an atomic neither allocates nor locks, so forked children
/// may use it under the module's contract.
pub struct SharedSlots {
    ptr: std::ptr::NonNull<std::sync::atomic::AtomicU64>,
    len: usize,
}

// SAFETY: the mapping is only ever accessed through `AtomicU64`s, which are Sync.
unsafe impl Send for SharedSlots {}
// SAFETY: as above.
unsafe impl Sync for SharedSlots {}

impl SharedSlots {
    pub fn new(len: usize) -> std::io::Result<SharedSlots> {
        let bytes = len.max(1) * std::mem::size_of::<u64>();
        // SAFETY: an anonymous mapping at an address of the kernel's choosing: no existing
        // memory is affected. The result is checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = std::ptr::NonNull::new(p.cast()).ok_or_else(std::io::Error::last_os_error)?;
        Ok(SharedSlots { ptr, len: len.max(1) })
    }

    pub fn slots(&self) -> &[std::sync::atomic::AtomicU64] {
        // SAFETY: the mapping holds `len` u64s, zero-filled by the kernel (a valid AtomicU64),
        // page-aligned, and lives until `drop`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for SharedSlots {
    fn drop(&mut self) {
        // SAFETY: the mapping created in `new`, of that size; no reference to it outlives
        // `self` (`slots` borrows `self`).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len * std::mem::size_of::<u64>());
        }
    }
}

/// Raises the soft limit of open files to the hard limit: a built-in `lat_ctx -P 4 96` holds
/// 2·4·96 pipe ends at once, near the usual soft limit of 1024.
pub fn raise_nofile_limit() {
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    if lim.current < lim.maximum {
        let _ = rustix::process::setrlimit(
            rustix::process::Resource::Nofile,
            rustix::process::Rlimit { current: lim.maximum, maximum: lim.maximum },
        );
    }
}
