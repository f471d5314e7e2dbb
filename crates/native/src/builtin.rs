//! Built-in workers for the benchmarks whose real tool may be missing: lmbench `lat_ctx`
//! (Debian non-free), netperf (not in every suite), stress-ng's cpu stressor and schbench
//! (not packaged by Debian at all). Each reproduces the tool's task structure and measurement
//! on real processes or threads — the same structure the simulator's program for it has
//! (`crates/workload/src/bench/`) — and fills the workload's counts and histograms, so the
//! tool's own output is printed by the workload's `format_output`, as for the pipe and
//! hackbench workers.
//!
//! Forked children run under [`crate::sys`]'s contract (no allocation, no locks): buffers,
//! descriptors and names are prepared before the fork, and results come back through a shared
//! mapping ([`SharedSlots`]). schbench is threads in one process, as the real one is.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::io::Errno;
use sim::stats::LatencyHistogram;
use workload::bench::lat_ctx::{self, LatCtx};
use workload::bench::netperf::{self, Netperf, TestLength};
use workload::bench::schbench::{self, Pin, Schbench};
use workload::bench::stressng::{self, StressNg};

use crate::cleanup::{self, ChildGuard};
use crate::run::{Measured, NativeError, ThreadPool, finish_children, main_sample, sys};
use crate::sys::SharedSlots;
use crate::workers::{self, mono_ns};

/// How long a benchmark without an end of its own (stress-ng without `--timeout`, schbench
/// `-r 0`) runs natively: the simulator's default `--duration`.
pub const DEFAULT_RUN_NS: u64 = 10_000_000_000;

fn fork(guard: &mut ChildGuard, child: impl FnOnce() -> i32) -> Result<(), NativeError> {
    let pid = cleanup::spawn_child(child).map_err(|e| NativeError::System(format!("fork: {e}")))?;
    guard.pids.push(pid);
    Ok(())
}

/// Pins the calling thread (or forked child) to `cpus`: one `sched_setaffinity`, no allocation.
fn pin_self(cpus: &[u32]) -> Result<(), Errno> {
    let mut set = rustix::thread::CpuSet::new();
    for &c in cpus {
        set.set(c as usize);
    }
    rustix::thread::sched_setaffinity(None, &set)
}

/// Blocks until one byte arrives on `go` (the start signal every worker waits for, as
/// hackbench's `ready()`/wake byte).
fn wait_go(go: BorrowedFd<'_>) -> Result<(), Errno> {
    let mut b = [0u8; 1];
    workers::read_exact(go, &mut b, None)
}

fn release(go: BorrowedFd<'_>, n: usize) -> Result<(), NativeError> {
    workers::write_all(go, &vec![b'G'; n]).map_err(sys("writing the start pipe"))
}

fn pipe() -> Result<(OwnedFd, OwnedFd), NativeError> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(sys("pipe"))
}

/// lmbench's `bread`: sum a process's `-s` buffer (one `u64` load per 8 bytes).
fn bread(buf: &[u64]) -> u64 {
    buf.iter().fold(0u64, |a, &x| a.wrapping_add(x))
}

