//! `schedlab calibrate`: microbenchmarks of the host's kernel costs, turned into a cost file
//! for `--cost-file` (a `[costs]` table with keys of [`sim::topology::Costs::KEYS`]).
//!
//! Measurements (each repeated; the median of the repetitions is used, the spread is reported):
//!
//! | name | what runs | per |
//! |---|---|---|
//! | `null_syscall` | `getppid()` in a loop | call |
//! | `pipe_op_4` | one thread writes 4 B to a pipe and reads them back (no wakeup, no blocking) | write+read |
//! | `pipe_op_32k` | the same with 32 KiB | write+read |
//! | `rt_pinned_threads` | 1-token pipe ping-pong, two threads of one process, both on one CPU | round trip |
//! | `rt_pinned_processes` | the same between two processes | round trip |
//! | `rt_cross_processes` | the same, the two processes on two different CPUs | round trip |
//! | `timer_irq` | a loop reading the clock on CPU 0: the gaps in it are interrupts | interruption |
//! | `wake_pinned` | a 1-byte `write()` that wakes a `SCHED_IDLE` reader pinned to the writer's CPU, minus one that wakes nobody | wakeup |
//! | `wake_selected` | the same, the reader free to run anywhere while CPU 1 is kept busy | wakeup |
//! | `wake_remote` | the same, the reader (normal policy) pinned to the busy CPU 1 | wakeup |
//!
//! Derived keys (see [`Calibration::keys`]):
//! * `syscall_ns` = `null_syscall`;
//! * `copy_ns_per_kib` = (`pipe_op_32k` − `pipe_op_4`) / 64 (two copies of 32 KiB);
//! * the waker's side of a wakeup, from timed `write()`s (2 CPUs or more): `wakeup_local_ns` =
//!   `wake_pinned` (a pinned wakee: `select_task_rq()` skips the class's selection, core.c
//!   v7.3.4; `SCHED_IDLE` so that the wakee does not preempt the writer before the clock is
//!   read again), `wakeup_select_ns` = `wake_selected` − `wake_pinned` (`select_task_rq_fair()`
//!   for a wakee allowed anywhere; with CPU 1 busy it stays on the writer's CPU). `wake_remote`
//!   (a direct enqueue on a busy CPU's runqueue) is reported but sets no key: its wakee always
//!   preempts, so it includes a reschedule IPI that most remote wakeups do not send, and
//!   `wakeup_remote_enqueue_ns` keeps the topology's value. Without a second CPU
//!   `wakeup_local_ns` keeps the topology's value too;
//! * `context_switch_ns` = (`rt_pinned_threads` − 2·`pipe_op_4` − w·`wakeup_local_ns`) / s, and
//!   `context_switch_mm_ns` likewise from `rt_pinned_processes`: a pinned round trip is two
//!   pipe ops, w local wakeups and s switches, the simulator charging the wakeups separately.
//!   s and w are counted (both tasks' switches per round trip from `/proc/<tid>/status`; w = the
//!   voluntary ones, each a sleep in `read()`): s is 2, but where the wakee preempts its waker
//!   the waker finds the reply in the pipe without sleeping, so w is about 1 (6.18 with preempt
//!   none) rather than 2 (7.3's lazy preemption); uncounted, both are taken as 2;
//! * a thread switch does a subset of a process switch's work (no `switch_mm`), so a measured
//!   `context_switch_ns` above `context_switch_mm_ns` is noise or load: it is written equal to
//!   the process switch, and flagged;
//! * the cross-CPU hop: a one-way hop to an idle CPU is a pipe op, the waker's remote wakeup
//!   (`wakeup_remote_ipi_ns`), the IPI's receipt (`ipi_receive_ns`), the idle exit and a switch
//!   from idle. The unknown is the part the machine makes expensive:
//!   - on bare metal, `ipi_receive_ns` = `rt_cross_processes` / 2 − `pipe_op_4` −
//!     `wakeup_remote_ipi_ns` − `context_switch_ns` − `idle_exit_ns_c1` (cpuidle's latency);
//!   - on a VM guest (`machine::vm_guest`: the hypervisor CPU flag, the haltpoll driver), waking a halted vCPU goes through the host:
//!     `idle_exit_ns_c1` = `idle_exit_ns_deep` = `rt_cross_processes` / 2 − `pipe_op_4` −
//!     `wakeup_remote_ipi_ns` − `ipi_receive_ns` − `context_switch_ns`: the idle-vCPU wakeup
//!     cost (cross-CPU ping-pong against the pinned one), charged only when the target halted.
//!
//! * `timer_irq_ns` = the median gap of `timer_irq`: a busy CPU's interruptions are mostly
//!   its timer interrupts (the tick, `HZ` a second), whose time the kernel charges to the
//!   interrupted task when IRQ-time accounting is off. The rate is reported beside it; a
//!   rate far from `HZ` (other interrupts, or other tasks preempting the loop) makes it noise.
//!
//! A derived value below zero is written as 0 and flagged.
//!
//! # Load
//!
//! The measurements assume an otherwise idle machine: the cross-CPU hop assumes the partner's
//! CPU halts between tokens, and the pinned round trips that nothing else shares CPU 0.
//! `/proc/stat` is sampled around every measurement; CPU time used by other processes (all
//! busy time minus calibrate's own, `getrusage`) and time stolen by the hypervisor are
//! reported, and above [`BUSY_WARN_SHARE`] of the machine the file says the numbers are not to
//! be trusted.

use rustix::fd::AsFd;

use crate::workers::{self, mono_ns};

