//! CPU selection (`sim::select`, spec §5.1–§5.6, §6.4, §6.5) on hand-built runqueue
//! snapshots over real topologies: every expected CPU below is derived by hand from the
//! kernel's rules, and the comments say how.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use sim::config::Behavior;
use sim::fair::wf;
use sim::features::{Feature, FeatureSet};
use sim::select::{
    AffineRule, CpuFacts, LlcShared, Placement, SelectCtx, SelectReason, Waking, imb_numa_nr, select_task_rq_fair,
    update_idle_core, update_idle_cpu_scan, update_llc_idle_scan,
};
use sim::task::{Slots, Step, Task, TaskId, TaskState, TaskStats};
use sim::topology::{Domains, PRESET_NAMES, Topology};

const TTWU_SYNC: u32 = wf::TTWU | wf::SYNC;

fn task(id: u32, cpu: u32, nr_cpus: u32) -> Task {
    Task {
        pid: 1000 + id,
        comm: format!("t{id}").into(),
        nice: 0,
        spec: id,
        mm: id,
        timer_slack_ns: 50_000,
        state: TaskState::Blocked,
        cpu,
        allowed: sim::cpumask::CpuMask::full(nr_cpus),
        pc: 0,
        step: Step::Next,
        loop_counters: Slots::new(0, 0),
        timer_next: Box::new([]),
        timer_gen: 0,
        waking_since: None,
        last_wakee: None,
        wakee_flips: 0,
        wakee_flip_decay_ts: 0,
        recent_used_cpu: cpu,
        parent: None,
        live_children: 0,
        lb_seq: 0,
        last_cpu: Some(cpu),
        cache_debt_ns: 0,
        preferred_llc: None,
        cache_work_pending: false,
        lat_start: Box::new([]),
        stats: TaskStats::default(),
    }
}

/// A machine snapshot: every CPU busy with one task unless a test says otherwise, and every
/// LLC scanning its whole span (so that SIS_UTIL does not hide what a test looks at).
struct Machine {
    topo: Topology,
    domains: Domains,
    cpus: Vec<CpuFacts>,
    llc: Vec<LlcShared>,
    features: FeatureSet,
    behavior: Behavior,
}

impl Machine {
    fn new(topo: Topology) -> Machine {
        let domains = topo.build_domains();
        let n = topo.nr_cpus() as u32;
        let mut llc = LlcShared::for_domains(&domains);
        for cpu in 0..n {
            llc[domains.sd_llc_id(cpu) as usize].nr_idle_scan = domains.sd_llc_size(cpu) as i32;
        }
        Machine {
            topo,
            domains,
            cpus: vec![CpuFacts::busy(1); n as usize],
            llc,
            features: FeatureSet::v7_3(),
            behavior: Behavior::v7_3(),
        }
    }
    fn preset(name: &str) -> Machine {
        assert!(PRESET_NAMES.contains(&name), "{name} is not a preset");
        Machine::new(Topology::preset(name).unwrap())
    }
    fn nr_cpus(&self) -> u32 {
        self.cpus.len() as u32
    }
    fn tasks(&self, cpus: &[u32]) -> Vec<Task> {
        cpus.iter().enumerate().map(|(i, &c)| task(i as u32, c, self.nr_cpus())).collect()
    }
    fn idle(&mut self, cpus: impl IntoIterator<Item = u32>) {
        for c in cpus {
            self.cpus[c as usize] = CpuFacts::IDLE;
        }
    }
    fn llc_of(&mut self, cpu: u32) -> &mut LlcShared {
        &mut self.llc[self.domains.sd_llc_id(cpu) as usize]
    }
    fn ctx(&mut self) -> SelectCtx<'_> {
        SelectCtx {
            topo: &self.topo,
            domains: &self.domains,
            cpus: &self.cpus,
            llc: &mut self.llc,
            features: &self.features,
            behavior: &self.behavior,
        }
    }
    fn select(&mut self, tasks: &mut [Task], w: &Waking) -> Placement {
        select_task_rq_fair(&mut self.ctx(), tasks, w)
    }
}

const W: TaskId = TaskId(0);
const P: TaskId = TaskId(1);

// ---- (1) sync wakeup, waker alone on its CPU ----------------------------------------------

