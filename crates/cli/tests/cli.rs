//! The `schedlab` binary as a user runs it: output, determinism, and bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::PathBuf;
use std::process::{Command, Output};

fn schedlab(args: &[&str]) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root).output().expect("run schedlab")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Two runs with the same seed print identical bytes (text), and identical JSON but for the
/// wall-clock field.
#[test]
fn same_seed_same_bytes() {
    let args = ["run", "--topology", "smp:2", "--duration", "2", "rtapp", "examples/rtapp/mixed.json"];
    let (a, b) = (schedlab(&args), schedlab(&args));
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
    assert!(stdout(&a).contains("# reproduce: schedlab run --seed 1 --topology smp:2"));
    let json = |o: Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["sim"].as_object_mut().unwrap().remove("wall_ms").expect("wall_ms present");
        serde_json::to_string(&v).unwrap()
    };
    let jargs = ["run", "--json", "--topology", "smp:2", "--duration", "2", "rtapp", "examples/rtapp/periodic.json"];
    assert_eq!(json(schedlab(&jargs)), json(schedlab(&jargs)));
}

/// The JSON object carries the brief's fields, and per-task figures that add up.
#[test]
fn json_result_schema() {
    let o = schedlab(&[
        "run",
        "--json",
        "--topology",
        "smp:1",
        "--duration",
        "1",
        "rtapp",
        "examples/rtapp/nice-hogs.json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in [
        "schedlab_version",
        "seed",
        "topology",
        "kernel",
        "features",
        "patches",
        "sysctl",
        "workload",
        "metric",
        "sim",
        "counters",
        "wakeup_latency_ns",
        "tasks",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["topology"], "smp:1");
    assert_eq!(v["sysctl"]["base_slice_ns"], 700_000);
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 3);
    let total: u64 = tasks.iter().map(|t| t["sum_exec_runtime_ns"].as_u64().unwrap()).sum();
    let idle = v["counters"]["idle_ns_per_cpu"][0].as_u64().unwrap();
    assert_eq!(total + idle, v["sim"]["simulated_ns"].as_u64().unwrap(), "every ns is either a task's or idle");
    let switches: u64 = tasks.iter().map(|t| t["nr_switches"].as_u64().unwrap()).sum();
    assert_eq!(switches, v["counters"]["nr_switches"].as_u64().unwrap());
}

