//! The benchmark models through their public API: command lines in (real flags, defaults,
//! rejected flags), task programs and objects out, and the real tools' output lines from a
//! hand-made `SimReport`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use sim::config::{Limits, SchedConfig};
use sim::engine::{MarkStat, Sim, SimReport, SimSetup, StopReason};
use sim::fair::Policy;
use sim::ipc::ObjectSpec;
use sim::program::{Op, TaskSpec};
use sim::stats::LatencyHistogram;
use sim::topology::Topology;
use workload::bench::hackbench::{Hackbench, Transport};
use workload::bench::netperf::TestLength;
use workload::bench::pgbench::QueryMode;
use workload::bench::{
    BenchParams, BenchWorkload, Better, IDS_PER_WORKLOAD, WorkloadError, merge_workloads, parse_benchmark,
    parse_benchmark_on,
};

fn argv(cmd: &str) -> Vec<String> {
    cmd.split_whitespace().map(String::from).collect()
}

fn parse(cmd: &str) -> BenchWorkload {
    match parse_benchmark(&argv(cmd)) {
        Ok(w) => {
            w.validate().unwrap_or_else(|e| panic!("`{cmd}`: invalid programs: {e}"));
            w
        }
        Err(e) => panic!("`{cmd}`: {e}"),
    }
}

fn parse_on(cmd: &str, cpus: u32) -> BenchWorkload {
    match parse_benchmark_on(&argv(cmd), cpus) {
        Ok(w) => {
            w.validate().unwrap_or_else(|e| panic!("`{cmd}`: invalid programs: {e}"));
            w
        }
        Err(e) => panic!("`{cmd}`: {e}"),
    }
}

/// The error of a rejected command line, checked to be one line naming the benchmark.
fn err(cmd: &str) -> String {
    let e = match parse_benchmark_on(&argv(cmd), 8) {
        Ok(w) => panic!("`{cmd}` was accepted: {:?}", w.params),
        Err(e) => e.to_string(),
    };
    assert!(!e.contains('\n'), "not one line: {e}");
    let name = cmd.split_whitespace().next().unwrap();
    assert!(e.starts_with(&format!("{name}: ")) || e.starts_with("unknown benchmark"), "{e}");
    e
}

fn count_ops(t: &TaskSpec, pred: impl Fn(&Op) -> bool) -> usize {
    t.ops.iter().filter(|op| pred(op)).count()
}

/// Loop counts of a program, in program order.
fn loops(t: &TaskSpec) -> Vec<u32> {
    t.ops.iter().filter_map(|op| if let Op::Loop { count, .. } = op { Some(*count) } else { None }).collect()
}

/// A report with the given marks, counts and histograms. It starts as the report of a trivial
/// simulation (so it has every field the engine fills in), then the fields a benchmark reads
/// are set by hand.
struct Report {
    r: SimReport,
}

/// Runs one 1 ns task per `comm` on one CPU and returns the report.
fn trivial_report(comms: &[&str]) -> SimReport {
    let tasks = comms
        .iter()
        .map(|comm| TaskSpec {
            comm: (*comm).into(),
            nice: 0,
            policy: Policy::Normal,
            slice_ns: None,
            cpus: None,
            start_ns: 0,
            timer_slack_ns: 50_000,
            ops: vec![Op::Run { ns: 1 }, Op::Exit],
            nr_slots: 0,
            nr_timers: 0,
            poll_sets: vec![],
            spawned: false,
            mm: 0,
            cgroup: None,
            group: 0,
            kthread: false,
            wakee_flips: 0,
        })
        .collect();
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology: Topology::smp(1),
        seed: 1,
        limits: Limits { max_events: 1_000_000, max_time_ns: 1_000_000_000 },
        tasks,
        objects: vec![],
        check_invariants: false,
        groups: Vec::new(),
    };
    let mut r = Sim::new(setup).unwrap().run().unwrap();
    r.marks.clear();
    r.counts.clear();
    r.histograms.clear();
    r
}

impl Report {
    fn new(simulated_ns: u64) -> Report {
        Report::with_tasks(simulated_ns, &[])
    }
    /// Tasks `comms[i]` get pid `1000 + i` and runtime `runtimes[i]`.
    fn with_tasks(simulated_ns: u64, tasks: &[(&str, u64)]) -> Report {
        let comms: Vec<&str> = tasks.iter().map(|t| t.0).collect();
        let mut r = trivial_report(&comms);
        r.simulated_ns = simulated_ns;
        for (i, (t, &(_, runtime))) in r.tasks.iter_mut().zip(tasks).enumerate() {
            t.pid = 1000 + i as u32;
            t.sum_exec_runtime_ns = runtime;
        }
        Report { r }
    }
    fn mark(mut self, id: u16, first_ns: u64, last_ns: u64) -> Report {
        self.r.marks.insert(id, MarkStat { first_ns, last_ns, count: 1 });
        self
    }
    fn count(mut self, id: u16, n: u64) -> Report {
        self.r.counts.insert(id, n);
        self
    }
    fn hist(mut self, id: u16, samples_ns: impl IntoIterator<Item = u64>) -> Report {
        let mut h = LatencyHistogram::default();
        for s in samples_ns {
            h.record(s);
        }
        self.r.histograms.insert(id, h);
        self
    }
}

// ---- hackbench -----------------------------------------------------------------------------

#[test]
fn hackbench_defaults() {
    let w = parse("hackbench");
    let BenchParams::Hackbench(h) = &w.params else { panic!() };
    assert_eq!(*h, Hackbench::default());
    assert_eq!((h.groups, h.fds, h.loops, h.datasize, h.threads), (10, 20, 100, 100, false));
    assert_eq!(h.transport, Transport::UnixStream);
    assert_eq!(w.tasks.len(), 1 + 400);
    assert_eq!(w.objects.len(), 2 + 200);
    assert!(w.objects.iter().all(|o| *o == ObjectSpec::UnixStream { sndbuf: 212_992 }));
    assert_eq!(w.duration_ns, None);
    assert_eq!((w.metric.name, w.metric.better), ("seconds", Better::Lower));
    assert!(!w.tasks[0].spawned && w.tasks[1..].iter().all(|t| t.spawned));
    assert!(w.tasks.iter().all(|t| t.comm == "hackbench"));
    // Process mode: every task its own address space.
    let mut mms: Vec<u32> = w.tasks.iter().map(|t| t.mm).collect();
    mms.dedup();
    assert_eq!(mms.len(), 401);
}

