//! The spec's worked examples (kernel-fair.md §3.18, §6.2) and hand-computed scenarios, on a
//! bare runqueue.

use super::*;
use crate::config::{SchedConfig, WakeupPreemptVariant};

/// A runqueue with entities, parameters for an 8-CPU machine (base slice 2.8 ms) and a clock.
struct Rig {
    cfs: CfsRq,
    ents: Vec<SchedEntity>,
    params: FairParams,
    now: u64,
}

const A: TaskId = TaskId(0);
const B: TaskId = TaskId(1);
const C: TaskId = TaskId(2);

impl Rig {
    fn new(cfg: SchedConfig) -> Rig {
        let params = FairParams::new(&cfg, 8);
        assert_eq!(params.base_slice, 2_800_000);
        let ents = (0..4).map(|_| SchedEntity::new(Policy::Normal, 0, None)).collect();
        Rig { cfs: CfsRq::default(), ents, params, now: 1_000_000_000 }
    }
    fn v7_3() -> Rig {
        Rig::new(SchedConfig::v7_3())
    }
    fn f(&mut self) -> Fair<'_> {
        Fair::new(&mut self.cfs, &mut self.ents, &self.params, self.now)
    }
    /// Enqueues a waking task with saved lag `vlag`.
    fn wake(&mut self, t: TaskId, vlag: i64) -> Resched {
        self.ents[t.idx()].vlag = vlag;
        let mut f = self.f();
        f.enqueue_task_fair(t, enq::WAKEUP);
        f.resched
    }
    /// Switches `t` in as the running task.
    fn run(&mut self, t: TaskId) {
        let mut f = self.f();
        if let Some(c) = f.cfs.curr {
            f.put_prev_task_fair(c, None);
        }
        f.set_next_task_fair(t, true);
    }
    fn advance(&mut self, ns: u64) -> Resched {
        self.now += ns;
        let mut f = self.f();
        f.update_curr();
        f.resched
    }
    fn v(&mut self) -> u64 {
        self.f().avg_vruntime()
    }
    fn lag(&mut self, t: TaskId) -> i64 {
        let v = self.v();
        v.wrapping_sub(self.ents[t.idx()].vruntime) as i64
    }
    fn preempt(&mut self, t: TaskId, flags: u32) -> WakeupVerdict {
        self.f().wakeup_preempt_fair(t, flags, false, true)
    }
}

#[test]
fn new_task_gets_half_a_slice() {
    let mut r = Rig::v7_3();
    let v = r.v();
    r.f().enqueue_task_fair(A, enq::INITIAL);
    assert_eq!(r.ents[0].vruntime, v);
    assert_eq!(r.ents[0].deadline, v.wrapping_add(1_400_000));
}

/// §3.18 example 2: lag inflation.
#[test]
fn lag_inflation_preserves_the_stored_lag() {
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.wake(B, 0);
    let v = r.v();
    r.wake(C, 1_000_000);
    assert_eq!(r.ents[2].vruntime, v.wrapping_sub(1_500_000));
    assert_eq!(r.v(), v.wrapping_sub(500_000));
    assert_eq!(r.lag(C), 1_000_000);
}

/// §3.18 example 3(a): a zero-lag wakee does not preempt a protected, eligible curr.
#[test]
fn run_to_parity_protects_an_eligible_curr() {
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.run(A);
    assert_eq!(r.ents[0].vprot, r.ents[0].deadline);
    r.advance(100_000);
    r.wake(B, 0);
    assert_eq!(r.ents[1].vruntime, r.ents[0].vruntime, "B sits at V = vA");
    let verdict = r.preempt(B, wf::TTWU);
    assert_eq!(verdict, WakeupVerdict { preempt: false, reason: WakeupReason::PickedOther });
    assert_eq!(r.ents[0].vprot, r.ents[0].deadline, "update_protect_slice leaves vprot");
    // A keeps the CPU until its request is used up, noticed at an update_curr.
    assert_eq!(r.advance(2_000_000), Resched::None);
    assert_eq!(r.advance(700_000), Resched::Lazy);
}

