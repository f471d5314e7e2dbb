//! Inputs that once broke the engine, run end to end with every invariant checked.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::Path;

use sim::config::{Limits, SchedConfig};
use sim::engine::{Sim, SimSetup, StopReason};
use sim::topology::Topology;
use workload::rtapp::load_rtapp;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// 12 workers (run 200 µs, sleep 300 µs) beside 4 hogs on smp:4, seed 1, panicked with
/// "time went backwards" at 7.85 s: a worker preempted inside its `nanosleep()` syscall entry
/// armed its timer from the expiry computed when the syscall began, so the hard expiry was
/// already in the past. The relative timer now starts when it is armed (as `hrtimer_start()`
/// with `HRTIMER_MODE_REL` does), and the run reaches its 10 s limit.
#[test]
fn sleep_preempted_in_its_syscall_arms_its_timer_from_then() {
    let app = load_rtapp(&fixture("time-backwards-4cpu-16t.json")).unwrap_or_else(|e| panic!("{e}"));
    let duration = app.duration_ns.expect("the file sets a duration");
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology: Topology::smp(4),
        seed: 1,
        limits: Limits { max_events: 100_000_000, max_time_ns: duration },
        tasks: app.tasks,
        objects: vec![],
        check_invariants: true,
    };
    let report = Sim::new(setup).expect("valid setup").run().unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(report.stop, StopReason::TimeLimit);
    assert_eq!(report.simulated_ns, 10_000_000_000);
    // Every worker kept cycling to the end: about 10 s / 500 µs wakeups each, less what the hogs take.
    for t in report.tasks.iter().filter(|t| t.comm.starts_with("worker")) {
        assert!(t.stats.nr_wakeups > 5_000, "{}: {} wakeups", t.comm, t.stats.nr_wakeups);
    }
}