#[test]
fn hackbench_groups_and_fds() {
    let w = parse("hackbench -P -p -g 4 -f 20 -l 25000");
    assert_eq!(w.tasks.len(), 160 + 1);
    assert_eq!(w.objects.len(), 2 + 4 * 20);
    assert!(w.objects.iter().all(|o| *o == ObjectSpec::Pipe { slots: 16 }));
    let main = &w.tasks[0];
    assert_eq!(count_ops(main, |op| matches!(op, Op::Spawn { .. })), 160);
    assert_eq!(
        &main.ops[160..],
        [
            Op::Read { obj: 0, bytes: 1, exact: true },
            Op::Loop { target: 160, slot: 0, count: 160 },
            Op::Mark { id: 0 },
            Op::Write { obj: 1, bytes: 1 },
            Op::WaitChildren,
            Op::Mark { id: 1 },
            Op::Exit,
        ]
    );
    // Group 0: receivers 1..=20 read F·L messages from their own channel; senders 21..=40
    // write L rounds of one message to each of the group's 20 channels.
    let recv = &w.tasks[1];
    assert_eq!(&recv.ops[..2], [Op::Write { obj: 0, bytes: 1 }, Op::Poll { set: 0 }]);
    assert_eq!(recv.poll_sets, [vec![1]]);
    assert_eq!(recv.ops[2], Op::Read { obj: 2, bytes: 100, exact: true });
    assert_eq!(loops(recv), [20 * 25_000]);
    let send = &w.tasks[21];
    let writes: Vec<u32> =
        send.ops.iter().filter_map(|op| if let Op::Write { obj, .. } = op { Some(*obj) } else { None }).collect();
    assert_eq!(writes, [0].into_iter().chain(2..22).collect::<Vec<_>>());
    assert_eq!(loops(send), [25_000]);
    // Group 3's last sender writes to channels 62..82.
    assert!(w.tasks[160].ops.contains(&Op::Write { obj: 81, bytes: 100 }));
}

#[test]
fn hackbench_flags() {
    let w = parse("hackbench -T -g 2 -f 3 -s 64");
    let BenchParams::Hackbench(h) = &w.params else { panic!() };
    assert!(h.threads);
    assert_eq!(w.tasks.len(), 13);
    assert!(w.tasks.iter().all(|t| t.mm == 0), "threads share main's mm");
    assert!(w.tasks[1].ops.contains(&Op::Read { obj: 2, bytes: 64, exact: true }));
    // -P after -T wins; long options, `=` values and getopt_long prefixes.
    let w = parse("hackbench -T --processes --groups=3 --fds 2 --loops=7 --datasize 9 --process");
    let BenchParams::Hackbench(h) = &w.params else { panic!() };
    assert_eq!((h.groups, h.fds, h.loops, h.datasize, h.threads), (3, 2, 7, 9, false));
    // Clustered short options with an attached value.
    let w = parse("hackbench -Tpg4");
    let BenchParams::Hackbench(h) = &w.params else { panic!() };
    assert_eq!((h.threads, h.transport, h.groups), (true, Transport::Pipe, 4));
    let w = parse("hackbench -i -g 1");
    assert!(w.objects.iter().all(|o| *o == ObjectSpec::TcpLoopback { sndbuf: 16_384 }));
    // Large loop counts are split into nested loops.
    let w = parse("hackbench -g 1 -f 20 -l 2000000000");
    assert_eq!(loops(&w.tasks[1]).iter().map(|&c| u64::from(c)).product::<u64>() % (1 << 20), 0);
    w.validate().unwrap();
}

#[test]
fn hackbench_rejects() {
    assert_eq!(
        err("hackbench -F"),
        "hackbench: -F (SCHED_FIFO main) is not modelled: schedlab simulates the fair class only"
    );
    assert!(err("hackbench --fifo").contains("--fifo (SCHED_FIFO main) is not modelled"));
    assert_eq!(err("hackbench -p -i"), "hackbench: --pipe|-p and --inet|-i cannot be used together");
    assert!(err("hackbench -g 0").contains("--groups|-g requires an integer > 0"));
    assert!(err("hackbench -l -5").contains("--loops|-l requires an integer > 0"));
    assert!(err("hackbench -g x").contains("-g: `x` is not an integer"));
    assert!(err("hackbench -q").contains("invalid option -- 'q'"));
    assert!(err("hackbench -g").contains("option requires an argument -- 'g'"));
    assert!(err("hackbench --p").contains("ambiguous"));
    assert!(err("hackbench 10").contains("unexpected argument `10`"));
    assert!(err("hackbench -h").contains("-h"));
}

#[test]
fn hackbench_output() {
    let w = parse("hackbench");
    let r = Report::new(2_000_000_000).mark(0, 1_000_000, 1_000_000).mark(1, 1_235_678_901, 1_235_678_901).r;
    assert_eq!(
        w.format_output(&r),
        "Running in process mode with 10 groups using 40 file descriptors each (== 400 tasks)\n\
         Each sender will pass 100 messages of 100 bytes\n\
         Time: 1.234\n"
    );
    assert!((w.metric_value(&r) - 1.234678901).abs() < 1e-12);
    let w = parse("hackbench -T -g 4 -f 10 -l 50 -s 10");
    assert_eq!(
        w.format_output(&Report::new(0).r),
        "Running in threaded mode with 4 groups using 20 file descriptors each (== 80 tasks)\n\
         Each sender will pass 50 messages of 10 bytes\n"
    );
    assert!(w.metric_value(&Report::new(0).r).is_nan());
}

// ---- perf bench sched messaging ------------------------------------------------------------

#[test]
fn messaging_model_and_output() {
    let w = parse("messaging");
    assert_eq!(w.tasks.len(), 401);
    assert!(w.tasks.iter().all(|t| t.comm == "sched-messaging"));
    assert!(w.objects.iter().all(|o| matches!(o, ObjectSpec::UnixStream { .. })));
    let w = parse("messaging --pipe --thread -g 2 -l 10");
    assert_eq!(w.tasks.len(), 81);
    assert!(w.tasks.iter().all(|t| t.mm == 0));
    assert!(w.objects.iter().all(|o| *o == ObjectSpec::Pipe { slots: 16 }));
    let w = parse("messaging -p --no-pipe -t --group=3 --nr_loops 5");
    let BenchParams::Messaging(m) = &w.params else { panic!() };
    assert_eq!((m.groups, m.loops, m.pipe, m.threads), (3, 5, false, true));
    let r = Report::new(0).mark(0, 0, 0).mark(1, 1_234_999_999, 1_234_999_999).r;
    assert_eq!(
        w.format_output(&r),
        "# Running 'sched/messaging' benchmark:\n\
         # 20 sender and receiver threads per group\n\
         # 3 groups == 120 threads run\n\
         \n     Total time: 1.234 [sec]\n"
    );
    assert!(err("messaging -f 10").contains("invalid option -- 'f'"));
    assert!(err("messaging -g -1").contains("unsigned"));
}

// ---- perf bench sched pipe -----------------------------------------------------------------

#[test]
fn pipe_two_tokens() {
    let w = parse("pipe");
    let BenchParams::Pipe(p) = &w.params else { panic!() };
    assert_eq!((p.loops, p.threads, p.nonblocking, p.write_size, p.classic), (1_000_000, false, false, 4, false));
    assert_eq!(w.tasks.len(), 2);
    assert_eq!(w.objects, vec![ObjectSpec::Pipe { slots: 16 }; 2]);
    assert_eq!((w.metric.name, w.metric.better), ("usecs_per_op", Better::Lower));
    let loop_ = |target| Op::Loop { target, slot: 0, count: 1_000_000 };
    // B (the parent) writes B→A then reads A→B; A (forked) writes A→B then reads B→A.
    assert_eq!(
        w.tasks[0].ops,
        [
            Op::Mark { id: 0 },
            Op::Spawn { spec: 1 },
            Op::Write { obj: 0, bytes: 4 },
            Op::Read { obj: 1, bytes: 4, exact: true },
            loop_(2),
            Op::WaitChildren,
            Op::Mark { id: 1 },
            Op::Exit,
        ]
    );
    assert_eq!(
        w.tasks[1].ops,
        [Op::Write { obj: 1, bytes: 4 }, Op::Read { obj: 0, bytes: 4, exact: true }, loop_(0), Op::Exit]
    );
    assert_ne!(w.tasks[0].mm, w.tasks[1].mm);
    assert!(w.tasks[1].spawned && w.tasks.iter().all(|t| t.comm == "sched-pipe"));
}