/// §3.18 example 3(b): a wakee with positive lag makes curr ineligible and preempts.
#[test]
fn positive_lag_wakee_preempts() {
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.run(A);
    r.advance(100_000);
    let va = r.ents[0].vruntime;
    r.wake(B, 300_000);
    assert_eq!(r.ents[1].vruntime, va.wrapping_sub(600_000), "placed at vA - 2l");
    assert_eq!(r.v(), va.wrapping_sub(300_000));
    assert!(!r.f().entity_eligible(A));
    let verdict = r.preempt(B, wf::TTWU);
    assert_eq!(verdict, WakeupVerdict { preempt: true, reason: WakeupReason::PickedWakee });
    assert_eq!(r.f().cfs.curr, Some(A));
    assert_eq!(r.ents[0].vprot, r.ents[0].vruntime, "protection cancelled");
}

/// §3.18 example 3(c): the probe returns a third entity, so there is no preemption, and the
/// ineligible curr runs on until its deadline.
#[test]
fn probe_returning_a_third_entity_does_not_preempt() {
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.wake(C, 0);
    r.run(A);
    assert_eq!(r.advance(1_000_000), Resched::None);
    assert!(!r.f().entity_eligible(A));
    r.wake(B, 0);
    let verdict = r.preempt(B, wf::TTWU);
    assert_eq!(verdict, WakeupVerdict { preempt: false, reason: WakeupReason::PickedOther });
    assert_eq!(r.f().pick_eevdf(true), Some(C), "an ineligible curr is dropped despite its protection");
    // Parity is not an event: A runs on until its deadline is noticed.
    assert_eq!(r.advance(1_700_000), Resched::None);
    assert_eq!(r.advance(200_000), Resched::Lazy);
}

/// §3.18 example 3(d): a shorter custom slice ignores protection; 7.3 preempts whenever the
/// wakee is eligible, 7.2 only if the unprotected pick returns it.
#[test]
fn shorter_slice_wakee_ignores_protection() {
    for (variant, expect) in [(WakeupPreemptVariant::V7_3, true), (WakeupPreemptVariant::V7_2, false)] {
        let mut cfg = SchedConfig::v7_3();
        cfg.behavior.wakeup_preempt = variant;
        let mut r = Rig::new(cfg);
        r.ents[1] = SchedEntity::new(Policy::Normal, 0, Some(1_000_000));
        r.wake(A, 0);
        r.run(A);
        // Less than 1 ms of A's request is left: its deadline is before B's V + 1 ms.
        r.advance(2_000_000);
        r.wake(B, 0);
        let verdict = r.preempt(B, wf::TTWU);
        assert_eq!(verdict.preempt, expect, "{variant:?}: {verdict:?}");
    }
    // With more than 1 ms left, both preempt because the pick returns B.
    for variant in [WakeupPreemptVariant::V7_3, WakeupPreemptVariant::V7_2] {
        let mut cfg = SchedConfig::v7_3();
        cfg.behavior.wakeup_preempt = variant;
        let mut r = Rig::new(cfg);
        r.ents[1] = SchedEntity::new(Policy::Normal, 0, Some(1_000_000));
        r.wake(A, 0);
        r.run(A);
        r.advance(100_000);
        r.wake(B, 0);
        assert_eq!(r.preempt(B, wf::TTWU), WakeupVerdict { preempt: true, reason: WakeupReason::PickedWakee });
    }
}

