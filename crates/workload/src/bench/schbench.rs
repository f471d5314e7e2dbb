//! schbench, current version (masoncl/schbench main, 24e32b8; workloads.md §4).
//!
//! # Model (§4.7)
//!
//! * Tasks (one process, one `mm`): `schbench` main (the reporter, asleep in `sleep(1)`), M
//!   `schbench-msg` message threads it creates, and W `schbench-worker` threads per message
//!   thread, created by their message thread (`Spawn`, so placement is by fork).
//! * Normal mode: a worker loops { post its message thread (`FutexWake` of 1 on the message
//!   thread's futex), `FutexWait` on its message thread's worker futex, `usleep(-s)` (an
//!   hrtimer `Sleep` with slack), the matrix math (`Run` of n·s³ multiply-adds at [`MADD_NS`]
//!   each), count the loop }. The message thread loops { `FutexWait` on its futex, `FutexWake`
//!   of 1 on the worker futex }. The engine's futex counts pending wakes (a post before the
//!   wait is not lost, as with `fpost`/`fwait`), so every request gets exactly one reply, and a
//!   burst of posts is answered back to back — schbench's wake batch, with one `futex_wait`
//!   syscall (returning at once) between two wakes. The worker woken is the longest-waiting
//!   one (FIFO), where schbench walks its list most recent first.
//! * Request latency: from before the `usleep` (after it with `-C`) to the end of the math,
//!   exactly as schbench measures it (histogram [`HIST_REQUEST`]).
//! * Wakeup latency (histogram [`HIST_WAKEUP`]): **approximation** — from the worker's post to
//!   the worker running again, i.e. schbench's value plus the message thread's own wakeup
//!   latency. schbench stamps the time in the *waker* (the message thread, at the start of its
//!   wake batch); the program vocabulary has no waker-side stamp yet.
//! * `-p bytes` (pipe mode): no sleep or math; the worker memsets `bytes` before posting, the
//!   message thread memsets the same amount before each wake ([`MEMSET_NS_PER_KIB`]).
//! * `-R rps`: each message thread is an open-loop generator with a 1 s absolute timer; at
//!   every window start it posts each of its workers once, and worker `j` then serves its
//!   share of the window's `R/M` requests (round-robin: `⌊R/M/W⌋`, one more for the first
//!   `R/M mod W` workers, at most 129 — schbench's pending cap) without posting back. The burst
//!   is issued "as fast as it can" in schbench, so all of a worker's requests are queued at once;
//!   a worker still busy with an earlier window finds the next post pending (a backlog, which
//!   schbench would cap at 128 pending requests). No wakeup latency is recorded in this mode (it
//!   is stamped by the waker).
//! * `-M`/`-W` pinning: message thread i on the (i mod |list|)-th CPU of `-M`, workers on the
//!   `-W` list; `auto` pins message threads to CPUs 0..M−1 and leaves workers unpinned (the
//!   main-branch bug, §4.1). Pinning holds from creation (schbench pins the message thread after
//!   it created its workers).
//! * Metric: `wakeup_latency_us_p99` (`request_latency_us_p99` with `-R`).
//!
//! Not modelled: the per-CPU spin lock taken around the math (every run behaves as `-L`; the
//! lock needs a CPU-aware instruction), cache footprint effects of `-F`/`--split` beyond the
//! amount of math, `-A` auto-RPS (needs /proc/stat feedback), `-w` warmup reset and `-z`
//! zeroing (rejected when they would apply), `-j`/`-J` JSON output. Per-interval reports
//! (`-i`) are not reproduced: the output is the final report. The RPS block is derived from the
//! average rate (the per-second samples are not recorded), and quantiles other than p50/p90/p99
//! and `min` come from the histogram's nearest bound (see `hist.rs`).

use sim::ipc::ObjectSpec;
use sim::program::Op;

use super::args::{OptDef, Style, getopt, int, opt};
use super::hist::Quantiles;
use super::prog::Prog;
use super::{BenchParams, Better, Built, MetricSpec, View, WorkloadError, not_modelled, usage};

const BENCH: &str = "schbench";
/// Wakeup latency samples (local histogram id).
pub const HIST_WAKEUP: u16 = 0;
/// Request latency samples (local histogram id).
pub const HIST_REQUEST: u16 = 1;
/// Count id of completed requests (`loop_count`).
pub const COUNT_LOOPS: u16 = 0;