#[test]
fn pipe_flags() {
    let w = parse("pipe -l 1000 -T");
    assert_eq!(w.tasks.len(), 3);
    assert!(w.tasks.iter().all(|t| t.mm == 0));
    assert_eq!(count_ops(&w.tasks[0], |op| matches!(op, Op::Spawn { .. })), 2);
    let w = parse("pipe --classic -l 10");
    assert_eq!(w.tasks[1].ops[..2], [Op::Read { obj: 0, bytes: 4, exact: true }, Op::Write { obj: 1, bytes: 4 }]);
    let w = parse("pipe -n -l 10");
    assert_eq!(w.tasks[0].poll_sets, [vec![1]]);
    assert_eq!(w.tasks[1].poll_sets, [vec![0]]);
    assert!(w.tasks[1].ops.starts_with(&[Op::Write { obj: 1, bytes: 4 }, Op::EpollWait { set: 0 }]));
    // -s: pipes resized to hold one payload (power-of-two pages).
    assert_eq!(parse("pipe -s 8192").objects, vec![ObjectSpec::Pipe { slots: 2 }; 2]);
    assert_eq!(parse("pipe --write-size=5").objects, vec![ObjectSpec::Pipe { slots: 1 }; 2]);
    assert_eq!(parse("pipe -s 65536").objects, vec![ObjectSpec::Pipe { slots: 16 }; 2]);
    assert!(err("pipe -s 0").contains("--write-size must be in 1..2147483647"));
    assert!(err("pipe -s 2097152").contains("exceeds /proc/sys/fs/pipe-max-size"));
    // -G SEND,RECV: worker 0 (A, the forked child) in /SEND, worker 1 (B, the parent) in /RECV.
    let w = parse("pipe -G a,b");
    assert_eq!((w.tasks[0].cgroup.as_deref(), w.tasks[1].cgroup.as_deref()), (Some("/b"), Some("/a")));
    let w = parse("pipe -T -G one");
    assert_eq!(w.tasks.iter().map(|t| t.cgroup.as_deref()).collect::<Vec<_>>(), [None, Some("/one"), Some("/one")]);
    assert!(err("pipe -G a,").contains("expected SEND,RECV"));
    assert!(err("pipe --classic -n").contains("classic"));
    assert!(err("pipe -l x").contains("not an integer"));
}

#[test]
fn pipe_output() {
    let w = parse("pipe -l 10000");
    let r = Report::new(0).mark(0, 0, 0).mark(1, 53_400_999, 53_400_999).r;
    assert_eq!(
        w.format_output(&r),
        "# Running 'sched/pipe' benchmark:\n\
         # Executed 10000 pipe operations between two processes\n\
         \n     Total time: 0.053 [sec]\n\
         \n       5.340000 usecs/op\n         187265 ops/sec\n"
    );
    assert!((w.metric_value(&r) - 5.3400999).abs() < 1e-9);
    let w = parse("pipe -T");
    let r = Report::new(0).mark(0, 1_000, 1_000).mark(1, 5_123_457_000, 5_123_457_000).r;
    let out = w.format_output(&r);
    assert!(out.contains("# Executed 1000000 pipe operations between two threads\n"));
    assert!(
        out.ends_with("     Total time: 5.123 [sec]\n\n       5.123456 usecs/op\n         195180 ops/sec\n"),
        "{out}"
    );
}

// ---- schbench ------------------------------------------------------------------------------

#[test]
fn schbench_needs_cpus_for_default_workers() {
    let e = parse_benchmark(&argv("schbench")).unwrap_err();
    assert!(matches!(e, WorkloadError::NeedsCpuCount { .. }));
    assert!(e.to_string().starts_with("schbench: the default -t"));
    // With -t no CPU count is needed.
    parse("schbench -t 2");
}

#[test]
fn schbench_defaults() {
    let w = parse_on("schbench", 8);
    let BenchParams::Schbench(s) = &w.params else { panic!() };
    assert_eq!((s.message_threads, s.worker_threads, s.workers_defaulted), (1, 8, true));
    assert_eq!((s.runtime_s, s.cache_footprint_kb, s.operations, s.sleep_usec, s.rps), (30, 256, 5, 100, 0));
    assert_eq!(s.matrix_sizes(), (0, 104));
    // 5 × 104³ multiply-adds at 3 ns: the README's ≈17 ms.
    assert_eq!(s.work_ns(), 16_872_960);
    assert_eq!(w.duration_ns, Some(30_000_000_000));
    assert_eq!((w.metric.name, w.metric.better), ("wakeup_latency_us_p99", Better::Lower));
    assert_eq!(w.tasks.len(), 1 + 1 + 8);
    assert_eq!(w.objects, vec![ObjectSpec::Futex; 2]);
    assert_eq!(
        w.tasks.iter().map(|t| t.comm.as_str()).collect::<Vec<_>>()[..3],
        ["schbench", "schbench-msg", "schbench-worker"]
    );
    assert!(w.tasks.iter().all(|t| t.mm == 0), "one process");
    // Message thread: spawn the workers, then answer one post with one wake, forever.
    let msg = &w.tasks[1];
    assert_eq!(count_ops(msg, |op| matches!(op, Op::Spawn { .. })), 8);
    assert_eq!(msg.ops[8..10], [Op::FutexWait { obj: 0 }, Op::FutexWake { obj: 1, n: 1 }]);
    let worker = &w.tasks[2];
    assert_eq!(
        worker.ops[..9],
        [
            Op::LatStart { slot: 0 },
            Op::FutexWake { obj: 0, n: 1 },
            Op::FutexWait { obj: 1 },
            Op::LatEnd { slot: 0, hist: 0 },
            Op::LatStart { slot: 1 },
            Op::Sleep { ns: 100_000 },
            Op::Run { ns: 16_872_960 },
            Op::LatEnd { slot: 1, hist: 1 },
            Op::Count { id: 0 },
        ]
    );
}

#[test]
fn schbench_flags() {
    let w = parse("schbench -m 2 -t 4 -r 10 -s 50 -n 2 -F 64");
    assert_eq!(w.tasks.len(), 1 + 2 * (1 + 4));
    assert_eq!(w.objects.len(), 4);
    assert_eq!(w.duration_ns, Some(10_000_000_000));
    // The second message thread's workers use the second pair of futexes.
    assert!(w.tasks[7].ops.contains(&Op::FutexWait { obj: 3 }));
    assert!(w.tasks[2].ops.contains(&Op::Sleep { ns: 50_000 }));
    let BenchParams::Schbench(s) = &w.params else { panic!() };
    assert_eq!(s.matrix_sizes(), (0, 52));
    // -C: the usleep comes before the request's start.
    let w = parse("schbench -t 1 -C");
    assert!(w.tasks[2].ops.windows(2).any(|o| o == [Op::Sleep { ns: 100_000 }, Op::LatStart { slot: 1 }]));
    // -p: no sleep or math, a memset and the futex handshake.
    let w = parse("schbench -t 2 -p 4096");
    assert!(!w.tasks[2].ops.iter().any(|op| matches!(op, Op::Sleep { .. })));
    assert!(w.tasks[2].ops.contains(&Op::Run { ns: 400 }));
    let w = parse("schbench -t 2 -p 2000000");
    let BenchParams::Schbench(s) = &w.params else { panic!() };
    assert_eq!((s.pipe_bytes, s.pipe_clamped), (1 << 20, true));
    // --split: half the footprint private, half shared; the operations split the same way.
    let w = parse("schbench -t 1 --split 50");
    let BenchParams::Schbench(s) = &w.params else { panic!() };
    assert_eq!(s.matrix_sizes(), (73, 73));
    assert_eq!(s.work_ns(), (5 * 73u64.pow(3)) * 3);
    // -r 0 runs until stopped.
    assert_eq!(parse("schbench -t 1 -r 0").duration_ns, None);
    // Warmup is forced off below 30 s and irrelevant in pipe mode.
    parse("schbench -t 1 -w 5 -r 10");
    parse("schbench -t 1 -w 5 -p 64");
}

