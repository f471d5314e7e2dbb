//! The liveness matrix: every feature flag, named patch and preemption model changes the
//! model's decisions where the kernel's change, in the kernel's direction. Each row names its
//! ground-truth line (`../shared/ground-truth/qemu-2vcpu/summary.csv`) or the kernel-source
//! reason for the direction. Toggles that cannot act in a single-root-group, fair-only model
//! are listed in `INERT` with the reason, and checked to be inert, so none is skipped silently.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use lab::runner::{CounterRecord, RunRequest, run_one};
use lab::spec;
use sim::config::{Limits, SchedConfig};
use sim::engine::{Counters, Sim, SimSetup};
use sim::features::Feature;
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;

/// Seeds per benchmark row: a hackbench run on few CPUs settles into one of several regimes
/// (a seed's switch count can vary 10x), so a direction is judged on the sum over seeds, as the
/// ground truth judges it on boots.
const SEEDS: u64 = 8;

/// A benchmark command line under a SPEC on a topology: the counters summed over [`SEEDS`] seeds.
fn bench(spec_text: &str, topology: &str, preempt: Option<&str>, argv: &str) -> CounterRecord {
    let mut variant = spec::parse_full(spec_text).unwrap_or_else(|e| panic!("{spec_text}: {e}"));
    if let Some(p) = preempt {
        variant.config.preempt = sim::config::PreemptModel::parse(p).unwrap();
        variant.config.check_preempt().unwrap();
    }
    let mut sum = CounterRecord::default();
    for seed in 1..=SEEDS {
        let req = RunRequest {
            variant: variant.clone(),
            topology: Topology::by_name(topology).unwrap(),
            // The ground truth and the reports these cases restate ran in the root task group.
            workload: ["--autogroup", "off"].into_iter().chain(argv.split(' ')).map(String::from).collect(),
            seed,
            default_duration_ns: 1_000_000_000,
            max_events: 20_000_000,
            cpus: None,
        };
        let c = run_one(&req).unwrap_or_else(|e| panic!("{spec_text} {argv}: {e}")).counters;
        sum.nr_switches += c.nr_switches;
        sum.nr_voluntary_switches += c.nr_voluntary_switches;
        sum.nr_involuntary_switches += c.nr_involuntary_switches;
        sum.nr_migrations += c.nr_migrations;
        sum.nr_wakeups += c.nr_wakeups;
        sum.nr_wakeups_sync += c.nr_wakeups_sync;
        sum.nr_wakeups_local += c.nr_wakeups_local;
        sum.nr_wakeups_remote += c.nr_wakeups_remote;
        sum.nr_wakeups_affine += c.nr_wakeups_affine;
        sum.nr_wakeups_affine_attempts += c.nr_wakeups_affine_attempts;
        sum.nr_wakeups_migrate += c.nr_wakeups_migrate;
        sum.nr_wakeup_preemptions += c.nr_wakeup_preemptions;
        sum.nr_tick_preemptions += c.nr_tick_preemptions;
        sum.nr_ipis += c.nr_ipis;
    }
    sum
}

fn hog() -> TaskSpec {
    TaskSpec::new("hog", vec![Op::Run { ns: 10_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }])
}

/// A periodic sleeper with an optional custom slice (`sched_attr.sched_runtime`).
fn sleeper(run_ns: u64, sleep_ns: u64, slice_ns: Option<u64>) -> TaskSpec {
    let mut t = TaskSpec::new(
        "sleeper",
        vec![Op::Run { ns: run_ns }, Op::Sleep { ns: sleep_ns }, Op::Loop { target: 0, slot: 0, count: u32::MAX }],
    );
    t.slice_ns = slice_ns;
    t
}