#[test]
fn sync_wakeup_waker_alone_goes_to_the_waker_cpu() {
    // smp:4, waker W on CPU 0 (running alone), wakee P last ran on CPU 2, every CPU busy.
    // wake_affine_idle: CPU 0 not idle; sync and nr_running == 1 → CPU 0. SIS: CPU 0 busy,
    // prev 2 busy, recent_used_cpu == prev, no SMT; the scan 1, 2, 3 finds nothing → CPU 0.
    let mut m = Machine::new(Topology::smp(4));
    let mut tasks = m.tasks(&[0, 2]);
    let w = Waking::new(P, 2, 0, Some(W), TTWU_SYNC);
    let pl = m.select(&mut tasks, &w);
    assert_eq!(
        pl,
        Placement {
            cpu: 0,
            affine_attempt: true,
            affine: true,
            affine_rule: Some(AffineRule::SyncAlone),
            reason: SelectReason::SisNone,
        }
    );
    // record_wakee ran on the waker.
    assert_eq!((tasks[0].last_wakee, tasks[0].wakee_flips), (Some(P), 1));
    assert_eq!(tasks[1].recent_used_cpu, 2);
}

#[test]
fn sync_wakeup_then_sis_moves_off_the_busy_waker_cpu() {
    // Same wakeup; CPU 3 idle: wake_affine still says CPU 0, but SIS scans 1, 2, 3 → CPU 3.
    let mut m = Machine::new(Topology::smp(4));
    m.idle([3]);
    let mut tasks = m.tasks(&[0, 2]);
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 0, Some(W), TTWU_SYNC));
    assert_eq!((pl.cpu, pl.affine, pl.reason), (3, true, SelectReason::SisIdleCpu(3)));

    // prev (CPU 2) idle instead: the sync rule comes before "prev idle" in wake_affine_idle,
    // so wake_affine picks CPU 0, and SIS step 2 sends P back to its idle, cache-affine prev.
    let mut m = Machine::new(Topology::smp(4));
    m.idle([2]);
    let mut tasks = m.tasks(&[0, 2]);
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 0, Some(W), TTWU_SYNC));
    assert_eq!(
        (pl.cpu, pl.affine, pl.affine_rule, pl.reason),
        (2, true, Some(AffineRule::SyncAlone), SelectReason::SisPrev)
    );
}

#[test]
fn interrupt_wakeup_on_an_idle_cpu_keeps_that_target() {
    // A wakeup from interrupt context on idle CPU 0 (no waker task): wake_affine_idle's first
    // rule (this CPU idle, cache-affine, prev busy) → CPU 0; SIS step 1: target idle → CPU 0.
    let mut m = Machine::new(Topology::smp(4));
    m.idle([0]);
    let mut tasks = m.tasks(&[0, 2]);
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 0, None, wf::TTWU));
    assert_eq!((pl.cpu, pl.affine_rule, pl.reason), (0, Some(AffineRule::IdleThis), SelectReason::SisTarget));
    // Steps 1-3 return before recent_used_cpu is touched.
    assert_eq!(tasks[1].recent_used_cpu, 2);
}

// ---- (2) delayed-dequeue entity on the waker's CPU (§6.4) -----------------------------------

fn delayed_waker_cpu(ignore_delayed: bool, waker_cpu_load: u64) -> Placement {
    // CPU 0 runs W and holds one delayed entity (nr_running 2). PELT: W's h_load 1000, P's
    // 500; prev CPU 2 carries 1500 (P's blocked load included). Everything busy.
    let mut m = Machine::new(Topology::smp(4));
    m.behavior.wa_idle_ignore_delayed = ignore_delayed;
    m.cpus[0] = CpuFacts { nr_running: 2, nr_delayed: 1, cpu_load: waker_cpu_load, ..CpuFacts::busy(2) };
    m.cpus[2].cpu_load = 1500;
    let mut tasks = m.tasks(&[0, 2]);
    let w = Waking { p_h_load: 500, waker_h_load: 1000, ..Waking::new(P, 2, 0, Some(W), TTWU_SYNC) };
    m.select(&mut tasks, &w)
}

#[test]
fn delayed_entity_and_the_wa_idle_ignore_delayed_toggle() {
    // 6.16+: nr_running − delayed == 1 → the sync rule fires → CPU 0.
    let on = delayed_waker_cpu(true, 2000);
    assert_eq!((on.cpu, on.affine, on.affine_rule), (0, true, Some(AffineRule::SyncAlone)));

    // 6.12–6.15: nr_running == 2 → no sync rule, prev busy → wake_affine_weight:
    // this = (2000 − 1000 + 500)·100·1024 = 153_600_000, prev = (1500 − 500)·108·1024 + 1 =
    // 110_592_001; not smaller → prev (CPU 2), and SIS finds nothing idle.
    let off = delayed_waker_cpu(false, 2000);
    assert_eq!(
        (off.cpu, off.affine_attempt, off.affine, off.affine_rule, off.reason),
        (2, true, false, Some(AffineRule::Undecided), SelectReason::SisNone)
    );

    // Off, with a lighter waker CPU: this = (1200 − 1000 + 500)·100·1024 = 71_680_000 <
    // 110_592_001 → WA_WEIGHT picks CPU 0.
    let off_light = delayed_waker_cpu(false, 1200);
    assert_eq!((off_light.cpu, off_light.affine_rule), (0, Some(AffineRule::Weight)));
}