/// §3.18 example 5: equal vruntimes are both eligible; curr only wins with a strictly earlier
/// deadline.
#[test]
fn eligibility_at_equality() {
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.wake(B, 0);
    assert_eq!(r.ents[0].vruntime, r.ents[1].vruntime);
    assert!(r.f().entity_eligible(A) && r.f().entity_eligible(B));
    // FIFO among equal deadlines in the tree.
    assert_eq!(r.f().pick_eevdf(false), Some(A));
    r.run(B);
    // Equal deadline: a tree entity beats curr when protection is not asked for.
    assert_eq!(r.ents[0].deadline, r.ents[1].deadline);
    assert_eq!(r.f().pick_eevdf(false), Some(A));
    assert_eq!(r.f().pick_eevdf(true), Some(B), "protected curr");
}

/// §6.2: A and B wake with lag 0, A runs and wakes C. With forced wakeup preemption the
/// ineligible waker is rescheduled, and the pick then chooses B, not C.
#[test]
fn force_wakeup_preemption_picks_b_not_c() {
    let mut cfg = SchedConfig::v7_3();
    cfg.behavior.force_wakeup_preempt = true;
    for variant in [WakeupPreemptVariant::V7_3, WakeupPreemptVariant::V7_2] {
        cfg.behavior.wakeup_preempt = variant;
        let mut r = Rig::new(cfg.clone());
        r.wake(A, 0);
        r.wake(B, 0);
        r.run(A);
        r.advance(50_000);
        r.wake(C, 0);
        let verdict = r.preempt(C, wf::TTWU);
        assert_eq!(verdict, WakeupVerdict { preempt: true, reason: WakeupReason::ForcedWakerIneligible });
        assert_eq!(r.f().pick_next_entity(true), Some(B), "{variant:?}");
    }
    // Without it (every released kernel) the waker keeps running.
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.wake(B, 0);
    r.run(A);
    r.advance(50_000);
    r.wake(C, 0);
    assert_eq!(r.preempt(C, wf::TTWU), WakeupVerdict { preempt: false, reason: WakeupReason::PickedOther });
    // Interrupt-context wakeups were never forced.
    let mut r = Rig::new(cfg);
    r.wake(A, 0);
    r.wake(B, 0);
    r.run(A);
    r.advance(50_000);
    r.wake(C, 0);
    assert!(!r.f().wakeup_preempt_fair(C, wf::TTWU, false, false).preempt);
}

/// §6.3: `preempt_sync` can never reschedule as merged (it measures 0 ns); with the runtime
/// fix it does once the waker ran ≥ 125 µs (WF_RQ_SELECTED) and the wakee's deadline is earlier.
#[test]
fn preempt_sync_runtime_fix() {
    for (fix, expect) in [(false, WakeupReason::PreemptSyncNone), (true, WakeupReason::PreemptSyncResched)] {
        let mut cfg = SchedConfig::v7_3();
        cfg.features.set(Feature::NEXT_BUDDY, true);
        cfg.behavior.preempt_sync_runtime_fix = fix;
        let mut r = Rig::new(cfg);
        r.wake(A, 0);
        r.run(A);
        r.advance(200_000);
        r.wake(B, 1_000_000);
        let verdict = r.preempt(B, wf::TTWU | wf::SYNC | wf::RQ_SELECTED);
        assert_eq!(verdict.reason, expect, "fix={fix}");
        assert_eq!(verdict.preempt, fix);
        assert_eq!(r.f().cfs.next, Some(B), "the wakee became the buddy");
    }
}

/// NEXT_BUDDY with a non-sync wakeup: an eligible buddy wins the probe.
#[test]
fn next_buddy_nonsync_preempts_when_eligible() {
    let mut cfg = SchedConfig::v7_3();
    cfg.features.set(Feature::NEXT_BUDDY, true);
    let mut r = Rig::new(cfg);
    r.wake(A, 0);
    r.run(A);
    r.advance(100_000);
    r.wake(B, 0);
    assert_eq!(r.preempt(B, wf::TTWU), WakeupVerdict { preempt: true, reason: WakeupReason::PickedWakee });
}

