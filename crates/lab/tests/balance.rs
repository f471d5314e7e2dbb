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

/// `examples/topology/two-llc-8.toml`: 8 cores in two LLCs of 4.
fn two_llc() -> Topology {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/topology/two-llc-8.toml");
    machine::parse_topology_toml(&std::fs::read_to_string(&path).unwrap(), "two-llc-8.toml").unwrap()
}

/// Busy CPU time of each LLC of [`two_llc`] (CPUs 0-3, 4-7), in ms.
fn llc_busy_ms(r: &SimReport) -> [u64; 2] {
    let busy =
        |cpus: std::ops::Range<usize>| cpus.map(|c| r.simulated_ns - r.idle_ns_per_cpu[c]).sum::<u64>() / 1_000_000;
    [busy(0..4), busy(4..8)]
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
    simulate(variant, topology, seed, wl.duration_ns, tasks, wl.objects, Vec::new(), check_invariants)
}

/// One run of the simulator, stopped at the workload's end or after 2 simulated seconds.
#[allow(clippy::too_many_arguments)]
fn simulate(
    variant: sim::kernel::Variant,
    topology: Topology,
    seed: u64,
    duration_ns: Option<u64>,
    tasks: Vec<sim::program::TaskSpec>,
    objects: Vec<sim::ipc::ObjectSpec>,
    groups: Vec<sim::fair::group::GroupSpec>,
    check_invariants: bool,
) -> SimReport {
    let setup = SimSetup {
        sched: variant.config,
        topology,
        seed,
        limits: Limits { max_events: 50_000_000, max_time_ns: duration_ns.unwrap_or(2_000_000_000) },
        tasks,
        objects,
        check_invariants,
        groups,
    };
    Sim::new(setup).unwrap().run().unwrap()
}

/// As [`run`], with the workload in its session's autogroup (`schedlab run`'s default): on
/// ≤7.2 a level of its own, on 7.3 effective weights, and the balancer reading the group's
/// PELT hierarchy (`task_h_load`).
fn run_autogrouped(kernel: &str, topology: Topology, argv: &[&str], seed: u64) -> SimReport {
    let variant = lab::spec::parse_full(kernel).unwrap();
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let wl = resolve_workload_on(&argv, &[], topology.nr_cpus() as u32).unwrap();
    let (tasks, groups) = wl.grouped_tasks(true);
    assert_eq!(groups.len(), 1, "one session, one autogroup");
    simulate(variant, topology, seed, wl.duration_ns, tasks, wl.objects, groups, true)
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
/// 24.7 % -> 11.8 % (`effects.txt`). The command of issue 10, over four seeds, run as `schedlab
/// run` runs it: in the session's autogroup (the machine's default, `sched_autogroup_enabled`).
/// (Flat, without the group, the share moves by less than its seed-to-seed spread since the
/// idle CPUs balance at the ticks that reach them: 0.294 against 0.296 over seeds 9-20.)
#[test]
fn sis_util_is_live_in_the_kernel_direction() {
    let argv = ["hackbench", "-p", "-g", "4", "-l", "200"];
    let share = |r: &SimReport| r.counters.nr_wakeup_preemptions as f64 / r.counters.nr_wakeups as f64;
    let run = |kernel: &str, seed: u64| {
        let variant = lab::spec::parse_full(kernel).unwrap();
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let wl = resolve_workload_on(&argv, &[], 8).unwrap();
        let (tasks, groups) = wl.grouped_tasks(variant.config.sysctl.autogroup);
        assert!(!groups.is_empty(), "the session's autogroup");
        // 36 000 switches on 8 CPUs: without the (debug-build) invariant checker.
        simulate(variant, Topology::smp(8), seed, wl.duration_ns, tasks, wl.objects.clone(), groups, false)
    };
    let (mut on_sum, mut off_sum) = (0.0, 0.0);
    for seed in 1..=4 {
        let on = run("v7.3", seed);
        let off = run("v7.3 NO_SIS_UTIL", seed);
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

/// CONFIG_SCHED_CACHE (7.2.12/7.3.4): six threads of one process, three running at a time, on
/// two LLCs of four CPUs. Fork placement spreads them 3 + 3; `task_cache_work` names the LLC
/// with the larger occupancy preferred, `group_llc_balance` / `migrate_llc_task` (actively, the
/// threads run) pull the other three over, and `migrate_degrades_llc` / `alb_break_llc` keep
/// the generic balancer from spreading them again: one LLC does all the work. With
/// `llc_balancing/enabled=0`, on 6.12.117 (no such code), and with six single-threaded
/// processes (`invalid_llc_nr`: no preference) they stay spread, half the work in each LLC.
/// The gathering holds in the session's autogroup too.
#[test]
fn cache_aware_balancing_keeps_one_process_in_one_llc() {
    let argv = ["rtapp", &example("one-process-6.json")];
    for kernel in ["v7.3", "v7.2"] {
        // 6 x 2 s x 1/2 = 6000 ms of work; the LLC left has only the start (fork placement).
        // When the gathering happens varies from run to run (a seed may take a few hundred
        // ms before the first `migrate_llc_task`), so the median of five seeds is judged.
        let mut left: Vec<u64> = (1..=5)
            .map(|seed| {
                let [a, b] = llc_busy_ms(&run(kernel, two_llc(), &argv, None, seed));
                assert!(a + b > 5900, "{kernel} seed {seed}: busy ms per LLC {a}, {b}");
                a.min(b)
            })
            .collect();
        left.sort_unstable();
        assert!(left[2] < 150, "{kernel}: busy ms of the LLC left behind, five seeds: {left:?}");
        // The same in the session's autogroup, as `schedlab run` puts it by default (seeds
        // 1-5: 118-2387 ms left on v7.3, median 321, and 28-1090 on v7.2, median 68, since a
        // halted CPU's timer interrupt waits for its exit latency and the CPU stays available
        // to wakeups meanwhile; before, 50-502 and 29-86).
        let mut left: Vec<u64> = (1..=5)
            .map(|seed| {
                let [a, b] = llc_busy_ms(&run_autogrouped(kernel, two_llc(), &argv, seed));
                a.min(b)
            })
            .collect();
        left.sort_unstable();
        assert!(left[2] < 400, "{kernel} autogrouped: busy ms of the LLC left behind, five seeds: {left:?}");
    }
    for kernel in ["v7.3 llc_balancing/enabled=0", "v7.3 llc_balancing/aggr_tolerance=0", "v6.12"] {
        let [a, b] = llc_busy_ms(&run(kernel, two_llc(), &argv, None, 1));
        assert!(a.min(b) > 2500, "{kernel}: busy ms per LLC {a}, {b}");
    }
    // The same threads as six processes.
    let variant = lab::spec::parse_full("v7.3").unwrap();
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let wl = resolve_workload_on(&argv, &[], 8).unwrap();
    let mut tasks = wl.tasks;
    for (i, t) in tasks.iter_mut().enumerate() {
        t.mm = i as u32;
    }
    let setup = SimSetup {
        sched: variant.config,
        topology: two_llc(),
        seed: 1,
        limits: Limits { max_events: 50_000_000, max_time_ns: 2_000_000_000 },
        tasks,
        objects: wl.objects,
        check_invariants: true,
        groups: Vec::new(),
    };
    let [a, b] = llc_busy_ms(&Sim::new(setup).unwrap().run().unwrap());
    assert!(a.min(b) > 2500, "six processes: busy ms per LLC {a}, {b}");
}