/// One run of hand-built tasks on `smp:cpus` for `ms` simulated milliseconds.
fn tasks(cfg: SchedConfig, cpus: u32, ms: u64, tasks: Vec<TaskSpec>) -> Counters {
    let setup = SimSetup {
        sched: cfg,
        topology: Topology::smp(cpus),
        seed: 1,
        limits: Limits { max_events: 20_000_000, max_time_ns: ms * 1_000_000 },
        tasks,
        objects: vec![],
        check_invariants: false,
        groups: Vec::new(),
    };
    Sim::new(setup).unwrap().run().unwrap().counters
}

fn with(mut cfg: SchedConfig, token: &str) -> SchedConfig {
    cfg.features.apply(token).unwrap();
    cfg
}

const HB: &str = "hackbench -p -g 2 -l 100";

// ---- feature flags ----------------------------------------------------------------------------

/// NO_WAKEUP_PREEMPTION: `wakeup_preempt_fair` returns before any decision (fair.c 7.3.4), so
/// no wakeup preempts; with it hackbench's wakees do.
#[test]
fn wakeup_preemption() {
    let on = bench("v7.3", "smp:4", None, HB);
    let off = bench("v7.3 NO_WAKEUP_PREEMPTION", "smp:4", None, HB);
    assert!(on.nr_wakeup_preemptions > 50 && off.nr_wakeup_preemptions == 0, "{on:?}\n{off:?}");
}

/// NO_RUN_TO_PARITY on 7.3: `set_protect_slice` protects only `normalized_sysctl_sched_base_slice`
/// (0.70 ms) instead of the request, so wakees preempt more often.
#[test]
fn run_to_parity_v7_3() {
    let on = bench("v7.3", "smp:4", None, HB);
    let off = bench("v7.3 NO_RUN_TO_PARITY", "smp:4", None, HB);
    assert!(off.nr_involuntary_switches > on.nr_involuntary_switches * 2, "{on:?}\n{off:?}");
}

/// ≤6.16: the marker is set at every pick and `update_curr` reschedules only at the end of the
/// request (`did_preempt_short`, 6.12.117 l.1180), so two hogs switch at the same rate with and
/// without RUN_TO_PARITY (kernel-fair-errata "Slice protection on ≤6.16"); with wakeups the
/// wakeup-time pick ignores the protection and preempts more.
#[test]
fn run_to_parity_v6_12() {
    let mut lts = spec::parse_full("v6.12").unwrap().config;
    lts.sysctl.set("base_slice_ns", "12000000").unwrap();
    let hogs = || vec![hog(), hog()];
    let on = tasks(lts.clone(), 1, 2000, hogs());
    let off = tasks(with(lts.clone(), "NO_RUN_TO_PARITY"), 1, 2000, hogs());
    assert_eq!(on.nr_switches, off.nr_switches, "{on:?}\n{off:?}");
    assert!((160..=170).contains(&on.nr_switches), "one switch per 12 ms request: {on:?}");
    // Wakeups: the wakeup-time pick ignores the marker without RUN_TO_PARITY. Ground truth:
    // NO_RUN_TO_PARITY on 6.12.117, 2 vCPU, hb_sock: involuntary share 15.5% -> 27.1%.
    let argv = "hackbench -g 2 -l 100";
    let on = bench("v6.12", "vm-2cpu", Some("voluntary"), argv);
    let off = bench("v6.12 NO_RUN_TO_PARITY", "vm-2cpu", Some("voluntary"), argv);
    let invol = |c: &CounterRecord| c.nr_involuntary_switches as f64 / c.nr_switches as f64;
    assert!(invol(&off) > invol(&on) * 1.1, "{on:?}\n{off:?}");
}

/// PREEMPT_SHORT: a wakee with a shorter slice ignores curr's protection (the PREEMPT_WAKEUP_SHORT
/// action of `wakeup_preempt_fair`, 7.3.4), so a 0.1 ms-slice sleeper preempts a hog at once;
/// without it, it waits for the hog's protection to end.
#[test]
fn preempt_short() {
    let mix = || vec![hog(), sleeper(50_000, 2_000_000, Some(100_000))];
    let on = tasks(SchedConfig::v7_3(), 1, 1000, mix());
    let off = tasks(with(SchedConfig::v7_3(), "NO_PREEMPT_SHORT"), 1, 1000, mix());
    assert!(on.nr_wakeup_preemptions > off.nr_wakeup_preemptions, "{on:?}\n{off:?}");
}