/// DELAY_DEQUEUE: an ineligible sleeper stays queued, a pick removes it for good with its lag
/// clipped to zero, and a wakeup before that requeues it in place.
#[test]
fn delayed_dequeue_lifecycle() {
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.wake(B, 0);
    r.run(A);
    r.advance(1_000_000);
    assert!(!r.f().entity_eligible(A));
    assert!(!r.f().dequeue_task_fair(A, deq::SLEEP), "kept as delayed");
    assert!(r.ents[0].sched_delayed && r.ents[0].on_rq);
    assert_eq!((r.cfs.h_nr_queued, r.cfs.h_nr_runnable), (2, 1));
    // Switch to B: A goes back into the tree, still delayed.
    r.run(B);
    assert!(r.ents[0].in_tree);
    // A wakes while still ineligible: its lag only moved towards zero, so the clamp does
    // not bite and vruntime and the old deadline are kept.
    r.advance(200_000);
    let (v_before, d_before) = (r.ents[0].vruntime, r.ents[0].deadline);
    assert!(!r.f().entity_eligible(A));
    r.f().enqueue_task_fair(A, enq::DELAYED);
    assert!(!r.ents[0].sched_delayed);
    assert_eq!((r.cfs.h_nr_queued, r.cfs.h_nr_runnable), (2, 2));
    assert_eq!((r.ents[0].vruntime, r.ents[0].deadline), (v_before, d_before));
    // Sleep again; this time B runs until A has positive lag. DELAY_ZERO clips that lag to
    // zero on the wakeup, so A is re-placed with zero lag and a fresh request. The placement
    // takes V with A already out of the tree, i.e. V of B alone: B's vruntime.
    assert!(!r.f().dequeue_task_fair(A, deq::SLEEP));
    r.advance(3_000_000);
    assert!(r.f().entity_eligible(A));
    r.f().enqueue_task_fair(A, enq::DELAYED);
    let vb = r.ents[1].vruntime;
    assert_eq!(r.ents[0].vruntime, vb);
    assert_eq!(r.ents[0].deadline, vb.wrapping_add(2_800_000));
}

/// Picking a delayed entity dequeues it (DEQUEUE_DELAYED) with lag ≤ 0 and retries.
#[test]
fn picking_a_delayed_entity_drains_it() {
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.wake(B, 0);
    r.run(A);
    r.advance(1_000_000);
    assert!(!r.f().dequeue_task_fair(A, deq::SLEEP));
    {
        let mut f = r.f();
        f.put_prev_task_fair(A, None);
    }
    // B is picked (A is ineligible); then B runs far ahead so A becomes the EEVDF pick.
    assert_eq!(r.f().pick_next_entity(true), Some(B));
    r.f().set_next_task_fair(B, true);
    r.advance(5_000_000);
    let picked = r.f().pick_next_entity(true);
    assert_eq!(picked, Some(B), "A was picked, drained, and the pick retried");
    assert!(!r.ents[0].on_rq && !r.ents[0].sched_delayed);
    assert_eq!(r.ents[0].vlag, 0, "DELAY_ZERO: eligible when picked, leaves with lag 0");
    assert_eq!((r.cfs.h_nr_queued, r.cfs.h_nr_runnable), (1, 1));
}

/// ≤6.19's final dequeue of a delayed task (`finish_delayed_dequeue_entity()`, fair.c
/// 6.12.117 l.5541): the lag it leaves with is computed as for any dequeue, and a positive one
/// is dropped under DELAY_ZERO; without DELAY_ZERO it is kept, and the next wakeup places the
/// task ahead of V.
#[test]
fn delayed_task_leaving_for_good_drops_positive_lag_on_6_12() {
    let final_lag = |delay_zero: bool| {
        let mut cfg = crate::kernel::preset("v6.12").unwrap().config();
        cfg.features.set(Feature::DELAY_ZERO, delay_zero);
        let mut r = Rig::new(cfg);
        r.wake(A, 0);
        r.wake(B, 0);
        r.run(A);
        r.advance(1_000_000);
        assert!(!r.f().dequeue_task_fair(A, deq::SLEEP), "ineligible: kept as delayed");
        r.run(B);
        // B runs until A, still queued, has positive lag; then A leaves for good.
        r.advance(3_000_000);
        assert!(r.lag(A) > 0);
        assert!(r.f().dequeue_task_fair(A, deq::SLEEP | deq::DELAYED));
        assert!(!r.ents[0].on_rq && !r.ents[0].sched_delayed);
        r.ents[0].vlag
    };
    assert_eq!(final_lag(true), 0);
    assert!(final_lag(false) > 0);
}