#[test]
fn wake_affine_weight_bias_and_sync_tie_break() {
    // smp:4 (MC, imbalance_pct 117 → WA_BIAS factor 108 for prev). Nothing idle; P has no
    // load of its own; prev CPU 2 carries 1000, so prev_eff = 1000·108·1024.
    let weigh = |this_load: u64, wake_flags: u32, waker_h_load: u64, p_h_load: u64, bias: bool| {
        let mut m = Machine::new(Topology::smp(4));
        m.features.set(Feature::WA_BIAS, bias);
        m.cpus[0] = CpuFacts { cpu_load: this_load, ..CpuFacts::busy(2) };
        m.cpus[2].cpu_load = 1000;
        let mut tasks = m.tasks(&[0, 2]);
        let w = Waking { waker_h_load, p_h_load, ..Waking::new(P, 2, 0, Some(W), wake_flags) };
        m.select(&mut tasks, &w).affine_rule
    };
    // this_eff = load·100·1024: 107_900 < 108_000 → this CPU; 108_000 is not smaller → prev.
    assert_eq!(weigh(1079, wf::TTWU, 0, 0, true), Some(AffineRule::Weight));
    assert_eq!(weigh(1080, wf::TTWU, 0, 0, true), Some(AffineRule::Undecided));
    // Sync: the waker's own 80 is discounted (1160 − 80 = 1080) and prev gets +1: a tie goes
    // to the waker's CPU.
    assert_eq!(weigh(1160, TTWU_SYNC, 80, 0, true), Some(AffineRule::Weight));
    // NO_WA_BIAS: 1079 against 1000 → prev.
    assert_eq!(weigh(1079, wf::TTWU, 0, 0, false), Some(AffineRule::Undecided));
    // The waker's h_load (80) exceeds its CPU's load (50): this CPU at once, whatever P
    // weighs (the full sum would be (50 − 80 + 2000)·100 against a negative prev side).
    assert_eq!(weigh(50, TTWU_SYNC, 80, 2000, true), Some(AffineRule::Weight));
    assert_eq!(weigh(80, TTWU_SYNC, 80, 2000, true), Some(AffineRule::Undecided));
}

// ---- (3) idle cores on the SMT desktop -------------------------------------------------------

/// desktop-8c16t: core c = CPUs c and c+8, one LLC. W and P both on CPU 2, so no wake_affine
/// runs and the target is prev = 2 (busy). CPU 3 idle (sibling 11 busy); core 5 (5, 13) idle.
fn desktop() -> (Machine, Vec<Task>) {
    let mut m = Machine::preset("desktop-8c16t");
    m.idle([3, 5, 13]);
    let tasks = m.tasks(&[2, 2]);
    (m, tasks)
}

#[test]
fn select_idle_core_finds_a_whole_idle_core() {
    let (mut m, mut tasks) = desktop();
    m.llc_of(0).has_idle_cores = true;
    // The idle-core scan is not limited by SIS_UTIL (nr_idle_scan 1 would allow one CPU).
    m.llc_of(0).nr_idle_scan = 1;
    // Scan from 3: core 3 has busy 11 (CPU 3 remembered), core 4 busy, core 5 wholly idle.
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 2, Some(W), wf::TTWU));
    assert_eq!((pl.cpu, pl.affine_attempt, pl.reason), (5, false, SelectReason::SisIdleCore(5)));
    assert!(m.llc_of(0).has_idle_cores, "a successful scan keeps the hint");
}

#[test]
fn stale_idle_core_hint_is_cleared_and_an_idle_thread_used() {
    let (mut m, mut tasks) = desktop();
    m.cpus[13] = CpuFacts::busy(1);
    m.llc_of(0).has_idle_cores = true;
    m.llc_of(0).nr_idle_scan = 1;
    // No core is wholly idle: the whole LLC is scanned, the hint cleared, and the first idle
    // thread met (CPU 3) returned.
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 2, Some(W), wf::TTWU));
    assert_eq!(pl.reason, SelectReason::SisIdleThread(3));
    assert!(!m.llc_of(0).has_idle_cores);

    // Next wakeup: per-CPU mode, prev's sibling 10 busy, SIS_UTIL allows one CPU: 3 → idle.
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 2, Some(W), wf::TTWU));
    assert_eq!(pl.reason, SelectReason::SisIdleCpu(3));

    // nr_idle_scan 0: no scan at all, even with idle CPUs → the target.
    m.llc_of(0).nr_idle_scan = 0;
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 2, Some(W), wf::TTWU));
    assert_eq!((pl.cpu, pl.reason), (2, SelectReason::SisNone));
}

