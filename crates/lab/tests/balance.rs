//! Load balancing against the real kernels (ground truth `fair_3on2`, `fair_nice` on 2 vCPUs,
//! `../shared/ground-truth/qemu-2vcpu/summary.csv`) and the SIS_UTIL toggle, every run with
//! the invariant checker on (which includes "no task outside its affinity").
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::PathBuf;

use lab::runner::resolve_workload_on;
use sim::config::Limits;
use sim::engine::{Sim, SimReport, SimSetup};
use sim::topology::Topology;

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rtapp").join(name).display().to_string()
}

fn run(kernel: &str, topology: Topology, argv: &[&str], cpus: Option<Vec<u32>>, seed: u64) -> SimReport {
    run_checked(kernel, topology, argv, cpus, seed, true)
}

fn run_checked(
    kernel: &str,
    topology: Topology,
    argv: &[&str],
    cpus: Option<Vec<u32>>,
    seed: u64,
    check_invariants: bool,
) -> SimReport {
    let variant = lab::spec::parse_full(kernel).unwrap();
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let wl = resolve_workload_on(&argv, &[], topology.nr_cpus() as u32).unwrap();
    let mut tasks = wl.tasks;
    for t in &mut tasks {
        t.cpus = cpus.clone();
    }
    let setup = SimSetup {
        sched: variant.config,
        topology,
        seed,
        limits: Limits { max_events: 50_000_000, max_time_ns: wl.duration_ns.unwrap_or(2_000_000_000) },
        tasks,
        objects: wl.objects,
        check_invariants,
    };
    Sim::new(setup).unwrap().run().unwrap()
}

fn shares(r: &SimReport) -> Vec<f64> {
    r.tasks.iter().map(|t| t.sum_exec_runtime_ns as f64 / r.simulated_ns as f64).collect()
}

/// Three nice-0 hogs on two CPUs: periodic balancing moves the waiting task of the CPU with
/// two (`migrate_load`, imbalance 512, after the ineligible/cache-hot refusals raised
/// `nr_balance_failed`), so each gets ~2/3 of a CPU. 6.12.117: max/min 1.12-1.18, 16-17
/// migrations in 2 s.
#[test]
fn three_hogs_share_two_cpus_v6_12() {
    let r = run("v6.12", Topology::smp(2), &["rtapp", &example("three-hogs.json")], None, 1);
    let s = shares(&r);
    for (t, share) in r.tasks.iter().zip(&s) {
        assert!((share - 0.667).abs() <= 0.05, "{} got {share:.3} of a CPU: {s:?}", t.comm);
    }
    let m = r.counters.nr_migrations;
    assert!((12..=24).contains(&m), "{m} migrations in 2 s (real 16-17)");
}

/// The same on 7.3 (real: max/min 1.03-1.10, 17-19 migrations). The migration count is in
/// the real range, the shares are not as even as the kernel's: the model switches the shared
/// CPU every 1.4 ms slice (the real 7.3.4 guest about every 2.6 ms, ~383 switches/s), and with
/// that phase against the aligned 4 ms ticks the task waiting at each balance is always the
/// one that arrived last, so one hog never moves (see the closing note). Asserted: every hog
/// within 0.1 of 2/3, against 0.5 / 0.5 / 1.0 without balancing.
#[test]
fn three_hogs_share_two_cpus_v7_3() {
    let r = run("v7.3", Topology::smp(2), &["rtapp", &example("three-hogs.json")], None, 1);
    let s = shares(&r);
    for (t, share) in r.tasks.iter().zip(&s) {
        assert!((share - 0.667).abs() <= 0.1, "{} got {share:.3} of a CPU: {s:?}", t.comm);
    }
    let m = r.counters.nr_migrations;
    assert!((12..=24).contains(&m), "{m} migrations in 2 s (real 17-19)");
}