/// CPU time of one multiply-add of `do_some_math` **\[estimate\]**: the README's calibration run
/// spends ≈16.9 ms on 5 × 104³ multiply-adds (`-F 256 -n 5`).
pub const MADD_NS: f64 = 3.0;
/// `memset` cost per KiB in pipe mode **\[estimate\]** (≈10 GB/s).
pub const MEMSET_NS_PER_KIB: u64 = 100;
/// `PIPE_TRANSFER_BUFFER`.
pub const PIPE_TRANSFER_BUFFER: u32 = 1 << 20;
/// The pending-request cap of the RPS generator (`batch`): a worker with more is skipped.
const RPS_BATCH: u64 = 128;

/// CPUs for `-M`/`-W`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pin {
    /// `auto`: message threads on CPUs 0..M−1, workers unpinned (main-branch behaviour).
    Auto,
    /// An explicit list.
    Cpus(Vec<u32>),
}

/// schbench flags, defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schbench {
    /// `-m/--message-threads` (1).
    pub message_threads: u32,
    /// `-t/--threads` workers per message thread (⌈nprocs/m⌉).
    pub worker_threads: u32,
    /// `-t` was not given (schbench prints "setting worker threads to W").
    pub workers_defaulted: bool,
    /// `-r/--runtime` seconds (30; 0 runs until stopped).
    pub runtime_s: u32,
    /// `-i/--intervaltime` (10); only the final report is reproduced.
    pub interval_s: u32,
    /// `-F` cache footprint in KiB (256).
    pub cache_footprint_kb: u64,
    /// `-n/--operations` (5).
    pub operations: u64,
    /// `-s/--sleep_usec` (100).
    pub sleep_usec: u64,
    /// `-R/--rps`, total over all message threads (0: normal mode).
    pub rps: u32,
    /// `-p/--pipe` bytes (0: off), clamped to 1 MiB.
    pub pipe_bytes: u32,
    /// `-p` asked for more than 1 MiB.
    pub pipe_clamped: bool,
    /// `-C/--calibrate` (implies no locking).
    pub calibrate: bool,
    /// `-L/--no-locking`.
    pub no_locking: bool,
    /// `--split` percent private.
    pub split: Option<u32>,
    /// `-M/--message-cpus`.
    pub message_cpus: Option<Pin>,
    /// `-W/--worker-cpus`.
    pub worker_cpus: Option<Pin>,
}

impl Schbench {
    /// Matrix sizes `(shared, private)` with `--split`, or `(0, matrix_size)`.
    pub fn matrix_sizes(&self) -> (u64, u64) {
        let size = |kb: u64| ((kb * 1024 / 3 / 8) as f64).sqrt() as u64;
        match self.split {
            Some(p) => {
                let shared_kb = self.cache_footprint_kb * u64::from(100 - p) / 100;
                let private_kb = self.cache_footprint_kb * u64::from(p) / 100;
                (size(shared_kb), size(private_kb))
            }
            None => (0, size(self.cache_footprint_kb)),
        }
    }

    /// CPU time of `do_work()` in ns.
    pub fn work_ns(&self) -> u64 {
        let cube = |s: u64| (s * s * s) as f64;
        let (shared, private) = self.matrix_sizes();
        let madds = match self.split {
            Some(p) => {
                let ops_private = self.operations * u64::from(p) / 100;
                let ops_shared = self.operations - ops_private;
                ops_shared as f64 * cube(shared) + ops_private as f64 * cube(private)
            }
            None => self.operations as f64 * cube(private),
        };
        (madds * MADD_NS) as u64
    }

    /// Requests per window for each worker of a message thread in RPS mode.
    fn rps_share(&self) -> Vec<u64> {
        let per_msg = u64::from(self.rps / self.message_threads);
        let w = u64::from(self.worker_threads);
        (0..w).map(|j| (per_msg / w + u64::from(j < per_msg % w)).min(RPS_BATCH + 1)).collect()
    }
}

