//! `schedlab bench`: simulator throughput in scheduler events per second of wall time.
//!
//! Each case is a fixed workload run for a fixed simulated time; an "event" is one entry popped
//! from the engine's event queue (a step end, tick, hrtick, timer, IPI, idle exit or fork).

use std::time::Instant;

use sim::config::{Limits, SchedConfig};
use sim::engine::{Sim, SimSetup};
use sim::fair::Policy;
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;

use crate::args::BenchArgs;

struct Case {
    name: &'static str,
    cpus: u32,
    tasks: Vec<TaskSpec>,
}

fn task(comm: String, ops: Vec<Op>) -> TaskSpec {
    TaskSpec {
        comm,
        nice: 0,
        policy: Policy::Normal,
        slice_ns: None,
        cpus: None,
        start_ns: 0,
        timer_slack_ns: 50_000,
        ops,
        nr_slots: 1,
        nr_timers: 0,
        poll_sets: vec![],
        spawned: false,
        mm: 0,
    }
}

/// Short bursts and sleeps: a wakeup-heavy mix (one task in four is a CPU hog).
fn mix(n: u32) -> Vec<TaskSpec> {
    (0..n)
        .map(|i| {
            if i % 4 == 0 {
                task(
                    format!("hog{i}"),
                    vec![Op::Run { ns: 5_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }],
                )
            } else {
                let run = 20_000 + u64::from(i % 7) * 10_000;
                let sleep = 50_000 + u64::from(i % 5) * 40_000;
                task(
                    format!("s{i}"),
                    vec![
                        Op::Run { ns: run },
                        Op::Sleep { ns: sleep },
                        Op::Loop { target: 0, slot: 0, count: u32::MAX },
                    ],
                )
            }
        })
        .collect()
}

fn cases() -> Vec<Case> {
    vec![
        Case { name: "smp:1 2 tasks", cpus: 1, tasks: mix(2) },
        Case { name: "smp:1 16 tasks", cpus: 1, tasks: mix(16) },
        Case { name: "smp:1 1000 tasks", cpus: 1, tasks: mix(1000) },
        Case { name: "smp:2 16 tasks", cpus: 2, tasks: mix(16) },
    ]
}

pub fn bench(a: &BenchArgs) -> anyhow::Result<()> {
    println!("{:<20} {:>12} {:>12} {:>12} {:>10} {:>12}", "case", "sim_seconds", "events", "stale", "wall_ms", "M_events/s");
    for case in cases() {
        if a.only.as_ref().is_some_and(|o| !case.name.contains(o.as_str())) {
            continue;
        }
        let setup = SimSetup {
            sched: SchedConfig::v7_3(),
            topology: Topology::smp(case.cpus),
            seed: 1,
            limits: Limits { max_events: u64::MAX, max_time_ns: a.seconds * 1_000_000_000 },
            tasks: case.tasks,
            objects: vec![],
            check_invariants: false,
        };
        let sim = Sim::new(setup).map_err(anyhow::Error::msg)?;
        let t0 = Instant::now();
        let report = sim.run()?;
        let wall = t0.elapsed().as_secs_f64();
        println!(
            "{:<20} {:>12} {:>12} {:>12} {:>10.1} {:>12.2}",
            case.name,
            a.seconds,
            report.events,
            report.stale_events,
            wall * 1e3,
            report.events as f64 / wall / 1e6
        );
    }
    Ok(())
}