/// Two hogs pinned to CPU 0 (nice 0 and 5) share it by weight whatever the balancer does:
/// real ratio 3.03-3.06 (1024/335 = 3.06), no migrations possible.
#[test]
fn pinned_nice_pair_keeps_weight_ratio() {
    let dir = std::env::temp_dir().join(format!("schedlab-balance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("nice-pair.json");
    std::fs::write(
        &file,
        r#"{ "tasks": { "n0": { "loop": -1, "run": 100000 }, "n5": { "loop": -1, "priority": 5, "run": 100000 } },
             "global": { "duration": 2, "default_policy": "SCHED_OTHER" } }"#,
    )
    .unwrap();
    let r = run("v7.3", Topology::smp(2), &["rtapp", file.to_str().unwrap()], Some(vec![0]), 1);
    let ratio = r.tasks[0].sum_exec_runtime_ns as f64 / r.tasks[1].sum_exec_runtime_ns as f64;
    assert!((2.95..=3.15).contains(&ratio), "nice 0 / nice 5 ratio {ratio:.3}");
    assert_eq!(r.counters.nr_migrations, 0);
}

/// `examples/rtapp/nice-hogs.json` on two CPUs: CPU time ordered by weight (nice -5 > 0 > 5),
/// the heaviest alone on one CPU as `migrate_load` leaves it.
#[test]
fn nice_hogs_ordered_by_weight() {
    let r = run("v7.3", Topology::smp(2), &["rtapp", &example("nice-hogs.json")], None, 1);
    let by = |nice: i32| r.tasks.iter().find(|t| t.nice == nice).unwrap().sum_exec_runtime_ns;
    assert!(by(-5) > by(0) && by(0) > by(5), "runtimes -5: {} 0: {} 5: {}", by(-5), by(0), by(5));
    let s = by(-5) as f64 / r.simulated_ns as f64;
    assert!(s > 0.9, "the nice -5 hog gets {s:.3} of a CPU");
}

/// SIS_UTIL is live: periodic balancing of the LLC (the first busy tick, then the NOHZ idle
/// balancer's CPU_IDLE passes) refreshes the scan depth from the LLC's utilisation
/// (`update_idle_cpu_scan`), so a busy LLC is searched less deeply and more wakeups preempt
/// on their target instead of finding an idle CPU. The real kernels move the same way:
/// NO_SIS_UTIL on 6.12.117, 2 vCPUs, threaded pipe hackbench: wakeup-preemption share
/// 24.7 % -> 11.8 % (`effects.txt`). The command of issue 10, over four seeds.
#[test]
fn sis_util_is_live_in_the_kernel_direction() {
    let argv = ["hackbench", "-p", "-g", "4", "-l", "200"];
    let share = |r: &SimReport| r.counters.nr_wakeup_preemptions as f64 / r.counters.nr_wakeups as f64;
    let (mut on_sum, mut off_sum) = (0.0, 0.0);
    for seed in 1..=4 {
        // 36 000 switches on 8 CPUs: without the (debug-build) invariant checker.
        let on = run_checked("v7.3", Topology::smp(8), &argv, None, seed, false);
        let off = run_checked("v7.3 NO_SIS_UTIL", Topology::smp(8), &argv, None, seed, false);
        assert_ne!(on.counters.nr_switches, off.counters.nr_switches, "seed {seed}: SIS_UTIL changed nothing");
        on_sum += share(&on);
        off_sum += share(&off);
    }
    assert!(off_sum < on_sum, "wakeup preemption share over 4 seeds: SIS_UTIL {on_sum:.3}, NO_SIS_UTIL {off_sum:.3}");
}

/// Affinity holds under balancing: hogs allowed on CPUs 1-2 of four never run elsewhere (the
/// invariant checker fails the run otherwise) and the two free CPUs stay idle.
#[test]
fn balancing_respects_affinity() {
    let r = run("v7.3", Topology::smp(4), &["rtapp", &example("three-hogs.json")], Some(vec![1, 2]), 3);
    // Idle CPUs 0 and 3 try to pull and find every task pinned (LBF_ALL_PINNED); between
    // CPUs 1 and 2 the domain average (3 tasks over 4 CPUs) is below CPU 1's load, so
    // calculate_imbalance() finds nothing to move, as in the kernel.
    for cpu in [0, 3] {
        assert!(r.idle_ns_per_cpu[cpu] + 1_000_000 >= r.simulated_ns, "CPU {cpu} ran something");
    }
}