#[test]
fn schbench_pinning() {
    let w = parse_on("schbench -m 2 -M auto", 8);
    assert_eq!(w.tasks[1].cpus, Some(vec![0]));
    assert_eq!(w.tasks[1 + 5].cpus, Some(vec![1]));
    assert_eq!(w.tasks[2].cpus, None, "auto leaves workers unpinned on main");
    let w = parse_on("schbench -m 2 -t 2 -M 6-7 -W 0-3,5", 8);
    assert_eq!((w.tasks[1].cpus.clone(), w.tasks[4].cpus.clone()), (Some(vec![6]), Some(vec![7])));
    assert_eq!(w.tasks[2].cpus, Some(vec![0, 1, 2, 3, 5]));
    assert!(err("schbench -t 1 -M 9").contains("CPU 9 does not exist"));
    assert!(err("schbench -t 1 -W x").contains("failed to parse cpuset"));
}

#[test]
fn schbench_rps_mode() {
    let w = parse("schbench -m 1 -t 4 -R 10");
    assert_eq!((w.metric.name, w.metric.better), ("request_latency_us_p99", Better::Lower));
    // One futex for the message thread, one per worker.
    assert_eq!(w.objects.len(), 5);
    let msg = &w.tasks[1];
    let posts: Vec<u32> =
        msg.ops.iter().filter_map(|op| if let Op::FutexWake { obj, .. } = op { Some(*obj) } else { None }).collect();
    assert_eq!(posts, [1, 2, 3, 4]);
    assert!(msg.ops.contains(&Op::Timer { slot: 0, period_ns: 1_000_000_000, absolute: true }));
    assert_eq!(msg.nr_timers, 1);
    // 10 requests a second over 4 workers: 3, 3, 2, 2.
    let per_window: Vec<u32> = w.tasks[2..].iter().map(|t| loops(t).first().copied().unwrap_or(1)).collect();
    assert_eq!(per_window, [3, 3, 2, 2]);
    // Fewer requests than workers: the idle workers are never posted.
    let w = parse("schbench -t 4 -R 2");
    assert_eq!(count_ops(&w.tasks[1], |op| matches!(op, Op::FutexWake { .. })), 2);
    assert_eq!(w.tasks[5].ops, [Op::FutexWait { obj: 4 }, Op::Exit]);
}

#[test]
fn schbench_rejects() {
    assert_eq!(err("schbench -A 80"), "schbench: -A (auto-RPS) is not modelled: it steers the load from /proc/stat");
    assert!(err("schbench -w 5").contains("-w (warmup stats reset) is not modelled"));
    assert!(err("schbench -z 15").contains("-z (periodic stats zeroing) is not modelled"));
    assert!(err("schbench -j out.json").contains("JSON output file"));
    assert!(err("schbench --cache_footprint 128").contains("use -F"));
    assert!(err("schbench --split 101").contains("split must be between 0 and 100"));
    assert!(err("schbench -m 0").contains("at least one message thread"));
    assert!(err("schbench extra").contains("Error Extra arguments 'extra'"));
}

#[test]
fn schbench_output() {
    let w = parse_on("schbench -r 30", 4);
    // Wakeup latencies of 1..=100 µs, requests of 17.0..17.99 ms, 300 000 requests in 30 s. The
    // engine's histogram reports the highest value equivalent to a sample (3 significant
    // digits), and schbench prints the midpoint of its own bucket for that value.
    let r = Report::new(30_000_000_000)
        .hist(0, (1..=100).map(|us| us * 1_000))
        .hist(1, (0..1000).map(|i| 17_000_000 + i * 1_000))
        .count(0, 300_000)
        .r;
    let expected = "setting worker threads to 4\n\
        Wakeup Latencies percentiles (usec) runtime 30 (s) (100 total samples)\n\
        \t  50.0th: 50         (30 samples)\n\
        \t  90.0th: 90         (40 samples)\n\
        \t* 99.0th: 99         (9 samples)\n\
        \t  99.9th: 100        (1 samples)\n\
        \t  min=0, max=100\n\
        Request Latencies percentiles (usec) runtime 30 (s) (1000 total samples)\n\
        \t  50.0th: 17504      (300 samples)\n\
        \t  90.0th: 17888      (400 samples)\n\
        \t* 99.0th: 18016      (90 samples)\n\
        \t  99.9th: 18016      (10 samples)\n\
        \t  min=0, max=18006\n\
        RPS percentiles (requests) runtime 30 (s) (30 total samples)\n\
        \t  20.0th: 10000      (6 samples)\n\
        \t* 50.0th: 10000      (9 samples)\n\
        \t  90.0th: 10000      (12 samples)\n\
        \t  min=10000, max=10000\n\
        average rps: 10000.00\n\
        sched delay: message 0 (usec) worker 0 (usec)\n";
    assert_eq!(w.format_output(&r), expected);
    let p99 = w.metric_value(&r);
    assert!((99.0..99.2).contains(&p99), "{p99}");
    assert!(w.metric_value(&Report::new(0).r).is_nan());
}

#[test]
fn schbench_pipe_output() {
    let w = parse("schbench -t 2 -p 1024 -r 10 -M 0");
    let r = Report::new(10_000_000_000).hist(0, (1..=100).map(|us| us * 1_000)).count(0, 2_000_000).r;
    let out = w.format_output(&r);
    assert!(
        out.starts_with("Pinning to message thread index 0 cpu 0\nWakeup Latencies percentiles (usec) runtime 10 (s)")
    );
    assert!(out.contains("\t  20.0th: 50         (20 samples)\n\t  50.0th: 50         (30 samples)\n"), "{out}");
    // 2 000 000 loops over 2 workers × 10 s: 100 000 ops/s per worker, × 1 KiB.
    assert!(out.ends_with("\t  min=0, max=100\navg worker transfer: 100000.00 ops/sec 97.66MB/s\n"), "{out}");
}

// ---- lat_ctx -------------------------------------------------------------------------------