/// NO_DELAY_DEQUEUE on 6.12.117, hb_thr_pipe (`hackbench -T -p -g 2 -l 100`, 2 vCPUs,
/// voluntary): real switches per op 0.034 -> 0.047 (summary.csv): more switches without it.
/// Judged as the scoreboard judges it, in the ground truth's guest (its fitted costs, its
/// kernel threads, the launcher's flips): the bare run sits on a knife edge between
/// hackbench's regimes (docs/fidelity.md), where a seed's switch count varies 10x.
#[test]
fn delay_dequeue_v6_12() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/ground-truth/qemu-2vcpu");
    let truth = lab::fidelity::truth::GroundTruth::load(&dir).unwrap();
    let opts = lab::fidelity::Options {
        runs: 3,
        workloads: Some(vec!["hb_thr_pipe".into()]),
        kernels: Some(vec!["6.12.117".into()]),
        trace_dir: None,
    };
    let f = lab::fidelity::run(truth, opts).unwrap();
    let s = lab::fidelity::score::score(&f);
    let e = s.effects.iter().find(|e| e.key.variant == "NO_DELAY_DEQUEUE" && e.metric == "switches_per_op").unwrap();
    assert!(e.direction, "{e:?}");
}

/// DELAY_DEQUEUE on a Raspberry Pi 5 with four pipe pairs (`stress-ng --pipe 4` in the list
/// report, modelled as four `perf bench sched pipe` pairs on 4 CPUs, 6.12, preempt full): a
/// sleeper that blocks ineligible stays queued on its CPU and is requeued there at wakeup without
/// `select_task_rq` (ttwu_runnable), so the pairs stay put and every wakeup preempts the waker.
/// Real (lkml 2026-04-18, Tom Gebhardt): sched_migrate_task 98 -> 4 and sched_switch +89 % with
/// DELAY_DEQUEUE.
#[test]
fn delay_dequeue_rpi5_pipe_pairs() {
    let run = |spec_text: &str| {
        let argv: Vec<String> = "pipe -l 5000".split(' ').map(String::from).collect();
        let bg = vec![argv.clone(), argv.clone(), argv.clone()];
        let topo = Topology::by_name("rpi5").unwrap();
        let wl = lab::runner::resolve_workload_on(&argv, &bg, topo.nr_cpus() as u32).unwrap();
        let mut cfg = spec::parse_full(spec_text).unwrap().config;
        cfg.preempt = sim::config::PreemptModel::Full;
        let setup = SimSetup {
            sched: cfg,
            topology: topo,
            seed: 1,
            limits: Limits { max_events: 20_000_000, max_time_ns: 10_000_000_000 },
            tasks: wl.tasks,
            objects: wl.objects,
            check_invariants: false,
            groups: Vec::new(),
        };
        Sim::new(setup).unwrap().run().unwrap().counters
    };
    let on = run("v6.12");
    let off = run("v6.12 NO_DELAY_DEQUEUE");
    assert!(on.nr_switches * 10 > off.nr_switches * 15, "{on:?}\n{off:?}");
    // FIXME: the report's migrations (98 -> 4 with DELAY_DEQUEUE) are not reproduced since the
    // balancer became the kernel's: four pairs on four CPUs never look imbalanced, so neither
    // variant migrates. Today's behaviour, asserted so a change shows:
    assert_eq!((on.nr_migrations, off.nr_migrations), (0, 0), "{on:?}\n{off:?}");
}

