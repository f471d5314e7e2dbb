//! The benchmarks' task loops on real file descriptors, and the plumbing shared by the process
//! and thread modes.
//!
//! The loops take only borrowed descriptors and buffers prepared before any fork, and make raw
//! system calls through rustix: they neither allocate nor lock, so a forked child may run them
//! (see [`crate::sys`]).

use std::sync::{Condvar, Mutex};

use rustix::event::{PollFd, PollFlags, epoll};
use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::io::Errno;

/// `CLOCK_MONOTONIC` in ns (the clock of the `mono` ftrace clock, so trace timestamps and the
/// measured interval compare directly). perf and rt-tests read `gettimeofday`; the difference
/// of two readings is the same interval.
pub fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Writes all of `buf`, retrying short writes (and, for a non-blocking descriptor, waiting in
/// `poll(POLLOUT)` on `EAGAIN`, as perf's `-n` does).
pub fn write_all(fd: BorrowedFd<'_>, buf: &[u8]) -> Result<(), Errno> {
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::write(fd, &buf[done..]) {
            Ok(n) => done += n,
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => {
                let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
                match rustix::event::poll(&mut fds, None) {
                    Ok(_) | Err(Errno::INTR) => {}
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes (the benchmarks' `again:` loops). With `epoll`, every read
/// attempt is preceded by `epoll_wait` and `EAGAIN` retried (perf's `-n`).
pub fn read_exact(fd: BorrowedFd<'_>, buf: &mut [u8], epoll: Option<BorrowedFd<'_>>) -> Result<(), Errno> {
    let mut done = 0;
    while done < buf.len() {
        if let Some(ep) = epoll {
            let mut ev = [epoll::Event { flags: epoll::EventFlags::empty(), data: epoll::EventData::new_u64(0) }];
            match epoll::wait(ep, &mut ev, None) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
        }
        match rustix::io::read(fd, &mut buf[done..]) {
            Ok(0) => return Err(Errno::PIPE),
            Ok(n) => done += n,
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) if epoll.is_some() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// An epoll instance watching `fd` for `EPOLLIN` (level-triggered, as perf registers it).
pub fn epoll_for(fd: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    let ep = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    epoll::add(&ep, fd, epoll::EventData::new_u64(0), epoll::EventFlags::IN)?;
    Ok(ep)
}

/// One task of `perf bench sched pipe`: `loops` times write `out`, read `inp` (the 7.3 tree's
/// 2-token worker), or read then write with `reader_first` (the classic 1-token worker's A).
pub fn pipe_worker(
    out: BorrowedFd<'_>,
    inp: BorrowedFd<'_>,
    loops: u64,
    buf: &mut [u8],
    reader_first: bool,
    nonblocking: bool,
) -> Result<(), Errno> {
    // perf creates the epoll instance in the worker (after the fork).
    let ep = if nonblocking { Some(epoll_for(inp)?) } else { None };
    let ep = ep.as_ref().map(|e| rustix::fd::AsFd::as_fd(e));
    for _ in 0..loops {
        if reader_first {
            read_exact(inp, buf, ep)?;
            write_all(out, buf)?;
        } else {
            write_all(out, buf)?;
            read_exact(inp, buf, ep)?;
        }
    }
    Ok(())
}

/// hackbench's `ready()`: one byte to `ready`, then `poll(wake, POLLIN, -1)`.
pub fn hackbench_ready(ready: BorrowedFd<'_>, wake: BorrowedFd<'_>) -> Result<(), Errno> {
    write_all(ready, b"R")?;
    loop {
        let mut fds = [PollFd::new(&wake, PollFlags::IN)];
        match rustix::event::poll(&mut fds, None) {
            Ok(1) => return Ok(()),
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// hackbench's receiver: `packets` reads of exactly `buf.len()` bytes.
pub fn hackbench_receiver(inp: BorrowedFd<'_>, packets: u64, buf: &mut [u8]) -> Result<(), Errno> {
    for _ in 0..packets {
        read_exact(inp, buf, None)?;
    }
    Ok(())
}

/// hackbench's sender: `loops` rounds of one message to every channel of its group.
pub fn hackbench_sender(outs: &[BorrowedFd<'_>], loops: u64, buf: &[u8]) -> Result<(), Errno> {
    for _ in 0..loops {
        for &fd in outs {
            write_all(fd, buf)?;
        }
    }
    Ok(())
}

/// A one-shot gate: closed until [`Gate::open`], then every [`Gate::wait`] returns (a futex
/// wake, like the `CLONE_CHILD_CLEARTID` wake that ends a `pthread_join`).
#[derive(Default)]
pub struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    pub fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    pub fn wait(&self) {
        let mut g = self.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*g {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits at most `timeout`; whether the gate is open.
    pub fn wait_timeout(&self, timeout: std::time::Duration) -> bool {
        let g = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let (g, _) = self.cv.wait_timeout_while(g, timeout, |open| !*open).unwrap_or_else(|e| e.into_inner());
        *g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fd::AsFd;

    #[test]
    fn pipe_ping_pong_on_threads() {
        let (ar, aw) = rustix::pipe::pipe().unwrap();
        let (br, bw) = rustix::pipe::pipe().unwrap();
        let t = std::thread::spawn(move || {
            let mut buf = [0u8; 4];
            pipe_worker(bw.as_fd(), ar.as_fd(), 1000, &mut buf, false, true)
        });
        let mut buf = [0u8; 4];
        pipe_worker(aw.as_fd(), br.as_fd(), 1000, &mut buf, false, false).unwrap();
        t.join().unwrap().unwrap();
    }

    #[test]
    fn short_reads_are_completed() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        let t = std::thread::spawn(move || {
            for chunk in [&b"ab"[..], b"cde", b"f"] {
                write_all(w.as_fd(), chunk).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        let mut buf = [0u8; 6];
        read_exact(r.as_fd(), &mut buf, None).unwrap();
        assert_eq!(&buf, b"abcdef");
        t.join().unwrap();
    }
}
