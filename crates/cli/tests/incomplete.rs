//! A run that does not finish its benchmark fails loudly: exit 3, a line saying what cut it and
//! how far it got, `metric.value: null` in JSON, and no statistics in `compare` or `sweep`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root()).output().expect("run schedlab")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-incomplete-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_run_cut_by_duration_exits_3_and_says_how_far_it_got() {
    let o = schedlab(&["run", "--duration", "0.01", "pipe", "-l", "1000000"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    let line = err.lines().find(|l| l.starts_with("schedlab: ")).expect("a schedlab: line");
    assert!(line.contains("pipe did not finish: cut by the time limit at 0.010000 simulated s"), "{line}");
    assert!(
        line.contains("reproduce: schedlab run --seed 1 --topology smp:2 --kernel v7.3 --duration 0.01 pipe"),
        "{line}"
    );
    // The tool's banner, but no result line.
    let out = text(&o.stdout);
    assert!(out.contains("# Executed 1000000 pipe operations") && !out.contains("Total time"), "{out}");
}

#[test]
fn a_run_cut_by_the_event_limit_has_a_null_metric_and_the_reproduce_line_keeps_the_limit() {
    let o = schedlab(&["run", "--json", "--max-events", "1000", "pipe", "-l", "100000"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["metric"]["value"].is_null(), "{}", v["metric"]);
    let why = v["metric"]["incomplete"].as_str().expect("a reason");
    assert!(why.contains("cut by the event limit") && why.contains("after 1000 events"), "{why}");
    assert!(v["command"].as_str().unwrap().contains("--max-events 1000 pipe -l 100000"), "{}", v["command"]);
    // A finished run has a number and no reason.
    let o = schedlab(&["run", "--json", "pipe", "-l", "1000"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["metric"]["value"].as_f64().is_some_and(|x| x > 0.0) && v["metric"]["incomplete"].is_null());
}

/// A loop-count workload longer than the old default of 10 s runs to its end (and says that
/// only the event bound limits it); one that loops forever still stops at 10 s, normally.
#[test]
fn loop_counts_have_no_default_time_limit() {
    let dir = temp_dir("loops");
    let finite = dir.join("finite.json");
    std::fs::write(&finite, r#"{"tasks": {"t": {"loop": 3, "run": 100, "sleep": 5000000}}}"#).unwrap();
    let o = schedlab(&["run", "rtapp", finite.to_str().unwrap()]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(out.contains("# limits: none on simulated time; safety bound 2000000000 events (--max-events)"), "{out}");
    assert!(out.contains("simulated 15.001") && out.contains("stopped: AllExited"), "{out}");
    let forever = dir.join("forever.json");
    std::fs::write(&forever, r#"{"tasks": {"t": {"loop": -1, "run": 100, "sleep": 5000000}}}"#).unwrap();
    let o = schedlab(&["run", "rtapp", forever.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("simulated 10.000000 s"), "{}", text(&o.stdout));
}

#[test]
fn compare_and_sweep_refuse_statistics_on_incomplete_runs() {
    let o = schedlab(&[
        "compare",
        "--base",
        "v7.3",
        "--variant",
        "NEXT_BUDDY",
        "--runs",
        "3",
        "--duration",
        "0.001",
        "pipe",
        "-l",
        "100000",
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert_eq!(err.matches("incomplete run: pipe did not finish").count(), 6, "{err}");
    assert!(err.contains("6 of 6 runs did not finish their benchmark: no statistics"), "{err}");
    assert!(!text(&o.stdout).contains("NaN"), "{}", text(&o.stdout));

    let dir = temp_dir("sweep");
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "seeds = 2\nduration = 0.001\nworkloads = [\"pipe -l 100000\"]\n[[variant]]\nspec = \"v7.3\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = schedlab(&["sweep", plan.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("2 runs did not finish their benchmark (not stored)"), "{err}");
    assert!(text(&o.stdout).contains("0 stored now"), "{}", text(&o.stdout));
}

/// SIGTERM ends a sweep as Ctrl-C does: runs in progress finish and are stored, no new one
/// starts, exit 130, and the store holds exactly the runs reported stored.
#[test]
fn sigterm_ends_a_sweep_keeping_its_stored_runs() {
    let dir = temp_dir("sigterm");
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "seeds = 5000\nduration = 0.5\nworkloads = [\"stress-ng --cpu 2 --timeout 1\"]\n[[variant]]\nspec = \"v7.3\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let args = ["sweep", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", "1"];
    let child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first stored run.
    let count = |db: &std::path::Path| -> Option<i64> {
        let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
        conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0)).ok()
    };
    let started = Instant::now();
    while count(&out.join("results.db")).unwrap_or(0) < 1 {
        assert!(started.elapsed() < Duration::from_secs(120), "no run stored");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted:") && err.contains("rerun the same command to finish"), "{err}");
    let first = text(&o.stdout);
    let stored: usize = first
        .split(" stored now")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {first}"));
    assert!((1..5000).contains(&stored), "{first}");
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let rows: i64 = db.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0)).unwrap();
    assert_eq!(rows as usize, stored);
}
