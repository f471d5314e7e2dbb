//! The writers' exact output for each event, the reader on real kernel lines, and a simulated
//! run's trace analysed back into the run's own figures.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use prost::Message;
use schedtrace::proto::{self, Trace, ftrace_event::Event as PE};
use schedtrace::{
    Event, FtraceTextWriter, PerfettoWriter, Precision, TaskId, TextOptions, TraceHeader, analyze, read_ftrace_text,
};
use sim::fair::WakeupReason;
use sim::select::SelectReason;
use sim::trace::{EevdfState, PrevState, TaskRef, TraceEvent, TraceSink};

const A: TaskRef<'static> = TaskRef { pid: 101, comm: "sched-pipe", prio: 120 };
const B: TaskRef<'static> = TaskRef { pid: 102, comm: "a-very-long-task-name", prio: 125 };
const IDLE: TaskRef<'static> = TaskRef { pid: 0, comm: "swapper/1", prio: 120 };

const STATE: EevdfState = EevdfState {
    vruntime: 1_000_000,
    deadline: 3_800_000,
    lag: -2500,
    eligible: false,
    slice: 2_800_000,
    vprot: 3_800_000,
    delayed: false,
    buddy: true,
};

/// One of each event, on CPU 1, at increasing times.
fn events() -> Vec<(u64, u32, TraceEvent<'static>)> {
    vec![
        (0, 1, TraceEvent::Fork { parent: B, child: A }),
        (1_499, 1, TraceEvent::WakeupNew { task: A, target_cpu: 1 }),
        (1_500, 1, TraceEvent::Switch { prev: IDLE, prev_state: PrevState::Running, next: A }),
        (
            2_000_000_500,
            1,
            TraceEvent::Placement { task: B, prev_cpu: 0, target_cpu: 1, sync: true, reason: SelectReason::SisPrev },
        ),
        (2_000_001_000, 1, TraceEvent::Waking { task: B, target_cpu: 0 }),
        (2_000_001_000, 1, TraceEvent::WakingFlips { pid: 102, flips: 6 }),
        (2_000_001_000, 1, TraceEvent::Migrate { task: B, orig_cpu: 0, dest_cpu: 1 }),
        (2_000_001_000, 1, TraceEvent::Wakeup { task: B, target_cpu: 1 }),
        (
            2_000_001_000,
            1,
            TraceEvent::WakeupPreempt {
                curr: A,
                wakee: B,
                preempt: true,
                reason: WakeupReason::PickedWakee,
                curr_state: STATE,
                wakee_state: EevdfState {
                    vruntime: (1u64 << 20).wrapping_neg(),
                    lag: 7,
                    eligible: true,
                    buddy: false,
                    ..STATE
                },
            },
        ),
        (2_000_001_000, 1, TraceEvent::WakeupLag { pid: 102, vlag: -1_250 }),
        (2_000_001_500, 1, TraceEvent::TimerExpire { function: "hrtick" }),
        (2_000_002_000, 1, TraceEvent::Switch { prev: A, prev_state: PrevState::Preempted, next: B }),
        (2_000_003_000, 1, TraceEvent::Exit { task: B }),
        (2_000_003_000, 1, TraceEvent::Switch { prev: B, prev_state: PrevState::Dead, next: A }),
        (12_345_678_901_234, 1, TraceEvent::Switch { prev: A, prev_state: PrevState::Sleeping, next: IDLE }),
        (12_345_678_901_234, 1, TraceEvent::SwitchLag { prev_pid: 101, vlag: 350_000, delayed: true }),
    ]
}

fn text(header: &TraceHeader, opts: TextOptions) -> String {
    let mut w = FtraceTextWriter::with_options(Vec::new(), header, opts).unwrap();
    for (ts, cpu, ev) in events() {
        w.event(ts, cpu, &ev);
    }
    String::from_utf8(w.finish().unwrap()).unwrap()
}