#[test]
fn nr_idle_scan_zero_ends_even_an_idle_core_scan_without_clearing_the_hint() {
    let (mut m, mut tasks) = desktop();
    m.llc_of(0).has_idle_cores = true;
    m.llc_of(0).nr_idle_scan = 0;
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 2, Some(W), wf::TTWU));
    assert_eq!((pl.cpu, pl.reason), (2, SelectReason::SisNone));
    assert!(m.llc_of(0).has_idle_cores);
}

#[test]
fn select_idle_smt_prefers_an_idle_sibling_of_prev() {
    // No hint: before the LLC scan, an idle SMT sibling of prev (CPU 10 for prev 2) wins over
    // CPU 3, which the scan would meet first.
    let (mut m, mut tasks) = desktop();
    m.idle([10]);
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 2, Some(W), wf::TTWU));
    assert_eq!(pl.reason, SelectReason::SisIdleSmt(10));
}

#[test]
fn update_idle_core_sets_the_hint_only_for_a_wholly_idle_core() {
    let (mut m, _) = desktop();
    // CPU 3 goes idle while its sibling 11 is busy: no hint.
    update_idle_core(&mut m.ctx(), 3);
    assert!(!m.llc_of(0).has_idle_cores);
    // CPU 5 goes idle with its sibling 13 idle: hint set.
    update_idle_core(&mut m.ctx(), 5);
    assert!(m.llc_of(0).has_idle_cores);
    // Non-SMT machines never set it.
    let mut smp = Machine::new(Topology::smp(4));
    smp.idle(0..4);
    update_idle_core(&mut smp.ctx(), 1);
    assert!(!smp.llc_of(0).has_idle_cores);
}

// ---- (4) SIS_UTIL scan depth ------------------------------------------------------------------

#[test]
fn sis_util_depth_matches_the_spec_worked_example() {
    // Spec §3.18 example 4: LLC of 16 CPUs, imbalance_pct 117, by average utilisation.
    let depth16 = |avg: u64| update_idle_cpu_scan(avg * 16, 16, 117);
    assert_eq!([depth16(256), depth16(512), depth16(768)], [14, 10, 3]);
    assert_eq!([depth16(847), depth16(848), depth16(900), depth16(1024)], [1, 0, 0, 0]);
    assert_eq!(depth16(0), 16);
    // LLC of 8 CPUs.
    let depth8 = |avg: u64| update_idle_cpu_scan(avg * 8, 8, 117);
    assert_eq!([depth8(512), depth8(819), depth8(820), depth8(1024)], [5, 1, 0, 0]);

    // The LLC refresh sums cpu_util over the LLC of smp:16 (MC, pct 117).
    let mut m = Machine::new(Topology::smp(16));
    for c in &mut m.cpus {
        c.cpu_util = 512;
    }
    update_llc_idle_scan(&mut m.ctx(), 7);
    assert_eq!(m.llc_of(0).nr_idle_scan, 10);
    // Without SIS_UTIL the value is left alone.
    m.features.set(Feature::SIS_UTIL, false);
    m.cpus.iter_mut().for_each(|c| c.cpu_util = 0);
    update_llc_idle_scan(&mut m.ctx(), 7);
    assert_eq!(m.llc_of(0).nr_idle_scan, 10);
}

#[test]
fn nr_idle_scan_bounds_the_llc_scan() {
    // smp:8, P wakes on its own CPU 0 (busy); only CPU 5 is idle. The scan examines CPUs 1, 2,
    // … and stops after nr_idle_scan of them.
    let run = |scan: i32, sis_util: bool| {
        let mut m = Machine::new(Topology::smp(8));
        m.idle([5]);
        m.features.set(Feature::SIS_UTIL, sis_util);
        m.llc_of(0).nr_idle_scan = scan;
        let mut tasks = m.tasks(&[0, 0]);
        m.select(&mut tasks, &Waking::new(P, 0, 0, Some(W), wf::TTWU)).reason
    };
    assert_eq!(run(0, true), SelectReason::SisNone, "nr_idle_scan 0: no scan");
    assert_eq!(run(4, true), SelectReason::SisNone, "CPUs 1-4 examined, 5 not reached");
    assert_eq!(run(5, true), SelectReason::SisIdleCpu(5));
    assert_eq!(run(0, false), SelectReason::SisIdleCpu(5), "NO_SIS_UTIL: unbounded");
    // The zero-initialised objects of a fresh domain build scan nothing.
    let fresh = LlcShared::for_domains(&Topology::smp(8).build_domains());
    assert_eq!(fresh, vec![LlcShared { has_idle_cores: false, nr_idle_scan: 0, util_avg: 0, capacity: 0 }]);
}

