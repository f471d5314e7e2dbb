//! rt-tests `hackbench` (workloads.md §2): groups of F senders spraying messages to F
//! receivers over unix sockets (default), pipes (`-p`) or TCP loopback (`-i`).
//!
//! # Model (§2.6)
//!
//! * Tasks: `hackbench` main (task 0) and, per group, F receivers then F senders, created by
//!   main with `Spawn` in rt-tests' order (fork/`pthread_create` placement, WF_FORK). Process
//!   mode gives every child its own `mm`; thread mode (`-T`) shares main's.
//! * Objects: `ready` (0) and `wake` (1), then one channel per receiver, all of the chosen
//!   transport: `Pipe{16}`, `UnixStream{212 992}` (`net.core.wmem_default`), or
//!   `TcpLoopback{16 384}` (`tcp_wmem[1]`, before autotuning).
//! * Start barrier: every child writes one byte to `ready` and polls `wake`; main reads 2·F·G
//!   bytes from `ready`, marks the start, writes the never-consumed GO byte to `wake` (one
//!   sync wake of all pollers), then `WaitChildren` and marks the end.
//! * Receivers read F·L messages of D bytes (`exact`: the retry loop); senders write L rounds
//!   of one D-byte message to each of the group's F channels. No user-mode work: the cost is
//!   the engine's syscall, copy and wakeup cost.
//! * Metric: `seconds` from mark 0 (before GO) to mark 1 (all children reaped).
//!
//! Approximations: thread mode reaps with `WaitChildren` (all threads), where rt-tests joins in
//! creation order; pipes are assumed to be created by root, so they keep 16 slots even above
//! `fs.pipe-user-pages-soft`; the TCP socket buffer does not autotune.

use sim::ipc::ObjectSpec;
use sim::program::{Op, TaskSpec};

use super::args::{OptDef, Style, getopt, int, opt};
use super::prog::Prog;
use super::{BenchParams, Better, Built, MetricSpec, View, WorkloadError, not_modelled, secs_msecs, usage};

const BENCH: &str = "hackbench";

/// Slots of a pipe created with the default size (16 pages).
pub const PIPE_SLOTS: u32 = 16;
/// `net.core.wmem_default` on common x86-64 builds: the unix socket send buffer.
pub const UNIX_SNDBUF: u32 = 212_992;
/// `net.ipv4.tcp_wmem[1]`: a new TCP socket's send buffer.
pub const TCP_SNDBUF: u32 = 16_384;

/// Measurement ids (local).
pub(crate) const MARK_START: u16 = 0;
pub(crate) const MARK_END: u16 = 1;

/// Largest number of workers a command line may ask for.
const MAX_WORKERS: u64 = 1 << 20;
/// Largest number of write instructions over all sender programs (F² · G).
const MAX_SENDER_OPS: u64 = 1 << 26;

/// How messages travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// `socketpair(AF_UNIX, SOCK_STREAM)` (default).
    UnixStream,
    /// `pipe()` (`-p`).
    Pipe,
    /// A TCP connection over 127.0.0.1 (`-i`, rt-tests only).
    TcpLoopback,
}

impl Transport {
    fn object(self) -> ObjectSpec {
        match self {
            Transport::UnixStream => ObjectSpec::UnixStream { sndbuf: UNIX_SNDBUF },
            Transport::Pipe => ObjectSpec::Pipe { slots: PIPE_SLOTS },
            Transport::TcpLoopback => ObjectSpec::TcpLoopback { sndbuf: TCP_SNDBUF },
        }
    }
}

/// rt-tests hackbench flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hackbench {
    /// `-g/--groups` (10).
    pub groups: u32,
    /// `-f/--fds`: senders = receivers per group (20).
    pub fds: u32,
    /// `-l/--loops`: messages per sender per receiver (100).
    pub loops: u32,
    /// `-s/--datasize`: message size in bytes (100).
    pub datasize: u32,
    /// `-T/--threads` (default `-P/--processes`).
    pub threads: bool,
    /// Unix sockets, `-p` pipes or `-i` TCP.
    pub transport: Transport,
}

impl Default for Hackbench {
    fn default() -> Self {
        Hackbench { groups: 10, fds: 20, loops: 100, datasize: 100, threads: false, transport: Transport::UnixStream }
    }
}

const OPTS: &[OptDef] = &[
    opt("fds", Some('f'), Some("fds"), true),
    opt("fifo", Some('F'), Some("fifo"), false),
    opt("groups", Some('g'), Some("groups"), true),
    opt("help", Some('h'), Some("help"), false),
    opt("loops", Some('l'), Some("loops"), true),
    opt("pipe", Some('p'), Some("pipe"), false),
    opt("inet", Some('i'), Some("inet"), false),
    opt("datasize", Some('s'), Some("datasize"), true),
    opt("threads", Some('T'), Some("threads"), false),
    opt("processes", Some('P'), Some("processes"), false),
];

/// `(long|short) requires an integer > 0`, as rt-tests checks it.
fn positive(flag: &str, long: &str, short: char, s: &str) -> Result<u32, WorkloadError> {
    let v = int(BENCH, flag, s)?;
    if v <= 0 || v > i64::from(i32::MAX) {
        return usage(BENCH, format!("--{long}|-{short} requires an integer > 0 (got `{s}`)"));
    }
    Ok(v as u32)
}