/// Bad input: one line naming the place, exit code 2, never a panic.
#[test]
fn bad_input_exits_2_with_the_place() {
    let dir = std::env::temp_dir().join(format!("schedlab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\n  \"tasks\": {\n    \"a\": { \"run\": 10, \"bogus\": 1 }\n  }\n}\n").unwrap();
    let syntax = dir.join("syntax.json");
    std::fs::write(&syntax, "{\n  \"tasks\": { \"a\": { \"run\": } }\n}\n").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["run".into(), "rtapp".into(), bad.display().to_string()], "bad.json:3:"),
        (vec!["run".into(), "rtapp".into(), syntax.display().to_string()], "syntax.json:2:"),
        (
            vec![
                "run".into(),
                "--features".into(),
                "NO_SUCH_FEATURE".into(),
                "rtapp".into(),
                "examples/rtapp/mixed.json".into(),
            ],
            "NO_SUCH_FEATURE",
        ),
        (
            vec![
                "run".into(),
                "--sysctl".into(),
                "sched_latency_ns=1".into(),
                "rtapp".into(),
                "examples/rtapp/mixed.json".into(),
            ],
            "sched_latency_ns",
        ),
        (
            vec!["run".into(), "--topology".into(), "smp:0".into(), "rtapp".into(), "examples/rtapp/mixed.json".into()],
            "smp:0",
        ),
        (
            vec!["run".into(), "--preempt".into(), "rt".into(), "rtapp".into(), "examples/rtapp/mixed.json".into()],
            "--preempt",
        ),
        (vec!["run".into(), "rtapp".into(), "does-not-exist.json".into()], "does-not-exist.json"),
        (vec!["features".into(), "--features".into(), "next_buddy".into()], "next_buddy"),
    ];
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = schedlab(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `schedlab features` prints the debugfs format, with changes applied.
#[test]
fn features_like_debugfs() {
    let o = schedlab(&["features", "--features", "NEXT_BUDDY,NO_DELAY_DEQUEUE"]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(
        s.starts_with("PLACE_LAG PLACE_DEADLINE_INITIAL PLACE_REL_DEADLINE RUN_TO_PARITY PREEMPT_SHORT NEXT_BUDDY "),
        "{s}"
    );
    assert!(s.contains(" NO_DELAY_DEQUEUE DELAY_ZERO "));
    assert!(s.trim_end().ends_with("NI_RANDOM NI_RATE"));
    // 6.18's features.h has neither NI_RATE nor PARANOID_AVG: not listed, and a write refused.
    let o = schedlab(&["features", "--kernel", "v6.18"]);
    let s = stdout(&o);
    assert!(s.trim_end().ends_with("LATENCY_WARN NI_RANDOM") && !s.contains("PARANOID_AVG"), "{s}");
    let o = schedlab(&["run", "--kernel", "v6.18", "--features", "NO_NI_RATE", "pipe", "-l", "10"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--features: v6.18 has no scheduler feature NI_RATE"), "{err}");
}

/// Every shipped rt-app example runs, with invariants checked after every event.
#[test]
fn examples_run_with_invariant_checks() {
    for entry in std::fs::read_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rtapp")).unwrap() {
        let path = entry.unwrap().path();
        let o =
            schedlab(&["run", "--check", "--duration", "0.5", "--topology", "smp:2", "rtapp", path.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", path.display(), stderr(&o));
        assert!(stdout(&o).contains("simulated "));
    }
}

/// Issue 14's `run` forms: a patched kernel SPEC, a slice of a preset, options after the
/// workload, an unknown option before it, the workloads in --help, and a background workload's
/// metric in the JSON.
#[test]
fn run_takes_specs_slices_and_late_options() {
    let ok = |args: &[&str]| {
        let o = schedlab(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "run",
        "--json",
        "--kernel",
        "v7.3 +preempt-sync-runtime-fix",
        "pipe",
        "-l",
        "2000",
    ]))
    .unwrap();
    assert_eq!(v["patches"], serde_json::json!(["+preempt-sync-runtime-fix"]));
    assert!(v["command"].as_str().unwrap().contains("--kernel 'v7.3 +preempt-sync-runtime-fix'"), "{v}");
    let plain: serde_json::Value =
        serde_json::from_str(&ok(&["run", "--json", "--kernel", "v7.3", "pipe", "-l", "2000"])).unwrap();
    assert_eq!(plain["patches"], serde_json::json!([]));
    // The /proc/schedstat counters: every wakeup is counted on a runqueue, as in the text line.
    let ss = &plain["schedstat"]["totals"];
    assert_eq!(ss["ttwu_count"], plain["counters"]["nr_wakeups"], "{ss}");
    assert_eq!(ss["ttwu_local"], plain["counters"]["nr_wakeups_local"], "{ss}");
    assert_eq!(plain["schedstat"]["cpus"].as_array().map(Vec::len), Some(2), "{ss}");
    let stext = ok(&["run", "--kernel", "v7.3", "pipe", "-l", "2000"]);
    let line = format!(
        "/proc/schedstat: goidle {}, ttwu {} (local {}",
        ss["sched_goidle"], ss["ttwu_count"], ss["ttwu_local"]
    );
    assert!(stext.contains(&line), "{line} not in {stext}");

    let text = ok(&["run", "--topology", "xeon-8369hb-4s:cpus=0-15", "pipe", "-l", "1000", "--seed", "3"]);
    assert!(text.contains("topology=xeon-8369hb-4s:cpus=0-15") && text.contains("--seed 3 "), "{text}");
    let show = ok(&["topology", "show", "spr-2s-192:nodes=1"]);
    assert!(show.starts_with("spr-2s-192:nodes=1: 96 CPUs, 1 package(s), 1 node(s)"), "{show}");

    let o = schedlab(&["run", "--foo", "pipe"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("`--foo`") && stderr(&o).contains("before the workload"), "{}", stderr(&o));
    let o = schedlab(&["run", "--kernel", "v9.9", "pipe"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown kernel preset `v9.9`"), "{}", stderr(&o));

    let help = ok(&["run", "--help"]);
    for w in ["hackbench", "messaging", "pipe", "schbench", "lat_ctx", "netperf", "stress-ng", "pgbench", "rtapp"] {
        assert!(help.lines().any(|l| l.trim_start().starts_with(w)), "{w} missing from run --help: {help}");
    }

    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "run",
        "--json",
        "--background",
        "stress-ng --cpu 1 --timeout 1",
        "schbench",
        "-m",
        "1",
        "-t",
        "1",
        "-r",
        "1",
    ]))
    .unwrap();
    assert_eq!(v["background"][0]["workload"], "stress-ng --cpu 1 --timeout 1");
    assert_eq!(v["background"][0]["metric"]["name"], "bogo_ops_per_sec");
    assert!(v["background"][0]["metric"]["value"].as_f64().unwrap() > 0.0, "{v}");

    let np = ok(&["run", "--topology", "smp:4", "netperf", "--clients", "2", "-t", "TCP_RR", "-l", "1", "-P", "0"]);
    assert_eq!(np.lines().filter(|l| l.starts_with("16384  131072 1")).count(), 2, "{np}");
}

/// The task-group options: a bad value is one line naming the flag, exit 2; good ones run and
/// name the groups (`# task groups:`) and go into the reproduce line.
#[test]
fn group_flags_exit_2_on_bad_values() {
    for (args, needle) in [
        (vec!["run", "--autogroup", "sometimes", "pipe", "-l", "10"], "--autogroup"),
        (vec!["run", "--cgroup", "/", "pipe", "-l", "10"], "--cgroup"),
        (vec!["run", "--cgroup-weight", "/a=0", "pipe", "-l", "10"], "--cgroup-weight"),
        (vec!["run", "--cgroup-weight", "nope", "pipe", "-l", "10"], "--cgroup-weight"),
        (vec!["run", "--sysctl", "sched_autogroup_enabled=2", "pipe", "-l", "10"], "sched_autogroup_enabled"),
        (vec!["run", "pipe", "-l", "10", "-G", ","], "-G"),
    ] {
        let o = schedlab(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
    let o = schedlab(&[
        "run",
        "--cgroup",
        "/bench",
        "--cgroup-weight",
        "/bench=200",
        "pipe",
        "-l",
        "100",
        "-T",
        "-G",
        "A,B",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("# task groups: / (0 tasks), /A (1 tasks, shares 1024), /B (1 tasks, shares 1024), /bench (1 tasks, shares 2048)"), "{out}");
    assert!(out.contains("--cgroup /bench --cgroup-weight /bench=200 pipe -l 100 -T -G A,B"), "{out}");
}
