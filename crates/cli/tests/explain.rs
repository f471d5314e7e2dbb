//! `schedlab explain`: the first divergent decision between two variants, and why.
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

/// Every reason `wakeup_preempt_fair` can give (`WakeupReason::name`).
const WAKEUP_REASONS: &[&str] = &[
    "same_entity",
    "need_resched_pending",
    "NO_WAKEUP_PREEMPTION",
    "curr_sched_idle",
    "idle_mismatch",
    "wakee_not_normal",
    "wakee_delayed",
    "fork",
    "force_waker_ineligible",
    "preempt_sync_resched",
    "preempt_sync_none",
    "pick_is_wakee",
    "short_eligible",
    "pick_is_other",
];

/// Every placement rule (`SelectReason`, Debug form without its CPU argument).
const SELECT_REASONS: &[&str] = &[
    "Pinned",
    "CurrentCpu",
    "SlowPath",
    "NoBalanceDomain",
    "SyncReciprocal",
    "SisTarget",
    "SisPrev",
    "SisKthreadStack",
    "SisRecent",
    "SisIdleCapacity",
    "SisCapacityNone",
    "SisNoLlc",
    "SisIdleSmt",
    "SisIdleCore",
    "SisIdleThread",
    "SisIdleCpu",
    "SisPrevAff",
    "SisRecentAff",
    "SisNone",
];

/// The `[reason]` at the end of a decision line, if it has one.
fn reason(line: &str) -> Option<&str> {
    let open = line.rfind('[')?;
    let close = line.rfind(']')?;
    let r = &line[open + 1..close];
    Some(r.split('(').next().unwrap())
}

fn assert_known(line: &str) {
    if let Some(r) = reason(line) {
        assert!(WAKEUP_REASONS.contains(&r) || SELECT_REASONS.contains(&r), "unknown reason `{r}` in: {line}");
    } else {
        assert!(
            line.contains(" switch ") || line.contains(" migrate ") || line.contains("no further decision"),
            "a decision line without a reason: {line}"
        );
    }
}

const NEXT_BUDDY: &[&str] =
    &["explain", "--base", "v7.3", "--variant", "v7.3 NEXT_BUDDY", "hackbench", "-g", "2", "-l", "200"];

#[test]
fn next_buddy_first_divergence() {
    let o = schedlab(NEXT_BUDDY);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("# base:    v7.3\n"), "{out}");
    assert!(out.contains("# variant: v7.3 NEXT_BUDDY\n"), "{out}");
    let first = out.lines().find(|l| l.starts_with("First divergence: decision #")).unwrap_or_else(|| panic!("{out}"));
    assert!(first.contains(" s on CPU "), "{first}");
    let base = out.lines().find(|l| l.starts_with("base ")).expect("base decision line");
    let variant = out.lines().find(|l| l.starts_with("variant ")).expect("variant decision line");
    assert_ne!(base.trim_start_matches("base").trim(), variant.trim_start_matches("variant").trim(), "{out}");
    assert_known(base);
    assert_known(variant);
    // Each decision is explained in words.
    let whys: Vec<&str> = out.lines().filter(|l| l.trim_start().starts_with("why: ")).collect();
    assert_eq!(whys.len(), 2, "{out}");
    assert!(whys.iter().all(|w| w.len() > 20), "{out}");
    // NEXT_BUDDY changes a wakeup-preemption verdict first: EEVDF state of curr and wakee is shown.
    if base.contains("wakeup-preempt") {
        assert!(out.contains("EEVDF state after the check"), "{out}");
        for col in ["vruntime", "deadline", "lag", "eligible", "slice", "vprot", "delayed", "buddy"] {
            assert!(out.contains(col), "missing column {col}: {out}");
        }
        assert_eq!(out.lines().filter(|l| l.trim_start().starts_with("variant  wakee")).count(), 1, "{out}");
    }
    // Context, what followed, and the consequences.
    assert!(out.contains("Context: "), "{out}");
    for l in out.lines().filter(|l| l.trim_start().starts_with('#') && l.contains(" CPU")) {
        assert_known(l);
    }
    assert!(out.contains("Then (the next decisions of each run):"), "{out}");
    assert!(out.contains("Consequences (whole runs; every difference arises after the divergence):"), "{out}");
    assert!(out.contains("seconds (lower is better)"), "{out}");
    assert!(out.contains("nr_switches"), "the switch counts differ: {out}");
    // Deterministic: the same bytes again, whatever the threads did.
    assert_eq!(schedlab(NEXT_BUDDY).stdout, o.stdout);
}