fn preset_rig(name: &str) -> Rig {
    Rig::new(crate::kernel::preset(name).unwrap().config())
}

/// `pick_eevdf()`'s next buddy: 7.2+ take it only with `protect` (78cde54ea5f0); 6.18.44 and
/// 6.19 whatever `protect` says (`Behavior::buddy_pick_needs_protect`).
#[test]
fn a_short_pick_takes_the_buddy_on_6_19_not_on_7_2() {
    let pick = |kernel: &str| {
        let mut r = preset_rig(kernel);
        r.wake(A, 0);
        r.wake(B, 0);
        // C comes back with positive lag: placed before V, the earliest eligible deadline.
        r.wake(C, 500_000);
        r.run(A);
        // A runs on: V moves past B, which turns eligible, and A turns ineligible.
        r.advance(1_000_000);
        r.cfs.next = Some(B);
        assert!(r.f().entity_eligible(B) && !r.f().entity_eligible(A));
        (r.f().pick_eevdf(false), r.f().pick_eevdf(true))
    };
    assert_eq!(pick("v6.19"), (Some(B), Some(B)));
    assert_eq!(pick("v6.18"), (Some(B), Some(B)));
    assert_eq!(pick("v7.2"), (Some(C), Some(B)));
}

/// A shorter-slice wakee's preemption (PREEMPT_WAKEUP_SHORT): 7.2.12 also clears the running
/// task's buddies; 6.19.0 and 6.18.44 only cancel its protection
/// (`Behavior::short_preempt_clears_buddies`).
#[test]
fn a_short_preemption_clears_curr_as_buddy_on_7_2_only() {
    let next_after = |kernel: &str| {
        let mut r = preset_rig(kernel);
        r.wake(A, 0);
        r.wake(C, 0);
        r.run(A);
        // A, the next buddy, runs until it is ineligible, so no pick takes it.
        r.cfs.next = Some(A);
        r.advance(1_000_000);
        assert!(!r.f().entity_eligible(A));
        r.ents[B.idx()].custom_slice = true;
        r.ents[B.idx()].slice = 200_000;
        r.wake(B, 0);
        let v = r.preempt(B, wf::TTWU);
        assert!(v.preempt, "{kernel}: the shorter slice preempts ({v:?})");
        r.cfs.next
    };
    assert_eq!(next_after("v7.2"), None);
    assert_eq!(next_after("v6.19"), Some(A));
}

/// The wakeup pick of the 6.19 form: 6.18.44 and 7.x go through `pick_next_entity()`, which
/// dequeues a picked delayed entity for good and picks again, so the wakee can win; 6.19.0
/// compares `__pick_eevdf()` with the wakee and leaves the delayed entity queued
/// (`Behavior::wakeup_pick_drains_delayed`).
#[test]
fn the_wakeup_pick_drains_a_delayed_entity_on_6_18_not_on_6_19() {
    let check = |kernel: &str| {
        let mut r = preset_rig(kernel);
        r.wake(A, 0);
        r.wake(B, 0);
        r.run(B);
        r.advance(2_000_000);
        // B sleeps ineligible: kept queued as delayed.
        assert!(!r.f().dequeue_task_fair(B, deq::SLEEP));
        r.run(A);
        // A runs until B is eligible again and ahead of A.
        r.advance(4_000_000);
        assert!(r.f().entity_eligible(B));
        r.wake(C, 0);
        let v = r.preempt(C, wf::TTWU);
        (v.preempt, r.ents[B.idx()].on_rq)
    };
    assert_eq!(check("v6.18"), (true, false), "drained, then the wakee is the pick");
    assert_eq!(check("v6.19"), (false, true), "the delayed pick stands, still queued");
}