#[test]
fn lat_ctx_model() {
    let w = parse("lat_ctx -P 4 -s 0 96");
    let BenchParams::LatCtx(l) = &w.params else { panic!() };
    assert_eq!((l.parallel, l.size_kb, l.repetitions, l.procs.clone()), (4, 0, 11, vec![96]));
    // main, the overhead process, 4 rings of 96.
    assert_eq!(w.tasks.len(), 1 + 1 + 4 * 96);
    // Per phase four control pipes (ready, start, done, results); the overhead process's pipe;
    // per ring 96 pipes and the members' stop pipe.
    assert_eq!(w.objects.len(), 4 + 1 + 4 + 4 * (96 + 1));
    assert_eq!((w.metric.name, w.metric.better, w.duration_ns), ("usecs_per_switch", Better::Lower, None));
    let mut mms: Vec<u32> = w.tasks.iter().map(|t| t.mm).collect();
    mms.sort_unstable();
    mms.dedup();
    assert_eq!(mms.len(), w.tasks.len(), "every ring member is a process");
    // main: each phase as benchmp_parent() runs it: the children forked, every "ready" read,
    // "start" written to all, every "done" read, the results asked for, the children reaped.
    let parent = |ctl: u32, n: u32| {
        [
            Op::Read { obj: ctl, bytes: n, exact: true },
            Op::Write { obj: ctl + 1, bytes: n },
            Op::Read { obj: ctl + 2, bytes: n, exact: true },
            Op::Write { obj: ctl + 3, bytes: n },
            Op::WaitChildren,
        ]
    };
    let mut main = vec![Op::Spawn { spec: 1 }];
    main.extend(parent(0, 1));
    main.extend([Op::Spawn { spec: 2 }, Op::Spawn { spec: 98 }, Op::Spawn { spec: 194 }, Op::Spawn { spec: 290 }]);
    main.extend(parent(5, 4));
    main.push(Op::Exit);
    assert_eq!(w.tasks[0].ops, main);
    // A ring leader forks its 95 members, says "ready", polls "start" between trips, times its
    // repetitions, says "done", polls "results"; member i reads p[i-1] and writes p[i] until
    // it reads a token with the ring's stop pipe holding data, which it forwards before exiting.
    let leader = &w.tasks[2];
    assert_eq!(count_ops(leader, |op| matches!(op, Op::Spawn { .. })), 95);
    assert!(leader.ops.contains(&Op::LatEnd { slot: 0, hist: 1 }));
    assert!(
        leader.ops.contains(&Op::Write { obj: 5, bytes: 1 }) && leader.ops.contains(&Op::Write { obj: 7, bytes: 1 })
    );
    assert_eq!(count_ops(leader, |op| matches!(op, Op::LoopWhileEmpty { obj: 6 | 8, .. })), 2);
    assert_eq!(
        w.tasks[3].ops,
        [
            Op::Read { obj: 9, bytes: 4, exact: true },
            Op::Write { obj: 10, bytes: 4 },
            Op::Read { obj: 9, bytes: 4, exact: true },
            Op::LoopWhileEmpty { target: 1, obj: 105 },
            Op::Write { obj: 10, bytes: 4 },
            Op::Exit
        ]
    );
    // -P > 1: repetitions of about a second at 3 µs a hop.
    assert_eq!(l.iterations(96), 3473);
    let w = parse("lat_ctx -s 16 -N 5 -W 100 2 8 16");
    let BenchParams::LatCtx(l) = &w.params else { panic!() };
    assert_eq!((l.size_kb, l.repetitions, l.warmup_us, l.procs.clone()), (16, 5, 100, vec![2, 8, 16]));
    assert!(w.tasks[1].ops.contains(&Op::Run { ns: 16 * 32 }));
    // -W: the parent lets the ready children run untimed trips that long before its start byte.
    assert!(w.tasks[0].ops.contains(&Op::Sleep { ns: 100_000 }));
    assert!(!parse("lat_ctx -s 0 2").tasks[0].ops.iter().any(|op| matches!(op, Op::Sleep { .. })));
    // Operands may come before options (GNU getopt permutes).
    parse("lat_ctx 2 -s 0");
}

/// `benchmp`'s protocol: the rings start their repetitions together (the parent's start byte
/// once every ring is ready) and stop together (the results asked for once every ring is
/// done), so a ring runs its timed trips and a few more, with one ring as with several.
#[test]
fn lat_ctx_rings_start_and_stop_together() {
    let passes = |cmd: &str, ring: std::ops::Range<usize>| {
        let w = parse(cmd);
        let r = simulate(&w, 2, 60_000_000_000);
        assert_eq!(r.stop, StopReason::AllExited, "{cmd}");
        r.tasks[ring].iter().map(|t| t.stats.nr_wakeups).sum::<u64>()
    };
    // Task 0 is the main, 1 the overhead process, 2-3 the ring (leader, member): 11
    // repetitions of 834 trips of 2 hops, plus the warm trip, a trip or two before the start
    // and after "done" (the parent answers at once), and the members' stop pass.
    let one = passes("lat_ctx -s 0 2", 2..4);
    assert!((2 * 11 * 834..=2 * 11 * 834 + 12).contains(&one), "{one}");
    // Two rings of 2 (repetitions of about a second each; -N 1 keeps the run short): a ring
    // done first keeps passing its token while the other finishes, a few trips, not the
    // repetitions' worth it was before.
    let k = 1_000_000_000u64.div_ceil(2 * 3_000);
    let two = passes("lat_ctx -P 2 -N 1 -s 0 2", 2..6);
    assert!((2 * 2 * k..=2 * 2 * k + 2 * 2 * k / 1000).contains(&two), "{two}");
}

#[test]
fn lat_ctx_rejects() {
    assert!(err("lat_ctx -s 0").contains("Usage: lat_ctx"));
    assert!(err("lat_ctx -P 0 2").contains("parallelism"));
    assert!(err("lat_ctx 0").contains("process count 0"));
    assert!(err("lat_ctx 4096").contains("process count 4096"));
    assert!(err("lat_ctx -x 2").contains("invalid option -- 'x'"));
}

#[test]
fn lat_ctx_output() {
    let w = parse("lat_ctx -s 0 2 4");
    let BenchParams::LatCtx(l) = &w.params else { panic!() };
    let (k1, k2, k4) = (l.iterations(1), l.iterations(2), l.iterations(4));
    assert_eq!((k1, k2, k4), (1667, 834, 417));
    // Overhead 1.5 µs an iteration; 2 processes: 9 µs a trip → 9/2 − 1.5 = 3.00; 4 processes:
    // 5 µs a trip → 5/4 − 1.5 < 0 → omitted.
    let r = Report::new(0).hist(0, [k1 * 1_500; 11]).hist(1, [k2 * 9_000; 11]).hist(2, [k4 * 5_000; 11]).r;
    assert_eq!(w.format_output(&r), "\n\"size=0k ovr=1.50\n2 3.00\n");
    let v = w.metric_value(&r);
    assert!((v - 3.0).abs() < 0.01, "{v}");
}

// ---- netperf -------------------------------------------------------------------------------

