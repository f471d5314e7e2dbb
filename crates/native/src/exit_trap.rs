//! Exact final counters of a real tool's tasks: a seccomp user-notification trap on `exit` and
//! `exit_group`.
//!
//! A real tool (rt-tests hackbench, perf bench) forks and reaps its own workers, so schedlab
//! cannot hold them as zombies the way it holds its own children. Instead, the forked child
//! that execs the tool installs, right before the exec, a seccomp filter (`pre_exec`:
//! `prctl(PR_SET_NO_NEW_PRIVS)`, then `seccomp(SECCOMP_SET_MODE_FILTER,
//! SECCOMP_FILTER_FLAG_NEW_LISTENER)`) that answers `exit` and `exit_group` with
//! `SECCOMP_RET_USER_NOTIF` and allows every other system call (a foreign `arch` is allowed
//! too). The filter is inherited across `execve`, `fork` and `clone`, so every process and
//! thread of the tool is covered. The child passes the listener to schedlab over a socketpair
//! (`SCM_RIGHTS`; nobody is blocked on the socket, so the send wakes no task) and execs.
//!
//! A supervisor thread waits in `poll()` on the listener and a stop pipe, with no timeout (no
//! periodic wakeup), and for each notification (`SECCOMP_IOCTL_NOTIF_RECV`):
//!
//! 1. reads `/proc/<tid>/syscall` until it is not `running`: `task_current_syscall()` →
//!    `wait_task_inactive()` (6.12 and 6.18 `kernel/sched/core.c`) returns only when the task is
//!    off its CPU in the sleep it entered, the notification wait
//!    (`seccomp_do_user_notification()`, 6.12 `kernel/seccomp.c`), so the switch into that wait
//!    is counted before the reading. `wait_task_inactive()` dequeues a `sched_delayed` task
//!    there and then (a task held by `DELAY_DEQUEUE` on its runqueue), the one change the read
//!    makes to the scheduler's state;
//! 2. reads `/proc/<tid>/sched` and `schedstat` of the notifying thread, which is alive,
//!    blocked, all its work done;
//! 3. checks the notification is still pending (`SECCOMP_IOCTL_NOTIF_ID_VALID`: the task was
//!    not killed meanwhile, so the tid was not reused) and replies
//!    `SECCOMP_USER_NOTIF_FLAG_CONTINUE`: the system call then runs as it would have.
//!
//! # How the reading differs from a zombie's
//!
//! The ground truth (`data/ground-truth/qemu-2vcpu`) read each task's `/proc/<tid>/sched` as a
//! zombie. Against that reading this one
//!
//! * has the switch into the notification wait (voluntary: the task sleeps in
//!   `TASK_INTERRUPTIBLE`) where the zombie has the final switch of `do_task_dead()`
//!   (voluntary too: `TASK_DEAD` is a non-zero state): one voluntary switch each, so
//!   `nr_switches` and `nr_voluntary_switches` agree;
//! * misses what `do_exit()` itself does after the reply: its run time (unmapping the address
//!   space of a process's last thread, closing its files), a preemption inside it (an
//!   involuntary switch, rare), and the scheduling of the wakeup that the reply is: that
//!   wakeup (`nr_wakeups` and its kind) and any migration it makes happen after the reading,
//!   and they have no counterpart in the ground truth's tasks, which never slept at exit;
//! * delays every exit by the supervisor's round trip (a wakeup of the supervisor, three
//!   `/proc` reads, the reply), which the tool's own time (hackbench's includes the reaping)
//!   carries.
//!
//! Against `getrusage(RUSAGE_CHILDREN)`, which adds each task's `nvcsw`/`nivcsw` when it is
//! released: a thread is released in `exit_notify()` before its final switch (autoreap), so its
//! share is the trap's reading plus whatever it switched in `do_exit()` between the reading and
//! `exit_notify()` (a preemption, a sleep on a lock; measured: a few per hundred); a process is added when its parent reaps it, normally after
//! its final switch (+1 voluntary), but the parent may reap it on another CPU before that
//! switch (`wait_task_zombie()` reads `nvcsw` while the child is still on its CPU). So the
//! whole tree's rusage is the readings' sum plus one voluntary switch per reaped process, less
//! any reaped before their last switch, plus preemptions inside `do_exit()`.
//!
//! A task killed by a signal (a thread of a process whose other thread called `exit_group`,
//! every task on Ctrl-C) does not call `exit`: it is not read, and nothing waits for it.