/// Yield: an eligible task jumps to its deadline and gets a new request.
#[test]
fn yield_forfeits_the_request() {
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.wake(B, 0);
    r.run(A);
    let d = r.ents[0].deadline;
    r.f().yield_task_fair(A);
    assert_eq!(r.ents[0].vruntime, d);
    assert_eq!(r.ents[0].deadline, d.wrapping_add(2_800_000));
}

/// Reweight of a sleeping task rescales its lag so that w·vlag is preserved.
#[test]
fn reweight_preserves_weighted_lag() {
    let mut r = Rig::v7_3();
    r.ents[0].vlag = 1_024_000;
    r.f().reweight_dequeued(A, weight::nice_to_weight(-5));
    assert_eq!(r.ents[0].vlag, 1_024_000 * 1024 / 3121);
}

/// 7.3's `reweight_eevdf()` of a queued task (`rescale_entity()`): V stays where it was, the
/// task goes back at `V - vlag·w/w'` with its deadline's distance from V scaled alike, and
/// reweights back and forth return it where it started. (Placing it again with
/// `place_entity()` inflated the lag at every call: a hog whose session siblings sleep and
/// wake sank further behind at each change of its effective weight.)
#[test]
fn flat_reweight_keeps_v_and_the_weighted_lag() {
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.wake(B, -1_000_000);
    r.wake(C, 400_000);
    r.run(A);
    r.advance(300_000);
    let (v, lag_b) = (r.v(), r.lag(B));
    let dl_b = r.ents[1].deadline.wrapping_sub(v) as i64;
    let w = r.ents[1].h_weight;
    r.f().reweight_h(B, w / 4);
    let near = |a: i64, b: i64| (a - b).abs() <= 4;
    assert!(near(r.v() as i64, v as i64), "V moved: {} -> {}", v, r.v());
    assert!(near(r.lag(B), 4 * lag_b), "lag {} -> {}", lag_b, r.lag(B));
    assert!(near(r.ents[1].deadline.wrapping_sub(v) as i64, 4 * dl_b));
    for _ in 0..100 {
        r.f().reweight_h(B, w);
        r.f().reweight_h(B, w / 4);
    }
    r.f().reweight_h(B, w);
    assert!(near(r.v() as i64, v as i64), "V after 201 reweights: {} -> {}", v, r.v());
    assert!(near(r.lag(B), lag_b), "lag after 201 reweights: {} -> {}", lag_b, r.lag(B));
}

/// The lag clamp is one max slice plus a tick, in virtual time.
#[test]
fn lag_is_clamped() {
    let mut r = Rig::v7_3();
    r.wake(A, 0);
    r.wake(B, 0);
    let v = r.v();
    assert_eq!(r.f().entity_lag(A, v.wrapping_add(100_000_000)), 2_800_000 + 4_000_000);
    assert_eq!(r.f().entity_lag(A, v.wrapping_sub(100_000_000)), -(2_800_000 + 4_000_000));
}