/// The requeue of a delayed task before any `update_curr` (≤6.19; 6.12.117 `enqueue_task_fair`
/// returns from the ENQUEUE_DELAYED branch first): in a pinned one-token ping-pong the waker
/// turns ineligible at the wakeup check and is preempted. Real 6.18.44 (this machine, pinned
/// `perf bench sched pipe`): involuntary share 0.44, 1.12 wakeups per op; charging curr first
/// (the 7.2+ order) gives no involuntary switch and 2 wakeups per op.
#[test]
fn requeue_before_update_curr_pinned_pipe() {
    let run = |updates_curr_first: bool| {
        let mut variant = spec::parse_full("v6.18").unwrap();
        variant.config.preempt = sim::config::PreemptModel::None;
        variant.config.behavior.requeue_updates_curr = updates_curr_first;
        let req = RunRequest {
            variant,
            topology: Topology::by_name("vm-2cpu").unwrap(),
            workload: "pipe --classic -l 5000".split(' ').map(String::from).collect(),
            seed: 1,
            default_duration_ns: 1_000_000_000,
            max_events: 20_000_000,
            cpus: Some(vec![0]),
        };
        run_one(&req).unwrap().counters
    };
    let kernel = run(false);
    let invol = kernel.nr_involuntary_switches as f64 / kernel.nr_switches as f64;
    let per_op = kernel.nr_wakeups as f64 / 5000.0;
    assert!((0.35..0.55).contains(&invol) && (0.95..1.3).contains(&per_op), "{kernel:?}");
    let charged = run(true);
    assert!(charged.nr_involuntary_switches < kernel.nr_involuntary_switches / 10, "{charged:?}");
}

/// NEXT_BUDDY on 7.3: sync wakeups go through `preempt_sync`, which measures the waker's runtime
/// as `rq_clock_task - exec_start`, always 0 after `update_curr` (spec §6.3), so it returns
/// PREEMPT_WAKEUP_NONE: fewer wakeup preemptions. Ground truth: NEXT_BUDDY on 7.3.4, 2 vCPU,
/// hb_thr_pipe: sw/op 0.224 -> 0.079, involuntary 22.2% -> 6.4%.
#[test]
fn next_buddy() {
    let off = bench("v7.3", "smp:4", None, HB);
    let on = bench("v7.3 NEXT_BUDDY", "smp:4", None, HB);
    assert!(on.nr_wakeup_preemptions < off.nr_wakeup_preemptions, "{off:?}\n{on:?}");
}

/// HRTICK: `hrtick_start_fair` arms a timer at the end of curr's request (0.70 ms on one CPU),
/// so two hogs switch at every request end instead of at every 4 ms tick.
#[test]
fn hrtick() {
    let argv = "stress-ng --cpu 2 --timeout 1";
    let on = bench("v7.3", "smp:1", None, argv);
    let off = bench("v7.3 NO_HRTICK", "smp:1", None, argv);
    assert!(on.nr_switches > off.nr_switches * 3, "{on:?}\n{off:?}");
}

fn affine_share(c: &CounterRecord) -> f64 {
    c.nr_wakeups_affine as f64 / c.nr_wakeups_affine_attempts.max(1) as f64
}

/// WA_IDLE: `wake_affine_idle` takes the waker's CPU for a sync wakeup when the waker is alone
/// there; without it only `wake_affine_weight` decides: fewer affine wakeups in a ping-pong.
#[test]
fn wa_idle() {
    let argv = "pipe --classic -l 2000";
    let on = bench("v7.3", "smp:4", None, argv);
    let off = bench("v7.3 NO_WA_IDLE", "smp:4", None, argv);
    assert!(affine_share(&off) < affine_share(&on), "{on:?}\n{off:?}");
}