/// One microbenchmark's result.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub name: &'static str,
    pub what: String,
    /// Median over the repetitions, ns per operation.
    pub ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    pub iterations: u64,
    pub repetitions: usize,
    /// For the ping-pongs: context switches of both tasks per round trip (medians over the
    /// repetitions), from their `/proc/<tid>/status` counters.
    pub switches: Option<Switches>,
}

/// Context switches per operation, by kind (`nr_voluntary_switches`, `nr_involuntary_switches`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Switches {
    /// Switches out of a task that blocked: in a pipe ping-pong each one is a sleep in `read()`
    /// that a wakeup ends, so this is also the wakeups per round trip.
    pub voluntary: f64,
    /// Switches out of a task that was still runnable (preempted by the partner it woke).
    pub involuntary: f64,
}

impl Switches {
    pub fn total(&self) -> f64 {
        self.voluntary + self.involuntary
    }
}

/// All measurements of one calibration.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub measurements: Vec<Measurement>,
    pub nr_cpus: usize,
    /// How busy the rest of the machine was while they ran.
    pub load: Option<Load>,
}

/// Above this share of the machine's CPU time used by others (or stolen), the file warns.
pub const BUSY_WARN_SHARE: f64 = 0.10;

/// What the rest of the machine did during a calibration (`/proc/stat`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Load {
    /// CPU time used by other processes, as a share of all CPUs' time.
    pub others_share: f64,
    /// Time the hypervisor gave to other guests (`steal`), same scale.
    pub steal_share: f64,
}

impl Load {
    /// The warning for the file and stderr, when the machine was busy.
    pub fn warning(&self) -> Option<String> {
        (self.others_share > BUSY_WARN_SHARE || self.steal_share > BUSY_WARN_SHARE).then(|| {
            format!(
                "WARNING: the machine was busy during calibration ({:.0} % of its CPU time used by other processes, {:.0} % stolen by the hypervisor): these costs include waiting for a CPU; calibrate again on an idle machine",
                self.others_share * 100.0,
                self.steal_share * 100.0
            )
        })
    }
}

/// `/proc/stat`'s first line: (busy, steal, all) in USER_HZ ticks, busy without steal.
pub fn parse_proc_stat(text: &str) -> Option<(u64, u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).map_while(|t| t.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal [guest guest_nice: already in user]
    let get = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = get(0) + get(1) + get(2) + get(5) + get(6);
    let all = busy + get(3) + get(4) + get(7);
    Some((busy, get(7), all))
}

/// Samples the machine's and this process's CPU time; [`LoadMeter::finish`] turns two samples
/// into a [`Load`].
struct LoadMeter {
    stat: Option<(u64, u64, u64)>,
    own_ns: u64,
}

impl LoadMeter {
    fn start() -> LoadMeter {
        LoadMeter { stat: read_proc_stat(), own_ns: crate::sys::own_cpu_ns() }
    }

    fn finish(&self) -> Option<Load> {
        let (b0, s0, a0) = self.stat?;
        let (b1, s1, a1) = read_proc_stat()?;
        let all = a1.saturating_sub(a0).max(1) as f64;
        let tick_ns = 1e9 / 100.0; // USER_HZ
        let own = crate::sys::own_cpu_ns().saturating_sub(self.own_ns) as f64 / tick_ns;
        let others = (b1.saturating_sub(b0) as f64 - own).max(0.0);
        Some(Load { others_share: others / all, steal_share: s1.saturating_sub(s0) as f64 / all })
    }
}

fn read_proc_stat() -> Option<(u64, u64, u64)> {
    parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// A derived cost key.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyValue {
    pub key: &'static str,
    pub ns: u64,
    /// How it was derived, for the file's comment header.
    pub how: String,
    /// The formula gave a negative value, written as 0.
    pub clamped: bool,
}

/// How long to measure.
#[derive(Clone, Copy, Debug)]
pub struct CalibrateOptions {
    /// Repetitions of each microbenchmark.
    pub repetitions: usize,
    /// Scales the iteration counts (1.0: a few seconds in total on a 2-CPU VM).
    pub scale: f64,
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        CalibrateOptions { repetitions: 5, scale: 1.0 }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn measure(
    name: &'static str,
    what: &'static str,
    iterations: u64,
    reps: usize,
    mut once: impl FnMut(u64) -> Result<u64, String>,
) -> Result<Measurement, String> {
    measure_counted(name, what, iterations, reps, |n| Ok((once(n)?, None)))
}

/// [`measure`] for a microbenchmark that also returns its tasks' (voluntary, involuntary)
/// context switches in all: their medians per operation are kept beside the time.
fn measure_counted(
    name: &'static str,
    what: &'static str,
    iterations: u64,
    reps: usize,
    mut once: impl FnMut(u64) -> Result<(u64, Option<(u64, u64)>), String>,
) -> Result<Measurement, String> {
    // One short warm-up pass.
    once((iterations / 10).max(1))?;
    let mut per = Vec::with_capacity(reps);
    let (mut vol, mut invol) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        let (ns, switches) = once(iterations)?;
        per.push(ns as f64 / iterations as f64);
        if let Some((v, i)) = switches {
            vol.push(v as f64 / iterations as f64);
            invol.push(i as f64 / iterations as f64);
        }
    }
    let min_ns = per.iter().copied().fold(f64::INFINITY, f64::min);
    let max_ns = per.iter().copied().fold(0.0, f64::max);
    let switches =
        (vol.len() == reps).then(|| Switches { voluntary: median(&mut vol), involuntary: median(&mut invol) });
    Ok(Measurement {
        name,
        what: what.to_string(),
        ns: median(&mut per),
        min_ns,
        max_ns,
        iterations,
        repetitions: reps,
        switches,
    })
}