/// lmbench `lat_ctx`: an overhead phase (one process passing a token through its own pipe),
/// then per process count N, `-P` rings of N processes passing a 4-byte token around N
/// pipes, each process summing its `-s` KiB buffer per hop. A ring's first process times
/// `-N` repetitions of k trips (k as the simulator sizes it, [`LatCtx::iterations`]) after one
/// warm trip and `-W` µs of untimed trips; each repetition is one sample of the phase's
/// histogram, which the workload turns into lmbench's result (median / k / N − overhead).
/// With `-P` > 1 a ring that has finished keeps passing its token until every ring of the
/// phase has (lmbench's cooldown), then passes a stop token around.
pub(crate) fn run_lat_ctx(l: &LatCtx) -> Result<Measured, NativeError> {
    crate::sys::raise_nofile_limit();
    let before = main_sample()?;
    let comm = c"lat_ctx";
    let reps = l.repetitions as usize;
    let mut buf = vec![0u64; (l.size_kb as usize * 1024 / 8).max(1)];
    let words = (l.size_kb as usize * 1024 / 8).min(buf.len());
    let mut phases = vec![(lat_ctx::HIST_OVERHEAD, 1u32, 1u32)];
    phases.extend(l.procs.iter().enumerate().map(|(j, &n)| (lat_ctx::HIST_RING + j as u16, n, l.parallel)));
    let mut hists = BTreeMap::new();
    let mut tasks = Vec::new();
    let start = mono_ns();
    let mut end = start;
    for (hist, n, rings) in phases {
        let k = l.iterations(n);
        // Slot 0: rings done; then each ring's repetition times.
        let slots =
            SharedSlots::new(1 + rings as usize * reps).map_err(|e| NativeError::System(format!("mmap: {e}")))?;
        let (go_r, go_w) = pipe()?;
        let mut pipes = Vec::with_capacity((rings * n) as usize);
        for _ in 0..rings * n {
            pipes.push(pipe()?);
        }
        let mut guard = ChildGuard::new();
        for r in 0..rings as usize {
            let ring = &pipes[r * n as usize..(r + 1) * n as usize];
            for i in 1..n as usize {
                let (inp, out) = (ring[i - 1].0.as_fd(), ring[i].1.as_fd());
                let (b, comm) = (&mut buf, &comm);
                fork(&mut guard, move || {
                    let _ = rustix::thread::set_name(comm);
                    // A private copy of the buffer, as each lmbench process has its own.
                    b.fill(1);
                    let mut token = [0u8; 4];
                    loop {
                        if workers::read_exact(inp, &mut token, None).is_err() {
                            return 1;
                        }
                        std::hint::black_box(bread(&b[..words]));
                        if workers::write_all(out, &token).is_err() {
                            return 1;
                        }
                        if token[0] == 1 {
                            return 0;
                        }
                    }
                })?;
            }
            let (out, inp, go) = (ring[0].1.as_fd(), ring[n as usize - 1].0.as_fd(), go_r.as_fd());
            let (b, comm, slots) = (&mut buf, &comm, &slots);
            let warmup_ns = l.warmup_us * 1_000;
            fork(&mut guard, move || {
                let _ = rustix::thread::set_name(comm);
                b.fill(1);
                let s = slots.slots();
                let trip = |b: &[u64], token: &[u8; 4]| -> Result<(), Errno> {
                    workers::write_all(out, token)?;
                    let mut t = [0u8; 4];
                    workers::read_exact(inp, &mut t, None)?;
                    std::hint::black_box(bread(&b[..words]));
                    Ok(())
                };
                let go_on = [0u8; 4];
                let run = || -> Result<(), Errno> {
                    wait_go(go)?;
                    trip(b, &go_on)?;
                    let w0 = mono_ns();
                    while mono_ns() - w0 < warmup_ns {
                        trip(b, &go_on)?;
                    }
                    for rep in 0..reps {
                        let t0 = mono_ns();
                        for _ in 0..k {
                            trip(b, &go_on)?;
                        }
                        s[1 + r * reps + rep].store(mono_ns() - t0, Ordering::SeqCst);
                    }
                    s[0].fetch_add(1, Ordering::SeqCst);
                    while s[0].load(Ordering::SeqCst) < u64::from(rings) {
                        trip(b, &go_on)?;
                    }
                    trip(b, &[1, 0, 0, 0])
                };
                match run() {
                    Ok(()) => 0,
                    Err(_) => 1,
                }
            })?;
        }
        release(go_w.as_fd(), rings as usize)?;
        let (e, t) = finish_children(&mut guard)?;
        end = e;
        tasks.extend(t);
        let h: &mut LatencyHistogram = hists.entry(hist).or_default();
        for v in slots.slots()[1..].iter() {
            h.record(v.load(Ordering::SeqCst));
        }
    }
    let main = main_sample()?.since(&before);
    let mut m = Measured::new(start, end - start, [vec![main], tasks].concat());
    m.hists = hists;
    Ok(m)
}

