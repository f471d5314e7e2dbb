//! Cost files for `--cost-file`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use machine::{MachineError, load_cost_file, parse_cost_toml};

#[test]
fn overrides_come_back_in_file_order() {
    let text = "# measured on the lab box\n[costs]\nsyscall_ns = 90\nctx = 1\n";
    let error = parse_cost_toml(text, "lab.toml").unwrap_err();
    assert!(matches!(&error, MachineError::Invalid { line: Some(4), field, .. } if field == "costs.ctx"), "{error}");

    let text = "[costs]\nwakeup_local_ns = 350\nsyscall_ns = 90\n";
    let overrides = parse_cost_toml(text, "lab.toml").unwrap();
    assert_eq!(overrides, [("wakeup_local_ns".to_string(), 350), ("syscall_ns".to_string(), 90)]);
}

#[test]
fn other_tables_and_negative_values_are_rejected() {
    let message = parse_cost_toml("[cost]\nsyscall_ns = 90\n", "x.toml").unwrap_err().to_string();
    assert!(message.starts_with("x.toml:1:") && message.contains("`cost`"), "{message}");
    let message = parse_cost_toml("[costs]\nsyscall_ns = -5\n", "x.toml").unwrap_err().to_string();
    assert!(message.starts_with("x.toml:2:") && message.contains("syscall_ns"), "{message}");
}

#[test]
fn cost_file_is_read_from_disk() {
    let path = std::env::temp_dir().join(format!("machine-test-costs-{}.toml", std::process::id()));
    std::fs::write(&path, "[costs]\nipi_receive_ns = 1500\n").unwrap();
    let overrides = load_cost_file(&path);
    let _ = std::fs::remove_file(&path);
    assert_eq!(overrides.unwrap(), [("ipi_receive_ns".to_string(), 1500)]);
}

/// A cost beyond one second per operation (or a jitter above 100 %) is refused with its line,
/// before any run.
#[test]
fn out_of_range_costs_name_their_line() {
    let error = parse_cost_toml("[costs]\nsyscall_ns = 90\ncontext_switch_ns = 1000000001\n", "c.toml").unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(&error, MachineError::Invalid { line: Some(3), field, .. } if field == "costs.context_switch_ns"),
        "{message}"
    );
    assert!(message.contains("0..=1000000000"), "{message}");
    assert!(parse_cost_toml("[costs]\ncontext_switch_ns = 1000000000\n", "c.toml").is_ok());
    let error = parse_cost_toml("[costs]\njitter_pct = 101\n", "c.toml").unwrap_err();
    assert!(matches!(&error, MachineError::Invalid { line: Some(2), .. }), "{error}");
}