/// (voluntary, involuntary) context switches of a task so far: `voluntary_ctxt_switches` and
/// `nonvoluntary_ctxt_switches` of `/proc/<tid>/status`, which every kernel has (`sched` needs
/// CONFIG_SCHED_DEBUG) and which a zombie still shows. `None` when unreadable: the
/// measurement is then used uncounted.
fn switch_counts(dir: &std::path::Path) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(dir.join("status")).ok()?;
    let field =
        |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse::<u64>().ok());
    Some((field("voluntary_ctxt_switches")?, field("nonvoluntary_ctxt_switches")?))
}

/// A task's switches between two readings of [`switch_counts`].
fn switches_since(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<(u64, u64)> {
    let ((bv, bi), (av, ai)) = (before?, after?);
    Some((av.checked_sub(bv)?, ai.checked_sub(bi)?))
}

/// Both tasks' switches over a timed loop.
fn both(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Option<(u64, u64)> {
    let ((av, ai), (bv, bi)) = (a?, b?);
    Some((av + bv, ai + bi))
}

fn pin_self(cpu: usize) -> Result<(), String> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| format!("sched_setaffinity: {e}"))
}

/// Elapsed ns of `n` getppid calls.
fn null_syscall(n: u64) -> Result<u64, String> {
    let t0 = mono_ns();
    for _ in 0..n {
        std::hint::black_box(rustix::process::getppid());
    }
    Ok(mono_ns() - t0)
}

/// Elapsed ns of `n` write+read pairs of `size` bytes on one pipe, in this thread.
fn pipe_ops(n: u64, size: usize) -> Result<u64, String> {
    let (r, w) = rustix::pipe::pipe().map_err(|e| format!("pipe: {e}"))?;
    let mut buf = vec![7u8; size];
    let t0 = mono_ns();
    for _ in 0..n {
        workers::write_all(w.as_fd(), &buf).map_err(|e| format!("pipe write: {e}"))?;
        workers::read_exact(r.as_fd(), &mut buf, None).map_err(|e| format!("pipe read: {e}"))?;
    }
    Ok(mono_ns() - t0)
}

/// Elapsed ns of `n` send+recv pairs of `size` bytes on one unix stream socketpair, in this
/// thread (hackbench's transport).
fn unix_ops(n: u64, size: usize) -> Result<u64, String> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};
    let (a, b) = socketpair(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::empty(), None)
        .map_err(|e| format!("socketpair: {e}"))?;
    let mut buf = vec![7u8; size];
    let t0 = mono_ns();
    for _ in 0..n {
        workers::write_all(a.as_fd(), &buf).map_err(|e| format!("socket send: {e}"))?;
        workers::read_exact(b.as_fd(), &mut buf, None).map_err(|e| format!("socket recv: {e}"))?;
    }
    Ok(mono_ns() - t0)
}