#[test]
fn ftrace_text_lines_match_the_kernel_format() {
    let header = TraceHeader { nr_cpus: 2, comments: vec!["reproduce: schedlab run pipe".into()] };
    let out = text(&header, TextOptions::default());
    let expected = "\
# tracer: nop
#
# schedlab simulated trace   #P:2
# reproduce: schedlab run pipe
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
          <idle>-0       [001] .....     0.000000: sched_process_fork: comm=a-very-long-tas pid=102 child_comm=sched-pipe child_pid=101
          <idle>-0       [001] d..2.     0.000001: sched_wakeup_new: comm=sched-pipe pid=101 prio=120 target_cpu=001
          <idle>-0       [001] d..2.     0.000002: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sched-pipe next_pid=101 next_prio=120
      sched-pipe-101     [001] d..3.     2.000001: schedlab_placement: comm=a-very-long-tas pid=102 prio=125 prev_cpu=0 target_cpu=001 sync=1 reason=sis_prev_idle
      sched-pipe-101     [001] d..3.     2.000001: sched_waking: comm=a-very-long-tas pid=102 prio=125 target_cpu=000
      sched-pipe-101     [001] d..4.     2.000001: schedlab_waking_flips: pid=102 flips=6
      sched-pipe-101     [001] d..3.     2.000001: sched_migrate_task: comm=a-very-long-tas pid=102 prio=125 orig_cpu=0 dest_cpu=1
      sched-pipe-101     [001] d..4.     2.000001: sched_wakeup: comm=a-very-long-tas pid=102 prio=125 target_cpu=001
      sched-pipe-101     [001] d..4.     2.000001: schedlab_wakeup_preempt: curr_comm=sched-pipe curr_pid=101 wakee_comm=a-very-long-tas wakee_pid=102 preempt=1 reason=pick_is_wakee curr_vruntime=1000000 curr_deadline=3800000 curr_lag=-2500 curr_eligible=0 curr_slice=2800000 curr_vprot=3800000 curr_delayed=0 curr_buddy=1 wakee_vruntime=-1048576 wakee_deadline=3800000 wakee_lag=7 wakee_eligible=1 wakee_slice=2800000 wakee_vprot=3800000 wakee_delayed=0 wakee_buddy=0
      sched-pipe-101     [001] d..4.     2.000001: schedlab_wakeup_lag: pid=102 vlag=-1250
      sched-pipe-101     [001] d.h1.     2.000002: hrtimer_expire_entry: hrtimer=(____ptrval____) function=hrtick now=2000001500
      sched-pipe-101     [001] d..2.     2.000002: sched_switch: prev_comm=sched-pipe prev_pid=101 prev_prio=120 prev_state=R+ ==> next_comm=a-very-long-tas next_pid=102 next_prio=125
 a-very-long-tas-102     [001] .....     2.000003: sched_process_exit: comm=a-very-long-tas pid=102 prio=125
 a-very-long-tas-102     [001] d..2.     2.000003: sched_switch: prev_comm=a-very-long-tas prev_pid=102 prev_prio=125 prev_state=X ==> next_comm=sched-pipe next_pid=101 next_prio=120
      sched-pipe-101     [001] d..2. 12345.678901: sched_switch: prev_comm=sched-pipe prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d..2. 12345.678901: schedlab_switch_lag: prev_pid=101 prev_vlag=350000 prev_delayed=1
";
    for (i, (got, want)) in out.lines().zip(expected.lines()).enumerate() {
        assert_eq!(got, want, "line {}", i + 1);
    }
    assert_eq!(out, expected);
}

#[test]
fn nanosecond_precision_and_no_decisions() {
    let header = TraceHeader { nr_cpus: 2, comments: vec![] };
    let out = text(&header, TextOptions { precision: Precision::Nanos, decisions: false });
    assert!(!out.contains("schedlab_"));
    assert!(out.contains("[001] d..2.     0.000001500: sched_switch:"), "{out}");
    assert!(out.contains("[001] d..2. 12345.678901234: sched_switch:"), "{out}");
}

