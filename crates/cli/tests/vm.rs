//! `schedlab vm run` end to end: a real Debian 6.12 kernel booted under qemu with TCG (the
//! emulator, so the test does not depend on KVM), 2 vCPUs, one scheduler feature toggled and
//! read back, a short hackbench run by schedlab's native mode inside the guest.
//!
//! Needs qemu-system-x86, busybox-static, rt-tests and apt access to Debian trixie's
//! linux-image-6.12.117+deb13-amd64 (`.ci/run` installs and fetches them). Without them the
//! test fails with the command's own message saying what to install: it does not skip.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::PathBuf;
use std::process::Command;

const KERNEL_PKG: &str = "linux-image-6.12.117+deb13-amd64";

fn schedlab(tmp: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_schedlab"));
    // A private TMPDIR: everything the run creates there must be gone afterwards.
    c.env("TMPDIR", tmp);
    c
}

fn run_json(tmp: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let out = schedlab(tmp).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "schedlab {} failed ({}):\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn words(s: &serde_json::Value) -> Vec<String> {
    s.as_str().unwrap().split_whitespace().map(String::from).collect()
}

fn check_counters(run: &serde_json::Value) {
    // hackbench -g 1 -l 20: 20 senders x 20 receivers x 20 loops = 8000 messages.
    assert_eq!(run["ops"], 8000, "{run}");
    for k in ["nr_switches", "nr_wakeups"] {
        assert!(run[k].as_u64().unwrap() > 0, "{k} is zero: {run}");
    }
    assert!(run["nr_involuntary_switches"].as_u64().unwrap() <= run["nr_switches"].as_u64().unwrap());
    assert!(run["metric"]["value"].as_f64().unwrap() > 0.0, "{run}");
}

#[test]
fn a_debian_kernel_and_a_user_image_boot_toggle_a_feature_and_report_counters() {
    let tmp = tempfile::tempdir().unwrap();
    let t0 = std::time::Instant::now();
    let common = ["--topology", "smp:2", "--accel", "tcg", "--runs", "1", "--timeout", "150", "--json"];
    let workload = ["hackbench", "-p", "-g", "1", "-l", "20"];

    let mut args = vec!["vm", "run", "--kernel-pkg", KERNEL_PKG, "--variant", "NO_WAKEUP_PREEMPTION"];
    args.extend(common);
    args.extend(workload);
    let r = run_json(tmp.path(), &args);
    assert_eq!(r["release"], "6.12.117+deb13-amd64");
    assert_eq!(r["online"], "0-1", "both vCPUs online after the feature write");
    assert_eq!(r["accel"], "tcg");
    assert_eq!(r["hz"], 250);
    let v = &r["variants"][0];
    let feats = words(&v["features"]);
    assert!(feats.contains(&"NO_WAKEUP_PREEMPTION".into()), "{feats:?}");
    assert!(!feats.contains(&"WAKEUP_PREEMPTION".into()), "{feats:?}");
    check_counters(&v["runs"][0]);

    // The cached vmlinuz as a user's own image: no config, so hz is unknown; the kernel's
    // default features are read back.
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|x| !x.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    let image = cache.join("schedlab/kernels").join(KERNEL_PKG).join("vmlinuz");
    let image = image.to_str().unwrap();
    let mut args = vec!["vm", "run", "--bzimage", image];
    args.extend(common);
    args.extend(workload);
    let r = run_json(tmp.path(), &args);
    assert_eq!(r["kernel"], image);
    assert!(r["hz"].is_null());
    let v = &r["variants"][0];
    assert_eq!(v["variant"], "default");
    assert!(words(&v["features"]).contains(&"WAKEUP_PREEMPTION".into()));
    check_counters(&v["runs"][0]);

    // A feature this kernel does not have: a usage error from the guest agent, not a silent
    // default run.
    let mut args = vec!["vm", "run", "--bzimage", image, "--variant", "NO_SUCH_FEATURE"];
    args.extend(common);
    args.extend(workload);
    let out = schedlab(tmp.path()).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--variant NO_SUCH_FEATURE: unknown feature NO_SUCH_FEATURE"), "{err}");

    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
    assert!(t0.elapsed().as_secs() < 180, "three boots took {:?}", t0.elapsed());
}

#[test]
fn a_topology_the_guest_cannot_boot_is_a_one_line_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = schedlab(tmp.path())
        .args(["vm", "run", "--bzimage", "/nonexistent", "--topology", "2s4c", "pipe", "-l", "10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--topology 2s4c"), "{err}");
}