const OPTS: &[OptDef] = &[
    opt("pipe", Some('p'), Some("pipe"), true),
    opt("message-threads", Some('m'), Some("message-threads"), true),
    opt("message-cpus", Some('M'), Some("message-cpus"), true),
    opt("worker-cpus", Some('W'), Some("worker-cpus"), true),
    opt("threads", Some('t'), Some("threads"), true),
    opt("runtime", Some('r'), Some("runtime"), true),
    opt("rps", Some('R'), Some("rps"), true),
    opt("auto-rps", Some('A'), Some("auto-rps"), true),
    // schbench maps `--cache_footprint` to the unhandled 'f': it is accepted and ignored.
    opt("cache_footprint", None, Some("cache_footprint"), true),
    opt("footprint", Some('F'), None, true),
    opt("calibrate", Some('C'), Some("calibrate"), false),
    opt("no-locking", Some('L'), Some("no-locking"), false),
    opt("operations", Some('n'), Some("operations"), true),
    opt("sleep_usec", Some('s'), Some("sleep_usec"), true),
    opt("warmuptime", Some('w'), Some("warmuptime"), true),
    opt("intervaltime", Some('i'), Some("intervaltime"), true),
    opt("zerotime", Some('z'), Some("zerotime"), true),
    opt("json", Some('j'), Some("json"), true),
    opt("jobname", Some('J'), Some("jobname"), true),
    opt("split", None, Some("split"), true),
    opt("help", None, Some("help"), false),
];

/// `parse_cpuset`: `a-m,n-z` lists.
fn cpuset(flag: &str, s: &str, nr_cpus: Option<u32>) -> Result<Pin, WorkloadError> {
    if s == "auto" {
        return Ok(Pin::Auto);
    }
    let bad = || usage(BENCH, format!("{flag} {s}: failed to parse cpuset information"));
    let mut cpus = Vec::new();
    for tok in s.split(',').filter(|t| !t.is_empty()) {
        let (lo, hi) = match tok.split_once('-') {
            Some((a, b)) => (a.parse::<u32>(), b.parse::<u32>()),
            None => (tok.parse::<u32>(), tok.parse::<u32>()),
        };
        let (Ok(lo), Ok(hi)) = (lo, hi) else { return bad() };
        if hi < lo || hi >= 1024 {
            return bad();
        }
        cpus.extend(lo..=hi);
    }
    if cpus.is_empty() {
        return bad();
    }
    cpus.sort_unstable();
    cpus.dedup();
    if let (Some(n), Some(&max)) = (nr_cpus, cpus.last())
        && max >= n
    {
        return usage(BENCH, format!("{flag} {s}: CPU {max} does not exist (the machine has {n} CPUs)"));
    }
    Ok(Pin::Cpus(cpus))
}