/// netperf TCP_RR over loopback: per pair a `netperf` client process and a `netserver` process
/// over one TCP connection on 127.0.0.1, the client sending `-r req` bytes and reading `resp`
/// back, one transaction outstanding, for `-l` seconds or `-l -N` transactions; `-T l,r`
/// binds them; `-- -D` sets TCP_NODELAY; `--clients N` runs N pairs at once.
pub(crate) fn run_netperf(n: &Netperf) -> Result<Measured, NativeError> {
    let before = main_sample()?;
    let pairs = n.clients as usize;
    let mut conns: Vec<(OwnedFd, OwnedFd)> = Vec::with_capacity(pairs);
    for _ in 0..pairs {
        conns.push(tcp_pair(n.nodelay)?);
    }
    let slots = SharedSlots::new(pairs).map_err(|e| NativeError::System(format!("mmap: {e}")))?;
    let (go_r, go_w) = pipe()?;
    let all: Vec<BorrowedFd<'_>> = conns.iter().flat_map(|(c, s)| [c.as_fd(), s.as_fd()]).collect();
    let (req, resp) = (n.request_size as usize, n.response_size as usize);
    let mut buf = vec![b'n'; req.max(resp)];
    let (client_comm, server_comm) = (c"netperf", c"netserver");
    let (lcpu, rcpu) = (n.local_cpu.map(|c| [c]), n.remote_cpu.map(|c| [c]));
    let mut guard = ChildGuard::new();
    for (k, (client, server)) in conns.iter().enumerate() {
        let (client, server) = (client.as_fd(), server.as_fd());
        let (all, b, comm, go) = (&all, &mut buf, &server_comm, go_r.as_fd());
        fork(&mut guard, move || {
            if netperf_child_start(comm, all, server, rcpu.as_ref().map(|c| &c[..]), go).is_err() {
                return 1;
            }
            loop {
                match workers::read_exact(server, &mut b[..req], None) {
                    Ok(()) => {}
                    // The client closed the connection: the test is over.
                    Err(Errno::PIPE | Errno::CONNRESET) => return 0,
                    Err(_) => return 1,
                }
                if workers::write_all(server, &b[..resp]).is_err() {
                    return 1;
                }
            }
        })?;
        let (all, b, comm, slots, go) = (&all, &mut buf, &client_comm, &slots, go_r.as_fd());
        let length = n.length;
        fork(&mut guard, move || {
            if netperf_child_start(comm, all, client, lcpu.as_ref().map(|c| &c[..]), go).is_err() {
                return 1;
            }
            let t0 = mono_ns();
            let mut count = 0u64;
            loop {
                let done = match length {
                    TestLength::Seconds(s) => mono_ns() - t0 >= u64::from(s) * 1_000_000_000,
                    TestLength::Transactions(t) => count >= t,
                };
                if done {
                    break;
                }
                if workers::write_all(client, &b[..req]).is_err()
                    || workers::read_exact(client, &mut b[..resp], None).is_err()
                {
                    return 1;
                }
                count += 1;
            }
            slots.slots()[k].store(count, Ordering::SeqCst);
            0
        })?;
    }
    drop(all);
    // The children own their sockets now; the parent's copies must not keep the peers open.
    drop(conns);
    let start = mono_ns();
    release(go_w.as_fd(), 2 * pairs)?;
    let (end, tasks) = finish_children(&mut guard)?;
    let main = main_sample()?.since(&before);
    let mut m = Measured::new(start, end - start, [vec![main], tasks].concat());
    for (k, v) in slots.slots().iter().enumerate() {
        m.counts.insert(netperf::COUNT_TXN + k as u16, v.load(Ordering::SeqCst));
    }
    Ok(m)
}