// ---- (5) wake_wide ----------------------------------------------------------------------------

#[test]
fn wake_wide_turns_on_for_a_one_to_many_waker() {
    // smp:8 (sd_llc_size 8). Dispatcher W on CPU 0 wakes 64 different workers, each of which
    // has 8 flips of its own, all last on busy CPU 3. At the k-th wakeup W has k flips;
    // wide iff min(k, 8) ≥ 8 and max(k, 8) ≥ 8·8, i.e. from k = 64 on.
    let mut m = Machine::new(Topology::smp(8));
    let mut tasks: Vec<Task> = (0..=66).map(|i| task(i, if i == 0 { 0 } else { 3 }, 8)).collect();
    for t in &mut tasks[1..] {
        t.wakee_flips = 8;
    }
    for k in 1..=64u32 {
        let pl = m.select(&mut tasks, &Waking::new(TaskId(k), 3, 0, Some(W), wf::TTWU));
        assert_eq!(tasks[0].wakee_flips, k);
        assert_eq!(pl.affine_attempt, k < 64, "wakeup {k}");
        if k == 64 {
            // Not affine: the domain loop stops at the first level and SIS runs on prev.
            assert_eq!((pl.cpu, pl.reason), (3, SelectReason::SisNone));
        }
    }
    // Jiffy 250 is not after decay_ts + HZ (0 + 250): no halving, still wide.
    let pl = m.select(&mut tasks, &Waking { jiffies: 250, ..Waking::new(TaskId(65), 3, 0, Some(W), wf::TTWU) });
    assert_eq!((tasks[0].wakee_flips, pl.affine_attempt), (65, false));
    // Jiffy 251: one halving (65 → 32), then the flip (33): affine again.
    let pl = m.select(&mut tasks, &Waking { jiffies: 251, ..Waking::new(TaskId(66), 3, 0, Some(W), wf::TTWU) });
    assert_eq!((tasks[0].wakee_flips, tasks[0].wakee_flip_decay_ts, pl.affine_attempt), (33, 251, true));
    // A wakee with 7 flips is never wide, however busy the waker.
    tasks[1].wakee_flips = 7;
    tasks[0].wakee_flips = 10_000;
    let pl = m.select(&mut tasks, &Waking { jiffies: 251, ..Waking::new(TaskId(1), 3, 0, Some(W), wf::TTWU) });
    assert!(pl.affine_attempt);
}

#[test]
fn waking_the_same_task_again_is_not_a_flip() {
    let mut m = Machine::new(Topology::smp(4));
    let mut tasks = m.tasks(&[0, 2]);
    for _ in 0..3 {
        m.select(&mut tasks, &Waking::new(P, 2, 0, Some(W), wf::TTWU));
    }
    assert_eq!(tasks[0].wakee_flips, 1);
}

// ---- (6) reciprocal sync wakeups (§6.5) -------------------------------------------------------

/// A on `waker_cpu` running alone wakes B (prev `prev`, idle) with WF_SYNC; B last woke A.
fn reciprocal(preset: &str, toggle: bool, b_last_wakee: Option<TaskId>, waker_nr_running: u32) -> Placement {
    let mut m = Machine::preset(preset);
    m.behavior.sync_reciprocal_waker_cpu = toggle;
    m.idle([1]);
    m.cpus[0] = CpuFacts::busy(waker_nr_running);
    let mut tasks = m.tasks(&[0, 1]);
    tasks[1].last_wakee = b_last_wakee;
    m.select(&mut tasks, &Waking::new(P, 1, 0, Some(W), TTWU_SYNC))
}

#[test]
fn reciprocal_sync_toggle_keeps_the_waker_cpu_on_non_smt_altra() {
    // ampere-altra-80: no SMT, LLC = core pair {0, 1}. wake_affine: sync rule → CPU 0.
    let off = reciprocal("ampere-altra-80", false, Some(W), 1);
    assert_eq!((off.cpu, off.affine, off.reason), (1, true, SelectReason::SisPrev));
    let on = reciprocal("ampere-altra-80", true, Some(W), 1);
    assert_eq!((on.cpu, on.affine, on.reason), (0, true, SelectReason::SyncReciprocal));
    // Not reciprocal (B last woke someone else): unchanged.
    let one_way = reciprocal("ampere-altra-80", true, Some(TaskId(7)), 1);
    assert_eq!((one_way.cpu, one_way.reason), (1, SelectReason::SisPrev));
    // The waker is not alone: wake_affine_idle falls to "prev idle" → CPU 1 → no shortcut.
    let crowded = reciprocal("ampere-altra-80", true, Some(W), 2);
    assert_eq!(
        (crowded.cpu, crowded.affine_rule, crowded.reason),
        (1, Some(AffineRule::PrevIdle), SelectReason::SisTarget)
    );
}