#[test]
fn netperf_tcp_rr() {
    let w = parse("netperf -t TCP_RR -l 10 -- -r 1,1");
    let BenchParams::Netperf(n) = &w.params else { panic!() };
    assert_eq!((n.length, n.request_size, n.response_size), (TestLength::Seconds(10), 1, 1));
    assert_eq!(w.duration_ns, Some(10_000_000_000));
    assert_eq!((w.metric.name, w.metric.better), ("transactions_per_sec", Better::Higher));
    assert_eq!(w.objects, vec![ObjectSpec::TcpLoopback { sndbuf: 16_384 }; 2]);
    assert_eq!(
        w.tasks[0].ops,
        [
            Op::Mark { id: 0 },
            Op::Write { obj: 0, bytes: 1 },
            Op::Read { obj: 1, bytes: 1, exact: true },
            Op::Count { id: 0 },
            Op::Loop { target: 1, slot: 0, count: u32::MAX },
        ]
    );
    assert_eq!(w.tasks[1].ops[..2], [Op::Read { obj: 0, bytes: 1, exact: true }, Op::Write { obj: 1, bytes: 1 }]);
    assert_eq!((w.tasks[0].comm.as_str(), w.tasks[1].comm.as_str()), ("netperf", "netserver"));
    assert_ne!(w.tasks[0].mm, w.tasks[1].mm);
    // Defaults: 10 s, 1,1; `-r N` sets both sizes, `-r ,N` only the response, K suffix.
    let w = parse("netperf -t tcp_rr");
    assert_eq!(w.duration_ns, Some(10_000_000_000));
    let BenchParams::Netperf(n) = &parse("netperf -t TCP_RR -- -r 64").params else { panic!() };
    assert_eq!((n.request_size, n.response_size), (64, 64));
    let BenchParams::Netperf(n) = &parse("netperf -t TCP_RR -- -r ,1K -D").params else { panic!() };
    assert_eq!((n.request_size, n.response_size, n.nodelay), (1, 1024, true));
    // -l -N: a transaction count; the run ends by itself.
    let w = parse("netperf -t TCP_RR -l -1000");
    assert_eq!(w.duration_ns, None);
    assert_eq!(loops(&w.tasks[0]), [1000]);
    // -T l,r binds each side; -T n binds both.
    let w = parse("netperf -t TCP_RR -T 0,1 -H 127.0.0.1");
    assert_eq!((w.tasks[0].cpus.clone(), w.tasks[1].cpus.clone()), (Some(vec![0]), Some(vec![1])));
    let w = parse("netperf -T2 -t TCP_RR");
    assert_eq!((w.tasks[0].cpus.clone(), w.tasks[1].cpus.clone()), (Some(vec![2]), Some(vec![2])));
}

#[test]
fn netperf_rejects() {
    assert_eq!(err("netperf"), "netperf: -t TCP_STREAM (test type) is not modelled: only TCP_RR is modelled");
    assert!(err("netperf -t UDP_RR").contains("-t UDP_RR (test type)"));
    assert!(err("netperf -t TCP_RR -H 10.0.0.1").contains("-H 10.0.0.1 (remote host) is not modelled"));
    assert!(
        err("netperf -t TCP_RR -i 3,3 -I 95,5")
            .contains("-i (confidence intervals) is not modelled: run several seeds instead")
    );
    assert!(err("netperf -t TCP_RR -c").contains("CPU utilisation"));
    assert!(err("netperf -t TCP_RR -- -m 64").contains("-- -m (test-specific option) is not modelled"));
    assert!(err("netperf -t TCP_RR -l 0").contains("-l 0"));
    assert!(err("netperf -t TCP_RR -- -r 0").contains("sizes must be"));
    assert!(err("netperf -t TCP_RR 5").contains("unexpected argument `5`"));
}

#[test]
fn netperf_output() {
    let w = parse("netperf -t TCP_RR -l 10 -- -r 1,1");
    let r = Report::new(10_000_000_000).mark(0, 0, 0).count(0, 100_000).r;
    assert_eq!(
        w.format_output(&r),
        "MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to localhost () port 0 AF_INET : first burst 0\n\
         Local /Remote\n\
         Socket Size   Request  Resp.   Elapsed  Trans.\n\
         Send   Recv   Size     Size    Time     Rate         \n\
         bytes  Bytes  bytes    bytes   secs.    per sec   \n\
         \n\
         16384  131072 1        1       10.00    10000.00   \n\
         16384  131072\n"
    );
    assert_eq!(w.metric_value(&r), 10_000.0);
    let w = parse("netperf -P 0 -t TCP_RR -T 0,1 -- -D -r 32,1024");
    let out = w.format_output(&r);
    assert_eq!(out, "16384  131072 32       1024    10.00    10000.00   \n16384  131072\n");
    let w = parse("netperf -t TCP_RR -T 0,1 -- -D");
    assert!(w.format_output(&r).starts_with(
        "MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to localhost () port 0 AF_INET : nodelay : first burst 0 : cpu bind\n"
    ));
    assert_eq!(parse("netperf -v 0 -t TCP_RR").format_output(&r), "10000.00\n");
}

// ---- stress-ng -----------------------------------------------------------------------------

#[test]
fn stress_ng_model() {
    let w = parse("stress-ng --cpu 4 --timeout 10");
    let BenchParams::StressNg(s) = &w.params else { panic!() };
    assert_eq!((s.instances, s.load, s.load_slice, s.method.as_str(), s.timeout_s), (4, 100, -64, "all", Some(10)));
    assert_eq!(w.tasks.len(), 5);
    assert!(w.objects.is_empty());
    assert_eq!(w.duration_ns, Some(10_000_000_000));
    assert_eq!((w.metric.name, w.metric.better), ("bogo_ops_per_sec", Better::Higher));
    assert_eq!(
        w.tasks[0].ops,
        [1, 2, 3, 4].map(|spec| Op::Spawn { spec }).into_iter().chain([Op::WaitChildren, Op::Exit]).collect::<Vec<_>>()
    );
    assert_eq!(
        w.tasks[1].ops,
        [
            Op::Mark { id: 0 },
            Op::Run { ns: 100_000 },
            Op::Count { id: 0 },
            Op::Loop { target: 1, slot: 0, count: u32::MAX }
        ]
    );
    assert!(w.tasks[1..].iter().all(|t| t.comm == "stress-ng-cpu" && t.spawned));
    // Short options and time suffixes.
    let w = parse("stress-ng -c 2 -t 1m");
    assert_eq!(w.duration_ns, Some(60_000_000_000));
    // --cpu-load: 64 calls busy, then a 64 × 100 µs × 70/30 sleep.
    let w = parse("stress-ng --cpu 1 --cpu-load 30");
    assert_eq!(w.duration_ns, None);
    assert_eq!(
        &w.tasks[1].ops[1..],
        [
            Op::Run { ns: 100_000 },
            Op::Count { id: 0 },
            Op::Loop { target: 1, slot: 0, count: 64 },
            Op::Sleep { ns: 14_933_333 },
            Op::Loop { target: 1, slot: 1, count: u32::MAX },
        ]
    );
    let BenchParams::StressNg(s) = &parse("stress-ng --cpu 1 --cpu-load 50 --cpu-load-slice 10").params else {
        panic!()
    };
    assert_eq!(s.calls_per_slice(), 100);
    let w = parse("stress-ng --cpu 1 --cpu-load 0 --timeout 5");
    assert_eq!(w.tasks[1].ops, [Op::Mark { id: 0 }, Op::Sleep { ns: 5_000_000_000 }, Op::Exit]);
    // CPU-count defaults.
    assert!(matches!(parse_benchmark(&argv("stress-ng --cpu 0")), Err(WorkloadError::NeedsCpuCount { .. })));
    let n = |cmd: &str| match parse_on(cmd, 8).params {
        BenchParams::StressNg(s) => s.instances,
        _ => unreachable!(),
    };
    assert_eq!(
        (n("stress-ng --cpu 0"), n("stress-ng --cpu -1"), n("stress-ng --cpu 50%"), n("stress-ng --cpu 1%")),
        (8, 8, 4, 1)
    );
}