use std::io::{IoSlice, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage,
    SendFlags, SocketFlags, SocketType,
};

use crate::procfs::{self, TaskSample};

/// `AUDIT_ARCH_*` of the system calls the trap looks at (`include/uapi/linux/audit.h`):
/// x86-64 and aarch64, the machines schedlab's VMs boot.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// `struct seccomp_data` offsets: `nr` (int) at 0, `arch` (u32) at 4.
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;

/// One exit, read while the task waited for the reply.
#[derive(Clone, Debug)]
pub struct ExitReading {
    /// The thread id (`seccomp_notif.pid`).
    pub tid: u32,
    /// `exit` (a thread) or `exit_group` (a process).
    pub exit_group: bool,
    pub sample: TaskSample,
}

/// Why the trap cannot be used here, or `None` when it can: the kernel must list `user_notif`
/// in `/proc/sys/kernel/seccomp/actions_avail` (Linux 5.0; `SECCOMP_USER_NOTIF_FLAG_CONTINUE`
/// is 5.5).
pub fn unavailable() -> Option<String> {
    match std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail") {
        Ok(a) if a.split_whitespace().any(|w| w == "user_notif") => None,
        Ok(a) => Some(format!("this kernel's seccomp has no user notifications (actions: {})", a.trim())),
        Err(e) => Some(format!("no seccomp filters on this kernel (/proc/sys/kernel/seccomp/actions_avail: {e})")),
    }
}

/// The filter: `exit` and `exit_group` of this machine's arch notify, everything else passes.
fn filter() -> [libc::sock_filter; 7] {
    let stmt = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    [
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, DATA_ARCH),
        // Another arch (a 32-bit compat call): allow.
        jeq(AUDIT_ARCH, 0, 3),
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, DATA_NR),
        jeq(libc::SYS_exit as u32, 2, 0),
        jeq(libc::SYS_exit_group as u32, 1, 0),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_USER_NOTIF),
    ]
}

/// A trap being set up: the socketpair the listener comes back on.
pub struct Trap {
    parent: OwnedFd,
    child: OwnedFd,
}

impl Trap {
    pub fn new() -> Result<Trap, String> {
        let (parent, child) =
            rustix::net::socketpair(AddressFamily::UNIX, SocketType::DGRAM, SocketFlags::CLOEXEC, None)
                .map_err(|e| format!("socketpair: {e}"))?;
        Ok(Trap { parent, child })
    }