/// The start of a forked netperf or netserver process: its name, only its own socket open
/// (the peer's end closing must reach it as end of file), its `-T` CPU, then the start byte.
fn netperf_child_start(
    comm: &std::ffi::CStr,
    all: &[BorrowedFd<'_>],
    own: BorrowedFd<'_>,
    cpu: Option<&[u32]>,
    go: BorrowedFd<'_>,
) -> Result<(), Errno> {
    let _ = rustix::thread::set_name(comm);
    all.iter().filter(|f| f.as_raw_fd() != own.as_raw_fd()).for_each(|&f| crate::sys::close_inherited(f));
    if let Some(c) = cpu {
        pin_self(c)?;
    }
    wait_go(go)
}

/// A connected TCP pair on 127.0.0.1 (client end, server end).
fn tcp_pair(nodelay: bool) -> Result<(OwnedFd, OwnedFd), NativeError> {
    use rustix::net::{AddressFamily, SocketAddrV4, SocketType, ipproto};
    let lo = SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 0);
    let listener =
        rustix::net::socket(AddressFamily::INET, SocketType::STREAM, Some(ipproto::TCP)).map_err(sys("socket"))?;
    rustix::net::bind(&listener, &lo).map_err(sys("bind 127.0.0.1"))?;
    rustix::net::listen(&listener, 1).map_err(sys("listen"))?;
    let addr = rustix::net::getsockname(&listener).map_err(sys("getsockname"))?;
    let addr = SocketAddrV4::try_from(addr).map_err(|_| NativeError::System("getsockname: not IPv4".into()))?;
    let client =
        rustix::net::socket(AddressFamily::INET, SocketType::STREAM, Some(ipproto::TCP)).map_err(sys("socket"))?;
    rustix::net::connect(&client, &addr).map_err(sys("connect 127.0.0.1"))?;
    let server = rustix::net::accept(&listener).map_err(sys("accept"))?;
    if nodelay {
        for s in [&client, &server] {
            rustix::net::sockopt::set_tcp_nodelay(s, true).map_err(sys("TCP_NODELAY"))?;
        }
    }
    Ok((client, server))
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// One stress-ng "method call" as the simulator defines it: [`stressng::CALL_NS`] of CPU time
/// (this thread's CPU clock), spent in integer arithmetic.
fn burn_call() {
    let t0 = thread_cpu_ns();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    while thread_cpu_ns() - t0 < stressng::CALL_NS {
        for _ in 0..256 {
            x = std::hint::black_box(x.rotate_left(7) ^ x.wrapping_mul(0x2545_f491_4f6c_dd1d));
        }
    }
}

/// stress-ng `--cpu N [--cpu-load P]`: N forked `stress-ng-cpu` hogs for `run_ns`, each
/// counting method calls of [`stressng::CALL_NS`] CPU time (so the bogo-ops rate is the hogs'
/// CPU share, in the simulator's unit); with a load below 100 % a busy slice of
/// `--cpu-load-slice` calls is followed by a sleep of `busy × (100 − P) / P`, open-loop as in
/// the model.
pub(crate) fn run_stress(s: &StressNg, run_ns: u64) -> Result<Measured, NativeError> {
    let before = main_sample()?;
    let n = s.instances as usize;
    let slots = SharedSlots::new(n).map_err(|e| NativeError::System(format!("mmap: {e}")))?;
    let (go_r, go_w) = pipe()?;
    let comm = c"stress-ng-cpu";
    let (load, calls_per_slice) = (u64::from(s.load), s.calls_per_slice());
    let mut guard = ChildGuard::new();
    for i in 0..n {
        let (comm, slots, go) = (&comm, &slots, go_r.as_fd());
        fork(&mut guard, move || {
            let _ = rustix::thread::set_name(comm);
            if wait_go(go).is_err() {
                return 1;
            }
            let t0 = mono_ns();
            let left = || run_ns.saturating_sub(mono_ns() - t0);
            let mut calls = 0u64;
            while left() > 0 {
                if load == 0 {
                    let ns = left();
                    let _ = rustix::thread::nanosleep(&timespec(ns));
                    continue;
                }
                let slice = if load == 100 { 1 } else { calls_per_slice };
                for _ in 0..slice {
                    burn_call();
                    calls += 1;
                    if left() == 0 {
                        break;
                    }
                }
                if load < 100 {
                    let sleep = (slice * stressng::CALL_NS * (100 - load) / load).min(left());
                    let _ = rustix::thread::nanosleep(&timespec(sleep));
                }
            }
            slots.slots()[i].store(calls, Ordering::SeqCst);
            0
        })?;
    }
    let start = mono_ns();
    release(go_w.as_fd(), n)?;
    let (end, tasks) = finish_children(&mut guard)?;
    let main = main_sample()?.since(&before);
    let mut m = Measured::new(start, end - start, [vec![main], tasks].concat());
    m.counts.insert(stressng::COUNT_CALLS, slots.slots().iter().map(|v| v.load(Ordering::SeqCst)).sum());
    Ok(m)
}

fn timespec(ns: u64) -> rustix::time::Timespec {
    rustix::time::Timespec { tv_sec: (ns / 1_000_000_000) as i64, tv_nsec: (ns % 1_000_000_000) as i64 }
}

/// What schbench's built-in worker cannot run (the rest runs as schbench does).
pub fn schbench_unsupported(s: &Schbench) -> Option<&'static str> {
    if s.rps > 0 {
        Some("-R (requests per second mode)")
    } else if s.split.is_some() {
        Some("--split (shared and private matrices)")
    } else {
        None
    }
}