pub(crate) fn parse(argv: &[String], nr_cpus: Option<u32>) -> Result<Built, WorkloadError> {
    let parsed = getopt(BENCH, argv, OPTS, Style::default())?;
    let mut s = Schbench {
        message_threads: 1,
        worker_threads: 0,
        workers_defaulted: false,
        runtime_s: 30,
        interval_s: 10,
        cache_footprint_kb: 256,
        operations: 5,
        sleep_usec: 100,
        rps: 0,
        pipe_bytes: 0,
        pipe_clamped: false,
        calibrate: false,
        no_locking: false,
        split: None,
        message_cpus: None,
        worker_cpus: None,
    };
    let (mut warmup, mut warmup_flag, mut zero_flag) = (None, String::new(), None);
    let nonneg = |f: &super::args::Found| -> Result<u64, WorkloadError> {
        let v = int(BENCH, &f.flag, f.val())?;
        if !(0..=i64::from(i32::MAX)).contains(&v) {
            return usage(BENCH, format!("{}: {v} is outside 0..={}", f.flag, i32::MAX));
        }
        Ok(v as u64)
    };
    for f in &parsed.opts {
        match f.key {
            "calibrate" => s.calibrate = true,
            "no-locking" => s.no_locking = true,
            "auto-rps" => return not_modelled(BENCH, &f.flag, "auto-RPS", "it steers the load from /proc/stat"),
            "pipe" => {
                let v = nonneg(f)?;
                s.pipe_clamped = v > u64::from(PIPE_TRANSFER_BUFFER);
                s.pipe_bytes = v.min(u64::from(PIPE_TRANSFER_BUFFER)) as u32;
            }
            "warmuptime" => {
                warmup = Some(nonneg(f)?);
                warmup_flag = f.flag.clone();
            }
            "message-threads" => {
                let v = nonneg(f)?;
                if v == 0 {
                    return usage(BENCH, format!("{}: at least one message thread is needed", f.flag));
                }
                s.message_threads = v as u32;
            }
            "message-cpus" => s.message_cpus = Some(cpuset(&f.flag, f.val(), nr_cpus)?),
            "worker-cpus" => s.worker_cpus = Some(cpuset(&f.flag, f.val(), nr_cpus)?),
            "threads" => s.worker_threads = nonneg(f)? as u32,
            "runtime" => s.runtime_s = nonneg(f)? as u32,
            "intervaltime" => s.interval_s = nonneg(f)? as u32,
            "zerotime" => {
                if nonneg(f)? > 0 {
                    zero_flag = Some(f.flag.clone());
                }
            }
            "rps" => s.rps = nonneg(f)? as u32,
            "operations" => s.operations = nonneg(f)?,
            "sleep_usec" => s.sleep_usec = nonneg(f)?,
            "footprint" => s.cache_footprint_kb = nonneg(f)?,
            "cache_footprint" => {
                return not_modelled(
                    BENCH,
                    &f.flag,
                    "ignored by schbench itself",
                    "schbench maps it to an unhandled option; use -F",
                );
            }
            "json" | "jobname" => {
                return not_modelled(BENCH, &f.flag, "JSON output file", "use `schedlab run --json`");
            }
            "split" => {
                let v = int(BENCH, &f.flag, f.val())?;
                if !(0..=100).contains(&v) {
                    return usage(BENCH, "split must be between 0 and 100");
                }
                s.split = Some(v as u32);
            }
            "help" => return usage(BENCH, "--help prints the usage text; see schbench's README"),
            _ => unreachable!("option table"),
        }
    }
    if let Some(op) = parsed.operands.first() {
        return usage(BENCH, format!("Error Extra arguments '{op}'"));
    }
    if s.calibrate {
        s.no_locking = true;
    }
    // Warmup applies only in normal mode and is forced to 0 for runs shorter than 30 s.
    if let Some(w) = warmup
        && w > 0
        && s.runtime_s >= 30
        && s.rps == 0
        && s.pipe_bytes == 0
    {
        return not_modelled(BENCH, &warmup_flag, "warmup stats reset", "use a shorter -r or -w 0");
    }
    if let Some(flag) = zero_flag {
        return not_modelled(BENCH, &flag, "periodic stats zeroing", "");
    }
    if s.worker_threads == 0 {
        let Some(n) = nr_cpus else {
            return Err(WorkloadError::NeedsCpuCount {
                bench: BENCH, what: "the default -t (⌈nprocs/m⌉)", flag: "-t"
            });
        };
        s.worker_threads = n.div_ceil(s.message_threads).max(1);
        s.workers_defaulted = true;
    }
    let m = u64::from(s.message_threads);
    let w = u64::from(s.worker_threads);
    if m * (w + 1) > 1 << 20 {
        return usage(BENCH, format!("{} threads are more than schedlab simulates", m * (w + 1)));
    }
    let built = build(&s);
    Ok(Built {
        name: BENCH,
        tasks: built.0,
        objects: built.1,
        duration_ns: (s.runtime_s > 0).then(|| u64::from(s.runtime_s) * 1_000_000_000),
        metric: if s.rps > 0 {
            MetricSpec { name: "request_latency_us_p99", better: Better::Lower }
        } else {
            MetricSpec { name: "wakeup_latency_us_p99", better: Better::Lower }
        },
        params: BenchParams::Schbench(s),
    })
}