/// Elapsed ns of `n` 1-token round trips between this thread (on `cpu_b`) and a partner thread
/// or forked process (on `cpu_a`), and the two tasks' (voluntary, involuntary) switches during
/// them. A forked partner is read as a zombie (`waitid(WNOWAIT)`), so its count is its whole
/// life's: the round trips, its start and its final switch (2-3 of 20,000 round trips).
fn ping_pong(n: u64, cpu_a: usize, cpu_b: usize, process: bool) -> Result<(u64, Option<(u64, u64)>), String> {
    let (p1r, p1w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    let (p2r, p2w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    let old = rustix::thread::sched_getaffinity(None).map_err(|e| format!("sched_getaffinity: {e}"))?;
    let result = (|| {
        let mut buf_b = [0u8; 4];
        if process {
            pin_self(cpu_a)?;
            let mut buf_a = [0u8; 4];
            let (a_out, a_in) = (p2w.as_fd(), p1r.as_fd());
            let mut guard = crate::cleanup::ChildGuard::new();
            let pid =
                crate::cleanup::spawn_child(|| match workers::pipe_worker(a_out, a_in, n, &mut buf_a, true, false) {
                    Ok(()) => 0,
                    Err(_) => 1,
                })
                .map_err(|e| format!("fork: {e}"))?;
            guard.pids.push(pid);
            pin_self(cpu_b)?;
            let me = std::path::Path::new("/proc/thread-self");
            let before = switch_counts(me);
            let t0 = mono_ns();
            workers::pipe_worker(p1w.as_fd(), p2r.as_fd(), n, &mut buf_b, false, false)
                .map_err(|e| format!("ping-pong: {e}"))?;
            let t = mono_ns() - t0;
            let after = switch_counts(me);
            use rustix::process::{WaitId, WaitIdOptions};
            let _ = rustix::process::waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT);
            let partner = switch_counts(&crate::procfs::task_dir(pid.as_raw_nonzero().get() as u32, false));
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
            crate::cleanup::forget_child(pid);
            guard.disarm();
            Ok((t, both(switches_since(before, after), partner)))
        } else {
            let (a_out, a_in) =
                (p2w.try_clone().map_err(|e| e.to_string())?, p1r.try_clone().map_err(|e| e.to_string())?);
            let partner = std::thread::spawn(move || {
                pin_self(cpu_a)?;
                let me = std::path::Path::new("/proc/thread-self");
                let before = switch_counts(me);
                let mut buf = [0u8; 4];
                workers::pipe_worker(a_out.as_fd(), a_in.as_fd(), n, &mut buf, true, false)
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(switches_since(before, switch_counts(me)))
            });
            pin_self(cpu_b)?;
            let me = std::path::Path::new("/proc/thread-self");
            let before = switch_counts(me);
            let t0 = mono_ns();
            workers::pipe_worker(p1w.as_fd(), p2r.as_fd(), n, &mut buf_b, false, false)
                .map_err(|e| format!("ping-pong: {e}"))?;
            let t = mono_ns() - t0;
            let after = switch_counts(me);
            let partner = partner.join().map_err(|_| "ping-pong thread panicked".to_string())??;
            Ok((t, both(switches_since(before, after), partner)))
        }
    })();
    let _ = rustix::thread::sched_setaffinity(None, &old);
    result
}

/// A loop on CPU 0 that reads the clock for `duration_ns`: a gap of more than
/// [`INTERRUPT_GAP_NS`] between two readings is an interruption. Returns the gaps (ns).
fn interruptions(duration_ns: u64) -> Result<Vec<u64>, String> {
    let old = rustix::thread::sched_getaffinity(None).map_err(|e| format!("sched_getaffinity: {e}"))?;
    pin_self(0)?;
    let mut gaps = Vec::new();
    let start = mono_ns();
    let mut last = start;
    while last - start < duration_ns {
        let now = mono_ns();
        if now - last > INTERRUPT_GAP_NS {
            gaps.push(now - last);
        }
        last = now;
    }
    let _ = rustix::thread::sched_setaffinity(None, &old);
    Ok(gaps)
}

/// Two clock readings of the `timer_irq` loop further apart than this were interrupted (a
/// vDSO `clock_gettime` takes tens of ns).
const INTERRUPT_GAP_NS: u64 = 500;

/// The `timer_irq` measurement: the median interruption of a spinning loop, with the rate.
fn measure_interruptions(duration_ns: u64, reps: usize) -> Result<Measurement, String> {
    let mut all = Vec::new();
    let mut medians = Vec::with_capacity(reps);
    for _ in 0..reps {
        let gaps = interruptions(duration_ns)?;
        let mut v: Vec<f64> = gaps.iter().map(|&g| g as f64).collect();
        if !v.is_empty() {
            medians.push(median(&mut v));
        }
        all.extend(gaps);
    }
    let per_s = all.len() as f64 / (duration_ns as f64 * reps as f64 / 1e9);
    let mut v: Vec<f64> = all.iter().map(|&g| g as f64).collect();
    let ns = if v.is_empty() { 0.0 } else { median(&mut v) };
    Ok(Measurement {
        name: "timer_irq",
        what: format!("a clock-reading loop on CPU 0: median interruption, ns ({per_s:.0} interruptions/s)"),
        ns,
        min_ns: medians.iter().copied().fold(f64::INFINITY, f64::min).min(ns),
        max_ns: medians.iter().copied().fold(0.0, f64::max).max(ns),
        iterations: all.len() as u64,
        repetitions: reps,
        switches: None,
    })
}

/// Where the reader of [`waking_writes`] runs and whether it may preempt the writer.
#[derive(Clone, Copy)]
enum WakeTarget {
    /// Pinned to the writer's CPU 0, `SCHED_IDLE` (its wakeup never preempts the writer): no
    /// selection, a local enqueue.
    Pinned,
    /// Free to run on any CPU, `SCHED_IDLE`, CPU 1 kept busy: `select_task_rq_fair()` runs
    /// and, finding no idle CPU, keeps the sync wakeup on the writer's CPU.
    Selected,
    /// Pinned to CPU 1, which a spinning thread keeps busy: a direct enqueue on another CPU's
    /// runqueue (`ttwu_queue_cond()` is false for a busy CPU sharing the LLC).
    Remote,
}

/// The waker's side of `n` pipe wakeups, one at a time: the writer, on CPU 0, times a 1-byte
/// `write()` into an empty pipe nobody waits on and then one that wakes the reader blocked on
/// a second pipe; returns each wakeup's extra ns (the second write's time minus the first's).
/// The reader answers on a third pipe, which the writer waits on, and the writer sleeps 30 µs
/// before the next pair so the reader is asleep in `read()` again. A thread spins on CPU 1
/// throughout, so no wakeup goes to an idle CPU.
fn waking_writes(n: u64, target: WakeTarget) -> Result<Vec<f64>, String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| format!("pipe: {e}"));
    let (plain_r, plain_w) = pipe()?;
    let (data_r, data_w) = pipe()?;
    let (ack_r, ack_w) = pipe()?;
    let old = rustix::thread::sched_getaffinity(None).map_err(|e| format!("sched_getaffinity: {e}"))?;
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let spin_stop = stop.clone();
    let spinner = std::thread::spawn(move || {
        pin_self(1)?;
        while !spin_stop.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
        Ok::<(), String>(())
    });
    let reader = std::thread::spawn(move || {
        match target {
            WakeTarget::Pinned => pin_self(0)?,
            WakeTarget::Remote => pin_self(1)?,
            WakeTarget::Selected => {}
        }
        if !matches!(target, WakeTarget::Remote) {
            crate::sys::set_sched_idle().map_err(|e| format!("sched_setscheduler(SCHED_IDLE): {e}"))?;
        }
        let mut b = [0u8; 1];
        for _ in 0..n {
            workers::read_exact(data_r.as_fd(), &mut b, None).map_err(|e| format!("reader: {e}"))?;
            workers::write_all(ack_w.as_fd(), &b).map_err(|e| format!("reader: {e}"))?;
        }
        Ok::<(), String>(())
    });
    let result: Result<Vec<f64>, String> = (|| {
        pin_self(0)?;
        let mut b = [1u8; 1];
        let mut extra = Vec::with_capacity(n as usize);
        let pause = rustix::time::Timespec { tv_sec: 0, tv_nsec: 30_000 };
        for _ in 0..n {
            let _ = rustix::thread::nanosleep(&pause);
            let t0 = mono_ns();
            workers::write_all(plain_w.as_fd(), &b).map_err(|e| format!("writer: {e}"))?;
            let t1 = mono_ns();
            workers::read_exact(plain_r.as_fd(), &mut b, None).map_err(|e| format!("writer: {e}"))?;
            let t2 = mono_ns();
            workers::write_all(data_w.as_fd(), &b).map_err(|e| format!("writer: {e}"))?;
            let t3 = mono_ns();
            extra.push((t3 - t2) as f64 - (t1 - t0) as f64);
            workers::read_exact(ack_r.as_fd(), &mut b, None).map_err(|e| format!("writer: {e}"))?;
        }
        Ok(extra)
    })();
    stop.store(true, Ordering::Relaxed);
    let _ = rustix::thread::sched_setaffinity(None, &old);
    // Closing the writer's ends ends a reader still waiting (a writer that failed early).
    drop((data_w, ack_r));
    let joined = reader.join().map_err(|_| "reader thread panicked".to_string()).and_then(|r| r);
    spinner.join().map_err(|_| "spinner thread panicked".to_string())??;
    let extra = result?;
    joined?;
    Ok(extra)
}