/// WA_WEIGHT: without `wake_affine_weight` a wakeup that `wake_affine_idle` does not settle
/// stays on the previous CPU: fewer affine wakeups. On eight CPUs, where hackbench's CPUs go
/// idle and the weight test decides: 8 seeds give 16.7 % vs 8.7 % of affine attempts (15.1 %
/// vs 7.2 % with the loaded-mm switch price). On four CPUs the regime a seed lands in decides
/// more than the feature (12.6 % vs 8.5 % before that price, 6.0 % vs 6.5 % after).
#[test]
fn wa_weight() {
    let on = bench("v7.3", "smp:8", None, HB);
    let off = bench("v7.3 NO_WA_WEIGHT", "smp:8", None, HB);
    assert!(affine_share(&off) < affine_share(&on), "{on:?}\n{off:?}");
}

/// WA_BIAS: `wake_affine_weight` inflates the previous CPU's load by half the domain's
/// imbalance_pct, favouring the waker's CPU; without the bias fewer wakeups are affine. On two
/// CPUs with the ground truth's hb_pipe (`-g 1 -l 200`) the weight test decides most attempts:
/// 8 seeds give 18.0 % vs 9.8 % of affine attempts. (With `-g 2 -l 100` the pair of groups
/// settles in another regime, where the bias moves 5.0 % vs 7.0 % the other way; on four CPUs
/// `wake_affine_idle` and the balancer's moves blur it: 11 % vs 22 % either way over 5 seeds.)
#[test]
fn wa_bias() {
    let argv = "hackbench -p -g 1 -l 200";
    let on = bench("v7.3", "smp:2", None, argv);
    let off = bench("v7.3 NO_WA_BIAS", "smp:2", None, argv);
    assert!(affine_share(&off) < affine_share(&on), "{on:?}\n{off:?}");
}

/// NI_RANDOM: newidle balance runs only with probability ~ its past success; without it every
/// idle entry balances, pulling more tasks: more balancer migrations (those not made by a
/// wakeup). On eight CPUs with many idle entries, 8 seeds give 1 590 vs 2 621 such pulls. The
/// total can move either way: a CPU kept busy by a pull takes fewer wakeups from elsewhere
/// (12 141 vs 10 507 migrations in all with the pipe mutex's sleeps; 4 397 vs 7 310 before).
#[test]
fn ni_random() {
    let pulls = |c: &CounterRecord| c.nr_migrations - c.nr_wakeups_migrate;
    let on = bench("v7.3", "smp:8", None, HB);
    let off = bench("v7.3 NO_NI_RANDOM", "smp:8", None, HB);
    assert!(pulls(&off) > pulls(&on), "{on:?}\n{off:?}");
}

/// NO_PLACE_LAG: woken tasks are placed at V with no lag, so sleepers no longer come back with
/// the positive lag that lets them preempt. Ground truth: NO_PLACE_LAG on 7.3.4, 2 vCPU, hb_pipe:
/// sw/op 0.119 -> 0.034, involuntary 18.8% -> 6.3%.
#[test]
fn place_lag() {
    let argv = "hackbench -p -g 1 -l 200";
    let on = bench("v7.3", "vm-2cpu", None, argv);
    let off = bench("v7.3 NO_PLACE_LAG", "vm-2cpu", None, argv);
    assert!(off.nr_switches < on.nr_switches, "{on:?}\n{off:?}");
    let invol = |c: &CounterRecord| c.nr_involuntary_switches as f64 / c.nr_switches as f64;
    assert!(invol(&off) < invol(&on), "{on:?}\n{off:?}");
}

/// Toggles that act in the model (the counters change) but whose direction this matrix does not
/// yet tie to a ground-truth line or a source argument; listed so they are not silently skipped.
/// Not covered by a direction row either (and so not asserted here): PLACE_DEADLINE_INITIAL and
/// PICK_BUDDY (need forks / a buddy on a protected pick), UTIL_EST, ATTACH_AGE_LOAD, LB_MIN and
/// NI_RATE (load-balancing inputs; no change on these workloads), SIS_UTIL (the balancing
/// branch's work).
const DIRECTION_OPEN: &[&str] = &["NO_PLACE_REL_DEADLINE", "NO_DELAY_ZERO", "NO_TTWU_QUEUE"];