/// The load hierarchy of task groups (`group_pelt.rs`) on one CPU: session A with four
/// always-runnable hogs, session B with one, taking turns of 1 ms for 1 s with a tick each.
/// Each session's entity is always queued with its whole shares (1024), so the root cfs_rq
/// the balancer reads (`cpu_load()`) converges to two entities' worth, not the flat root's five
/// tasks' worth; `task_h_load()` (`update_cfs_rq_h_load()`: `h_load(A) = root_load ·
/// ge_A.load_avg / (root_load + 1)`, then `p_load · h_load(A) / (A.load_avg + 1)`) gives each
/// of A's hogs a quarter of B's lone hog.
#[test]
fn group_load_hierarchy_scales_task_h_load_by_the_session_share() {
    use super::group::{GroupSpec, Groups, SharesMode, shares_from_autogroup_nice};
    let cfg = SchedConfig::v7_3();
    let params = FairParams::new(&cfg, 1);
    let ag = |n: &str| GroupSpec { name: n.into(), parent: 0, shares: shares_from_autogroup_nice(0), idle: false };
    let mut groups = Groups::new(&[ag("/autogroup-1"), ag("/autogroup-2")], 1, SharesMode::Smp).unwrap();
    let mut ents: Vec<SchedEntity> = (0..5).map(|_| SchedEntity::new(Policy::Normal, 0, None)).collect();
    for (i, se) in ents.iter_mut().enumerate() {
        se.group = if i < 4 { 1 } else { 2 };
    }
    let mut cfs = CfsRq::default();
    let mut now = 1_000_000_000u64;
    {
        let mut f = Fair::new(&mut cfs, &mut ents, &params, now);
        f.groups = Some((&mut groups, 0));
        for t in 0..5 {
            f.enqueue_task_fair(TaskId(t), enq::INITIAL);
        }
    }
    let mut curr: Option<TaskId> = None;
    for ms in 0..1000u32 {
        let mut f = Fair::new(&mut cfs, &mut ents, &params, now);
        f.groups = Some((&mut groups, 0));
        if let Some(c) = curr {
            f.put_prev_task_fair(c, None);
        }
        let next = TaskId(ms % 5);
        f.set_next_task_fair(next, true);
        curr = Some(next);
        now += 1_000_000;
        let mut f = Fair::new(&mut cfs, &mut ents, &params, now);
        f.groups = Some((&mut groups, 0));
        f.update_curr();
        f.pelt_tick();
        f.tick_groups();
    }
    let flat = cfs.pelt.cpu_load();
    let root = groups.load_root(0).cpu_load();
    assert!(flat > 4 * 1000, "flat root load {flat}");
    assert!((1900..=2100).contains(&root), "hierarchy root load {root}, flat {flat}");
    for g in [1, 2] {
        let ge = groups.level_pelt(0, g).se.load_avg;
        assert!((950..=1030).contains(&ge), "group {g} entity load_avg {ge}");
    }
    let a = groups.task_h_load(0, 1, ents[0].pelt.avg.load_avg, 7);
    let b = groups.task_h_load(0, 2, ents[4].pelt.avg.load_avg, 7);
    assert!((230..=270).contains(&a), "task_h_load of a hog of A {a}, of B's hog {b}");
    assert!((950..=1030).contains(&b), "task_h_load of B's hog {b}");
    // Without groups the same hogs weigh their own load_avg each (root-group task_h_load).
    assert!(cfs.pelt.task_h_load(ents[0].pelt.avg.load_avg, 7) > 950);
}

