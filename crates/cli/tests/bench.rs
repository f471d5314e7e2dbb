//! `schedlab bench --compare-scxsim`: the pairing, the interleaving and the ratio, against a
//! stand-in executable that checks the arguments scxsim would get and logs each call.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn schedlab(args: &[&str]) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root).output().expect("run schedlab")
}

/// A stand-in scxsim: `scxsim FILE --cpus N`; fails unless FILE is an rt-app JSON, logs
/// "cpus N" per call, then exits with `code`.
fn stand_in(dir: &Path, code: i32) -> PathBuf {
    let path = dir.join("scxsim");
    let log = dir.join("calls.log");
    let script = format!(
        "#!/bin/sh\n\
         grep -q '\"global\"' \"$1\" || {{ echo 'not an rt-app file' >&2; exit 9; }}\n\
         [ \"$2\" = --cpus ] || {{ echo 'no --cpus' >&2; exit 9; }}\n\
         echo \"cpus $3\" >> '{}'\n\
         i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done\n\
         [ {code} -eq 0 ] || echo 'scheduler boom' >&2\n\
         exit {code}\n",
        log.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `bench --compare-scxsim` on the 4-CPU input only, against a stand-in exiting with `code`.
fn compare(dir: &Path, code: i32, pairs: &str) -> Output {
    let exe = stand_in(dir, code);
    schedlab(&["bench", "--only", "scxsim rtapp-4cpu", "--compare-scxsim", exe.to_str().unwrap(), "--pairs", pairs])
}

#[test]
fn compare_scxsim_runs_interleaved_pairs_and_prints_the_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let o = compare(dir.path(), 0, "3");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    let row = out.lines().find(|l| l.starts_with("rtapp-4cpu-16t-10s")).unwrap_or_else(|| panic!("{out}"));
    let f: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(f[1], "4", "{row}");
    let (ours, theirs): (f64, f64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
    assert!(ours > 0.0 && theirs > 0.0, "{row}");
    let ratio: f64 = f[6].trim_end_matches('x').parse().unwrap();
    assert!(ratio > 0.0 && ratio.is_finite(), "{row}");
    // The table says what each side simulates (the ratio compares two different models).
    assert!(out.contains("its autogroup") && out.contains("scx_simple, no task groups"), "{out}");
    // The 64-CPU input was filtered out; every pair called the stand-in once with 4 CPUs.
    assert!(!out.contains("rtapp-64cpu"), "{out}");
    let calls = std::fs::read_to_string(dir.path().join("calls.log")).unwrap();
    assert_eq!(calls.lines().collect::<Vec<_>>(), vec!["cpus 4"; 3]);
}

#[test]
fn compare_scxsim_failures_name_the_side() {
    let dir = tempfile::tempdir().unwrap();
    let o = compare(dir.path(), 1, "1");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("scxsim failed: scheduler boom"), "{err}");
    let o = schedlab(&["bench", "--compare-scxsim", "/nonexistent/scxsim"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--compare-scxsim /nonexistent/scxsim"), "{err}");
}

/// `--repeat N` runs each case N times and prints one row: the same (deterministic) events as
/// a single run, and says how the row was chosen.
#[test]
fn repeat_runs_each_case_and_prints_one_row() {
    let row = |args: &[&str]| {
        let o = schedlab(args);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
        let rows: Vec<String> = out.lines().filter(|l| l.starts_with("smp:1 2 tasks")).map(String::from).collect();
        assert_eq!(rows.len(), 1, "{out}");
        (out.clone(), rows[0].split_whitespace().map(String::from).collect::<Vec<_>>())
    };
    let (once_out, once) = row(&["bench", "--seconds", "1", "--only", "smp:1 2 tasks"]);
    let (thrice_out, thrice) = row(&["bench", "--seconds", "1", "--only", "smp:1 2 tasks", "--repeat", "3"]);
    assert!(!once_out.contains("run 3 times"), "{once_out}");
    assert!(thrice_out.contains("each case run 3 times"), "{thrice_out}");
    // Columns: case (3 words), tasks, sim_ms, events, stale, wall_ms, cpu_ms, M_ev/cpu-s, peak.
    assert_eq!(once[3..7], thrice[3..7], "tasks, simulated time, events and stale events:\n{once:?}\n{thrice:?}");
    let rate: f64 = thrice[9].parse().unwrap();
    assert!(rate > 0.0 && rate.is_finite(), "{thrice:?}");
}