#[test]
fn direction_open_toggles_act() {
    let base = bench("v7.3", "smp:4", None, HB);
    for t in DIRECTION_OPEN {
        let v = bench(&format!("v7.3 {t}"), "smp:4", None, HB);
        assert_ne!(format!("{base:?}"), format!("{v:?}"), "{t} changes the decisions");
    }
}

// ---- named patches ----------------------------------------------------------------------------

/// +preempt-sync-runtime-fix: the waker's real runtime since its pick can reach the threshold, so
/// `preempt_sync` sometimes asks for PREEMPT_WAKEUP_RESCHED where the unfixed one always says
/// NONE: a larger share of wakeups preempts. Over unix sockets every send to a sleeping
/// receiver is a sync wakeup that consults `preempt_sync` (pipes wake only on empty-to-non-empty,
/// a few hundred preemptions in all, whose sign the hackbench regime decides).
#[test]
fn patch_preempt_sync_runtime_fix() {
    let argv = "hackbench -g 1 -l 200";
    let base = bench("v7.3 NEXT_BUDDY", "smp:2", None, argv);
    let fix = bench("v7.3 NEXT_BUDDY +preempt-sync-runtime-fix", "smp:2", None, argv);
    let share = |c: &CounterRecord| c.nr_wakeup_preemptions as f64 / c.nr_wakeups as f64;
    assert!(share(&fix) > share(&base), "{base:?}\n{fix:?}");
}

/// +revert-force-wakeup-preemption on 6.19-rc6: the forced reschedule of an ineligible waker
/// (15257cc2f905 removes it) goes, so fewer wakeups preempt.
#[test]
fn patch_revert_force_wakeup_preemption() {
    let rc6 = bench("v6.19-rc6", "smp:4", None, HB);
    let rev = bench("v6.19-rc6 +revert-force-wakeup-preemption", "smp:4", None, HB);
    assert!(rev.nr_wakeup_preemptions < rc6.nr_wakeup_preemptions, "{rc6:?}\n{rev:?}");
}

/// +next-buddy-eevdf: on 6.16 the old NEXT_BUDDY (off) becomes the EEVDF one (on); on 6.18.44,
/// which has its code (backported in 6.18.33), the patch only turns NEXT_BUDDY on. Either way
/// its `preempt_sync` suppresses sync wakeup preemption (see `next_buddy`).
#[test]
fn patch_next_buddy_eevdf() {
    for kernel in ["v6.16", "v6.18"] {
        let old = bench(kernel, "smp:4", None, HB);
        let new = bench(&format!("{kernel} +next-buddy-eevdf"), "smp:4", None, HB);
        assert!(new.nr_wakeup_preemptions < old.nr_wakeup_preemptions, "{kernel}\n{old:?}\n{new:?}");
    }
}

/// +wake-affine-idle-delayed-fix on 6.12.0: a waker CPU whose only other task is delayed counts
/// as "waker alone" in the sync test (`nr_running - cfs_h_nr_delayed == 1`), so a larger share of
/// affine attempts pulls the wakee to the waker's CPU. One group of 20+20 processes (the ground
/// truth's hb_pipe) leaves delayed senders behind its wakers often: 0.143 → 0.167 of attempts
/// over the 8 seeds. (With two groups the share moves within its noise since 6.12's final
/// dequeue of a delayed task drops its positive lag: 0.063 → 0.060.)
#[test]
fn patch_wake_affine_idle_delayed_fix() {
    let old = bench("v6.12.0", "smp:2", None, "hackbench -p -g 1 -l 200");
    let fix = bench("v6.12.0 +wake-affine-idle-delayed-fix", "smp:2", None, "hackbench -p -g 1 -l 200");
    let share = |c: &CounterRecord| c.nr_wakeups_affine as f64 / c.nr_wakeups_affine_attempts as f64;
    assert!(share(&fix) > share(&old), "{old:?}\n{fix:?}");
}