/// What the reader gives back is what was written (names cut to 15 bytes, as the kernel does).
#[test]
fn text_round_trip() {
    let header = TraceHeader { nr_cpus: 2, comments: vec![] };
    for precision in [Precision::Micros, Precision::Nanos] {
        let out = text(&header, TextOptions { precision, decisions: true });
        let mut reader = read_ftrace_text(out.as_bytes());
        let records: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(reader.nr_cpus(), Some(2));
        assert_eq!(records.len(), events().len());
        let id = |t: &TaskRef| TaskId { comm: t.comm.chars().take(15).collect(), pid: t.pid, prio: t.prio };
        for (r, (ts, cpu, ev)) in records.iter().zip(events()) {
            let want_ts = match precision {
                Precision::Micros => (ts + 500) / 1000 * 1000,
                Precision::Nanos => ts,
            };
            assert_eq!((r.ts_ns, r.cpu), (want_ts, cpu));
            let want = match ev {
                TraceEvent::Switch { prev, prev_state, next } => Event::Switch {
                    prev: id(&prev),
                    prev_state: match prev_state {
                        _ if prev.pid == 0 => "R",
                        PrevState::Running => "R",
                        PrevState::Preempted => "R+",
                        PrevState::Sleeping => "S",
                        PrevState::Uninterruptible => "D",
                        PrevState::Dead => "X",
                    }
                    .into(),
                    next: id(&next),
                },
                TraceEvent::Waking { task, target_cpu } => Event::Waking { task: id(&task), target_cpu },
                TraceEvent::Wakeup { task, target_cpu } => Event::Wakeup { task: id(&task), target_cpu },
                TraceEvent::WakeupNew { task, target_cpu } => Event::WakeupNew { task: id(&task), target_cpu },
                TraceEvent::Migrate { task, orig_cpu, dest_cpu } => {
                    Event::Migrate { task: id(&task), orig_cpu, dest_cpu }
                }
                TraceEvent::Fork { parent, child } => {
                    Event::Fork { parent: TaskId { prio: 0, ..id(&parent) }, child: TaskId { prio: 0, ..id(&child) } }
                }
                TraceEvent::Exit { task } => Event::Exit { task: id(&task) },
                TraceEvent::WakeupPreempt { curr, wakee, preempt, reason, curr_state, wakee_state } => {
                    let f = |s: EevdfState| schedtrace::EevdfFields {
                        vruntime: s.vruntime,
                        deadline: s.deadline,
                        lag: s.lag,
                        eligible: s.eligible,
                        slice: s.slice,
                        vprot: s.vprot,
                        delayed: s.delayed,
                        buddy: s.buddy,
                    };
                    Event::WakeupPreempt {
                        curr: TaskId { prio: 0, ..id(&curr) },
                        wakee: TaskId { prio: 0, ..id(&wakee) },
                        preempt,
                        reason: reason.name().into(),
                        curr_state: f(curr_state),
                        wakee_state: f(wakee_state),
                    }
                }
                TraceEvent::Placement { task, prev_cpu, target_cpu, sync, reason } => Event::Placement {
                    task: id(&task),
                    prev_cpu,
                    target_cpu,
                    sync,
                    reason: schedtrace::select_reason_name(reason).into(),
                },
                TraceEvent::TimerExpire { function } => Event::TimerExpire { function: function.into() },
                TraceEvent::WakeupLag { pid, vlag } => Event::WakeupLag { pid, vlag },
                TraceEvent::SwitchLag { prev_pid, vlag, delayed } => Event::SwitchLag { prev_pid, vlag, delayed },
                TraceEvent::WakingFlips { pid, flips } => Event::WakingFlips { pid, flips },
            };
            assert_eq!(r.event, want);
        }
    }
}