#[test]
fn reciprocal_sync_toggle_is_ignored_with_smt() {
    // desktop-8c16t (SMT): the same pair is handled by SIS with or without the toggle.
    for toggle in [false, true] {
        let pl = reciprocal("desktop-8c16t", toggle, Some(W), 1);
        assert_eq!((pl.cpu, pl.affine, pl.reason), (1, true, SelectReason::SisPrev), "toggle {toggle}");
    }
}

// ---- (7) fork slow path on spr-2s-192 ---------------------------------------------------------

/// spr-2s-192: node 0 = CPUs 0-47 and 96-143 (one LLC), node 1 = 48-95 and 144-191. Idle
/// CPUs sit in C6 (290 µs exit) unless a test says otherwise.
fn spr() -> Machine {
    let mut m = Machine::preset("spr-2s-192");
    assert_eq!((m.domains.sd_llc_size(0), m.domains.sd_llc_id(150)), (96, 1));
    m.cpus.iter_mut().for_each(|c| *c = CpuFacts { idle_exit_latency_ns: 290_000, ..CpuFacts::IDLE });
    m
}

fn fork(m: &mut Machine) -> Placement {
    // The parent runs on CPU 0; the child has task_cpu 0 and no load of its own yet.
    let mut tasks = m.tasks(&[0, 0]);
    m.select(&mut tasks, &Waking::new(P, 0, 0, None, wf::FORK))
}

#[test]
fn fork_goes_to_the_shallowest_idle_cpu_of_the_least_busy_node() {
    let mut m = spr();
    // Node 0: 60 busy CPUs (36 idle); node 1: 10 busy (86 idle).
    for c in (0..48).chain(96..108).chain(48..58) {
        m.cpus[c] = CpuFacts::busy(1);
    }
    // Two idle CPUs of node 1 in C1 (1 µs), CPU 170 idled more recently; a C6 CPU idled
    // even later loses to them: the exit latency counts first.
    m.cpus[150] = CpuFacts { idle_exit_latency_ns: 1_000, idle_stamp: 5_000, ..CpuFacts::IDLE };
    m.cpus[170] = CpuFacts { idle_exit_latency_ns: 1_000, idle_stamp: 9_000, ..CpuFacts::IDLE };
    m.cpus[60].idle_stamp = 20_000;
    // NUMA level: both nodes have spare capacity; node 1 has 50 more idle CPUs, far above the
    // tolerated NUMA imbalance (imb_numa_nr 12 = 96/8, and 61 tasks > 12), so node 1 it is;
    // its shallowest, most recently idled CPU is 170. Below, 170's core (74, 170) is wholly
    // idle like the best other cores, and at SMT level both threads are idle: stay on 170.
    assert_eq!(imb_numa_nr(&m.topo, &m.domains, 0, &m.domains.of(0)[2]), 12);
    let pl = fork(&mut m);
    assert_eq!((pl.cpu, pl.affine_attempt, pl.reason), (170, false, SelectReason::SlowPath));
}

#[test]
fn fork_stays_on_the_local_node_while_the_numa_imbalance_is_small() {
    let mut m = spr();
    m.cpus[0] = CpuFacts::busy(1);
    // NUMA level: 95 vs 96 idle CPUs, imbalance 1 ≤ NUMA_IMBALANCE_MIN with 2 ≤ 12 running
    // → stay in node 0. MC level: the parent's core (0, 96) has one idle CPU, core 1 (1, 97)
    // two → core 1, its first idle CPU (equal states, equal stamps) is 1. SMT level of CPU 1:
    // both threads idle → stay.
    let pl = fork(&mut m);
    assert_eq!((pl.cpu, pl.reason), (1, SelectReason::SlowPath));
}

#[test]
fn fork_on_a_busy_machine_takes_the_least_loaded_cpu() {
    // smp:4, all busy: one group per CPU at MC level; the loads 300, 200, 100, 400 make the
    // groups fully busy; CPU 2 is the idlest group (avg_load 100) and beats the local one
    // (300) by more than the 17 % margin and 174 of load.
    let mut m = Machine::new(Topology::smp(4));
    for (c, load) in [300, 200, 100, 400].into_iter().enumerate() {
        m.cpus[c].cpu_load = load;
        m.cpus[c].cpu_util = 1024;
        m.cpus[c].cpu_runnable = 1024;
    }
    let mut tasks = m.tasks(&[0, 0]);
    let pl = m.select(&mut tasks, &Waking::new(P, 0, 0, None, wf::FORK));
    assert_eq!((pl.cpu, pl.reason), (2, SelectReason::SlowPath));
}