/// A [`waking_writes`] measurement: the median extra over all wakeups of `reps` runs.
fn measure_wake(
    name: &'static str,
    what: &'static str,
    n: u64,
    reps: usize,
    target: WakeTarget,
) -> Result<Measurement, String> {
    waking_writes((n / 10).max(1), target)?;
    let mut all = Vec::new();
    let mut medians = Vec::with_capacity(reps);
    for _ in 0..reps {
        let mut v = waking_writes(n, target)?;
        medians.push(median(&mut v));
        all.extend(v);
    }
    Ok(Measurement {
        name,
        what: what.to_string(),
        ns: median(&mut all),
        min_ns: medians.iter().copied().fold(f64::INFINITY, f64::min),
        max_ns: medians.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        iterations: n,
        repetitions: reps,
        switches: None,
    })
}

/// Runs every microbenchmark.
pub fn calibrate(opts: &CalibrateOptions) -> Result<Calibration, String> {
    let reps = opts.repetitions.max(1);
    let it = |n: f64| ((n * opts.scale) as u64).max(10);
    let nr_cpus = crate::host::nr_cpus();
    let meter = LoadMeter::start();
    let mut m = vec![
        measure("null_syscall", "getppid() in a loop, ns per call", it(500_000.0), reps, null_syscall)?,
        measure(
            "pipe_op_4",
            "write 4 B to a pipe and read them back, one thread, ns per write+read",
            it(100_000.0),
            reps,
            |n| pipe_ops(n, 4),
        )?,
        measure("pipe_op_32k", "the same with 32 KiB, ns per write+read", it(10_000.0), reps, |n| {
            pipe_ops(n, 32 * 1024)
        })?,
        measure(
            "unix_op_100",
            "send 100 B on a unix stream socketpair and receive them, one thread, ns per send+recv",
            it(50_000.0),
            reps,
            |n| unix_ops(n, 100),
        )?,
        measure_counted(
            "rt_pinned_threads",
            "1-token pipe ping-pong, two threads on CPU 0, ns per round trip",
            it(20_000.0),
            reps,
            |n| ping_pong(n, 0, 0, false),
        )?,
        measure_counted(
            "rt_pinned_processes",
            "1-token pipe ping-pong, two processes on CPU 0, ns per round trip",
            it(20_000.0),
            reps,
            |n| ping_pong(n, 0, 0, true),
        )?,
    ];
    if nr_cpus >= 2 {
        m.push(measure_counted(
            "rt_cross_processes",
            "1-token pipe ping-pong, two processes on CPUs 0 and 1, ns per round trip",
            it(5_000.0),
            reps,
            |n| ping_pong(n, 0, 1, true),
        )?);
        m.push(measure_wake(
            "wake_pinned",
            "a 1-byte write waking a SCHED_IDLE reader pinned to the writer's CPU 0, ns beyond a write waking nobody",
            it(2_000.0),
            reps,
            WakeTarget::Pinned,
        )?);
        m.push(measure_wake(
            "wake_selected",
            "the same, the reader free to run anywhere and CPU 1 busy (select_task_rq_fair keeps it on CPU 0)",
            it(2_000.0),
            reps,
            WakeTarget::Selected,
        )?);
        m.push(measure_wake(
            "wake_remote",
            "the same, the reader (normal policy) pinned to CPU 1, which a spinning thread keeps busy",
            it(2_000.0),
            reps,
            WakeTarget::Remote,
        )?);
    }
    m.push(measure_interruptions(((500_000_000.0 * opts.scale) as u64).max(10_000_000), reps)?);
    Ok(Calibration { measurements: m, nr_cpus, load: meter.finish() })
}

impl Calibration {
    pub fn get(&self, name: &str) -> Option<&Measurement> {
        self.measurements.iter().find(|m| m.name == name)
    }