#[test]
fn a_variant_relative_to_the_base_is_the_same_variant() {
    let rel = schedlab(&["explain", "--base", "v7.3", "--variant", "NEXT_BUDDY", "hackbench", "-g", "2", "-l", "200"]);
    assert!(rel.status.success(), "{}", stderr(&rel));
    let full = schedlab(NEXT_BUDDY);
    let body = |o: &Output| stdout(o).lines().filter(|l| !l.starts_with("# reproduce")).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&rel), body(&full));
}

#[test]
fn identical_specs_never_diverge() {
    let o = schedlab(&["explain", "--base", "v7.3", "--variant", "v7.3", "--cpus", "0", "pipe", "-l", "2000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("No divergence: both runs made the same "), "{out}");
    assert!(!out.contains("First divergence"), "{out}");
    assert!(out.contains("equal in both: nr_switches"), "{out}");
}

#[test]
fn bad_input_is_exit_code_2() {
    let o = schedlab(&["explain", "--base", "v7.3", "--variant", "v7.3 NO_SUCH_FEATURE", "pipe"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("NO_SUCH_FEATURE"), "{}", stderr(&o));
    let o = schedlab(&["explain", "--base", "v7.3", "--variant", "NEXT_BUDDY", "no-such-benchmark"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = schedlab(&["explain", "--base", "v7.3", "--variant", "NEXT_BUDDY", "--cpus", "7", "pipe"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `--background` puts its benchmark into both runs: its tasks take part in the decisions and
/// the reproduce line carries it.
#[test]
fn background_workloads_run_in_both_runs() {
    let o = schedlab(&[
        "explain",
        "--base",
        "v7.3",
        "--variant",
        "NO_DELAY_DEQUEUE",
        "--background",
        "stress-ng --cpu 1 --timeout 1",
        "schbench",
        "-m",
        "1",
        "-t",
        "2",
        "-r",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("--background 'stress-ng --cpu 1 --timeout 1' --base v7.3"), "{out}");
    assert!(out.contains("stress-ng-cpu:"), "the hog's tasks appear in the decisions: {out}");
}

/// `explain --autogroup/--cgroup/--cgroup-weight` (#14) put the task groups into both runs:
/// one hog beside four on one CPU of v6.12 does 4x the work in a cgroup of cpu.weight 400 as
/// with autogroup off, and the reproduce line carries the options.
#[test]
fn group_options_reach_both_runs() {
    let metric = |groups: &[&str]| -> (f64, String) {
        let mut args = vec!["explain", "--cpus", "0", "--background", "stress-ng --cpu 4"];
        args.extend(groups);
        args.extend(["--base", "v6.12", "--variant", "NO_PLACE_LAG", "stress-ng", "--cpu", "1", "--timeout", "1"]);
        let o = schedlab(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let line = out.lines().find(|l| l.trim_start().starts_with("bogo_ops_per_sec")).unwrap();
        let base: f64 = line.split_whitespace().nth(4).unwrap().parse().unwrap();
        (base, out)
    };
    let (off, out) = metric(&["--autogroup", "off"]);
    assert!(out.contains("--background 'stress-ng --cpu 4' --autogroup off --base v6.12"), "{out}");
    let (weighted, out) = metric(&["--cgroup", "/fg", "--cgroup-weight", "/fg=400"]);
    assert!(out.contains("--cgroup /fg --cgroup-weight /fg=400 --base"), "{out}");
    let ratio = weighted / off;
    assert!((ratio - 4.0).abs() < 0.2, "{weighted} / {off} = {ratio}");
}