/// +wake-affine-sync-reciprocal on a non-SMT machine: narrow reciprocal sync wakeups keep the
/// waker CPU, skipping select_idle_sibling: more local wakeups.
#[test]
fn patch_wake_affine_sync_reciprocal() {
    let base = bench("v7.3", "smp:4", None, "pipe --classic -l 2000");
    let patched = bench("v7.3 +wake-affine-sync-reciprocal", "smp:4", None, "pipe --classic -l 2000");
    assert!(patched.nr_wakeups_local > base.nr_wakeups_local, "{base:?}\n{patched:?}");
}

// ---- cache-aware balancing (CONFIG_SCHED_CACHE debugfs knobs) --------------------------------

/// One run of `examples/rtapp/one-process-6.json` (six threads of one process, three running
/// at a time) on `examples/topology/two-llc-8.toml` (two LLCs of four CPUs).
fn two_llc_run(spec_text: &str) -> CounterRecord {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let toml = std::fs::read_to_string(root.join("examples/topology/two-llc-8.toml")).unwrap();
    let req = RunRequest {
        variant: spec::parse_full(spec_text).unwrap(),
        topology: machine::parse_topology_toml(&toml, "two-llc-8.toml").unwrap(),
        workload: vec!["rtapp".into(), root.join("examples/rtapp/one-process-6.json").display().to_string()],
        seed: 1,
        default_duration_ns: 1_000_000_000,
        max_events: 20_000_000,
        cpus: None,
    };
    run_one(&req).unwrap().counters
}

/// `llc_balancing/enabled`, `aggr_tolerance` and `overaggr_pct` (7.2.12/7.3.4 debug.c): on,
/// the threads of the LLC the process does not prefer are pulled over (`migrate_llc_task`,
/// through the stopper: involuntary switches) and then move within it; off, tolerance 0
/// (`invalid_llc_nr` always) and `overaggr_pct=0` (no LLC fits, so `can_migrate_llc()` leaves
/// everything to the generic balancer) leave the fork placement, which is balanced. On one LLC
/// (`sched_cache_present` false) the knob is inert.
#[test]
fn llc_balancing() {
    let on = two_llc_run("v7.3");
    assert!(on.nr_migrations >= 3 && on.nr_involuntary_switches > 0, "{on:?}");
    for off in
        ["v7.3 llc_balancing/enabled=0", "v7.3 llc_balancing/aggr_tolerance=0", "v7.3 llc_balancing/overaggr_pct=0"]
    {
        let c = two_llc_run(off);
        assert!(
            c.nr_migrations < on.nr_migrations && c.nr_involuntary_switches < on.nr_involuntary_switches,
            "{off}: {c:?}\non: {on:?}"
        );
    }
    let base = bench("v7.3", "smp:4", None, HB);
    let off = bench("v7.3 llc_balancing/enabled=0", "smp:4", None, HB);
    assert_eq!(format!("{base:?}"), format!("{off:?}"), "one LLC: cache-aware balancing is not present");
}

// ---- preemption models ------------------------------------------------------------------------

