//! `perf bench sched pipe` (workloads.md §3), as in the Linux 7.3 tree: two tasks, two pipes,
//! and **two tokens**: each task writes to its output pipe, then reads from its input pipe, L
//! times (the worker of the revision that added `-n`). `--classic` selects the 1-token worker
//! of older perf (A reads then writes, B writes then reads), whose numbers are not comparable.
//!
//! # Model (§3.4)
//!
//! * Process mode: task 0 is the parent (`B`, thread data 1), which marks the start, forks `A`
//!   (`Spawn`, its own `mm`), runs its loop, waits for `A` and marks the end — perf takes the
//!   start time before `fork()`. `-T`: task 0 is a main thread that marks the start, creates
//!   `A` and `B` (same `mm`), joins both (`WaitChildren`) and marks the end.
//! * Objects: pipe 0 carries B→A, pipe 1 A→B. With `-s S > 4` perf resizes both pipes to
//!   hold one payload (`F_SETPIPE_SZ`: a power-of-two number of pages); otherwise 16 slots.
//! * `-n`: every read is preceded by `epoll_wait` on the input pipe (level-triggered `EPOLLIN`);
//!   a full pipe makes the writer block in `write` instead of polling for `POLLOUT`.
//! * Tasks are named `sched-pipe`, as `perf bench` names itself.
//! * Metric: `usecs_per_op` = elapsed / L, at ns precision (the printed value has perf's µs
//!   resolution).
//!
//! Flags: `-l/--loop N` (1 000 000), `-T/--threaded`, `-n/--nonblocking`, `-s/--write-size N`
//! (4), `--classic` (schedlab: the 1-token worker), `-G/--cgroups SEND[,RECV]`: perf's
//! `enter_cgroup()` moves worker 0 (`A`, the forked child in process mode) into the cgroup
//! `/SEND` and worker 1 (`B`, the parent) into `/RECV` (one name: both in it); a `-T` main
//! thread stays where perf was started.

use sim::ipc::ObjectSpec;
use sim::program::Op;

use super::args::{OptDef, Style, getopt, int, opt};
use super::prog::Prog;
use super::{BenchParams, Better, Built, MetricSpec, View, WorkloadError, secs_msecs, usage};

const BENCH: &str = "pipe";
const COMM: &str = "sched-pipe";
pub(crate) const MARK_START: u16 = 0;
pub(crate) const MARK_END: u16 = 1;
/// `/proc/sys/fs/pipe-max-size` default.
pub const PIPE_MAX_SIZE: u32 = 1 << 20;

/// perf bench sched pipe flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipe {
    /// `-l/--loop` (1 000 000).
    pub loops: u32,
    /// `-T/--threaded`.
    pub threads: bool,
    /// `-n/--nonblocking`.
    pub nonblocking: bool,
    /// `-s/--write-size` in bytes (4).
    pub write_size: u32,
    /// `--classic`: the 1-token ping-pong of perf before the 2-token worker.
    pub classic: bool,
    /// `-G/--cgroups SEND,RECV`: the cgroups of worker 0 and worker 1.
    pub cgroups: Option<(String, String)>,
}

impl Default for Pipe {
    fn default() -> Self {
        Pipe { loops: 1_000_000, threads: false, nonblocking: false, write_size: 4, classic: false, cgroups: None }
    }
}

const OPTS: &[OptDef] = &[
    opt("nonblocking", Some('n'), Some("nonblocking"), false),
    opt("loop", Some('l'), Some("loop"), true),
    opt("threaded", Some('T'), Some("threaded"), false),
    opt("write-size", Some('s'), Some("write-size"), true),
    opt("cgroups", Some('G'), Some("cgroups"), true),
    opt("classic", None, Some("classic"), false),
];

/// `parse_two_cgroups()` (tools/perf/bench/sched-pipe.c): `SEND,RECV`, or one name for both;
/// each is a cgroup below the root, named as a path under the cgroup mount.
fn parse_two_cgroups(flag: &str, val: &str) -> Result<(String, String), WorkloadError> {
    let (send, recv) = val.split_once(',').unwrap_or((val, val));
    let path = |name: &str| {
        let name = name.trim_matches('/');
        if name.is_empty() || name.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
            return usage(BENCH, format!("{flag} {val}: expected SEND,RECV cgroup names (e.g. -G A,B)"));
        }
        Ok(format!("/{name}"))
    };
    Ok((path(send)?, path(recv)?))
}

/// Slots of a pipe resized to `size` bytes (`round_pipe_size`: at least a page, a power of two).
fn resized_slots(size: u32) -> u32 {
    size.max(4096).next_power_of_two() / 4096
}