    /// The cost keys derived from the measurements; `base` supplies the values the formulas
    /// need but calibration does not measure (`wakeup_local_ns` on one CPU, `wakeup_remote_ipi_ns`, and
    /// `idle_exit_ns_c1` on bare metal or `ipi_receive_ns` on a VM guest). `vm_guest`: the
    /// cross-CPU hop measures waking a halted vCPU (see the module docs).
    pub fn keys(&self, base: &sim::topology::Costs, vm_guest: bool) -> Vec<KeyValue> {
        let g = |n: &str| self.get(n).map(|m| m.ns);
        let mut out = Vec::new();
        let mut push = |key: &'static str, v: f64, how: String| {
            out.push(KeyValue { key, ns: v.max(0.0).round() as u64, how, clamped: v < 0.0 });
        };
        if let Some(s) = g("null_syscall") {
            push("syscall_ns", s, format!("null_syscall = {s:.1} ns"));
        }
        if let Some(m) = self.get("timer_irq").filter(|m| m.iterations > 0) {
            push(
                "timer_irq_ns",
                m.ns,
                format!("timer_irq = {:.0} ns, the median of {} interruptions", m.ns, m.iterations),
            );
        }
        let op = g("pipe_op_4");
        if let (Some(op), Some(big)) = (op, g("pipe_op_32k")) {
            push(
                "copy_ns_per_kib",
                (big - op) / 64.0,
                format!("(pipe_op_32k {big:.0} - pipe_op_4 {op:.0}) / 64 KiB copied"),
            );
        }
        // The operations' own base costs: the measured pair minus two entries and the copies,
        // split between the two sides in the ratio of the defaults.
        let syscall = g("null_syscall").unwrap_or(base.syscall_ns as f64);
        let per_kib =
            out.iter().find(|k| k.key == "copy_ns_per_kib").map_or(base.copy_ns_per_kib as f64, |k| k.ns as f64);
        let mut split = |pair: f64, bytes: f64, keys: [(&'static str, u64); 2], name: &str| {
            let base_sum = (keys[0].1 + keys[1].1).max(1) as f64;
            let own = pair - 2.0 * syscall - 2.0 * bytes / 1024.0 * per_kib;
            for (key, default) in keys {
                let share = default as f64 / base_sum;
                out.push(KeyValue {
                    key,
                    ns: (own * share).max(0.0).round() as u64,
                    how: format!(
                        "({name} {pair:.0} - 2 x syscall {syscall:.0} - 2 copies of {bytes:.0} B) x {share:.2} (default split)"
                    ),
                    clamped: own < 0.0,
                });
            }
        };
        if let Some(op) = op {
            split(
                op,
                4.0,
                [("pipe_write_ns", base.ipc.pipe_write_ns), ("pipe_read_ns", base.ipc.pipe_read_ns)],
                "pipe_op_4",
            );
        }
        if let Some(op) = g("unix_op_100") {
            split(
                op,
                100.0,
                [("unix_send_ns", base.ipc.unix_send_ns), ("unix_recv_ns", base.ipc.unix_recv_ns)],
                "unix_op_100",
            );
        }
        let mut push = |key: &'static str, v: f64, how: String| {
            out.push(KeyValue { key, ns: v.max(0.0).round() as u64, how, clamped: v < 0.0 });
        };
        let wl = match g("wake_pinned") {
            Some(w) => {
                push("wakeup_local_ns", w, format!("wake_pinned = {w:.0} ns"));
                w.max(0.0)
            }
            None => base.wakeup_local_ns as f64,
        };
        if let (Some(sel), Some(_)) = (g("wake_selected"), g("wake_pinned")) {
            push("wakeup_select_ns", sel - wl, format!("wake_selected {sel:.0} - wake_pinned {wl:.0}"));
        }
        // `wake_remote` is reported, not applied: its wakee preempts the spinner every time, so
        // it includes the reschedule IPI, which most direct remote wakeups do not send (7 % of
        // hackbench's on a 6.18 guest), and a model charged it switches well above the kernel.
        // A pinned round trip is two pipe ops, a local wakeup for each sleep in `read()` (the
        // voluntary switches) and its switches. Where the wakee preempts its waker (6.18 with
        // preempt none: about 43 % of switches involuntary) the preempted waker finds the reply
        // already in the pipe and does not sleep: about one wakeup per round trip, not two.
        let pinned = |name: &str| {
            let m = self.get(name)?;
            let op = op?;
            let (wakeups, switches, counted) = match m.switches {
                Some(c) if c.total() > 0.0 => (c.voluntary, c.total(), true),
                _ => (2.0, 2.0, false),
            };
            let cs = (m.ns - 2.0 * op - wakeups * wl) / switches;
            let how = if counted {
                format!(
                    "({name} {rt:.0} - 2 x pipe_op_4 {op:.0} - {wakeups:.2} wakeups x wakeup_local_ns {wl:.0}) / {switches:.2} switches (per round trip, counted)",
                    rt = m.ns
                )
            } else {
                format!(
                    "({name} {rt:.0} - 2 x pipe_op_4 {op:.0} - 2 x wakeup_local_ns {wl:.0}) / 2 (switches not counted)",
                    rt = m.ns
                )
            };
            Some((cs, how))
        };
        let threads = pinned("rt_pinned_threads");
        let processes = pinned("rt_pinned_processes");
        let cs_mm = processes.as_ref().map(|(cs, _)| *cs);
        let mut cs_threads = None;
        if let Some((measured, mut how)) = threads {
            let v = match cs_mm {
                Some(mm) if measured > mm => {
                    how += &format!(
                        " = {measured:.0}, above the process switch {:.0}: written as the process switch (a thread switch is a process switch without switch_mm; noise or load)",
                        mm.max(0.0)
                    );
                    mm
                }
                _ => measured,
            };
            cs_threads = Some(v.max(0.0));
            push("context_switch_ns", v, how);
        }
        if let Some((mm, how)) = processes {
            push("context_switch_mm_ns", mm, how);
        }
        if let (Some(op), Some(rt), Some(cs)) = (op, g("rt_cross_processes"), cs_threads) {
            let hop = rt / 2.0;
            let remote = base.wakeup_remote_ipi_ns as f64;
            if vm_guest {
                let ipi = base.ipi_receive_ns as f64;
                let wake = hop - op - remote - ipi - cs;
                let how = format!(
                    "rt_cross_processes {rt:.0} / 2 = {hop:.0} per hop, minus pipe_op_4 {op:.0}, wakeup_remote_ipi_ns {remote:.0}, ipi_receive_ns {ipi:.0}, context_switch_ns {cs:.0} (switch from idle): waking a halted vCPU"
                );
                push("idle_exit_ns_c1", wake, how.clone());
                push("idle_exit_ns_deep", wake, how);
            } else {
                let c1 = base.idle_exit_ns_c1 as f64;
                push(
                    "ipi_receive_ns",
                    hop - op - remote - cs - c1,
                    format!(
                        "rt_cross_processes {rt:.0} / 2 = {hop:.0} per hop, minus pipe_op_4 {op:.0}, wakeup_remote_ipi_ns {remote:.0}, context_switch_ns {cs:.0} (switch from idle), idle_exit_ns_c1 {c1:.0}"
                    ),
                );
            }
        }
        out
    }

    /// The cost file: a comment header documenting every measurement and which one set each
    /// key, then the `[costs]` table. `notes` are extra comment lines (e.g. a check against the
    /// simulator).
    pub fn to_toml(&self, keys: &[KeyValue], context: &str, notes: &[String]) -> String {
        let mut s = String::new();
        s += "# schedlab cost file, written by `schedlab calibrate`: use with --cost-file.\n";
        for line in context.lines() {
            s += &format!("# {line}\n");
        }
        s += "#\n# Measurements (median of the repetitions; [min, max]):\n";
        for m in &self.measurements {
            let counted = m.switches.map_or(String::new(), |c| {
                format!("; {:.2} switches, {:.2} of them voluntary, per round trip", c.total(), c.voluntary)
            });
            s += &format!(
                "#   {:<20} {:>10.1} ns  [{:.1}, {:.1}]  {} x {}  {}{counted}\n",
                m.name, m.ns, m.min_ns, m.max_ns, m.repetitions, m.iterations, m.what
            );
        }
        s += "#\n# Which measurement set which key:\n";
        for k in keys {
            s += &format!("#   {:<22} {}{}\n", k.key, k.how, if k.clamped { "  (negative: written as 0)" } else { "" });
        }
        s += "# Keys not listed keep the topology's values.\n";
        if let Some(w) = self.load.and_then(|l| l.warning()) {
            s += &format!("# {w}\n");
        } else if let Some(l) = self.load {
            s += &format!(
                "# load: other processes used {:.1} % of the CPU time, {:.1} % stolen\n",
                l.others_share * 100.0,
                l.steal_share * 100.0
            );
        }
        for n in notes {
            s += &format!("# {n}\n");
        }
        s += "\n[costs]\n";
        for k in keys {
            s += &format!("{} = {}\n", k.key, k.ns);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measurement of `ns` from one repetition.
    fn m(name: &'static str, ns: f64) -> Measurement {
        Measurement {
            name,
            what: String::new(),
            ns,
            min_ns: ns,
            max_ns: ns,
            iterations: 1,
            repetitions: 1,
            switches: None,
        }
    }

    fn fake() -> Calibration {
        Calibration {
            measurements: vec![
                m("null_syscall", 80.0),
                m("pipe_op_4", 600.0),
                m("pipe_op_32k", 6_000.0),
                m("rt_pinned_threads", 4_000.0),
                m("rt_pinned_processes", 5_000.0),
                m("rt_cross_processes", 20_000.0),
                m("timer_irq", 3_000.0),
            ],
            nr_cpus: 2,
            load: None,
        }
    }

    #[test]
    fn derives_keys() {
        let base = sim::topology::Costs::x86_server();
        let keys = fake().keys(&base, false);
        let get = |k: &str| keys.iter().find(|v| v.key == k).unwrap().ns;
        assert_eq!(get("syscall_ns"), 80);
        assert_eq!(get("timer_irq_ns"), 3_000);
        assert_eq!(get("copy_ns_per_kib"), 84); // 5400 / 64 = 84.4
        assert_eq!(get("context_switch_ns"), (4_000 - 1_200) / 2 - base.wakeup_local_ns);
        assert_eq!(get("context_switch_mm_ns"), (5_000 - 1_200) / 2 - base.wakeup_local_ns);
        let cs = (4_000 - 1_200) / 2 - base.wakeup_local_ns;
        assert_eq!(get("ipi_receive_ns"), 10_000 - 600 - base.wakeup_remote_ipi_ns - cs - base.idle_exit_ns_c1);
        assert!(keys.iter().all(|k| k.key != "idle_exit_ns_c1"));
        let toml = fake().to_toml(&keys, "host: test", &["check: ok".into()]);
        assert!(toml.contains("[costs]\nsyscall_ns = 80\n"));
        assert!(toml.contains("# check: ok"));
    }

    /// A pinned round trip whose wakee preempts its waker: two switches, one of them
    /// voluntary, so one wakeup to take out instead of two.
    #[test]
    fn counted_switches_set_the_wakeups_taken_out_of_a_round_trip() {
        let base = sim::topology::Costs::x86_server();
        let mut c = fake();
        for m in c.measurements.iter_mut().filter(|m| m.name.starts_with("rt_pinned")) {
            m.switches = Some(Switches { voluntary: 1.0, involuntary: 1.0 });
        }
        let keys = c.keys(&base, false);
        let get = |k: &str| keys.iter().find(|v| v.key == k).unwrap();
        let wl = base.wakeup_local_ns;
        assert_eq!(get("context_switch_ns").ns, (4_000 - 1_200 - wl) / 2);
        assert_eq!(get("context_switch_mm_ns").ns, (5_000 - 1_200 - wl) / 2);
        assert!(get("context_switch_mm_ns").how.contains("1.00 wakeups"), "{}", get("context_switch_mm_ns").how);
        let toml = c.to_toml(&keys, "host: test", &[]);
        assert!(toml.contains("2.00 switches, 1.00 of them voluntary, per round trip"), "{toml}");
    }

    #[test]
    fn the_wakeup_measurements_set_the_wakers_costs() {
        let mut c = fake();
        c.measurements.extend([m("wake_pinned", 700.0), m("wake_selected", 1_000.0), m("wake_remote", 4_700.0)]);
        let keys = c.keys(&sim::topology::Costs::x86_server(), false);
        let get = |k: &str| keys.iter().find(|v| v.key == k).unwrap().ns;
        assert_eq!(get("wakeup_local_ns"), 700);
        assert_eq!(get("wakeup_select_ns"), 300);
        assert!(keys.iter().all(|k| k.key != "wakeup_remote_enqueue_ns"), "wake_remote is reported only");
        // The pinned round trip's switch is what is left after the measured wakeup.
        assert_eq!(get("context_switch_ns"), (4_000 - 1_200) / 2 - 700);
        // Without them the topology's wakeup stays and no extra is written.
        let keys = fake().keys(&sim::topology::Costs::x86_server(), false);
        assert!(
            keys.iter().all(|k| !matches!(k.key, "wakeup_local_ns" | "wakeup_select_ns" | "wakeup_remote_enqueue_ns"))
        );
    }

    #[test]
    fn a_vm_guest_measures_the_halted_vcpu_wakeup() {
        let base = sim::topology::Costs {
            ipi_receive_ns: 2_000,
            wakeup_remote_ipi_ns: 1_500,
            wakeup_local_ns: 400,
            ..sim::topology::Costs::x86_server()
        };
        let keys = fake().keys(&base, true);
        let get = |k: &str| keys.iter().find(|v| v.key == k).map(|v| v.ns);
        let cs = (4_000 - 1_200) / 2 - 400;
        // 20 us round trip: 10 us per hop, of which the halted vCPU's wakeup is the rest.
        let wake = 10_000 - 600 - 1_500 - 2_000 - cs;
        assert_eq!(get("idle_exit_ns_c1"), Some(wake));
        assert_eq!(get("idle_exit_ns_deep"), Some(wake));
        assert_eq!(get("ipi_receive_ns"), None, "kept at the topology's value");
    }

    #[test]
    fn a_thread_switch_is_never_dearer_than_a_process_switch() {
        let mut c = fake();
        // Threads measured slower than processes (load, noise).
        c.measurements.iter_mut().find(|m| m.name == "rt_pinned_threads").unwrap().ns = 6_000.0;
        let keys = c.keys(&sim::topology::Costs::x86_server(), false);
        let get = |k: &str| keys.iter().find(|v| v.key == k).unwrap();
        assert_eq!(get("context_switch_ns").ns, get("context_switch_mm_ns").ns);
        assert!(get("context_switch_ns").how.contains("written as the process switch"));
    }

    #[test]
    fn load_warns_above_a_tenth_of_the_machine() {
        assert_eq!(parse_proc_stat("cpu  100 0 50 800 10 5 5 30 0 0\ncpu0 1 2\n"), Some((160, 30, 1000)));
        assert!(parse_proc_stat("intr 1 2\n").is_none());
        let busy = Load { others_share: 0.45, steal_share: 0.0 };
        assert!(busy.warning().unwrap().contains("45 %"));
        assert!(Load { others_share: 0.02, steal_share: 0.01 }.warning().is_none());
        assert!(Load { others_share: 0.0, steal_share: 0.2 }.warning().is_some());
        let mut c = fake();
        c.load = Some(busy);
        let keys = c.keys(&sim::topology::Costs::x86_server(), false);
        assert!(c.to_toml(&keys, "host", &[]).contains("# WARNING: the machine was busy"));
    }

    #[test]
    fn measures_quickly() {
        let m = measure("null_syscall", "", 10_000, 2, null_syscall).unwrap();
        assert!(m.ns > 0.0 && m.ns < 100_000.0);
        assert!(pipe_ops(100, 4).unwrap() > 0);
        // Two tasks sharing CPU 0 switch at least twice a round trip, and at least one of them
        // sleeps in read() each time (the waker too, unless the wakee preempted it).
        for process in [false, true] {
            let (ns, counted) = ping_pong(200, 0, 0, process).unwrap();
            let (v, i) = counted.unwrap();
            assert!(ns > 0);
            assert!(v + i >= 2 * 200 - 4 && (200 - 4..=2 * 200 + 10).contains(&v), "process {process}: {v} + {i}");
        }
        // 50 ms of spinning meets at least a few ticks (HZ >= 100) on any kernel.
        let m = measure_interruptions(50_000_000, 1).unwrap();
        assert!(m.iterations >= 2 && m.ns > INTERRUPT_GAP_NS as f64, "{m:?}");
        if crate::host::nr_cpus() >= 2 {
            for target in [WakeTarget::Pinned, WakeTarget::Selected, WakeTarget::Remote] {
                assert_eq!(waking_writes(20, target).unwrap().len(), 20);
            }
        }
    }
}