#[test]
fn stress_ng_rejects() {
    assert_eq!(
        err("stress-ng --vm 2"),
        "stress-ng: --vm (stressor or option) is not modelled: only the cpu stressor is modelled"
    );
    assert!(err("stress-ng --cpu 1 --taskset 0").contains("use schedlab's --cpus"));
    assert!(err("stress-ng --cpu 1 --cpu-method nosuch").contains("--cpu-method must be one of"));
    assert!(err("stress-ng --cpu 1 --cpu-load 101").contains("out of range"));
    assert!(err("stress-ng --timeout 10").contains("no stress workers invoked"));
    assert!(err("stress-ng --cpu 1 --time 10").contains("--time (stressor or option) is not modelled"));
}

#[test]
fn stress_ng_output() {
    let w = parse("stress-ng --cpu 4 --cpu-method matrixprod --timeout 10 --metrics");
    // 4 hogs, 10 s of CPU each: 400 000 calls of 100 µs.
    let cpu = ("stress-ng-cpu", 10_000_000_000);
    let r =
        Report::with_tasks(10_000_000_000, &[("stress-ng", 0), cpu, cpu, cpu, cpu]).mark(0, 0, 0).count(0, 400_000).r;
    let p = "stress-ng: info:  [1000] ";
    let m = "stress-ng: metrc: [1000] ";
    assert_eq!(
        w.format_output(&r),
        format!(
            "{p}setting to a 10 secs run per stressor\n\
             {p}dispatching hogs: 4 cpu\n\
             {m}stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s CPU used per       RSS Max\n\
             {m}                          (secs)    (secs)    (secs)   (real time) (usr+sys time) instance (%)          (KB)\n\
             {m}cpu               59380     10.00     40.00      0.00      5938.00        1484.50       100.00             0\n\
             {p}skipped: 0\n\
             {p}passed: 4: cpu (4)\n\
             {p}failed: 0\n\
             {p}metrics untrustworthy: 0\n\
             {p}successful run completed in 10.00 secs\n"
        )
    );
    assert_eq!(w.metric_value(&r), 5938.0);
    let w = parse("stress-ng --cpu 4 --metrics-brief --log-brief --cpu-old-metrics");
    let out = w.format_output(&r);
    assert!(
        out.starts_with("defaulting to a 1 day run per stressor\ndispatching hogs: 4 cpu\nstressor       bogo ops"),
        "{out}"
    );
    assert!(
        out.contains("\ncpu              400000     10.00     40.00      0.00     40000.00       10000.00\n"),
        "{out}"
    );
}

// ---- pgbench -------------------------------------------------------------------------------

#[test]
fn pgbench_model() {
    let w = parse("pgbench -S -c 4 -j 2 -T 10");
    let BenchParams::Pgbench(p) = &w.params else { panic!() };
    assert_eq!((p.clients, p.threads, p.duration_s, p.transactions, p.mode), (4, 2, Some(10), None, QueryMode::Simple));
    assert_eq!(w.duration_ns, Some(10_000_000_000));
    assert_eq!((w.metric.name, w.metric.better), ("tps", Better::Higher));
    // 2 pgbench threads (same process), 4 backends (own processes).
    assert_eq!(w.tasks.len(), 6);
    assert_eq!(w.objects, vec![ObjectSpec::UnixStream { sndbuf: 212_992 }; 8]);
    assert_eq!((w.tasks[0].spawned, w.tasks[1].spawned), (false, true));
    assert_eq!(w.tasks[0].ops[0], Op::Spawn { spec: 1 });
    assert_eq!((w.tasks[0].mm, w.tasks[1].mm), (0, 0));
    assert!(w.tasks[2..].iter().all(|t| t.comm == "postgres" && !t.spawned && t.mm > 0));
    // Thread 0 serves clients 0 and 1: result channels 1 and 3.
    assert_eq!(w.tasks[0].poll_sets, [vec![1], vec![3]]);
    assert_eq!(w.tasks[1].poll_sets, [vec![5], vec![7]]);
    let backend = &w.tasks[2];
    assert_eq!(
        backend.ops,
        [
            Op::EpollWait { set: 0 },
            Op::Read { obj: 0, bytes: 64, exact: true },
            Op::Run { ns: 35_000 },
            Op::Write { obj: 1, bytes: 128 },
            Op::Loop { target: 0, slot: 0, count: u32::MAX },
        ]
    );
    assert_eq!(backend.poll_sets, [vec![0]]);
    // Clients are dealt as pgbench deals them: 5 over 3 threads → 2, 2, 1.
    let w = parse("pgbench -S -c 5 -j 3 -T 1");
    let sets: Vec<usize> = w.tasks[..3].iter().map(|t| t.poll_sets.len()).collect();
    assert_eq!(sets, [2, 2, 1]);
    // More threads than clients: reduced.
    let BenchParams::Pgbench(p) = &parse("pgbench -S -c 2 -j 8 -T 1").params else { panic!() };
    assert_eq!(p.threads, 2);
    // Default: 10 transactions per client, then everything exits.
    let w = parse("pgbench -S");
    assert_eq!(w.duration_ns, None);
    assert_eq!(loops(&w.tasks[1]), [10]);
    assert!(w.tasks[0].ops.contains(&Op::Mark { id: 1 }));
    // -h localhost: TCP; -M prepared; builtin by prefix; connection options.
    let w = parse("pgbench -b select -M prepared -h localhost -p 5433 -U bench -T 5 -n -s 100 bench");
    assert!(w.objects.iter().all(|o| matches!(o, ObjectSpec::TcpLoopback { .. })));
    let BenchParams::Pgbench(p) = &w.params else { panic!() };
    assert_eq!((p.mode, p.scale, p.no_vacuum, p.tcp), (QueryMode::Prepared, 100, true, true));
    parse("pgbench --select-only --client=2 --jobs=2 --time=3 --protocol=extended -h /var/run/postgresql");
}

#[test]
fn pgbench_rejects() {
    assert_eq!(
        err("pgbench -c 4 -T 10"),
        "pgbench: (no -S) (TPC-B-like read-write script) is not modelled: give -S (-b select-only)"
    );
    assert!(err("pgbench -S -t 10 -T 10").contains("either a number of transactions (-t) or a duration (-T)"));
    assert!(err("pgbench -b tpcb-like").contains("-b tpcb-like (read-write script) is not modelled"));
    assert!(err("pgbench -S -P 1").contains("-P (progress reports) is not modelled"));
    assert!(err("pgbench -S -R 100").contains("rate limiting"));
    assert!(err("pgbench -S -C").contains("a new connection per transaction"));
    assert!(err("pgbench -S -c 0").contains("-c/--client must be in range 1.."));
    assert!(err("pgbench -S -M fast").contains("invalid query mode (-M): \"fast\""));
    assert!(err("pgbench -S -h db.example.com").contains("remote server"));
    assert!(err("pgbench -S db extra").contains("too many command-line arguments (first is \"extra\")"));
}

#[test]
fn pgbench_output() {
    let w = parse("pgbench -S -c 1 -j 1 -T 10");
    let r = Report::new(10_000_000_000).mark(0, 0, 0).count(0, 150_000).r;
    assert_eq!(
        w.format_output(&r),
        "pgbench (18.1)\n\
         starting vacuum...end.\n\
         transaction type: <builtin: select only>\n\
         scaling factor: 1\n\
         query mode: simple\n\
         number of clients: 1\n\
         number of threads: 1\n\
         maximum number of tries: 1\n\
         duration: 10 s\n\
         number of transactions actually processed: 150000\n\
         number of failed transactions: 0 (0.000%)\n\
         latency average = 0.067 ms\n\
         initial connection time = 0.000 ms\n\
         tps = 15000.000000 (without initial connection time)\n"
    );
    assert_eq!(w.metric_value(&r), 15_000.0);
    let w = parse("pgbench -n -S -c 2 -t 100");
    let r = Report::new(0).mark(0, 1_000, 1_000).mark(1, 20_001_000, 20_001_000).count(0, 200).r;
    let out = w.format_output(&r);
    assert!(out.starts_with("pgbench (18.1)\ntransaction type:"), "{out}");
    assert!(
        out.contains("number of transactions per client: 100\nnumber of transactions actually processed: 200/200\n")
    );
    assert!(out.ends_with("latency average = 0.200 ms\ninitial connection time = 0.000 ms\ntps = 10000.000000 (without initial connection time)\n"), "{out}");
}

