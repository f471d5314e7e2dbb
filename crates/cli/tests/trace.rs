//! `schedlab run --trace` and `schedlab analyze`: a simulated run's trace gives back the run's
//! counters, traces are byte-identical for a seed, the Perfetto trace decodes to the same
//! events as the text one, and bad input exits with 2.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use prost::Message;
use schedtrace::proto::{self, Trace, ftrace_event::Event as PE};
use serde_json::Value;

fn schedlab(args: &[&str]) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root).output().expect("run schedlab")
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "exit {:?}: {}", o.status.code(), String::from_utf8_lossy(&o.stderr));
    o
}

fn json(o: Output) -> Value {
    serde_json::from_slice(&ok(o).stdout).expect("JSON on stdout")
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

const PIPE: [&str; 3] = ["pipe", "-l", "2000"];

/// The "done means" of traces: analysing a simulated run's text trace gives exactly the run's
/// own counters, and each task's runtime within the trace's microsecond rounding.
#[test]
fn analyze_gives_back_the_run_counters() {
    check_counters(&["--topology", "smp:2"], &PIPE);
}

/// The same on a workload with preemptions and migrations.
#[test]
fn analyze_gives_back_hackbench_counters() {
    let (run, _) = check_counters(&["--topology", "smp:4"], &["hackbench", "-g", "2", "-l", "100"]);
    let c = &run["counters"];
    assert!(c["nr_involuntary_switches"].as_u64().unwrap() > 0 && c["nr_migrations"].as_u64().unwrap() > 0);
}

/// Runs with `--trace`, analyses the trace, checks the counters agree; returns both JSONs.
fn check_counters(opts: &[&str], workload: &[&str]) -> (Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    let txt = path(dir.path(), "run.txt");
    let run = json(schedlab(&[&["run", "--json", "--trace", &txt][..], opts, workload].concat()));
    let an = json(schedlab(&["analyze", "--json", &txt]));
    let (rc, ac) = (&run["counters"], &an["counters"]);
    assert!(rc["nr_switches"].as_u64().unwrap() > 0);
    for key in [
        "nr_switches",
        "nr_voluntary_switches",
        "nr_involuntary_switches",
        "nr_migrations",
        "nr_wakeups",
        "nr_wakeups_local",
        "nr_wakeups_remote",
        "nr_wakeups_migrate",
    ] {
        assert_eq!(ac[key], rc[key], "{key}");
    }
    // Every migration the model makes at a wakeup falls between sched_waking and sched_wakeup;
    // the rest (balancing) are the others.
    let m = &an["migrations"];
    assert_eq!(m["at_wakeup"], rc["nr_wakeups_migrate"]);
    assert_eq!(m["at_wakeup"].as_u64().unwrap() + m["other"].as_u64().unwrap(), rc["nr_migrations"].as_u64().unwrap());
    let (rt, at) = (run["tasks"].as_array().unwrap(), an["tasks"].as_array().unwrap());
    assert_eq!(rt.len(), at.len());
    for (r, a) in rt.iter().zip(at) {
        assert_eq!((&a["pid"], &a["comm"]), (&r["pid"], &r["comm"]));
        for key in ["nr_switches", "nr_voluntary_switches", "nr_involuntary_switches", "nr_migrations", "nr_wakeups"] {
            assert_eq!(a[key], r[key], "{key} of {}", r["pid"]);
        }
        // Both ends of each run interval are rounded to the microsecond.
        let (sim, trace) = (r["sum_exec_runtime_ns"].as_u64().unwrap(), a["sum_exec_runtime_ns"].as_u64().unwrap());
        let intervals = r["nr_switches"].as_u64().unwrap();
        assert!(sim.abs_diff(trace) <= intervals * 1000, "runtime of {}: {sim} vs {trace}", r["pid"]);
    }
    let idle = |v: &Value| -> Vec<u64> {
        v["counters"]["idle_ns_per_cpu"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect()
    };
    let switches = rc["nr_switches"].as_u64().unwrap();
    for (s, t) in idle(&run).iter().zip(idle(&an)) {
        assert!(s.abs_diff(t) <= (switches + 1) * 1000, "idle {s} vs {t}");
    }
    // The text report carries the table.
    let text = String::from_utf8(ok(schedlab(&["analyze", &txt])).stdout).unwrap();
    assert!(text.contains(&format!("switches {switches} (voluntary")), "{text}");
    assert!(text.contains("| Switches | Avg delay ms"), "{text}");
    (run, an)
}

/// Same seed, same trace bytes; a Perfetto trace decodes to the text trace's events.
#[test]
fn traces_are_deterministic_and_formats_agree() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let p = path(dir.path(), name);
        ok(schedlab(&[&["run", "--seed", "3", "--trace", &p][..], &PIPE].concat()));
        std::fs::read(&p).unwrap()
    };
    let (t1, t2) = (run("a.txt"), run("b.txt"));
    assert_eq!(t1, t2);
    let (p1, p2) = (run("a.pftrace"), run("b.pftrace"));
    assert_eq!(p1, p2);

    let text = String::from_utf8(t1).unwrap();
    let lines = |event: &str| text.lines().filter(|l| l.contains(&format!(" {event}: "))).count();
    let trace = Trace::decode(p1.as_slice()).expect("the .pftrace decodes");
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    let mut instants = 0;
    for p in &trace.packet {
        for e in p.ftrace_events.iter().flat_map(|b| &b.event) {
            let name = match e.event.as_ref().expect("an event") {
                PE::SchedSwitch(_) => "sched_switch",
                PE::SchedWakeup(_) => "sched_wakeup",
                PE::SchedWaking(_) => "sched_waking",
                PE::SchedWakeupNew(_) => "sched_wakeup_new",
                PE::SchedProcessExit(_) => "sched_process_exit",
                PE::SchedProcessFork(_) => "sched_process_fork",
                PE::SchedMigrateTask(_) => "sched_migrate_task",
            };
            *counts.entry(name).or_default() += 1;
        }
        if p.track_event.as_ref().is_some_and(|t| t.r#type == Some(proto::track_event_type::INSTANT)) {
            instants += 1;
        }
    }
    assert!(counts["sched_switch"] > 0);
    for (name, n) in &counts {
        assert_eq!(*n, lines(name), "{name}");
    }
    assert_eq!(instants, lines("schedlab_wakeup_preempt") + lines("schedlab_placement"));
    let kernel_lines = text.lines().filter(|l| !l.starts_with('#') && !l.contains(" schedlab_")).count();
    assert_eq!(counts.values().sum::<usize>(), kernel_lines);
}

#[test]
fn bad_trace_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = schedlab(&[&["run", "--trace", &path(dir.path(), "t.json")][..], &PIPE].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("use a .txt (ftrace text) or .pftrace (Perfetto)"));

    let bad = path(dir.path(), "bad.txt");
    std::fs::write(
        &bad,
        "# tracer: nop\n  a-1 [000] ..... 1.000000: sched_waking: comm=a pid=x prio=120 target_cpu=000\n",
    )
    .unwrap();
    let o = schedlab(&["analyze", &bad]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("{bad}:2: sched_waking: field `pid`: `x` is not a number")), "{err}");

    let o = schedlab(&["analyze", &path(dir.path(), "missing.txt")]);
    assert_eq!(o.status.code(), Some(2));
}