pub(crate) fn parse(argv: &[String]) -> Result<Built, WorkloadError> {
    let parsed = getopt(BENCH, argv, OPTS, Style::default())?;
    let mut h = Hackbench::default();
    let (mut pipe, mut inet) = (false, false);
    for f in &parsed.opts {
        match f.key {
            "fds" => h.fds = positive(&f.flag, "fds", 'f', f.val())?,
            "groups" => h.groups = positive(&f.flag, "groups", 'g', f.val())?,
            "loops" => h.loops = positive(&f.flag, "loops", 'l', f.val())?,
            "datasize" => h.datasize = positive(&f.flag, "datasize", 's', f.val())?,
            "threads" => h.threads = true,
            "processes" => h.threads = false,
            "pipe" => pipe = true,
            "inet" => inet = true,
            "fifo" => {
                return not_modelled(BENCH, &f.flag, "SCHED_FIFO main", "schedlab simulates the fair class only");
            }
            "help" => {
                return usage(BENCH, format!("{} prints the usage text; see the rt-tests hackbench(8) page", f.flag));
            }
            _ => unreachable!("option table"),
        }
    }
    if let Some(op) = parsed.operands.first() {
        return usage(BENCH, format!("unexpected argument `{op}` (hackbench takes options only)"));
    }
    if pipe && inet {
        return usage(BENCH, "--pipe|-p and --inet|-i cannot be used together");
    }
    h.transport = if pipe {
        Transport::Pipe
    } else if inet {
        Transport::TcpLoopback
    } else {
        Transport::UnixStream
    };
    let (tasks, objects) =
        build_groups(BENCH, "hackbench", h.groups, h.fds, u64::from(h.loops), h.datasize, h.threads, h.transport)?;
    Ok(Built {
        name: BENCH,
        tasks,
        objects,
        duration_ns: None,
        metric: MetricSpec { name: "seconds", better: Better::Lower },
        params: BenchParams::Hackbench(h),
    })
}

/// The hackbench task structure, shared with `perf bench sched messaging` (§2.1–§2.2).
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_groups(
    bench: &'static str,
    comm: &str,
    groups: u32,
    fds: u32,
    loops: u64,
    datasize: u32,
    threads: bool,
    transport: Transport,
) -> Result<(Vec<TaskSpec>, Vec<ObjectSpec>), WorkloadError> {
    let (g, f) = (u64::from(groups), u64::from(fds));
    let workers = 2 * g * f;
    if workers > MAX_WORKERS {
        return usage(bench, format!("{workers} tasks are more than schedlab simulates ({MAX_WORKERS})"));
    }
    if f * f * g > MAX_SENDER_OPS {
        return usage(bench, format!("{groups} groups of {fds} fds make programs too large to simulate"));
    }
    const READY: u32 = 0;
    const WAKE: u32 = 1;
    let chan = |group: u64, r: u64| (2 + group * f + r) as u32;
    let mut objects = vec![transport.object(); 2 + (g * f) as usize];
    objects.shrink_to_fit();

    let mut tasks = Vec::with_capacity(1 + workers as usize);
    // Task 0: main.
    let mut main = Prog::new();
    for i in 1..=workers {
        main.op(Op::Spawn { spec: i as u32 });
    }
    main.repeat(workers, &|p| {
        p.op(Op::Read { obj: READY, bytes: 1, exact: true });
    });
    main.op(Op::Mark { id: MARK_START })
        .op(Op::Write { obj: WAKE, bytes: 1 })
        .op(Op::WaitChildren)
        .op(Op::Mark { id: MARK_END });
    tasks.push(main.task(comm, 0, false));

    let mm_of = |spec: usize| if threads { 0 } else { spec as u32 };
    for group in 0..g {
        for r in 0..f {
            let mut p = Prog::new();
            p.op(Op::Write { obj: READY, bytes: 1 }).op(Op::Poll { set: 0 });
            let ch = chan(group, r);
            p.repeat(f * loops, &|p| {
                p.op(Op::Read { obj: ch, bytes: datasize, exact: true });
            });
            let mut t = p.task(comm, mm_of(tasks.len()), true);
            t.poll_sets = vec![vec![WAKE]];
            tasks.push(t);
        }
        for _ in 0..f {
            let mut p = Prog::new();
            p.op(Op::Write { obj: READY, bytes: 1 }).op(Op::Poll { set: 0 });
            p.repeat(loops, &|p| {
                for r in 0..f {
                    p.op(Op::Write { obj: chan(group, r), bytes: datasize });
                }
            });
            let mut t = p.task(comm, mm_of(tasks.len()), true);
            t.poll_sets = vec![vec![WAKE]];
            tasks.push(t);
        }
    }
    Ok((tasks, objects))
}

impl Hackbench {
    pub(crate) fn metric_value(&self, v: &View) -> f64 {
        v.span(MARK_START, MARK_END).map_or(f64::NAN, |ns| ns as f64 / 1e9)
    }

    /// `hackbench.c`: two lines before the run, `Time: %lu.%03lu` after it.
    pub(crate) fn format_output(&self, v: &View) -> String {
        let mut s = format!(
            "Running in {} mode with {} groups using {} file descriptors each (== {} tasks)\n\
             Each sender will pass {} messages of {} bytes\n",
            if self.threads { "threaded" } else { "process" },
            self.groups,
            2 * u64::from(self.fds),
            u64::from(self.groups) * 2 * u64::from(self.fds),
            self.loops,
            self.datasize
        );
        if let Some(ns) = v.span(MARK_START, MARK_END) {
            s += &format!("Time: {}\n", secs_msecs(ns));
        }
        s
    }
}