// ---- common --------------------------------------------------------------------------------

#[test]
fn unknown_benchmark() {
    let e = parse_benchmark(&argv("dbench 4")).unwrap_err();
    assert_eq!(e, WorkloadError::UnknownBenchmark("dbench".into()));
    assert!(e.to_string().contains("known: hackbench, pipe, messaging"));
}

#[test]
fn every_benchmark_builds_valid_programs() {
    let cmds = [
        "hackbench -p -T -g 3 -f 5 -l 7",
        "hackbench -i -g 1 -f 1 -l 1",
        "messaging -g 1",
        "pipe -n -s 4096 -l 100",
        "pipe --classic -T -l 1",
        "pipe -l 0",
        "schbench -m 3 -t 3 -R 100 -r 5",
        "schbench -m 2 -t 3 -p 64 -r 5 -C",
        "lat_ctx 1",
        "lat_ctx -P 2 -s 64 2 16",
        "netperf -t TCP_RR -l -5 -- -r 100,200",
        "stress-ng --cpu 3 --cpu-load 10 --cpu-load-slice 0 --timeout 2",
        "stress-ng --cpu 1 --cpu-load 0",
        "pgbench -S -c 3 -j 2 -t 1",
        "pgbench -S -c 7 -j 3 -T 1 -M extended",
    ];
    for cmd in cmds {
        let w = parse_on(cmd, 4);
        assert_eq!(w.argv, argv(cmd));
        assert_eq!(w.name, cmd.split_whitespace().next().unwrap());
        for t in &w.tasks {
            assert!(t.comm.len() <= 15, "{cmd}: comm `{}`", t.comm);
            assert!(!t.ops.is_empty());
        }
    }
}

#[test]
fn merge_schbench_with_a_hog() {
    let sch = parse("schbench -m 1 -t 2 -r 10");
    let hog = parse("stress-ng --cpu 2");
    let (nt, no) = (sch.tasks.len(), sch.objects.len());
    let merged = merge_workloads(vec![sch, hog]).unwrap();
    assert_eq!(merged.tasks.len(), nt + 3);
    assert_eq!(merged.objects.len(), no);
    assert_eq!(merged.duration_ns, Some(10_000_000_000), "the foreground's bound");
    crate_validate(&merged.tasks, merged.objects.len());
    let hog = &merged.parts[1];
    assert_eq!(hog.base.task as usize, nt);
    assert_eq!(hog.base.id, IDS_PER_WORKLOAD);
    // The hog's parent spawns its relocated workers; its measurement ids and address spaces
    // moved past schbench's.
    assert_eq!(merged.tasks[nt].ops[0], Op::Spawn { spec: nt as u32 + 1 });
    assert_eq!(merged.tasks[nt + 1].ops[0], Op::Mark { id: IDS_PER_WORKLOAD });
    assert!(merged.tasks[nt..].iter().all(|t| t.mm >= 1));
    // Each part reads its own ids from the common report.
    let r = Report::new(10_000_000_000)
        .hist(0, [5_000u64; 10])
        .count(IDS_PER_WORKLOAD, 100_000)
        .mark(IDS_PER_WORKLOAD, 0, 0)
        .r;
    let p99 = merged.parts[0].metric_value(&r);
    assert!((5.0..5.01).contains(&p99), "{p99}");
    assert!((merged.parts[1].metric_value(&r) - 1484.5).abs() < 1e-9);
}

fn crate_validate(tasks: &[TaskSpec], nobj: usize) {
    workload::bench::validate_programs(tasks, nobj).unwrap();
}

// ---- end to end ----------------------------------------------------------------------------

/// Runs a workload on `smp:cpus` with the invariant checker, at most `cap_ns` of simulated time.
fn simulate(w: &BenchWorkload, cpus: u32, cap_ns: u64) -> SimReport {
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology: Topology::smp(cpus),
        seed: 1,
        limits: Limits { max_events: 50_000_000, max_time_ns: w.duration_ns.unwrap_or(cap_ns).min(cap_ns) },
        tasks: w.tasks.clone(),
        objects: w.objects.clone(),
        check_invariants: true,
        groups: Vec::new(),
    };
    match Sim::new(setup) {
        Ok(sim) => sim.run().unwrap_or_else(|v| panic!("{}: {v}", w.argv.join(" "))),
        Err(e) => panic!("{}: {e}", w.argv.join(" ")),
    }
}

#[test]
fn end_to_end_smoke() {
    // (command, CPUs, simulated-time cap, the run must end by itself, a line of the output)
    let cases = [
        ("hackbench -p -g 1 -f 4 -l 20", 2, 1_000_000_000, true, "Time: 0.000"),
        ("hackbench -T -g 2 -f 2 -l 10", 2, 1_000_000_000, true, "Time: 0.000"),
        ("hackbench -i -g 1 -f 2 -l 10", 2, 1_000_000_000, true, "Time: 0.000"),
        ("messaging -p -g 1 -l 2", 4, 1_000_000_000, true, "Total time: 0.00"),
        ("pipe -l 2000", 1, 1_000_000_000, true, " usecs/op"),
        ("pipe --classic -T -l 500", 2, 1_000_000_000, true, " ops/sec"),
        ("pipe -T -n -s 8192 -l 500", 2, 1_000_000_000, true, " ops/sec"),
        ("schbench -r 1 -t 2", 2, 100_000_000, false, "average rps: "),
        ("schbench -r 1 -t 1 -p 64", 2, 5_000_000, false, "avg worker transfer: "),
        ("schbench -r 2 -t 2 -R 20", 2, 1_500_000_000, false, "* 99.0th: "),
        ("lat_ctx -N 2 -s 4 2 3", 2, 10_000_000_000, true, "\"size=4k ovr="),
        ("netperf -t TCP_RR -l -200 -- -r 64,64", 2, 1_000_000_000, true, "64       64      0.00 "),
        ("stress-ng --cpu 3 --cpu-load 50 --timeout 1 --metrics", 2, 20_000_000, false, "passed: 3: cpu (3)"),
        ("pgbench -S -c 3 -j 2 -t 20", 2, 1_000_000_000, true, "actually processed: 60/60"),
    ];
    for (cmd, cpus, cap, ends, line) in cases {
        let w = parse_on(cmd, cpus);
        let r = simulate(&w, cpus, cap);
        let out = w.format_output(&r);
        assert_eq!(r.stop == StopReason::AllExited, ends, "`{cmd}` stopped by {:?}:\n{out}", r.stop);
        assert!(out.contains(line), "`{cmd}`: no `{line}` in\n{out}");
        let v = w.metric_value(&r);
        assert!(v.is_finite() && v > 0.0, "`{cmd}`: {} = {v}\n{out}", w.metric.name);
    }
}