pub(crate) fn parse(argv: &[String]) -> Result<Built, WorkloadError> {
    let parsed = getopt(BENCH, argv, OPTS, Style { negation: true, exact_long: false })?;
    let mut p = Pipe::default();
    let mut size_flag = None;
    for f in &parsed.opts {
        match f.key {
            "nonblocking" => p.nonblocking = !f.negated,
            "threaded" => p.threads = !f.negated,
            "classic" => p.classic = !f.negated,
            "loop" => {
                let v = int(BENCH, &f.flag, f.val())?;
                if !(0..=i64::from(i32::MAX)).contains(&v) {
                    return usage(BENCH, format!("{}: {v} loops (schedlab needs 0..={})", f.flag, i32::MAX));
                }
                p.loops = v as u32;
            }
            "write-size" => {
                let v = int(BENCH, &f.flag, f.val())?;
                if v < 0 || v > i64::from(u32::MAX) {
                    return usage(
                        BENCH,
                        format!("option `write-size' expects an unsigned numerical value (got `{}`)", f.val()),
                    );
                }
                if v == 0 || v > i64::from(i32::MAX) {
                    return usage(BENCH, format!("--write-size must be in 1..{}", i32::MAX));
                }
                if v > i64::from(PIPE_MAX_SIZE) {
                    return usage(BENCH, format!("--write-size {v} exceeds /proc/sys/fs/pipe-max-size"));
                }
                p.write_size = v as u32;
                size_flag = Some(f.flag.clone());
            }
            "cgroups" => p.cgroups = Some(parse_two_cgroups(&f.flag, f.val())?),
            _ => unreachable!("option table"),
        }
    }
    if let Some(op) = parsed.operands.first() {
        return usage(BENCH, format!("unexpected argument `{op}`"));
    }
    if p.classic && (p.nonblocking || size_flag.is_some()) {
        let flag = if p.nonblocking { "-n".to_owned() } else { size_flag.unwrap_or_default() };
        return usage(BENCH, format!("{flag} does not exist in the classic (1-token) perf bench sched pipe"));
    }

    let slots = if p.write_size > 4 { resized_slots(p.write_size) } else { super::hackbench::PIPE_SLOTS };
    let objects = vec![ObjectSpec::Pipe { slots }; 2];
    const B_TO_A: u32 = 0;
    const A_TO_B: u32 = 1;
    let (size, loops, nonblocking, classic) = (p.write_size, u64::from(p.loops), p.nonblocking, p.classic);
    // One task's loop: `out` and `inp` are its output and input pipes; the poll set 0 of the
    // task is its input pipe (for `-n`).
    let worker = move |prog: &mut Prog, out: u32, inp: u32, reader_first: bool| {
        let read = move |p: &mut Prog| {
            if nonblocking {
                p.op(Op::EpollWait { set: 0 });
            }
            p.op(Op::Read { obj: inp, bytes: size, exact: true });
        };
        prog.repeat(loops, &|p| {
            if reader_first {
                read(p);
                p.op(Op::Write { obj: out, bytes: size });
            } else {
                p.op(Op::Write { obj: out, bytes: size });
                read(p);
            }
        });
    };
    let poll = |t: &mut sim::program::TaskSpec, inp: u32| {
        if nonblocking {
            t.poll_sets = vec![vec![inp]];
        }
    };
    let mut tasks = Vec::new();
    if p.threads {
        let mut main = Prog::new();
        main.op(Op::Mark { id: MARK_START })
            .op(Op::Spawn { spec: 1 })
            .op(Op::Spawn { spec: 2 })
            .op(Op::WaitChildren)
            .op(Op::Mark { id: MARK_END });
        tasks.push(main.task(COMM, 0, false));
        let mut a = Prog::new();
        worker(&mut a, A_TO_B, B_TO_A, classic);
        let mut a = a.task(COMM, 0, true);
        poll(&mut a, B_TO_A);
        let mut b = Prog::new();
        worker(&mut b, B_TO_A, A_TO_B, false);
        let mut b = b.task(COMM, 0, true);
        poll(&mut b, A_TO_B);
        if let Some((send, recv)) = &p.cgroups {
            (a.cgroup, b.cgroup) = (Some(send.clone()), Some(recv.clone()));
        }
        tasks.extend([a, b]);
    } else {
        let mut b = Prog::new();
        b.op(Op::Mark { id: MARK_START }).op(Op::Spawn { spec: 1 });
        worker(&mut b, B_TO_A, A_TO_B, false);
        b.op(Op::WaitChildren).op(Op::Mark { id: MARK_END });
        let mut b = b.task(COMM, 0, false);
        poll(&mut b, A_TO_B);
        let mut a = Prog::new();
        worker(&mut a, A_TO_B, B_TO_A, classic);
        let mut a = a.task(COMM, 1, true);
        poll(&mut a, B_TO_A);
        if let Some((send, recv)) = &p.cgroups {
            (a.cgroup, b.cgroup) = (Some(send.clone()), Some(recv.clone()));
        }
        tasks.extend([b, a]);
    }
    Ok(Built {
        name: BENCH,
        tasks,
        objects,
        duration_ns: None,
        metric: MetricSpec { name: "usecs_per_op", better: Better::Lower },
        params: BenchParams::Pipe(p),
    })
}

impl Pipe {
    pub(crate) fn metric_value(&self, v: &View) -> f64 {
        match v.span(MARK_START, MARK_END) {
            Some(ns) if self.loops > 0 => ns as f64 / 1e3 / f64::from(self.loops),
            _ => f64::NAN,
        }
    }

    /// `bench_sched_pipe()`'s default format.
    pub(crate) fn format_output(&self, v: &View) -> String {
        let mut s = format!(
            "# Running 'sched/pipe' benchmark:\n# Executed {} pipe operations between two {}\n\n",
            self.loops,
            if self.threads { "threads" } else { "processes" }
        );
        if let Some(ns) = v.span(MARK_START, MARK_END) {
            let result_usec = ns / 1_000;
            let per_op = result_usec as f64 / f64::from(self.loops);
            // `(int)((double)loops / ((double)result_usec / USEC_PER_SEC))`.
            let ops = (f64::from(self.loops) / (result_usec as f64 / 1e6)) as i32;
            s += &format!(" {:>14}: {} [sec]\n\n", "Total time", secs_msecs(ns));
            s += &format!(" {per_op:14.6} usecs/op\n {ops:14} ops/sec\n");
        }
        s
    }
}
