//! Numbers from the user are range-checked where they enter: one line naming the input, exit 2,
//! never a panic and never a run on wrapped arithmetic.

use std::path::PathBuf;
use std::process::{Command, Output};

fn schedlab(args: &[&str]) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root).output().expect("run schedlab")
}

/// Runs `args` and checks: exit 2, one line on stderr that contains every needle, no panic.
fn refused(args: &[&str], needles: &[&str]) {
    let o = schedlab(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: not one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` missing from: {err}");
    }
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-ranges-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn sysctls_outside_the_kernels_u32_are_refused() {
    for value in ["9223372036854775807", "18446744073709551615", "4294967296", "0"] {
        let kv = format!("base_slice_ns={value}");
        refused(&["run", "--sysctl", &kv, "pipe", "-l", "10"], &["--sysctl", "base_slice_ns", value]);
    }
    refused(&["run", "--sysctl", "nr_migrate=99999999999", "pipe", "-l", "10"], &["nr_migrate"]);
    refused(&["run", "--sysctl", "migration_cost_ns=4294967296", "pipe", "-l", "10"], &["migration_cost_ns"]);
    refused(&["run", "--sysctl", "tunable_scaling=3", "pipe", "-l", "10"], &["tunable_scaling"]);
    // The same through a SPEC.
    refused(
        &["compare", "--base", "v7.3", "--variant", "v7.3 base_slice_ns=18446744073709551615", "pipe", "-l", "10"],
        &["base_slice_ns"],
    );
    // The largest u32 is the kernel's own limit and runs.
    let o = schedlab(&["run", "--sysctl", "base_slice_ns=4294967295", "--duration", "0.1", "pipe", "-l", "100"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn costs_outside_one_second_are_refused() {
    refused(&["run", "--cost", "context_switch_ns=18446744073709551615", "pipe", "-l", "10"], &["--cost"]);
    refused(&["run", "--cost", "context_switch_ns=1000000001", "pipe", "-l", "10"], &["context_switch_ns"]);
    let file = temp_file("costs.toml", "[costs]\nsyscall_ns = 100\nipi_receive_ns = 5000000000\n");
    let path = file.to_str().unwrap();
    refused(&["run", "--cost-file", path, "pipe", "-l", "10"], &[path, ":3", "costs.ipi_receive_ns"]);
    let topo = temp_file(
        "topo.toml",
        "[machine]\nname = \"t\"\npackages = 1\ncores_per_llc = 2\n\n[costs]\nwait_ns = 2000000000\n",
    );
    let topo_path = topo.to_str().unwrap();
    refused(&["run", "--topology", topo_path, "pipe", "-l", "10"], &[topo_path, "costs.wait_ns"]);
}

#[test]
fn run_limits_are_checked() {
    refused(&["run", "--max-events", "0", "pipe", "-l", "10"], &["--max-events"]);
    refused(&["run", "--duration", "0", "pipe", "-l", "10"], &["--duration"]);
    refused(&["run", "--topology", "smp:4097", "pipe", "-l", "10"], &["smp:4097"]);
}