/// One schbench worker's state, shared with its message thread.
struct Worker {
    /// Set by the message thread when it wakes the worker (schbench's futex word).
    woken: AtomicBool,
    /// When the message thread woke it (schbench stamps the wake in the waker).
    wake_ns: AtomicU64,
    wake: Mutex<LatencyHistogram>,
    request: Mutex<LatencyHistogram>,
    loops: AtomicU64,
}

/// One message thread's queue of workers waiting for a wakeup (schbench's `xlist`).
struct Message {
    pending: Mutex<Vec<(Arc<Worker>, std::thread::Thread)>>,
}

/// schbench (normal and pipe mode) as threads of this process: M `schbench-msg` threads, each
/// with W `schbench-worker` threads. A worker queues itself on its message thread and wakes it,
/// then sleeps until woken; the message thread wakes every queued worker, most recent first,
/// stamping the time of each wake, and the worker records now − stamp (schbench's wakeup
/// latency). A request is `usleep(-s)` then `-n` multiplications of two square matrices sized
/// from `-F` (schbench's `do_some_math`), timed from before the sleep (after it with `-C`);
/// pipe mode (`-p`) memsets the transfer size on both sides instead. The locking around the
/// math is not taken (every run is `-L`, as in the model). Futex waits are
/// `std::thread::park`/`unpark`, which are futex waits and wakes with one pending token, as
/// schbench's `fpost`/`fwait`.
pub(crate) fn run_schbench(s: &Schbench, run_ns: u64) -> Result<Measured, NativeError> {
    let before = main_sample()?;
    let (m, w) = (s.message_threads as usize, s.worker_threads as usize);
    let stop = Arc::new(AtomicBool::new(false));
    let size = s.matrix_sizes().1 as usize;
    let pipe_bytes = s.pipe_bytes as usize;
    let mut pool = ThreadPool::new();
    let mut all_workers = Vec::new();
    let start = mono_ns();
    for i in 0..m {
        let msg = Arc::new(Message { pending: Mutex::new(Vec::new()) });
        let msg_pin = match (&s.message_cpus, &s.worker_cpus) {
            (Some(Pin::Auto), _) => Some(vec![i as u32]),
            (Some(Pin::Cpus(list)), _) => Some(vec![list[i % list.len()]]),
            (None, Some(Pin::Cpus(list))) => Some(list.clone()),
            _ => None,
        };
        let (q, st) = (msg.clone(), stop.clone());
        let t = pool.spawn_thread("schbench-msg", move || {
            if let Some(c) = &msg_pin {
                pin_self(c)?;
            }
            let mut page = vec![0u8; pipe_bytes];
            loop {
                let batch = std::mem::take(&mut *q.pending.lock().unwrap_or_else(|e| e.into_inner()));
                if batch.is_empty() {
                    if st.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                    std::thread::park();
                    continue;
                }
                for (worker, thread) in batch.into_iter().rev() {
                    if pipe_bytes > 0 {
                        page.fill(1);
                        std::hint::black_box(&page);
                    }
                    worker.wake_ns.store(mono_ns(), Ordering::SeqCst);
                    worker.woken.store(true, Ordering::SeqCst);
                    thread.unpark();
                }
            }
        })?;
        let worker_pin = match &s.worker_cpus {
            Some(Pin::Cpus(list)) => Some(list.clone()),
            _ => None,
        };
        for _ in 0..w {
            let me = Arc::new(Worker {
                woken: AtomicBool::new(false),
                wake_ns: AtomicU64::new(0),
                wake: Mutex::new(LatencyHistogram::default()),
                request: Mutex::new(LatencyHistogram::default()),
                loops: AtomicU64::new(0),
            });
            all_workers.push(me.clone());
            let (q, st, msg_thread, pin) = (msg.clone(), stop.clone(), t.clone(), worker_pin.clone());
            let (sleep_ns, ops, calibrate) = (s.sleep_usec * 1_000, s.operations, s.calibrate);
            pool.spawn_thread("schbench-worker", move || {
                if let Some(c) = &pin {
                    pin_self(c)?;
                }
                let mut mats = [vec![1u64; size * size], vec![3u64; size * size], vec![0u64; size * size]];
                let mut page = vec![0u8; pipe_bytes];
                while !st.load(Ordering::SeqCst) {
                    if pipe_bytes > 0 {
                        page.fill(2);
                        std::hint::black_box(&page);
                    }
                    q.pending.lock().unwrap_or_else(|e| e.into_inner()).push((me.clone(), std::thread::current()));
                    msg_thread.unpark();
                    while !me.woken.swap(false, Ordering::SeqCst) {
                        if st.load(Ordering::SeqCst) {
                            return Ok(());
                        }
                        std::thread::park();
                    }
                    let now = mono_ns();
                    me.wake.lock().unwrap_or_else(|e| e.into_inner()).record(now - me.wake_ns.load(Ordering::SeqCst));
                    if pipe_bytes > 0 {
                        me.loops.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let mut t0 = now;
                    if sleep_ns > 0 {
                        std::thread::sleep(Duration::from_nanos(sleep_ns));
                    }
                    if calibrate {
                        t0 = mono_ns();
                    }
                    for _ in 0..ops {
                        matrix_multiply(&mut mats, size);
                    }
                    me.request.lock().unwrap_or_else(|e| e.into_inner()).record(mono_ns() - t0);
                    me.loops.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })?;
        }
    }
    std::thread::sleep(Duration::from_nanos(run_ns));
    stop.store(true, Ordering::SeqCst);
    // Let every sleeper see the stop: workers parked in their wait, message threads in theirs.
    let threads: Vec<std::thread::Thread> = pool.threads().cloned().collect();
    let wake_all = || {
        for t in &threads {
            t.unpark();
        }
    };
    wake_all();
    let (end, tasks) = pool.finish_with(wake_all)?;
    let main = main_sample()?.since(&before);
    let mut meas = Measured::new(start, end - start, [vec![main], tasks].concat());
    let (mut wake, mut request) = (LatencyHistogram::default(), LatencyHistogram::default());
    let mut loops = 0;
    for wk in &all_workers {
        wake.add(&wk.wake.lock().unwrap_or_else(|e| e.into_inner()));
        request.add(&wk.request.lock().unwrap_or_else(|e| e.into_inner()));
        loops += wk.loops.load(Ordering::SeqCst);
    }
    meas.hists.insert(schbench::HIST_WAKEUP, wake);
    meas.hists.insert(schbench::HIST_REQUEST, request);
    meas.counts.insert(schbench::COUNT_LOOPS, loops);
    // schbench's runtime is the -r it was given, not the shutdown's tail.
    meas.report_ns = Some(run_ns);
    Ok(meas)
}

/// schbench's `do_some_math`: `m3 += m1 × m2` for `size`² matrices.
fn matrix_multiply(m: &mut [Vec<u64>; 3], size: usize) {
    let [a, b, c] = m;
    for i in 0..size {
        for j in 0..size {
            let mut sum = c[i * size + j];
            for k in 0..size {
                sum = sum.wrapping_add(a[i * size + k].wrapping_mul(b[k * size + j]));
            }
            c[i * size + j] = sum;
        }
    }
    std::hint::black_box(&c);
}

#[cfg(test)]
mod tests {
    use workload::bench::BenchParams;

    use crate::run::{NativeOptions, NativeRun, run_native};

    fn builtin(line: &str) -> NativeRun {
        let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
        run_native(&argv, &NativeOptions { builtin: true, ..Default::default() })
            .unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn comms(r: &NativeRun) -> Vec<&str> {
        r.tasks.iter().map(|t| t.comm.as_str()).collect()
    }

    #[test]
    fn lat_ctx_rings_print_lmbench_lines() {
        let r = builtin("lat_ctx -N 3 -s 4 2 3");
        assert!(r.output.starts_with("\n\"size=4k ovr="), "{}", r.output);
        // Main, the overhead process, a ring of 2 and a ring of 3.
        assert_eq!(comms(&r), ["lat_ctx"; 7], "{:?}", r.tasks);
        let BenchParams::LatCtx(l) = &r.workload.params else { panic!("lat_ctx params") };
        // The ring of 2 blocks at least once per timed trip (its two processes wait for the
        // token in turn).
        let (sw, _, _) = r.switches();
        assert!(sw >= 3 * l.iterations(2), "{sw} switches");
        let first = r.output.lines().nth(2).unwrap_or("");
        if let Some(v) = first.strip_prefix("2 ") {
            assert_eq!(v.parse::<f64>().unwrap(), (r.metric * 100.0).round() / 100.0, "{}", r.output);
        }
    }

    #[test]
    fn netperf_pairs_count_every_transaction() {
        let r = builtin("netperf --clients 2 -t TCP_RR -l -3000 -- -r 64,128");
        // Main, then per pair the server and the client, as forked.
        assert_eq!(comms(&r), ["netperf", "netserver", "netperf", "netserver", "netperf"], "{:?}", r.tasks);
        assert_eq!(r.output.matches("MIGRATED TCP REQUEST/RESPONSE TEST").count(), 2, "{}", r.output);
        assert!(r.output.contains("64       128"), "{}", r.output);
        // Each client did exactly its 3000 transactions; the rate is their sum over the run.
        let secs = r.elapsed_ns as f64 / 1e9;
        assert!((r.metric * secs - 6000.0).abs() < 1.0, "{} tps over {secs} s", r.metric);
        // A transaction waits in recv on one side at least (the other may find its data there).
        assert!(r.switches().0 >= 6000, "{:?}", r.switches());
    }

    #[test]
    fn stress_ng_hogs_count_cpu_time() {
        let r = builtin("stress-ng --cpu 2 --timeout 1 --metrics-brief");
        assert_eq!(comms(&r), ["stress-ng", "stress-ng-cpu", "stress-ng-cpu"], "{:?}", r.tasks);
        assert!(r.output.contains("stress-ng: metrc: ["), "{}", r.output);
        // A call is 100 us of a hog's CPU time: the rate cannot exceed the CPUs' capacity.
        let cpus = crate::host::nr_cpus().min(2) as f64;
        let cap = cpus * workload::bench::stressng::BOGO_PER_CPU_SECOND;
        assert!(r.metric > 0.0 && r.metric <= cap * 1.02, "{} bogo ops/s, cap {cap}", r.metric);
        let cpu_s: f64 = r.tasks[1..].iter().map(|t| t.sum_exec_runtime_ns as f64 / 1e9).sum();
        let bogo_from_cpu = cpu_s * workload::bench::stressng::BOGO_PER_CPU_SECOND / (r.elapsed_ns as f64 / 1e9);
        assert!(r.metric <= bogo_from_cpu * 1.02, "{} > {bogo_from_cpu} from the hogs' CPU time", r.metric);
        // --cpu-load 0 sleeps through the run.
        let r = builtin("stress-ng --cpu 1 --cpu-load 0 --timeout 1 --metrics-brief");
        assert_eq!(r.metric, 0.0, "{}", r.output);
    }

    #[test]
    fn schbench_threads_print_the_percentile_table() {
        let r = builtin("schbench -m 2 -t 2 -r 1 -F 64 -n 2");
        assert_eq!(
            comms(&r),
            [
                "schbench",
                "schbench-msg",
                "schbench-worker",
                "schbench-worker",
                "schbench-msg",
                "schbench-worker",
                "schbench-worker"
            ],
            "{:?}",
            r.tasks
        );
        assert!(r.output.contains("Wakeup Latencies percentiles (usec) runtime 1 (s)"), "{}", r.output);
        assert!(r.output.contains("Request Latencies percentiles (usec) runtime 1 (s)"), "{}", r.output);
        assert!(r.output.contains("\t* 99.0th: "), "{}", r.output);
        assert!(r.metric > 0.0 && r.metric < 1e6, "p99 {} us", r.metric);
        // Each request sleeps 100 us: fewer than 4 workers x 1 s / 100 us of them.
        let rps: f64 = r.output.lines().find_map(|l| l.strip_prefix("average rps: ")?.parse().ok()).unwrap();
        assert!(rps > 0.0 && rps < 40_000.0, "{rps}");
        // Pipe mode: the transfer line, no request table.
        let r = builtin("schbench -m 1 -t 2 -r 1 -p 4096");
        assert!(r.output.contains("avg worker transfer: "), "{}", r.output);
        assert!(!r.output.contains("Request Latencies"), "{}", r.output);
        let argv: Vec<String> = "schbench -R 100 -r 1".split_whitespace().map(String::from).collect();
        let e = run_native(&argv, &NativeOptions { builtin: true, ..Default::default() }).err().unwrap();
        assert!(e.to_string().contains("-R"), "{e}");
    }
}
