//! `schedlab fidelity` as a user runs it: the shipped ground truth, a subset, JSON, bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::PathBuf;
use std::process::{Command, Output};

fn schedlab(args: &[&str]) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root).output().expect("run schedlab")
}

/// The JSON counts are the schema, they add up, and a second run prints the same bytes.
#[test]
fn subset_json_counts_and_determinism() {
    let args = ["fidelity", "--json", "--runs", "1", "--workloads", "latctx2,pp,hb_pipe", "--kernels", "6.12.117"];
    let a = schedlab(&args);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let n = |p: &str| v.pointer(p).and_then(|x| x.as_u64()).unwrap_or_else(|| panic!("{p} missing"));
    assert!(n("/effects/scored") > 0);
    assert!(n("/effects/direction") <= n("/effects/scored"));
    assert!(n("/effects/magnitude") <= n("/effects/direction"));
    assert!(n("/defaults/in_range") <= n("/defaults/cells"));
    assert!(n("/defaults/within_1_5x") <= n("/defaults/cells"));
    assert_eq!(n("/effects/scored") as usize, v["effects"]["list"].as_array().unwrap().len());
    // The cells split by source add up; the system-wide schedstat rows are scored from the
    // model's own counters (5 rows per case: 3 workloads x 2 modes here).
    let by = &v["defaults"]["by_source"];
    let cells = |s: &str| by[s]["cells"].as_u64().unwrap_or_else(|| panic!("{s} missing: {by}"));
    assert_eq!(cells("tasks' counters") + cells("system-wide schedstat"), n("/defaults/cells"));
    assert_eq!(cells("system-wide schedstat"), 5 * 3 * 2, "{by}");
    // The cells by metric add up too, each metric once, the worst (most cells outside 1.5x)
    // first.
    let rows = v["defaults"]["by_metric"].as_array().unwrap();
    let field = |r: &serde_json::Value, f: &str| r[f].as_u64().unwrap_or_else(|| panic!("{f} missing: {r}"));
    assert_eq!(rows.iter().map(|r| field(r, "cells")).sum::<u64>(), n("/defaults/cells"));
    assert_eq!(rows.iter().map(|r| field(r, "within_1_5x")).sum::<u64>(), n("/defaults/within_1_5x"));
    let outside: Vec<u64> = rows.iter().map(|r| field(r, "cells") - field(r, "within_1_5x")).collect();
    assert!(outside.windows(2).all(|w| w[0] >= w[1]), "{outside:?}");
    // The ratio is the median of model / real over the metric's cells with a real median.
    let list = v["defaults"]["list"].as_array().unwrap();
    for r in rows {
        let mut ratios: Vec<f64> = list
            .iter()
            .filter(|c| c["metric"] == r["metric"] && c["real"]["median"].as_f64().unwrap() > 0.0)
            .map(|c| c["model"].as_f64().unwrap() / c["real"]["median"].as_f64().unwrap())
            .collect();
        ratios.sort_by(f64::total_cmp);
        let want = match ratios.len() {
            0 => None,
            k if k % 2 == 1 => Some(ratios[k / 2]),
            k => Some((ratios[k / 2 - 1] + ratios[k / 2]) / 2.0),
        };
        let got = r["model_over_real"].as_f64();
        assert_eq!(got.is_some(), want.is_some(), "{r}");
        if let (Some(g), Some(w)) = (got, want) {
            assert!((g - w).abs() <= 1e-12 * w.abs(), "{r}: {w}");
        }
    }
    let mut names: Vec<&str> = rows.iter().map(|r| r["metric"].as_str().unwrap()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), rows.len());
    let pp_passes = v["defaults"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"]["workload"] == "pp" && c["case"]["mode"] == "n" && c["metric"] == "ss_lb_count");
    assert!(pp_passes.unwrap()["model"].as_f64().unwrap() > 0.0, "the idle ticks balance: {pp_passes:?}");
    // Only the selected kernel and workloads were run.
    for e in v["defaults"]["list"].as_array().unwrap() {
        assert_eq!(e["case"]["kernel"], "6.12.117");
        assert!(["latctx2", "pp", "hb_pipe"].contains(&e["case"]["workload"].as_str().unwrap()));
    }
    assert_eq!(a.stdout, schedlab(&args).stdout);
}

#[test]
fn missing_directory_is_bad_input() {
    let o = schedlab(&["fidelity", "/nonexistent-ground-truth"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/nonexistent-ground-truth/summary.csv"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