/// A migration in the load hierarchy: two hogs of one group share CPU 0 for 0.5 s, then one
/// moves to CPU 1 by load balancing (`DEQUEUE_MIGRATING`'s `detach_entity_load_avg()`, then
/// the attach of `ENQUEUE_MIGRATED`). Propagation moves the group entities' loads at once, as
/// `update_tg_cfs_load()` does (fair.c 6.12.117 / 7.2.12 / 7.3.4): CPU 1's entity takes the
/// task's runnable sum (positive branch, clipped at the divider) and CPU 0's keeps its
/// estimate (`load_sum / load.weight` of the remaining task); both are reweighted to the half
/// shares each CPU holds at its next `update_cfs_group()`, so each CPU's `cpu_load()` is about
/// 512 after one tick instead of CPU 1 starting from nothing.
#[test]
fn group_load_hierarchy_propagates_a_migration() {
    use super::group::{GroupSpec, Groups, SharesMode, shares_from_cpu_weight};
    let cfg = SchedConfig::v7_3();
    let params = FairParams::new(&cfg, 2);
    let spec = GroupSpec { name: "/a".into(), parent: 0, shares: shares_from_cpu_weight(100), idle: false };
    let mut groups = Groups::new(&[spec], 2, SharesMode::Smp).unwrap();
    let mut ents: Vec<SchedEntity> = (0..2).map(|_| SchedEntity::new(Policy::Normal, 0, None)).collect();
    for se in &mut ents {
        se.group = 1;
    }
    let (mut cfs0, mut cfs1) = (CfsRq::default(), CfsRq::default());
    let mut now = 1_000_000_000u64;
    let mut f = Fair::new(&mut cfs0, &mut ents, &params, now);
    f.groups = Some((&mut groups, 0));
    f.enqueue_task_fair(A, enq::INITIAL);
    f.enqueue_task_fair(B, enq::INITIAL);
    let mut curr: Option<TaskId> = None;
    for ms in 0..500u32 {
        let mut f = Fair::new(&mut cfs0, &mut ents, &params, now);
        f.groups = Some((&mut groups, 0));
        if let Some(c) = curr {
            f.put_prev_task_fair(c, None);
        }
        let next = TaskId(ms % 2);
        f.set_next_task_fair(next, true);
        curr = Some(next);
        now += 1_000_000;
        let mut f = Fair::new(&mut cfs0, &mut ents, &params, now);
        f.groups = Some((&mut groups, 0));
        f.update_curr();
        f.pelt_tick();
        f.tick_groups();
    }
    let ge0 = groups.level_pelt(0, 1).se.load_avg;
    assert!((980..=1030).contains(&ge0), "group entity on CPU 0 before: {ge0}");
    // B is curr at the end of the loop's last turn (ms 499 is odd): put it back, move A.
    let mut f = Fair::new(&mut cfs0, &mut ents, &params, now);
    f.groups = Some((&mut groups, 0));
    f.put_prev_task_fair(B, None);
    f.set_next_task_fair(B, true);
    f.dequeue_task_fair(A, deq::SAVE | deq::MIGRATING);
    let w = scale_load_down(ents[0].load_weight);
    cfs0.pelt.migrate_task_rq_fair(&mut ents[0].pelt, w, true, None);
    let mut f = Fair::new(&mut cfs1, &mut ents, &params, now);
    f.groups = Some((&mut groups, 1));
    f.enqueue_task_fair(A, enq::MIGRATED);
    // CPU 1's entity took the task's runnable sum at once, with the half shares CPU 1's update
    // saw; CPU 0's keeps its load (the remaining task is always runnable) and its whole shares
    // until its own next `update_cfs_group()`, its tick.
    assert!((480..=530).contains(&groups.level_pelt(1, 1).se.load_avg));
    assert!(groups.level_pelt(0, 1).se.load_avg > 980);
    let mut f = Fair::new(&mut cfs0, &mut ents, &params, now);
    f.groups = Some((&mut groups, 0));
    f.pelt_tick();
    f.tick_groups();
    let (ge0, ge1) = (groups.level_pelt(0, 1).se.load_avg, groups.level_pelt(1, 1).se.load_avg);
    let (root0, root1) = (groups.load_root(0).cpu_load(), groups.load_root(1).cpu_load());
    assert!((480..=530).contains(&ge0) && (480..=530).contains(&ge1), "group entities after: {ge0} {ge1}");
    assert!((480..=530).contains(&root0) && (480..=530).contains(&root1), "cpu_load after: {root0} {root1}");
    let h = groups.task_h_load(1, 1, ents[0].pelt.avg.load_avg, 9);
    assert!((470..=530).contains(&h), "task_h_load of the moved hog {h}");
}