    /// Adds the filter's installation to `cmd`'s `pre_exec` hooks (call it last: the filter
    /// then covers the exec and everything after it).
    pub fn install(&self, cmd: &mut Command) {
        let sock = self.child.as_raw_fd();
        let prog = filter();
        // SAFETY: the closure runs in the forked child before exec and follows `crate::sys`'s
        // contract: it makes raw system calls (prctl, seccomp, sendmsg, close) on a descriptor
        // and a filter prepared before the fork, with buffers on its own stack, and neither
        // allocates nor takes a lock.
        unsafe {
            cmd.pre_exec(move || {
                rustix::thread::set_no_new_privs(true)?;
                let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr().cast_mut() };
                let fd = libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                    &fprog as *const libc::sock_fprog,
                );
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The listener (close-on-exec, so the tool never holds it).
                let listener = BorrowedFd::borrow_raw(fd as i32);
                let sock = BorrowedFd::borrow_raw(sock);
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
                let mut control = SendAncillaryBuffer::new(&mut space);
                let fds = [listener];
                let sent = if control.push(SendAncillaryMessage::ScmRights(&fds)) {
                    rustix::net::sendmsg(sock, &[IoSlice::new(b"L")], &mut control, SendFlags::NOSIGNAL).map(|_| ())
                } else {
                    Err(rustix::io::Errno::NOBUFS)
                };
                rustix::io::close(fd as i32);
                sent.map_err(std::io::Error::from)
            });
        }
    }

    /// After the tool was spawned (the listener is in the socket by then): starts the
    /// supervisor, on `cpus` when given (a CPU outside the benchmark's `--pin`).
    pub fn start(self, cpus: Option<Vec<usize>>) -> Result<Supervisor, String> {
        drop(self.child);
        let mut byte = [0u8; 1];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        rustix::net::recvmsg(
            &self.parent,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
        )
        .map_err(|e| format!("receiving the seccomp listener: {e}"))?;
        let listener = control
            .drain()
            .find_map(|m| match m {
                RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
                _ => None,
            })
            .ok_or("the tool's child sent no seccomp listener")?;
        let (stop_r, stop_w) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
        let handle = std::thread::Builder::new()
            .name("schedlab-exit-trap".into())
            .spawn(move || {
                if let Some(cpus) = cpus.filter(|c| !c.is_empty()) {
                    let mut set = rustix::thread::CpuSet::new();
                    for c in cpus {
                        set.set(c);
                    }
                    let _ = rustix::thread::sched_setaffinity(None, &set);
                }
                supervise(&listener, &stop_r)
            })
            .map_err(|e| format!("starting the exit-trap thread: {e}"))?;
        Ok(Supervisor { stop: Some(stop_w), handle: Some(handle) })
    }
}

/// The running supervisor. [`Supervisor::finish`] after the tool's leader was reaped; dropping
/// it unfinished (an error path) stops it too.
pub struct Supervisor {
    stop: Option<OwnedFd>,
    handle: Option<std::thread::JoinHandle<Result<Vec<ExitReading>, String>>>,
}

impl Supervisor {
    /// Stops the supervisor (it answers what is pending first) and returns every exit read, in
    /// the order the exits happened.
    pub fn finish(mut self) -> Result<Vec<ExitReading>, String> {
        self.stop.take();
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the exit-trap thread panicked".into()),
            None => Ok(Vec::new()),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        // Closing the stop pipe's write end wakes the thread (POLLHUP on the read end).
        self.stop.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The supervisor's loop: until the stop pipe closes (then what is pending is answered) or no
/// task holds the filter any more (`POLLHUP` on the listener).
fn supervise(listener: &OwnedFd, stop: &OwnedFd) -> Result<Vec<ExitReading>, String> {
    let mut out = Vec::new();
    let mut stopping = false;
    loop {
        let mut fds = [PollFd::new(listener, PollFlags::IN), PollFd::new(stop, PollFlags::IN)];
        // No timeout while running (nothing wakes periodically); none either once stopping.
        let timeout = if stopping { Some(&rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 }) } else { None };
        match rustix::event::poll(if stopping { &mut fds[..1] } else { &mut fds[..] }, timeout) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(format!("poll on the seccomp listener: {e}")),
        }
        let (ready, hup) = (fds[0].revents().contains(PollFlags::IN), fds[0].revents().contains(PollFlags::HUP));
        if ready {
            if let Some(r) = answer_one(listener.as_fd())? {
                out.push(r);
            }
            continue;
        }
        if hup || stopping {
            return Ok(out);
        }
        if !fds[1].revents().is_empty() {
            stopping = true;
        }
    }
}