fn build(s: &Schbench) -> (Vec<sim::program::TaskSpec>, Vec<ObjectSpec>) {
    let (m, w) = (s.message_threads, s.worker_threads);
    let rps_mode = s.rps > 0;
    // Objects per message thread: its own futex, then the workers' futex (normal/pipe mode)
    // or one futex per worker (RPS mode).
    let per_msg = if rps_mode { 1 + w } else { 2 };
    let objects = vec![ObjectSpec::Futex; (m * per_msg) as usize];
    let msg_futex = |i: u32| i * per_msg;
    let worker_futex = |i: u32, j: u32| i * per_msg + 1 + if rps_mode { j } else { 0 };

    // Task layout: 0 main; then per message thread: the message thread, then its W workers.
    let msg_spec = |i: u32| 1 + i * (w + 1);
    let mut tasks = Vec::with_capacity((1 + m * (w + 1)) as usize);
    let mut main = Prog::new();
    for i in 0..m {
        main.op(Op::Spawn { spec: msg_spec(i) });
    }
    main.forever(&|p| {
        p.op(Op::Sleep { ns: 1_000_000_000 });
    });
    tasks.push(main.task("schbench", 0, false));

    let work_ns = s.work_ns();
    let sleep_ns = s.sleep_usec * 1_000;
    let memset_ns = u64::from(s.pipe_bytes) * MEMSET_NS_PER_KIB / 1024;
    let share = if rps_mode { s.rps_share() } else { Vec::new() };
    let msg_pin = |i: u32| -> Option<Vec<u32>> {
        match &s.message_cpus {
            Some(Pin::Auto) => Some(vec![i]),
            Some(Pin::Cpus(list)) => Some(vec![list[i as usize % list.len()]]),
            None => match &s.worker_cpus {
                // Before pinning itself, a message thread runs on the worker list; without -M
                // it keeps it.
                Some(Pin::Cpus(list)) => Some(list.clone()),
                _ => None,
            },
        }
    };
    let worker_pin = match &s.worker_cpus {
        Some(Pin::Cpus(list)) => Some(list.clone()),
        _ => None,
    };

    for i in 0..m {
        let mut p = Prog::new();
        for j in 0..w {
            p.op(Op::Spawn { spec: msg_spec(i) + 1 + j });
        }
        if rps_mode {
            let timer = p.timer();
            let share = &share;
            p.forever(&|p| {
                for j in 0..w {
                    if share[j as usize] > 0 {
                        p.op(Op::FutexWake { obj: worker_futex(i, j), n: 1 });
                    }
                }
                p.op(Op::Timer { slot: timer, period_ns: 1_000_000_000, absolute: true });
            });
        } else {
            p.forever(&|p| {
                p.op(Op::FutexWait { obj: msg_futex(i) });
                p.run(memset_ns);
                p.op(Op::FutexWake { obj: worker_futex(i, 0), n: 1 });
            });
        }
        let mut t = p.task("schbench-msg", 0, true);
        t.cpus = msg_pin(i);
        tasks.push(t);

        for j in 0..w {
            let mut p = Prog::new();
            let request = |p: &mut Prog| {
                if s.calibrate {
                    if sleep_ns > 0 {
                        p.op(Op::Sleep { ns: sleep_ns });
                    }
                    p.op(Op::LatStart { slot: 1 });
                } else {
                    p.op(Op::LatStart { slot: 1 });
                    if sleep_ns > 0 {
                        p.op(Op::Sleep { ns: sleep_ns });
                    }
                }
                p.run(work_ns);
                p.op(Op::LatEnd { slot: 1, hist: HIST_REQUEST }).op(Op::Count { id: COUNT_LOOPS });
            };
            if rps_mode {
                let q = share[j as usize];
                if q == 0 {
                    // Never handed a request: blocks once and stays asleep.
                    p.op(Op::FutexWait { obj: worker_futex(i, j) });
                } else {
                    p.forever(&|p| {
                        p.op(Op::FutexWait { obj: worker_futex(i, j) });
                        p.repeat(q, &request);
                    });
                }
            } else if s.pipe_bytes > 0 {
                p.forever(&|p| {
                    p.run(memset_ns);
                    p.op(Op::LatStart { slot: 0 })
                        .op(Op::FutexWake { obj: msg_futex(i), n: 1 })
                        .op(Op::FutexWait { obj: worker_futex(i, 0) })
                        .op(Op::LatEnd { slot: 0, hist: HIST_WAKEUP })
                        .op(Op::Count { id: COUNT_LOOPS });
                });
            } else {
                p.forever(&|p| {
                    p.op(Op::LatStart { slot: 0 })
                        .op(Op::FutexWake { obj: msg_futex(i), n: 1 })
                        .op(Op::FutexWait { obj: worker_futex(i, 0) })
                        .op(Op::LatEnd { slot: 0, hist: HIST_WAKEUP });
                    request(p);
                });
            }
            let mut t = p.task("schbench-worker", 0, true);
            t.cpus = worker_pin.clone();
            tasks.push(t);
        }
    }
    (tasks, objects)
}