// ---- (8) cross-LLC sync wakeup on spr-2s-192 --------------------------------------------------

/// W runs alone on CPU 0 (node 0); P last ran on CPU 50 (node 1). Node 1 is wholly idle,
/// node 0 busy except `node0_idle`.
fn cross_llc(node0_idle: &[u32], wake_flags: u32, prev_busy: bool) -> (Machine, Placement) {
    let mut m = spr();
    for c in (0..48).chain(96..144) {
        m.cpus[c] = CpuFacts::busy(1);
    }
    m.idle(node0_idle.iter().copied());
    if prev_busy {
        m.cpus[50] = CpuFacts::busy(1);
    }
    let mut tasks = m.tasks(&[0, 50]);
    let pl = m.select(&mut tasks, &Waking::new(P, 50, 0, Some(W), wake_flags));
    assert_eq!(tasks[1].recent_used_cpu, 50);
    (m, pl)
}

#[test]
fn cross_llc_sync_wakeup_pulls_to_the_waker_llc_and_scans_only_there() {
    // Only the NUMA domain (WAKE_AFFINE, distance 21 ≤ 30) spans CPUs 0 and 50: wake_affine
    // there picks CPU 0 (sync, alone). SIS: prev is in another LLC (no step 2, no SMT
    // sibling search), the scan covers CPU 0's LLC only: 1 … 29 busy, 30 idle.
    let (m, pl) = cross_llc(&[30], TTWU_SYNC, false);
    assert_eq!(
        (pl.cpu, pl.affine_attempt, pl.affine, pl.affine_rule, pl.reason),
        (30, true, true, Some(AffineRule::SyncAlone), SelectReason::SisIdleCpu(30))
    );
    assert!(m.domains.of(0)[2].flags & sim::topology::SD_NUMA != 0);

    // Nothing idle in node 0: the target (CPU 0) although all of node 1 is idle.
    let (_, pl) = cross_llc(&[], TTWU_SYNC, false);
    assert_eq!((pl.cpu, pl.reason), (0, SelectReason::SisNone));
}

#[test]
fn cross_llc_wakeup_stays_on_an_idle_prev_or_follows_the_weights() {
    // Not sync: CPU 0 busy, prev 50 idle → wake_affine keeps prev; SIS target 50 is idle.
    let (_, pl) = cross_llc(&[30], wf::TTWU, false);
    assert_eq!(
        (pl.cpu, pl.affine, pl.affine_rule, pl.reason),
        (50, false, Some(AffineRule::PrevIdle), SelectReason::SisTarget)
    );

    // Prev busy and loaded: WA_WEIGHT at the NUMA domain (pct 117, bias 108):
    // this = (100 + 500)·100·1024 = 61_440_000 < prev = (2000 − 500)·108·1024 = 165_888_000.
    let mut m = spr();
    for c in (0..48).chain(96..144) {
        m.cpus[c] = CpuFacts::busy(1);
    }
    m.idle([30]);
    m.cpus[0].cpu_load = 100;
    m.cpus[50] = CpuFacts { cpu_load: 2000, ..CpuFacts::busy(1) };
    let mut tasks = m.tasks(&[0, 50]);
    let w = Waking { p_h_load: 500, ..Waking::new(P, 50, 0, Some(W), wf::TTWU) };
    let pl = m.select(&mut tasks, &w);
    assert_eq!((pl.cpu, pl.affine_rule, pl.reason), (30, Some(AffineRule::Weight), SelectReason::SisIdleCpu(30)));
}

// ---- other rules ------------------------------------------------------------------------------

#[test]
fn cluster_machine_remembers_an_idle_prev_in_another_cluster() {
    // arm64-128: LLC 0-31 in 4-CPU clusters. W alone on CPU 0 wakes P (prev 8, idle, another
    // cluster) with WF_SYNC → target 0. SIS: prev is cache-affine and idle but in another
    // cluster → remembered. SIS_UTIL allows 3 CPUs: the cluster-first pass examines 1, 2, 3
    // and runs out → prev.
    let mut m = Machine::preset("arm64-128");
    m.idle([8]);
    m.llc_of(0).nr_idle_scan = 3;
    let mut tasks = m.tasks(&[0, 8]);
    let pl = m.select(&mut tasks, &Waking::new(P, 8, 0, Some(W), TTWU_SYNC));
    assert_eq!((pl.cpu, pl.reason), (8, SelectReason::SisPrevAff));
    // With a deeper scan the LLC pass reaches CPU 8 itself after the cluster.
    m.llc_of(0).nr_idle_scan = 32;
    let pl = m.select(&mut tasks, &Waking::new(P, 8, 0, Some(W), TTWU_SYNC));
    assert_eq!((pl.cpu, pl.reason), (8, SelectReason::SisIdleCpu(8)));
}