/// Receives one notification, reads the task and lets its exit continue. `None` when the task
/// went away first (killed).
fn answer_one(listener: BorrowedFd<'_>) -> Result<Option<ExitReading>, String> {
    // The kernel requires a zeroed request (`seccomp_notify_recv()`).
    // SAFETY: `seccomp_notif` is plain old data; all zeroes is a valid value.
    let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: SECCOMP_IOCTL_NOTIF_RECV writes one `struct seccomp_notif` through the
        // pointer, which points to one.
        let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut req) };
        if r == 0 {
            break;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            // The task was killed between the poll and the receive.
            Some(libc::ENOENT) => return Ok(None),
            _ => return Err(format!("SECCOMP_IOCTL_NOTIF_RECV: {}", std::io::Error::last_os_error())),
        }
    }
    let tid = req.pid;
    let dir = format!("/proc/{tid}");
    let sample = wait_off_cpu(Path::new(&dir)).and_then(|()| procfs::read_task(Path::new(&dir)));
    let mut id = req.id;
    // SAFETY: SECCOMP_IOCTL_NOTIF_ID_VALID reads one u64 through the pointer.
    let valid = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &mut id) } == 0;
    let resp =
        libc::seccomp_notif_resp { id: req.id, val: 0, error: 0, flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32 };
    // SAFETY: SECCOMP_IOCTL_NOTIF_SEND reads one `struct seccomp_notif_resp` through the
    // pointer. ENOENT (the task was killed meanwhile) needs nothing more.
    unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &resp) };
    if !valid {
        return Ok(None);
    }
    let sample = sample.map_err(|e| format!("reading exiting task {tid}: {e}"))?;
    Ok(Some(ExitReading { tid, exit_group: req.data.nr as i64 == libc::SYS_exit_group, sample }))
}

/// Waits until the task of `dir` is off its CPU, reading `/proc/<tid>/syscall`: it reads
/// `running` while the task is on a CPU or runnable (`task_current_syscall()` returns
/// -EAGAIN: state TASK_RUNNING, or `wait_task_inactive()` saw it change), and the system
/// call's number once `wait_task_inactive()` saw the task off its CPU in a sleep (6.12
/// `lib/syscall.c`). Also used for a zombie: it reads `running` until the final switch of
/// `do_task_dead()` is done (state `TASK_DEAD`, off the CPU), then `-1 ...` (no stack).
pub fn wait_off_cpu(dir: &Path) -> Result<(), String> {
    let path = dir.join("syscall");
    let mut text = String::new();
    for spin in 0u32.. {
        text.clear();
        let mut f = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        f.read_to_string(&mut text).map_err(|e| format!("{}: {e}", path.display()))?;
        if !text.starts_with("running") {
            return Ok(());
        }
        // The task is between the notification and its sleep (a few instructions), or
        // preempted there; let it run.
        if spin < 1000 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        if spin > 100_000 {
            break;
        }
    }
    Err(format!("{}: the task stayed on its CPU ({})", path.display(), text.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_notifies_exit_and_exit_group_only() {
        // Run the classic BPF program over `seccomp_data` words, as the kernel does.
        let run = |arch: u32, nr: u32| -> u32 {
            let prog = filter();
            let (mut acc, mut pc) = (0u32, 0usize);
            loop {
                let i = prog[pc];
                match i.code as u32 {
                    c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                        acc = if i.k == DATA_ARCH { arch } else { nr };
                        pc += 1;
                    }
                    c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                        pc += 1 + usize::from(if acc == i.k { i.jt } else { i.jf });
                    }
                    c if c == libc::BPF_RET | libc::BPF_K => return i.k,
                    c => panic!("unexpected opcode {c:#x}"),
                }
            }
        };
        assert_eq!(run(AUDIT_ARCH, libc::SYS_exit as u32), libc::SECCOMP_RET_USER_NOTIF);
        assert_eq!(run(AUDIT_ARCH, libc::SYS_exit_group as u32), libc::SECCOMP_RET_USER_NOTIF);
        assert_eq!(run(AUDIT_ARCH, libc::SYS_write as u32), libc::SECCOMP_RET_ALLOW);
        // A 32-bit compat call with exit_group's number is not trapped.
        assert_eq!(run(0x4000_0003, libc::SYS_exit_group as u32), libc::SECCOMP_RET_ALLOW);
    }
}