/// Every preemption model acts (6.18, which offers all four). none vs voluntary: a pipe call
/// about to wait after its own wakes passes `wait_event`'s `might_sleep()`, a preemption point
/// under voluntary only (sim `ipc.rs`: `a_writer_that_fills_a_pipe_…`). full vs voluntary:
/// under full a wakeup's TIF_NEED_RESCHED also preempts at every `preempt_enable()` in kernel
/// mode (`preempt_schedule`, core.c), e.g. a socket call's, where voluntary waits for the return
/// to user. lazy vs full: fair-vs-fair requests set TIF_NEED_RESCHED_LAZY (`get_lazy_tif_bit`,
/// 7.3.4 core.c), acted upon only at the return to user or promoted at the tick.
#[test]
fn preemption_models() {
    let pipes = "hackbench -p -g 1 -l 200";
    let none = bench("v6.18", "smp:2", Some("none"), pipes);
    let voluntary = bench("v6.18", "smp:2", Some("voluntary"), pipes);
    let lazy = bench("v6.18", "smp:2", Some("lazy"), pipes);
    let full = bench("v6.18", "smp:2", Some("full"), pipes);
    assert_ne!(format!("{none:?}"), format!("{voluntary:?}"), "none = voluntary on pipes");
    assert_ne!(format!("{lazy:?}"), format!("{full:?}"), "lazy = full on pipes");
    let sockets = "hackbench -g 1 -l 200";
    let voluntary = bench("v6.18", "smp:2", Some("voluntary"), sockets);
    let full = bench("v6.18", "smp:2", Some("full"), sockets);
    assert_ne!(format!("{voluntary:?}"), format!("{full:?}"), "voluntary = full on sockets");
    let full73 = bench("v7.3", "smp:2", Some("full"), "hackbench -p -g 1 -l 200");
    let lazy73 = bench("v7.3", "smp:2", Some("lazy"), "hackbench -p -g 1 -l 200");
    assert!(lazy73.nr_wakeup_preemptions != full73.nr_wakeup_preemptions, "{lazy73:?}\n{full73:?}");
}

/// Which models a kernel offers (`sched_dynamic_mode`): 7.x on x86-64 has full and lazy only
/// (7dadeaa6e851), 6.12 has no lazy (it came in 6.13).
#[test]
fn preemption_models_offered() {
    let cfg = |k: &str, m: &str| {
        let mut c = spec::parse_full(k).unwrap().config;
        c.preempt = sim::config::PreemptModel::parse(m).unwrap();
        c.check_preempt()
    };
    assert!(cfg("v7.3", "none").unwrap_err().contains("preempt=none"));
    assert!(cfg("v7.2", "voluntary").is_err() && cfg("v6.19", "voluntary").is_ok());
    assert!(cfg("v6.12", "lazy").unwrap_err().contains("preempt=lazy"));
    assert!(cfg("v6.18", "none").is_ok() && cfg("v6.18", "lazy").is_ok());
}

// ---- what cannot act --------------------------------------------------------------------------

/// Toggles with no effect in this model, each with the reason. `none` vs `voluntary` belongs here
/// too: they differ only at `might_resched()` points (`might_sleep()` in mutex_lock, GFP_KERNEL
/// allocations) reached with a request pending in the middle of a kernel path; the model's kernel
/// paths are one copy with the wakeups at their end, so both act at the same return to user.
const INERT: &[(Feature, &str)] = &[
    (Feature::PARANOID_AVG, "the model's avg_vruntime sums are exact; the overflow checks never trigger"),
    (Feature::HRTICK_DL, "deadline class only"),
    (Feature::NONTASK_CAPACITY, "no IRQ or RT time is modelled, so capacity never shrinks"),
    (Feature::WARN_DOUBLE_CLOCK, "debug only"),
    (Feature::RT_PUSH_IPI, "RT class only"),
    (Feature::RT_RUNTIME_SHARE, "RT class only"),
    (Feature::LATENCY_WARN, "debug only"),
    (Feature::CACHE_HOT_BUDDY, "task_hot() reads it for the next buddy, set only with NEXT_BUDDY; off by default"),
];

#[test]
fn inert_toggles_are_listed_and_inert() {
    for &(f, why) in INERT {
        let token = if f.default_v7_3() { format!("NO_{}", f.name()) } else { f.name().to_string() };
        let base = bench("v7.3", "smp:4", None, HB);
        let toggled = bench(&format!("v7.3 {token}"), "smp:4", None, HB);
        assert_eq!(format!("{base:?}"), format!("{toggled:?}"), "{token} is listed as inert ({why})");
    }
}