/// fio's `plat_val_to_idx` (PLAT_BITS 8, 19 groups).
fn plat_val_to_idx(val: u32) -> u32 {
    const PLAT_NR: u32 = 19 * 256;
    let msb = if val == 0 { 0 } else { 31 - val.leading_zeros() };
    if msb <= 8 {
        return val;
    }
    let error_bits = msb - 8;
    let base = (error_bits + 1) << 8;
    let offset = 255 & (val >> error_bits);
    (base + offset).min(PLAT_NR - 1)
}

/// fio's `plat_idx_to_val`: the bucket's midpoint.
fn plat_idx_to_val(idx: u32) -> u32 {
    if idx < 512 {
        return idx;
    }
    let error_bits = (idx >> 8) - 1;
    let base = 1u64 << (error_bits + 8);
    let k = u64::from(idx % 256);
    (base as f64 + (k as f64 + 0.5) * (1u64 << error_bits) as f64) as u32
}

/// A value as schbench prints a percentile: µs, rounded to its histogram bucket.
fn bucket_us(ns: u64) -> u32 {
    let us = (ns / 1_000).min(u64::from(u32::MAX)) as u32;
    plat_idx_to_val(plat_val_to_idx(us))
}

/// `plist` of schbench.
const PLIST: [f64; 5] = [20.0, 50.0, 90.0, 99.0, 99.9];

/// The data of one `show_latencies()` block: sample count, the five `plist` values in the
/// tool's unit (already bucketed), min and max.
struct Block<'a> {
    label: &'a str,
    unit: &'a str,
    n: u64,
    values: [u32; 5],
    min: u64,
    max: u64,
}

impl Block<'_> {
    /// `mask` selects the printed percentiles (indices into PLIST), `star` the starred one.
    fn show(&self, runtime: u32, mask: &[usize], star: usize) -> String {
        let n = self.n;
        let mut out = format!("{} percentiles ({}) runtime {runtime} (s) ({n} total samples)\n", self.label, self.unit);
        // Samples between consecutive percentiles: the cumulative count at each percentile is
        // taken as ⌈p·N⌉ (the histogram's exact bucket counts are not available).
        let cum: Vec<u64> = PLIST.iter().map(|p| ((p / 100.0) * n as f64).ceil() as u64).collect();
        for &i in mask {
            let count = if i == 0 { cum[0] } else { cum[i].saturating_sub(cum[i - 1]) };
            let mark = if i == star { "* " } else { "  " };
            out += &format!("\t{mark}{:.1}th: {:<10} ({count} samples)\n", PLIST[i], self.values[i]);
        }
        out += &format!("\t  min={}, max={}\n", self.min, self.max);
        out
    }
}

fn latency_block<'a>(label: &'a str, q: &Quantiles) -> Block<'a> {
    Block { label, unit: "usec", n: q.count, values: latency_values(q), min: q.min() / 1_000, max: q.max / 1_000 }
}

fn latency_values(q: &Quantiles) -> [u32; 5] {
    PLIST.map(|p| bucket_us(q.at(p)))
}

impl Schbench {
    pub(crate) fn metric_value(&self, v: &View) -> f64 {
        let hist = if self.rps > 0 { HIST_REQUEST } else { HIST_WAKEUP };
        let q = Quantiles::of(v.hist(hist));
        if q.count == 0 { f64::NAN } else { q.p99 as f64 / 1e3 }
    }