#[test]
fn recent_used_cpu_is_tried_and_always_updated() {
    // smp:8: P woke last on CPU 6 (recent) and now has prev 2; both busy except 6.
    let mut m = Machine::new(Topology::smp(8));
    m.idle([6]);
    let mut tasks = m.tasks(&[0, 2]);
    tasks[1].recent_used_cpu = 6;
    m.llc_of(0).nr_idle_scan = 0;
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 2, Some(W), wf::TTWU));
    assert_eq!((pl.cpu, pl.reason), (6, SelectReason::SisRecent));
    assert_eq!(tasks[1].recent_used_cpu, 2);
}

#[test]
fn sched_idle_cpus_count_as_idle_for_normal_tasks_only() {
    // smp:4: CPU 3 runs only a SCHED_IDLE task; target and prev (2) busy, W on CPU 2.
    let mut m = Machine::new(Topology::smp(4));
    m.cpus[3] = CpuFacts { nr_idle_policy: 1, ..CpuFacts::busy(1) };
    let mut tasks = m.tasks(&[2, 2]);
    let w = Waking::new(P, 2, 2, Some(W), wf::TTWU);
    assert_eq!(m.select(&mut tasks, &w).reason, SelectReason::SisIdleCpu(3));
    let idle_p = Waking { p_idle_policy: true, ..w };
    assert_eq!(m.select(&mut tasks, &idle_p).reason, SelectReason::SisNone);
}

#[test]
fn current_cpu_flag_and_pinned_placement() {
    let mut m = Machine::new(Topology::smp(4));
    let mut tasks = m.tasks(&[0, 2]);
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 0, Some(W), wf::TTWU | wf::CURRENT_CPU));
    assert_eq!((pl.cpu, pl.reason), (0, SelectReason::CurrentCpu));
    assert_eq!(tasks[0].last_wakee, Some(P), "record_wakee runs first");
    assert_eq!(Placement::pinned(3).reason, SelectReason::Pinned);
}

#[test]
fn no_wake_affine_without_a_shared_affine_domain_or_without_the_feature_flags() {
    // WA_IDLE and WA_WEIGHT off: wake_affine decides nothing and keeps prev.
    let mut m = Machine::new(Topology::smp(4));
    m.features.set(Feature::WA_IDLE, false);
    m.features.set(Feature::WA_WEIGHT, false);
    let mut tasks = m.tasks(&[0, 2]);
    let pl = m.select(&mut tasks, &Waking::new(P, 2, 0, Some(W), TTWU_SYNC));
    assert_eq!((pl.cpu, pl.affine_attempt, pl.affine_rule), (2, true, Some(AffineRule::Undecided)));
    // An exiting waker cancels WF_SYNC: with WA_IDLE back on, the sync rule no longer fires.
    m.features.set(Feature::WA_IDLE, true);
    let pl = m.select(&mut tasks, &Waking { waker_exiting: true, ..Waking::new(P, 2, 0, Some(W), TTWU_SYNC) });
    assert_eq!((pl.cpu, pl.affine_rule), (2, Some(AffineRule::Undecided)));
}

#[test]
fn asymmetric_capacity_scans_for_a_cpu_the_task_fits() {
    // smp:4 with little CPUs 0-1 (capacity 446) and big CPUs 2-3 (1024). P (util 400) wakes
    // on little CPU 0, idle: 400·1280 ≥ 446·1024, so it does not fit and step 1 fails; the
    // select_idle_capacity scan from CPU 0 ranks CPU 0 (idle, misfit) and returns idle big
    // CPU 2 as the first CPU that fits.
    let mut topo = Topology::smp(4);
    for c in &mut topo.cpus[..2] {
        c.capacity = 446;
    }
    assert!(topo.asym_capacity());
    let mut m = Machine::new(topo);
    m.idle([0, 2]);
    m.cpus[0].capacity = 446;
    m.cpus[1].capacity = 446;
    let mut tasks = m.tasks(&[0, 0]);
    let w = Waking { p_util: 400, ..Waking::new(P, 0, 0, None, wf::TTWU) };
    let pl = m.select(&mut tasks, &w);
    assert_eq!((pl.cpu, pl.reason), (2, SelectReason::SisIdleCapacity(2)));
    // A small task fits the little CPU: step 1 keeps it.
    let small = Waking { p_util: 100, ..w };
    assert_eq!(m.select(&mut tasks, &small).reason, SelectReason::SisTarget);
    // No big CPU idle: the best-ranked idle little CPU.
    m.cpus[2] = CpuFacts::busy(1);
    assert_eq!(m.select(&mut tasks, &w).reason, SelectReason::SisIdleCapacity(0));
}
