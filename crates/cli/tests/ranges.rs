//! Numbers from the user are range-checked where they enter: one line naming the input, exit 2,
//! never a panic and never a run on wrapped arithmetic.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

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

/// `analyze` refuses what it cannot analyse, naming the line, instead of reporting zeros.
#[test]
fn analyze_refuses_damaged_traces() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../trace/tests/fixtures/real-6.18.txt");
    let real = std::fs::read_to_string(&fixture).unwrap();
    let (header, events): (Vec<&str>, Vec<&str>) = real.lines().partition(|l| l.starts_with('#'));
    let reversed: Vec<&str> = header.iter().chain(events.iter().rev()).copied().collect();
    let huge_cpu = "  a-1 [2147483648] ..... 1.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 \
                    prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n";
    let cases = [
        ("empty.txt", String::new(), vec!["no scheduler events in 0 lines"]),
        ("comments.txt", "# tracer: nop\n#\n".to_string(), vec!["no scheduler events in 2 lines"]),
        ("huge-cpu.txt", huge_cpu.to_string(), vec![":1:", "CPU [2147483648] does not exist"]),
        (
            "beyond-header.txt",
            real.replacen("[001]", "[005]", 1),
            vec!["CPU [5] does not exist (the header says #P:2)"],
        ),
        ("reversed.txt", reversed.join("\n"), vec!["goes back before"]),
        ("bad-state.txt", real.replacen("prev_state=D", "prev_state=Q", 1), vec!["unknown prev_state `Q`"]),
    ];
    for (name, text, needles) in cases {
        let path = temp_file(name, &text);
        let p = path.to_str().unwrap();
        let mut needles = needles;
        needles.push(p);
        refused(&["analyze", p], &needles);
    }
    // The untouched trace still analyses.
    let o = schedlab(&["analyze", fixture.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