#[test]
fn perfetto_round_trip() {
    let header = TraceHeader { nr_cpus: 2, comments: vec![] };
    let mut w = PerfettoWriter::new(Vec::new(), &header).unwrap();
    for (ts, cpu, ev) in events() {
        w.event(ts, cpu, &ev);
    }
    let packets = w.packets();
    let bytes = w.finish().unwrap();
    let trace = Trace::decode(bytes.as_slice()).unwrap();
    let mut ftrace = Vec::new();
    let (mut descriptors, mut counters, mut instants) = (0, 0, 0);
    for p in &trace.packet {
        if let Some(b) = &p.ftrace_events {
            assert_eq!(b.cpu, Some(1));
            ftrace.extend(b.event.iter().cloned());
        }
        if p.track_descriptor.is_some() {
            descriptors += 1;
        }
        if let Some(te) = &p.track_event {
            assert_eq!(p.trusted_packet_sequence_id, Some(1));
            match te.r#type {
                Some(proto::track_event_type::COUNTER) => counters += 1,
                Some(proto::track_event_type::INSTANT) => instants += 1,
                t => panic!("unexpected track event type {t:?}"),
            }
        }
    }
    // One bundle (12 events fit one batch) + descriptors + counter and instant events.
    assert_eq!(trace.packet.len() as u64, packets + 1);
    assert_eq!(ftrace.len(), 10);
    assert_eq!(instants, 2);
    // nr_running cpu0/cpu1, cpu1 V, lag of 101 and 102, the two decision tracks.
    assert_eq!(descriptors, 7);
    // 2 initial nr_running values; wakeup_new +1; wakeup +1; exit -1; sleep -1; V; 2 lags.
    assert_eq!(counters, 2 + 4 + 3);
    let pids: Vec<u32> = ftrace.iter().map(|e| e.pid.unwrap()).collect();
    assert_eq!(pids, [0, 0, 0, 101, 101, 101, 101, 102, 102, 101]);
    let PE::SchedSwitch(sw) = ftrace[2].event.clone().unwrap() else { panic!("{:?}", ftrace[2]) };
    assert_eq!(sw.prev_comm.as_deref(), Some("swapper/1"));
    assert_eq!((sw.next_pid, sw.next_prio, sw.prev_state), (Some(101), Some(120), Some(0)));
    assert_eq!(ftrace[2].timestamp, Some(1500));
    let kinds: Vec<&str> = ftrace
        .iter()
        .map(|e| match e.event.as_ref().unwrap() {
            PE::SchedSwitch(_) => "switch",
            PE::SchedWakeup(_) => "wakeup",
            PE::SchedWaking(_) => "waking",
            PE::SchedWakeupNew(_) => "wakeup_new",
            PE::SchedProcessExit(_) => "exit",
            PE::SchedProcessFork(_) => "fork",
            PE::SchedMigrateTask(_) => "migrate",
        })
        .collect();
    assert_eq!(
        kinds,
        ["fork", "wakeup_new", "switch", "waking", "migrate", "wakeup", "switch", "exit", "switch", "switch"]
    );
}

/// A real 6.18 trace (sched events while a shell ran pipelines next to a compiler), trimmed.
#[test]
fn reads_a_real_kernel_trace() {
    let text = include_str!("fixtures/real-6.18.txt");
    let mut reader = read_ftrace_text(text.as_bytes());
    let records: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(reader.nr_cpus(), Some(2));
    assert_eq!(records.len(), 300);
    let count = |name: &str| records.iter().filter(|r| r.event.name() == name).count();
    assert_eq!(
        [
            "sched_switch",
            "sched_waking",
            "sched_wakeup",
            "sched_wakeup_new",
            "sched_migrate_task",
            "sched_process_fork",
            "sched_process_exit"
        ]
        .map(count),
        [113, 62, 61, 21, 5, 21, 17]
    );
    let first = &records[0];
    assert_eq!((first.comm.as_str(), first.pid, first.cpu, first.ts_ns), ("bash", 25699, 0, 2_843_742_130_000));
    let an = analyze(text.as_bytes(), Default::default()).unwrap();
    assert_eq!(an.nr_switches, 113);
    assert_eq!((an.nr_voluntary_switches, an.nr_involuntary_switches), (80, 33));
    assert_eq!((an.nr_migrations, an.nr_wakeups), (5, 62));
    assert!(an.nr_wakeups_local + an.nr_wakeups_remote <= 62 && an.nr_wakeups_local > 0);
    assert_eq!(an.nr_cpus, 2);
    // Names with spaces survive, in the prefix and in the fields.
    assert!(an.tasks.iter().any(|t| t.comm == "lto cgu.1"), "{:?}", an.tasks);
    // Every CPU was busy (a compiler ran): no idle time in this excerpt.
    assert_eq!(an.idle_ns_per_cpu, [0, 0]);
    let total: u64 = an.tasks.iter().map(|t| t.runtime_ns).sum();
    assert_eq!(total, 2 * an.span_ns());
    let table = an.latency_table();
    assert!(table.contains("  Task                  |   Runtime ms  | Switches | Avg delay ms"), "{table}");
    let wc = analyze(text.as_bytes(), schedtrace::Filter { comm: Some("wc".into()), ..Default::default() }).unwrap();
    assert!(wc.nr_switches > 0 && wc.nr_switches < an.nr_switches);
    assert!(wc.tasks.iter().all(|t| t.comm == "wc"));
}