    /// The start-up lines and the final report (all on stderr in schbench).
    pub(crate) fn format_output(&self, v: &View) -> String {
        let mut out = String::new();
        if self.pipe_clamped {
            out += &format!("pipe size too big, using {PIPE_TRANSFER_BUFFER}\n");
        }
        if self.message_cpus == Some(Pin::Auto) || self.worker_cpus == Some(Pin::Auto) {
            out += "auto pinning message and worker threads\n";
        }
        if self.workers_defaulted {
            out += &format!("setting worker threads to {}\n", self.worker_threads);
        }
        if let Some(p) = self.split {
            let shared_kb = self.cache_footprint_kb * u64::from(100 - p) / 100;
            let private_kb = self.cache_footprint_kb * u64::from(p) / 100;
            let (shared, private) = self.matrix_sizes();
            out += &format!(
                "split mode: {p}% private ({private_kb} KB per thread), {}% shared ({shared_kb} KB total)\n",
                100 - p
            );
            out += &format!("matrix sizes: private={private}, shared={shared}\n");
        }
        for i in 0..self.message_threads {
            let cpu = match &self.message_cpus {
                Some(Pin::Auto) => Some(i),
                Some(Pin::Cpus(list)) => Some(list[i as usize % list.len()]),
                None => None,
            };
            if let Some(c) = cpu {
                out += &format!("Pinning to message thread index {i} cpu {c}\n");
            }
        }

        let runtime = self.runtime_s;
        let wake = Quantiles::of(v.hist(HIST_WAKEUP));
        let loops = v.count(COUNT_LOOPS);
        if self.pipe_bytes > 0 {
            out += &latency_block("Wakeup Latencies", &wake).show(runtime, &[0, 1, 2, 3, 4], 3);
            // loops_per_sec = loop_count * 1e6 / Σ worker runtime (µs since each started).
            let workers = u64::from(self.message_threads) * u64::from(self.worker_threads);
            let loop_runtime_us = v.r.simulated_ns / 1_000 * workers;
            let (per_sec, bytes_per_sec) = if loop_runtime_us == 0 {
                (f64::NAN, 0)
            } else {
                (
                    loops as f64 * 1e6 / loop_runtime_us as f64,
                    loops * u64::from(self.pipe_bytes) * 1_000_000 / loop_runtime_us,
                )
            };
            let (size, unit) = pretty_size(bytes_per_sec as f64);
            out += &format!("avg worker transfer: {per_sec:.2} ops/sec {size:.2}{unit}/s\n");
            return out;
        }
        let req = Quantiles::of(v.hist(HIST_REQUEST));
        out += &latency_block("Wakeup Latencies", &wake).show(runtime, &[1, 2, 3, 4], 3);
        out += &latency_block("Request Latencies", &req).show(runtime, &[1, 2, 3, 4], 3);
        // One RPS sample per second of the run, each taken as the average rate.
        let secs = v.r.simulated_ns as f64 / 1e9;
        let avg = if secs > 0.0 { loops as f64 / secs } else { 0.0 };
        let samples = v.r.simulated_ns / 1_000_000_000;
        let b = plat_idx_to_val(plat_val_to_idx(avg as u32));
        let rps =
            Block { label: "RPS", unit: "requests", n: samples, values: [b; 5], min: avg as u64, max: avg as u64 };
        out += &rps.show(runtime, &[0, 1, 2], 1);
        out += &format!("average rps: {:.2}\n", loops as f64 / f64::from(runtime));
        out += "sched delay: message 0 (usec) worker 0 (usec)\n";
        out
    }
}

/// `pretty_size`: divide by 1024 while ≥ 1024, up to EB.
fn pretty_size(mut n: f64) -> (f64, &'static str) {
    const UNITS: [&str; 7] = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
    let mut i = 0;
    while n >= 1024.0 && i + 1 < UNITS.len() {
        n /= 1024.0;
        i += 1;
    }
    (n, UNITS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_buckets() {
        for v in [0, 1, 7, 255, 256, 511] {
            assert_eq!(plat_idx_to_val(plat_val_to_idx(v)), v);
        }
        assert_eq!(plat_idx_to_val(plat_val_to_idx(512)), 513);
        assert_eq!(plat_idx_to_val(plat_val_to_idx(16_864)), 16_864);
        // Bucket width ≤ 0.4 %: the midpoint is close to the value.
        for v in [1_000u32, 17_120, 123_456, 3_193_800] {
            let b = plat_idx_to_val(plat_val_to_idx(v));
            assert!((f64::from(b) - f64::from(v)).abs() / f64::from(v) < 0.004, "{v} -> {b}");
        }
    }
}
