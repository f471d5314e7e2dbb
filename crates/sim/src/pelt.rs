//! Per-Entity Load Tracking (PELT) of the fair class, restated from `kernel/sched/pelt.c`,
//! `kernel/sched/pelt.h`, `kernel/sched/sched-pelt.h` and the PELT parts of
//! `kernel/sched/fair.c` at v7.3.4 (spec `kernel-fair.md` §5.7 and §5.3).
//!
//! Scope: the root `cfs_rq` of a CPU ([`CfsRqPelt`]) and task entities ([`TaskPelt`]), which is
//! all a 7.3 flat runqueue with every task in the root group needs. Task groups' cfs_rqs and
//! group entities, with the `UPDATE_TG` propagation of their load, are built from these
//! pieces in `fair/group_pelt.rs` (plus [`update_group_se`]); CFS bandwidth and the
//! RT/DL/IRQ/HW-pressure signals are not modelled.
//! Arithmetic is the kernel's 64-bit arithmetic: `u64` for `unsigned long`, `u32` for `u32`
//! (`util_sum`, `period_contrib`), the same truncating divisions and the same wrapping/clamping
//! (`add_positive`, `lsub_positive`, `__update_sa`). The module is pure and allocation-free.
//!
//! # Clock
//!
//! Every `now` is the PELT clock in nanoseconds (`cfs_rq_clock_pelt()`); PELT works in units of
//! 1024 ns ([`PELT_PERIOD_NS`]) and periods of 1024 units (1 048 576 ns, [`PELT_WINDOW_NS`]).
//! With CPU capacity 1024 at maximum frequency the kernel's `clock_pelt` equals `clock_task`
//! and `lost_idle_time` stays 0, so the PELT clock is the simulator's task clock.
//!
//! `last_update_time == 0` is the kernel's "not attached yet / migrated" marker. A simulation
//! whose clock starts at 0 would attach entities at `last_update_time == 0` during its first
//! microsecond and later attach them a second time. Use [`pelt_clock`] (sim time +
//! [`PELT_CLOCK_BASE_NS`], a multiple of one period, so the period phase is unchanged) for every
//! `now` passed here.
//!
//! # How the engine drives it (kernel call sites, v7.3.4)
//!
//! `rq` is the [`RqState`] and `se` the [`SeState`] that held **during the interval that ends
//! now**, i.e. before the event applies its own changes (the kernel updates the averages first,
//! then changes `cfs_rq.load`, `h_nr_runnable`, `on_rq`, `h_curr`).
//!
//! | event (kernel function) | calls on the CPU's [`CfsRqPelt`] |
//! |---|---|
//! | fork (`sched_fork`) | `TaskPelt::new(weight_down)` (`init_entity_runnable_average`) |
//! | `wake_up_new_task` on the chosen CPU | `post_init_entity_util_avg`, then the enqueue row |
//! | enqueue of a task that is not queued (`enqueue_task_fair` → `enqueue_entity`): wakeup, new, migrated | `util_est_enqueue`, then `update_load_avg(.., se{on_rq: false}, UPDATE_TG \| DO_ATTACH)` |
//! | wakeup of a delayed task (`requeue_delayed_entity`, `ENQUEUE_DELAYED`) | `util_est_enqueue`, then `update_load_avg(.., se{on_rq: true, runnable: false}, 0)` |
//! | sleep that becomes a delayed dequeue (`__dequeue_task`, DELAY_DEQUEUE) | `util_est_dequeue`, then `update_load_avg(.., se{on_rq: true, runnable: true}, UPDATE_UTIL_EST)` |
//! | real dequeue (`dequeue_entity`) of a non-delayed task | `util_est_dequeue`, then `update_load_avg(.., UPDATE_TG` + `UPDATE_UTIL_EST` if `DEQUEUE_SLEEP` + `DO_DETACH` if migrating`)` |
//! | final dequeue of a delayed task (`DEQUEUE_DELAYED`) | `update_load_avg(.., se{on_rq: true, runnable: false}, UPDATE_TG` + `DO_DETACH` if migrating`)` (no `util_est_dequeue`) |
//! | `set_next_entity` (picked task, on_rq) | `update_load_avg(.., rq{running: false}, se{running: false}, UPDATE_TG)` |
//! | `put_prev_entity` (prev still on_rq) | `update_load_avg(.., rq{running: true}, se{running: true}, 0)` |
//! | `entity_tick` (curr) | `update_load_avg(.., rq{running: true}, se{running: true}, UPDATE_TG)` |
//! | wakeup migration (`set_task_cpu` → `migrate_task_rq_fair`), on the **source** | `migrate_task_rq_fair(task, w, false, src_idle_now)`; then the destination's enqueue row |
//! | load-balance migration (`detach_task`) | source dequeue row with `DO_DETACH`, `migrate_task_rq_fair(task, w, true, None)`, destination enqueue row |
//! | exit (`task_dead_fair`) | `remove_entity_load_avg` |
//! | blocked-load update (`sched_balance_update_blocked_averages`: newidle, periodic and nohz balance) | `update_cfs_rq_load_avg` |
//! | nice change (`reweight_entity`) | `reweight_entity_load_avg` |
//!
//! Readers (`cpu_load`, `cpu_util_cfs`, `task_h_load`, ...) read the averages as last updated,
//! as the kernel does; they never update them.

/// `LOAD_AVG_PERIOD` (sched-pelt.h v7.3.4): `y^32 = 1/2`.
pub const LOAD_AVG_PERIOD: u32 = 32;
/// `LOAD_AVG_MAX` (sched-pelt.h v7.3.4): the maximum of the geometric series `1024 Σ y^n`.
pub const LOAD_AVG_MAX: u64 = 47742;
/// The PELT time unit: 1024 ns ("about 1 µs"); the kernel shifts its ns clock right by 10.
pub const PELT_PERIOD_NS: u64 = 1024; // clock is ns >> 10
/// One PELT period (decay step): 1024 units of 1024 ns = 1 048 576 ns.
pub const PELT_WINDOW_NS: u64 = 1024 * PELT_PERIOD_NS;
/// `PELT_MIN_DIVIDER` (pelt.h v7.3.4): `LOAD_AVG_MAX - 1024`.
pub const PELT_MIN_DIVIDER: u32 = LOAD_AVG_MAX as u32 - 1024;
/// `SCHED_CAPACITY_SHIFT` (include/linux/sched.h v7.3.4).
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// `SCHED_CAPACITY_SCALE` (include/linux/sched.h v7.3.4).
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;
/// Offset added to simulated time to form the PELT clock (see the module docs): 2^30 ns, a
/// whole number of PELT periods.
pub const PELT_CLOCK_BASE_NS: u64 = 1 << 30;

/// `runnable_avg_yN_inv[]` (sched-pelt.h v7.3.4): `y^n · 2^32` for `n < 32`, `y = 2^(-1/32)`.
pub const RUNNABLE_AVG_YN_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796, 0xd744fcc9,
    0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581,
    0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9, 0x9837f050, 0x94f4efa8, 0x91c3d373,
    0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// `update_load_avg()` flags (fair.c v7.3.4). `UPDATE_TG` is accepted and ignored (root only).
pub const UPDATE_TG: u32 = 0x01;
/// Do not age the entity before updating the cfs_rq.
pub const SKIP_AGE_LOAD: u32 = 0x02;
/// Attach the entity if it is unattached (`last_update_time == 0`): enqueue of a new or
/// migrated task.
pub const DO_ATTACH: u32 = 0x04;
/// Detach the entity: dequeue of a task that migrates away (`task_on_rq_migrating`).
pub const DO_DETACH: u32 = 0x08;
/// Update the task's `util_est` EWMA (dequeue for sleep).
pub const UPDATE_UTIL_EST: u32 = 0x10;

/// `UTIL_AVG_UNCHANGED` (include/linux/sched.h v7.3.4): flag bit in a task's `util_est`.
pub const UTIL_AVG_UNCHANGED: u32 = 0x8000_0000;
/// `UTIL_EST_WEIGHT_SHIFT` (include/linux/sched.h v7.3.4): EWMA weight 1/4.
pub const UTIL_EST_WEIGHT_SHIFT: u32 = 2;
/// `UTIL_EST_MARGIN` (fair.c v7.3.4): `SCHED_CAPACITY_SCALE / 100`.
pub const UTIL_EST_MARGIN: u32 = (SCHED_CAPACITY_SCALE / 100) as u32;

/// The PELT clock for a simulated time: `sim_ns + PELT_CLOCK_BASE_NS` (see the module docs).
pub const fn pelt_clock(sim_ns: u64) -> u64 {
    sim_ns + PELT_CLOCK_BASE_NS
}

/// `struct sched_avg` (include/linux/sched.h v7.3.4) without `util_est`, which [`TaskPelt`]
/// and [`CfsRqPelt`] carry next to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    pub last_update_time: u64,
    pub load_sum: u64,
    pub runnable_sum: u64,
    pub util_sum: u32,
    pub period_contrib: u32,
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub util_avg: u64,
}

/// `mul_u64_u32_shr()` (include/linux/math64.h v7.3.4): the exact 96-bit product, shifted.
fn mul_u64_u32_shr(a: u64, mul: u32, shift: u32) -> u64 {
    ((a as u128 * mul as u128) >> shift) as u64
}

/// `decay_load()` (pelt.c v7.3.4): `val · y^n`, as `val >> (n / 32)` times the table entry for
/// `n % 32`, truncated; 0 for `n > 63 · 32`.
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD as u64 * 63 {
        return 0;
    }
    let mut val = val;
    let mut local_n = n as u32;
    if local_n >= LOAD_AVG_PERIOD {
        val >>= local_n / LOAD_AVG_PERIOD;
        local_n %= LOAD_AVG_PERIOD;
    }
    mul_u64_u32_shr(val, RUNNABLE_AVG_YN_INV[local_n as usize], 32)
}

/// `__accumulate_pelt_segments()` (pelt.c v7.3.4): `d1·y^p + 1024·Σ_{n=1}^{p-1} y^n + d3`,
/// the middle term as `LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, p) - 1024`; `u32` arithmetic.
fn accumulate_pelt_segments(periods: u64, d1: u32, d3: u32) -> u32 {
    let c1 = decay_load(d1 as u64, periods) as u32;
    let c2 = LOAD_AVG_MAX.wrapping_sub(decay_load(LOAD_AVG_MAX, periods)).wrapping_sub(1024) as u32;
    c1.wrapping_add(c2).wrapping_add(d3)
}

/// `accumulate_sum()` (pelt.c v7.3.4): `delta` in 1024-ns units. Decays the sums by the number
/// of crossed period boundaries, then adds this update's contribution (the three segments d1,
/// d2, d3 when boundaries were crossed, else `delta` itself). Returns the number of periods
/// truncated to `u32`, as the kernel's `u32` return does.
fn accumulate_sum(delta: u64, sa: &mut SchedAvg, load: u64, runnable: u64, running: bool) -> u32 {
    let mut contrib = delta as u32; // p == 0 -> delta < 1024
    let mut delta = delta.wrapping_add(sa.period_contrib as u64);
    let periods = delta / 1024;
    if periods != 0 {
        sa.load_sum = decay_load(sa.load_sum, periods);
        sa.runnable_sum = decay_load(sa.runnable_sum, periods);
        sa.util_sum = decay_load(sa.util_sum as u64, periods) as u32;
        delta %= 1024;
        if load != 0 {
            // runnable and running are 0 when load is 0 (see update_load_sum), so contrib is
            // only needed here.
            contrib = accumulate_pelt_segments(periods, 1024 - sa.period_contrib, delta as u32);
        }
    }
    sa.period_contrib = delta as u32;
    if load != 0 {
        sa.load_sum = sa.load_sum.wrapping_add(load.wrapping_mul(contrib as u64));
    }
    if runnable != 0 {
        sa.runnable_sum = sa.runnable_sum.wrapping_add(runnable.wrapping_mul(contrib as u64) << SCHED_CAPACITY_SHIFT);
    }
    if running {
        sa.util_sum = sa.util_sum.wrapping_add(contrib << SCHED_CAPACITY_SHIFT);
    }
    periods as u32
}

/// `___update_load_sum()` (pelt.c v7.3.4). Returns true when at least one period boundary was
/// crossed (the averages must then be recomputed).
fn update_load_sum(now: u64, sa: &mut SchedAvg, load: u64, runnable: u64, running: bool) -> bool {
    let delta = now.wrapping_sub(sa.last_update_time);
    // Time went backwards: resynchronise, nothing to accumulate.
    if (delta as i64) < 0 {
        sa.last_update_time = now;
        return false;
    }
    let delta = delta >> 10;
    if delta == 0 {
        return false;
    }
    sa.last_update_time = sa.last_update_time.wrapping_add(delta << 10);
    let (runnable, running) = if load == 0 { (0, false) } else { (runnable, running) };
    accumulate_sum(delta, sa, load, runnable, running) != 0
}

/// `get_pelt_divider()` (pelt.h v7.3.4): `LOAD_AVG_MAX - 1024 + period_contrib`.
pub fn get_pelt_divider(avg: &SchedAvg) -> u32 {
    PELT_MIN_DIVIDER.wrapping_add(avg.period_contrib)
}

/// `___update_load_avg()` (pelt.c v7.3.4): the averages from the sums.
fn update_load_avg_from_sums(sa: &mut SchedAvg, load: u64) {
    let divider = get_pelt_divider(sa);
    sa.load_avg = load.wrapping_mul(sa.load_sum) / divider as u64;
    sa.runnable_avg = sa.runnable_sum / divider as u64;
    sa.util_avg = (sa.util_sum / divider) as u64;
}

/// `__update_load_avg_se()` (pelt.c v7.3.4) for a task entity:
/// `___update_load_sum(now, load = on_rq, runnable = se_runnable, running = (h_curr == se))`
/// followed by `___update_load_avg(weight_down)` when a period boundary was crossed.
///
/// `now` is the PELT clock in ns (shifted right by 10 inside), `weight_down` is
/// `scale_load_down(se.load.weight)`, `on_rq` whether queued (delayed tasks included),
/// `runnable` whether queued and not delayed, `running` whether it is the cfs_rq's curr.
/// Returns true when the averages were recomputed. (The `util_est` flag reset the kernel does
/// here, `cfs_se_util_change`, is done by [`CfsRqPelt::update_load_avg`].)
pub fn update_se(avg: &mut SchedAvg, now: u64, weight_down: u64, on_rq: bool, runnable: bool, running: bool) -> bool {
    if update_load_sum(now, avg, on_rq as u64, runnable as u64, running) {
        update_load_avg_from_sums(avg, weight_down);
        true
    } else {
        false
    }
}

/// `__update_load_avg_se()` (pelt.c 6.12.117/7.2.12/7.3.4) for a **group** entity:
/// `load = on_rq`, `runnable = se->runnable_weight` (the group runqueue's `h_nr_runnable`, a
/// count, not a flag), `running = (h_curr == se)` (≤7.2: `cfs_rq->curr == se`), averages with
/// `se_weight` (the entity's weight, scaled down). The kernel's `cfs_se_util_change` does
/// nothing for a group entity (no `util_est`).
pub fn update_group_se(
    avg: &mut SchedAvg,
    now: u64,
    weight_down: u64,
    on_rq: bool,
    runnable: u32,
    running: bool,
) -> bool {
    if update_load_sum(now, avg, on_rq as u64, runnable as u64, running) {
        update_load_avg_from_sums(avg, weight_down);
        true
    } else {
        false
    }
}

/// `__update_load_avg_blocked_se()` (pelt.c v7.3.4): age a dequeued entity (load, runnable and
/// running all 0). Returns true when the averages were recomputed.
pub fn update_blocked_se(avg: &mut SchedAvg, now: u64, weight_down: u64) -> bool {
    update_se(avg, now, weight_down, false, false, false)
}

/// `__update_load_avg_cfs_rq()` (pelt.c v7.3.4) for the root cfs_rq:
/// `load = scale_load_down(cfs_rq.load.weight)`, `runnable = h_nr_runnable`,
/// `running = (h_curr != NULL)`; the averages use load factor 1. Returns true when the averages
/// were recomputed.
pub fn update_cfs_rq(avg: &mut SchedAvg, now: u64, load_weight_down: u64, h_nr_runnable: u32, running: bool) -> bool {
    if update_load_sum(now, avg, load_weight_down, h_nr_runnable as u64, running) {
        update_load_avg_from_sums(avg, 1);
        true
    } else {
        false
    }
}

/// `load_avg_is_decayed()` (fair.c v7.3.4): all three sums are zero.
pub fn load_avg_is_decayed(sa: &SchedAvg) -> bool {
    sa.load_sum == 0 && sa.util_sum == 0 && sa.runnable_sum == 0
}

/// `task_h_load()` (fair.c v7.3.4, `CONFIG_FAIR_GROUP_SCHED`) for a task of the root group
/// with `h_load` equal to the current `cfs_rq` load: `p_load_avg · L / (L + 1)` (spec §5.3).
/// [`CfsRqPelt::task_h_load`] models the once-per-jiffy sampling of `h_load`.
pub fn task_h_load(p_load_avg: u64, cfs_load_avg: u64) -> u64 {
    p_load_avg.wrapping_mul(cfs_load_avg) / cfs_load_avg.wrapping_add(1)
}

/// `add_positive()` (fair.c v7.3.4) on an `unsigned long`: signed add, 0 on underflow.
fn add_positive_u64(var: u64, val: i64) -> u64 {
    let res = var.wrapping_add(val as u64);
    if val < 0 && res > var { 0 } else { res }
}

/// `add_positive()` (fair.c v7.3.4) on a `u32` (`util_sum`), the delta converted to `s32`.
fn add_positive_u32(var: u32, val: i32) -> u32 {
    let res = var.wrapping_add(val as u32);
    if val < 0 && res > var { 0 } else { res }
}

/// `__update_sa()` (fair.c v7.3.4) for the `u64` sums (`load`, `runnable`): clamped adds, then
/// `sum = max(sum, avg · PELT_MIN_DIVIDER)`.
pub(crate) fn update_sa_u64(avg: &mut u64, sum: &mut u64, delta_avg: i64, delta_sum: i64) {
    *avg = add_positive_u64(*avg, delta_avg);
    *sum = add_positive_u64(*sum, delta_sum);
    *sum = (*sum).max(avg.wrapping_mul(PELT_MIN_DIVIDER as u64));
}

/// `__update_sa()` (fair.c v7.3.4) for `util` (`util_sum` is a `u32`).
pub(crate) fn update_sa_util(avg: &mut u64, sum: &mut u32, delta_avg: i64, delta_sum: i32) {
    *avg = add_positive_u64(*avg, delta_avg);
    *sum = add_positive_u32(*sum, delta_sum);
    *sum = (*sum).max(avg.wrapping_mul(PELT_MIN_DIVIDER as u64) as u32);
}

/// A task entity's PELT state: `se.avg` plus `se.avg.util_est` (raw kernel encoding, with the
/// [`UTIL_AVG_UNCHANGED`] flag bit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskPelt {
    pub avg: SchedAvg,
    pub util_est: u32,
}

impl TaskPelt {
    /// `init_entity_runnable_average()` (fair.c v7.3.4) for a task: everything 0 except
    /// `load_avg = scale_load_down(se.load.weight)` (a new task looks fully loaded).
    pub const fn new(weight_down: u64) -> TaskPelt {
        TaskPelt {
            avg: SchedAvg {
                last_update_time: 0,
                load_sum: 0,
                runnable_sum: 0,
                util_sum: 0,
                period_contrib: 0,
                load_avg: weight_down,
                runnable_avg: 0,
                util_avg: 0,
            },
            util_est: 0,
        }
    }

    /// `task_util()` (fair.c v7.3.4): `util_avg`.
    pub const fn task_util(&self) -> u64 {
        self.avg.util_avg
    }

    /// `_task_util_est()` (fair.c v7.3.4): the EWMA without the flag bit.
    pub const fn util_est_value(&self) -> u64 {
        (self.util_est & !UTIL_AVG_UNCHANGED) as u64
    }

    /// `task_util_est()` (fair.c v7.3.4): `max(task_util, _task_util_est)`.
    pub fn task_util_est(&self) -> u64 {
        self.task_util().max(self.util_est_value())
    }
}

/// `cfs_se_util_change()` (pelt.h v7.3.4): the averages changed, so clear the
/// `UTIL_AVG_UNCHANGED` flag of the task's `util_est`.
fn cfs_se_util_change(util_est: &mut u32, feat_util_est: bool) {
    if feat_util_est && (*util_est & UTIL_AVG_UNCHANGED) != 0 {
        *util_est &= !UTIL_AVG_UNCHANGED;
    }
}

/// `util_est_update()` (fair.c v7.3.4): at a dequeue for sleep, fold `util_avg` into the EWMA
/// (reset upwards, `ewma -= (ewma - util)/4` downwards unless within the 1% margin or the task
/// did not get all the CPU it wanted), then set `UTIL_AVG_UNCHANGED`.
fn util_est_update(task: &mut TaskPelt, feat_util_est: bool) {
    if !feat_util_est {
        return;
    }
    let mut ewma = task.util_est;
    // No PELT update since the last sample: nothing new to fold in.
    if ewma & UTIL_AVG_UNCHANGED != 0 {
        return;
    }
    let dequeued = task.avg.util_avg as u32;
    'done: {
        if ewma <= dequeued {
            ewma = dequeued;
            break 'done;
        }
        let last_ewma_diff = ewma - dequeued;
        if last_ewma_diff < UTIL_EST_MARGIN {
            break 'done;
        }
        if (dequeued as u64 + UTIL_EST_MARGIN as u64) < task.avg.runnable_avg {
            break 'done;
        }
        ewma <<= UTIL_EST_WEIGHT_SHIFT;
        ewma = ewma.wrapping_sub(last_ewma_diff);
        ewma >>= UTIL_EST_WEIGHT_SHIFT;
    }
    task.util_est = ewma | UTIL_AVG_UNCHANGED;
}

/// The task entity's state during the interval being accounted (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeState {
    /// `se_weight(se) = scale_load_down(se.load.weight)` (≥ 2).
    pub weight_down: u64,
    /// `se.on_rq` (delayed tasks included).
    pub on_rq: bool,
    /// `se_runnable(se)`: queued and not delayed.
    pub runnable: bool,
    /// `cfs_rq.h_curr == se`.
    pub running: bool,
}

/// The root cfs_rq's state during the interval being accounted (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RqState {
    /// `scale_load_down(cfs_rq.load.weight)`: the sum of the queued entities' **full** weights,
    /// scaled down once (delayed tasks included).
    pub load_weight_down: u64,
    /// `cfs_rq.h_nr_runnable`: queued tasks that are not delayed.
    pub h_nr_runnable: u32,
    /// `cfs_rq.h_curr != NULL`: a fair task is current.
    pub running: bool,
}

/// `cfs_rq.removed` (kernel/sched/sched.h v7.3.4): contributions of tasks that left this
/// cfs_rq while not queued, subtracted at its next `update_cfs_rq_load_avg`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemovedLoad {
    pub load_avg: u64,
    pub util_avg: u64,
    pub runnable_avg: u64,
    pub nr: u32,
}

/// The PELT state of a CPU's root cfs_rq: `cfs_rq.avg`, `cfs_rq.avg.util_est`, `cfs_rq.removed`
/// and the `task_h_load` cache (`h_load`, `last_h_load_update`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfsRqPelt {
    pub avg: SchedAvg,
    /// `cfs_rq.avg.util_est`: Σ `_task_util_est` of the enqueued tasks.
    pub util_est: u32,
    pub removed: RemovedLoad,
    /// `cfs_rq.h_load` as last sampled by [`CfsRqPelt::task_h_load`].
    pub h_load: u64,
    /// `cfs_rq.last_h_load_update` (jiffies); `None` before the first sample.
    pub last_h_load_update: Option<u64>,
    /// `sched_feat(UTIL_EST)` (default true).
    pub feat_util_est: bool,
}

impl Default for CfsRqPelt {
    fn default() -> Self {
        CfsRqPelt::new()
    }
}

impl CfsRqPelt {
    /// A fresh root cfs_rq (`init_cfs_rq`, all zero) with `UTIL_EST` on (the v7.3.4 default).
    pub const fn new() -> CfsRqPelt {
        CfsRqPelt {
            avg: SchedAvg {
                last_update_time: 0,
                load_sum: 0,
                runnable_sum: 0,
                util_sum: 0,
                period_contrib: 0,
                load_avg: 0,
                runnable_avg: 0,
                util_avg: 0,
            },
            util_est: 0,
            removed: RemovedLoad { load_avg: 0, util_avg: 0, runnable_avg: 0, nr: 0 },
            h_load: 0,
            last_h_load_update: None,
            feat_util_est: true,
        }
    }

    /// `update_cfs_rq_load_avg()` (fair.c v7.3.4): first subtract the removed contributions
    /// (`__update_sa` with `-r` and `-r · divider`, clamped at 0 and at `avg · PELT_MIN_DIVIDER`),
    /// then `__update_load_avg_cfs_rq`. Returns true if load was removed or the averages decayed.
    /// Called on its own for the blocked-load updates of load balancing.
    pub fn update_cfs_rq_load_avg(&mut self, now: u64, rq: RqState) -> bool {
        let mut decayed = false;
        if self.removed.nr != 0 {
            let divider = get_pelt_divider(&self.avg) as u64;
            let removed = std::mem::take(&mut self.removed);
            let sa = &mut self.avg;

            let r = removed.load_avg;
            update_sa_u64(
                &mut sa.load_avg,
                &mut sa.load_sum,
                r.wrapping_neg() as i64,
                r.wrapping_neg().wrapping_mul(divider) as i64,
            );
            let r = removed.util_avg;
            update_sa_util(
                &mut sa.util_avg,
                &mut sa.util_sum,
                r.wrapping_neg() as i64,
                r.wrapping_neg().wrapping_mul(divider) as i32,
            );
            let r = removed.runnable_avg;
            update_sa_u64(
                &mut sa.runnable_avg,
                &mut sa.runnable_sum,
                r.wrapping_neg() as i64,
                r.wrapping_neg().wrapping_mul(divider) as i64,
            );
            // add_tg_cfs_propagate: the root cfs_rq has no parent to propagate to.
            decayed = true;
        }
        decayed |= update_cfs_rq(&mut self.avg, now, rq.load_weight_down, rq.h_nr_runnable, rq.running);
        decayed
    }

    /// `update_load_avg(cfs_rq, se, flags)` (fair.c v7.3.4) for a task entity: age the entity
    /// (unless unattached or `SKIP_AGE_LOAD`), update the cfs_rq (removed load, decay), then
    /// attach (`DO_ATTACH` and unattached) or detach (`DO_DETACH`), then `util_est_update`
    /// (`UPDATE_UTIL_EST`). `UPDATE_TG` is ignored. Returns the kernel's `decayed`: the cfs_rq
    /// averages decayed or removed load was subtracted.
    pub fn update_load_avg(&mut self, now: u64, rq: RqState, task: &mut TaskPelt, se: SeState, flags: u32) -> bool {
        if task.avg.last_update_time != 0
            && flags & SKIP_AGE_LOAD == 0
            && update_se(&mut task.avg, now, se.weight_down, se.on_rq, se.runnable, se.running)
        {
            cfs_se_util_change(&mut task.util_est, self.feat_util_est);
        }

        let decayed = self.update_cfs_rq_load_avg(now, rq);
        // propagate_entity_load_avg() returns 0 for a task entity.

        if task.avg.last_update_time == 0 && flags & DO_ATTACH != 0 {
            self.attach_entity_load_avg(&mut task.avg, se.weight_down);
        } else if flags & DO_DETACH != 0 {
            self.detach_entity_load_avg(&task.avg, se.weight_down);
        }

        if flags & UPDATE_UTIL_EST != 0 {
            util_est_update(task, self.feat_util_est);
        }
        decayed
    }

    /// `enqueue_load_avg()` (fair.c v7.3.4).
    fn enqueue_load_avg(&mut self, se: &SchedAvg, weight_down: u64) {
        update_sa_u64(
            &mut self.avg.load_avg,
            &mut self.avg.load_sum,
            se.load_avg as i64,
            weight_down.wrapping_mul(se.load_sum) as i64,
        );
    }

    /// `dequeue_load_avg()` (fair.c v7.3.4).
    fn dequeue_load_avg(&mut self, se: &SchedAvg, weight_down: u64) {
        update_sa_u64(
            &mut self.avg.load_avg,
            &mut self.avg.load_sum,
            se.load_avg.wrapping_neg() as i64,
            weight_down.wrapping_mul(se.load_sum.wrapping_neg()) as i64,
        );
    }

    /// `attach_entity_load_avg()` (fair.c v7.3.4): align the entity to the cfs_rq's window
    /// (`last_update_time`, `period_contrib`), rebuild its sums from its averages with the
    /// cfs_rq's divider (`load_sum = load_avg · divider / weight`, at least 1), and add it.
    /// The cfs_rq must have been updated to now first (as [`CfsRqPelt::update_load_avg`] does).
    pub fn attach_entity_load_avg(&mut self, se: &mut SchedAvg, weight_down: u64) {
        debug_assert!(
            self.avg.last_update_time != 0,
            "PELT attach at last_update_time 0: pass pelt_clock(sim_ns) as now"
        );
        let divider = get_pelt_divider(&self.avg) as u64;

        se.last_update_time = self.avg.last_update_time;
        se.period_contrib = self.avg.period_contrib;

        se.util_sum = se.util_avg.wrapping_mul(divider) as u32;
        se.runnable_sum = se.runnable_avg.wrapping_mul(divider);
        se.load_sum = se.load_avg.wrapping_mul(divider);
        if weight_down < se.load_sum {
            // div_u64(): the divisor is a u32.
            se.load_sum /= (weight_down as u32) as u64;
        } else {
            se.load_sum = 1;
        }

        self.enqueue_load_avg(se, weight_down);
        self.avg.util_avg = self.avg.util_avg.wrapping_add(se.util_avg);
        self.avg.util_sum = self.avg.util_sum.wrapping_add(se.util_sum);
        self.avg.runnable_avg = self.avg.runnable_avg.wrapping_add(se.runnable_avg);
        self.avg.runnable_sum = self.avg.runnable_sum.wrapping_add(se.runnable_sum);
    }

    /// `detach_entity_load_avg()` (fair.c v7.3.4): subtract the entity's averages and sums
    /// (clamped, `__update_sa`). The cfs_rq must have been updated to now first.
    pub fn detach_entity_load_avg(&mut self, se: &SchedAvg, weight_down: u64) {
        self.dequeue_load_avg(se, weight_down);
        update_sa_util(
            &mut self.avg.util_avg,
            &mut self.avg.util_sum,
            se.util_avg.wrapping_neg() as i64,
            se.util_sum.wrapping_neg() as i32,
        );
        update_sa_u64(
            &mut self.avg.runnable_avg,
            &mut self.avg.runnable_sum,
            se.runnable_avg.wrapping_neg() as i64,
            se.runnable_sum.wrapping_neg() as i64,
        );
    }

    /// `sync_entity_load_avg()` (fair.c v7.3.4): age a dequeued entity to this cfs_rq's
    /// `last_update_time`.
    pub fn sync_entity_load_avg(&self, se: &mut SchedAvg, weight_down: u64) {
        update_blocked_se(se, self.avg.last_update_time, weight_down);
    }

    /// `remove_entity_load_avg()` (fair.c v7.3.4): sync the (dequeued) entity to this cfs_rq,
    /// then queue its averages in `removed` for the next `update_cfs_rq_load_avg`. Used for a
    /// task that migrates while not queued and for `task_dead_fair`.
    pub fn remove_entity_load_avg(&mut self, se: &mut SchedAvg, weight_down: u64) {
        self.sync_entity_load_avg(se, weight_down);
        self.removed.nr += 1;
        self.removed.util_avg = self.removed.util_avg.wrapping_add(se.util_avg);
        self.removed.load_avg = self.removed.load_avg.wrapping_add(se.load_avg);
        self.removed.runnable_avg = self.removed.runnable_avg.wrapping_add(se.runnable_avg);
    }

    /// `migrate_se_pelt_lag()` (fair.c v7.3.4, `CONFIG_NO_HZ_COMMON`): when the source CPU is
    /// idle its cfs_rq clock may be stale, so age the entity to an estimate of now. The kernel's
    /// estimate (`clock_pelt_idle + sched_clock_cpu() - clock_idle`, at least the cfs_rq's
    /// `last_update_time`) is the current PELT clock when `clock_pelt == clock_task`, so the
    /// caller passes `Some(now)` iff the source CPU's current task is the idle task.
    pub fn migrate_se_pelt_lag(&self, se: &mut SchedAvg, weight_down: u64, src_idle_now: Option<u64>) {
        if load_avg_is_decayed(se) {
            return;
        }
        let Some(now) = src_idle_now else {
            return;
        };
        let now = now.max(self.avg.last_update_time);
        update_blocked_se(se, now, weight_down);
    }

    /// `migrate_task_rq_fair()` (fair.c v7.3.4), called on the **source** cfs_rq before the task
    /// changes CPU: unless it migrates while queued (`task_on_rq_migrating`, load balancing,
    /// which detaches through `DO_DETACH` instead), remove its contribution and apply
    /// `migrate_se_pelt_lag`; then mark it unattached (`last_update_time = 0`) so the
    /// destination's enqueue attaches it.
    pub fn migrate_task_rq_fair(
        &mut self,
        task: &mut TaskPelt,
        weight_down: u64,
        on_rq_migrating: bool,
        src_idle_now: Option<u64>,
    ) {
        if !on_rq_migrating {
            self.remove_entity_load_avg(&mut task.avg, weight_down);
            self.migrate_se_pelt_lag(&mut task.avg, weight_down, src_idle_now);
        }
        task.avg.last_update_time = 0;
    }

    /// The PELT part of `reweight_entity()` (fair.c v7.3.4) for a task whose weight changes
    /// from `old_weight_down` to `new_weight_down` (queued or not): take out its load
    /// contribution, recompute `load_avg = new_weight · load_sum / divider` with the entity's own
    /// divider, put it back. No aging happens here. (The caller adjusts `cfs_rq.load`.)
    pub fn reweight_entity_load_avg(&mut self, se: &mut SchedAvg, old_weight_down: u64, new_weight_down: u64) {
        if old_weight_down == new_weight_down {
            return;
        }
        self.dequeue_load_avg(se, old_weight_down);
        let divider = get_pelt_divider(se) as u64;
        se.load_avg = new_weight_down.wrapping_mul(se.load_sum) / divider;
        self.enqueue_load_avg(se, new_weight_down);
    }

    /// `post_init_entity_util_avg()` (fair.c v7.3.4) for a fair task placed on this CPU by
    /// `wake_up_new_task`: `cap = (cpu_scale - util_avg) / 2` (signed); if `cap > 0` the task's
    /// `util_avg` is `min(cap, rq_util · weight / (rq_load_avg + 1))`, or `cap` when the rq's
    /// `util_avg` is 0; `runnable_avg = util_avg`. Reads the cfs_rq as last updated.
    /// `cpu_scale` is `arch_scale_cpu_capacity` (1024 on symmetric machines).
    pub fn post_init_entity_util_avg(&self, se: &mut SchedAvg, weight_down: u64, cpu_scale: u64) {
        let cap = (cpu_scale.wrapping_sub(self.avg.util_avg) as i64) / 2;
        if cap > 0 {
            if self.avg.util_avg != 0 {
                let mut util = self.avg.util_avg.wrapping_mul(weight_down);
                util /= self.avg.load_avg.wrapping_add(1);
                se.util_avg = util.min(cap as u64);
            } else {
                se.util_avg = cap as u64;
            }
        }
        se.runnable_avg = se.util_avg;
    }

    /// `util_est_enqueue()` (fair.c v7.3.4): add the task's `_task_util_est` to the cfs_rq's.
    /// Called by `enqueue_task_fair` unless the task is delayed and this is not its
    /// `ENQUEUE_DELAYED` wakeup, before the PELT update.
    pub fn util_est_enqueue(&mut self, task: &TaskPelt) {
        if self.feat_util_est {
            self.util_est = self.util_est.wrapping_add(task.util_est_value() as u32);
        }
    }

    /// `util_est_dequeue()` (fair.c v7.3.4): subtract the task's `_task_util_est`, clamped at 0.
    /// Called by `dequeue_task_fair` unless the task is already delayed.
    pub fn util_est_dequeue(&mut self, task: &TaskPelt) {
        if self.feat_util_est {
            let t = task.util_est_value() as u32;
            self.util_est -= self.util_est.min(t);
        }
    }

    /// `cpu_load()` (fair.c v7.3.4): the root cfs_rq's `load_avg`.
    pub const fn cpu_load(&self) -> u64 {
        self.avg.load_avg
    }

    /// `cpu_runnable()` (fair.c v7.3.4): the root cfs_rq's `runnable_avg`.
    pub const fn cpu_runnable(&self) -> u64 {
        self.avg.runnable_avg
    }

    /// `cpu_util(cpu, NULL, -1, boost)` (fair.c v7.3.4): `util_avg` (or
    /// `max(util_avg, runnable_avg)` when boosted), then `max` with the cfs_rq's `util_est` under
    /// `UTIL_EST`, clamped to `capacity` (`arch_scale_cpu_capacity`).
    fn cpu_util(&self, capacity: u64, boost: bool) -> u64 {
        let mut util = self.avg.util_avg;
        if boost {
            util = util.max(self.avg.runnable_avg);
        }
        if self.feat_util_est {
            util = util.max(self.util_est as u64);
        }
        util.min(capacity)
    }

    /// `cpu_util_cfs()` (fair.c v7.3.4): `min(max(util_avg, util_est), capacity)`; with
    /// `UTIL_EST` off just `min(util_avg, capacity)`.
    pub fn cpu_util_cfs(&self, capacity: u64) -> u64 {
        self.cpu_util(capacity, false)
    }

    /// `cpu_util_cfs_boost()` (fair.c v7.3.4): as `cpu_util_cfs` with `runnable_avg` folded in.
    pub fn cpu_util_cfs_boost(&self, capacity: u64) -> u64 {
        self.cpu_util(capacity, true)
    }

    /// `cpu_util_without(cpu, p)` (fair.c v7.3.4). `p` is `Some((task, queued_or_current))` when
    /// p contributes to this CPU (`task_cpu(p) == cpu` and p attached, `last_update_time != 0`),
    /// `None` otherwise; `queued_or_current` is `task_on_rq_queued(p) || current == p`.
    pub fn cpu_util_without(&self, capacity: u64, p: Option<(&TaskPelt, bool)>) -> u64 {
        let Some((task, queued_or_current)) = p.filter(|(t, _)| t.avg.last_update_time != 0) else {
            return self.cpu_util_cfs(capacity);
        };
        let mut util = self.avg.util_avg;
        util -= util.min(task.task_util());
        if self.feat_util_est {
            let mut util_est = self.util_est as u64;
            if queued_or_current {
                util_est -= util_est.min(task.util_est_value());
            }
            util = util.max(util_est);
        }
        util.min(capacity)
    }

    /// `cpu_load_without(rq, p)` (fair.c v7.3.4): `p_h_load` is `Some(task_h_load(p))` when p
    /// contributes to this CPU (as for [`CfsRqPelt::cpu_util_without`]). Note the kernel's
    /// `unsigned int` local: the load is truncated to 32 bits.
    pub fn cpu_load_without(&self, p_h_load: Option<u64>) -> u64 {
        let Some(h) = p_h_load else {
            return self.cpu_load();
        };
        let mut load = self.avg.load_avg as u32;
        load -= load.min(h as u32);
        load as u64
    }

    /// `cpu_runnable_without(rq, p)` (fair.c v7.3.4): `p` is `Some(&p.se.avg)` when p
    /// contributes to this CPU; 32-bit local as in the kernel.
    pub fn cpu_runnable_without(&self, p: Option<&SchedAvg>) -> u64 {
        let Some(p) = p else {
            return self.cpu_runnable();
        };
        let mut runnable = self.avg.runnable_avg as u32;
        runnable -= runnable.min(p.runnable_avg as u32);
        runnable as u64
    }

    /// `task_h_load()` with `update_cfs_rq_h_load()` (fair.c v7.3.4, `CONFIG_FAIR_GROUP_SCHED`)
    /// for a root task: `h_load` is resampled from `load_avg` at most once per jiffy, then
    /// `p_load_avg · h_load / (load_avg + 1)`.
    pub fn task_h_load(&mut self, p_load_avg: u64, jiffies: u64) -> u64 {
        if self.last_h_load_update != Some(jiffies) {
            self.h_load = self.avg.load_avg;
            self.last_h_load_update = Some(jiffies);
        }
        p_load_avg.wrapping_mul(self.h_load) / self.avg.load_avg.wrapping_add(1)
    }

    /// `cfs_rq_has_blocked_load()` (fair.c v7.3.4): `load_avg` or `util_avg` still non-zero
    /// (nohz keeps updating blocked load while true).
    pub const fn has_blocked_load(&self) -> bool {
        self.avg.load_avg != 0 || self.avg.util_avg != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: u64 = PELT_CLOCK_BASE_NS;
    const MS: u64 = 1_000_000;
    const NICE0: u64 = 1024;

    fn rq(load_weight_down: u64, h_nr_runnable: u32, running: bool) -> RqState {
        RqState { load_weight_down, h_nr_runnable, running }
    }

    fn se(weight_down: u64, on_rq: bool, runnable: bool, running: bool) -> SeState {
        SeState { weight_down, on_rq, runnable, running }
    }

    /// One nice-0 task enqueued (new) on an empty CPU at `B` and picked.
    fn new_task_running(cfs: &mut CfsRqPelt, t: &mut TaskPelt) {
        cfs.post_init_entity_util_avg(&mut t.avg, NICE0, 1024);
        cfs.util_est_enqueue(t);
        cfs.update_load_avg(B, rq(0, 0, false), t, se(NICE0, false, false, false), UPDATE_TG | DO_ATTACH);
        cfs.update_load_avg(B, rq(NICE0, 1, false), t, se(NICE0, true, true, false), UPDATE_TG);
    }

    #[test]
    fn decay_load_exact_kernel_values() {
        // y^32 = 1/2: a shift by one, then the n % 32 == 0 entry 0xffffffff = 2^32 - 1, which
        // takes one more unit off: x/2 - 1 for x/2 >= 1.
        assert_eq!(decay_load(1024, 32), 511);
        assert_eq!(decay_load(LOAD_AVG_MAX, 32), 23870);
        for x in [2u64, 3, 1000, 47742, 1 << 20, 123_456_789, 1 << 33] {
            assert_eq!(decay_load(x, 32), x / 2 - 1, "x = {x}");
        }
        for x in [4u64, 1000, 47742, 123_456_789] {
            assert_eq!(decay_load(x, 64), x / 4 - 1, "x = {x}");
        }
        assert_eq!(decay_load(1, 32), 0);
        assert_eq!(decay_load(0, 5), 0);
        // y^1 · 2^32 = 0xfa83b2da: 1024·y = 1002.2 and LOAD_AVG_MAX·y = LOAD_AVG_MAX - 1024,
        // the identity behind PELT_MIN_DIVIDER.
        assert_eq!(decay_load(1024, 1), 1002);
        assert_eq!(decay_load(LOAD_AVG_MAX, 1), LOAD_AVG_MAX - 1024);
        assert_eq!(decay_load(LOAD_AVG_MAX, 2), 45717);
        assert_eq!(decay_load(724, 2), 693);
        // n = 0 still multiplies by (2^32 - 1) / 2^32.
        assert_eq!(decay_load(1024, 0), 1023);
    }

    #[test]
    fn decay_load_is_zero_beyond_63_half_lives() {
        assert_eq!(decay_load(u64::MAX, 63 * 32 + 1), 0);
        assert_eq!(decay_load(u64::MAX, u64::MAX), 0);
        // At n = 63·32 the value is shifted by 63: u64::MAX >> 63 = 1, times (2^32-1)/2^32.
        assert_eq!(decay_load(u64::MAX, 63 * 32), 0);
        // n = 63·32 - 1: shift 62 leaves 3, times y^31 (0x82cd8698 / 2^32 = 0.511) = 1.
        assert_eq!(decay_load(u64::MAX, 63 * 32 - 1), 1);
    }

    #[test]
    fn accumulate_sum_three_segments_by_hand() {
        // period_contrib = 300 units, then 2000 units (+777 ns, below the 1024-ns unit) pass:
        // delta + period_contrib = 2300 → p = 2 periods, d1 = 1024 - 300 = 724, d3 = 2300 % 1024
        // = 252.
        let mut sa = SchedAvg {
            last_update_time: B,
            period_contrib: 300,
            load_sum: 10_000,
            runnable_sum: 10_000 << 10,
            util_sum: 10_000 << 10,
            ..SchedAvg::default()
        };
        let c1 = decay_load(724, 2); // d1·y^2
        let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, 2) - 1024; // 1024·(y + ... + y^(p-1))
        let c3 = 252; // d3·y^0
        assert_eq!((c1, c2, c3), (693, 1001, 252));
        let contrib = c1 + c2 + c3;
        assert_eq!(contrib, 1946);
        assert_eq!(accumulate_pelt_segments(2, 724, 252) as u64, contrib);

        assert!(update_se(&mut sa, B + 2000 * 1024 + 777, NICE0, true, true, true));
        // Step 1: the old sums decay by y^2; step 2: add the contribution.
        assert_eq!(decay_load(10_000, 2), 9576);
        assert_eq!(sa.load_sum, 9576 + 1946);
        assert_eq!(sa.runnable_sum, decay_load(10_000 << 10, 2) + (1946 << 10));
        assert_eq!(sa.runnable_sum, 11_798_561);
        assert_eq!(sa.util_sum, 11_798_561);
        assert_eq!(sa.period_contrib, 252);
        assert_eq!(sa.last_update_time, B + 2000 * 1024); // the 777 ns stay unaccounted
        // divider = 46718 + 252 = 46970; load_avg = 1024·11522/46970 = 251.19.
        assert_eq!(get_pelt_divider(&sa), 46_970);
        assert_eq!(sa.load_avg, 251);
        assert_eq!(sa.runnable_avg, 251);
        assert_eq!(sa.util_avg, 251);

        // No boundary crossed: the raw delta is added, the averages are not recomputed.
        let mut sa = SchedAvg { last_update_time: B, period_contrib: 300, load_sum: 10_000, ..SchedAvg::default() };
        assert!(!update_se(&mut sa, B + 100 * 1024, NICE0, true, false, false));
        assert_eq!((sa.load_sum, sa.period_contrib, sa.load_avg), (10_100, 400, 0));

        // Exactly three periods from period_contrib 0: d1 = 1024 (decayed by y^3), d3 = 0.
        let mut sa = SchedAvg { last_update_time: B, ..SchedAvg::default() };
        assert!(update_se(&mut sa, B + 3 * PELT_WINDOW_NS, 15, true, true, false));
        let expect = decay_load(1024, 3) + (LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, 3) - 1024);
        assert_eq!(expect, 2939);
        assert_eq!((sa.load_sum, sa.runnable_sum, sa.util_sum), (2939, 2939 << 10, 0));
        assert_eq!((sa.load_avg, sa.runnable_avg, sa.util_avg), (15 * 2939 / 46718, (2939 << 10) / 46718, 0));

        // Less than 1024 ns: nothing at all; time going backwards: resync only.
        let before = sa;
        let lut = sa.last_update_time;
        assert!(!update_se(&mut sa, lut + 1023, NICE0, true, true, true));
        assert_eq!(sa, before);
        assert!(!update_se(&mut sa, B, NICE0, true, true, true));
        assert_eq!(sa, SchedAvg { last_update_time: B, ..before });
    }

    #[test]
    fn not_queued_entity_accumulates_nothing() {
        let mut sa = SchedAvg { last_update_time: B, load_sum: 40_000, util_sum: 1 << 24, ..SchedAvg::default() };
        // load = 0 forces runnable and running to 0 (the h_curr-after-dequeue corner case).
        assert!(update_se(&mut sa, B + PELT_WINDOW_NS, NICE0, false, true, true));
        assert_eq!(sa.load_sum, decay_load(40_000, 1));
        assert_eq!(sa.util_sum as u64, decay_load(1 << 24, 1));
        assert_eq!(sa.runnable_sum, 0);
    }

    #[test]
    fn aligned_always_running_fixed_point() {
        // Updates exactly on period boundaries (period_contrib 0): each full period contributes
        // decay_load(1024, 1) = 1002 and the divider is PELT_MIN_DIVIDER. The sums converge to the
        // fixed points of S = floor(S·y) + 1002·1024 and L = floor(L·y) + 1002.
        let mut sa = SchedAvg { last_update_time: B, ..SchedAvg::default() };
        for k in 1..=4000 {
            update_se(&mut sa, B + k * PELT_WINDOW_NS, NICE0, true, true, true);
        }
        assert_eq!(sa.period_contrib, 0);
        assert_eq!(sa.util_sum, 47_883_609);
        assert_eq!(decay_load(47_883_609, 1) + 1002 * 1024, 47_883_609);
        assert_eq!(sa.load_sum, 46_715);
        assert_eq!(decay_load(46_715, 1) + 1002, 46_715);
        // util = 47883609 / 46718 = 1024.9 → 1024; load = 1024·46715/46718 = 1023.9 → 1023.
        assert_eq!((sa.util_avg, sa.runnable_avg, sa.load_avg), (1024, 1024, 1023));
    }

    #[test]
    fn always_running_task_converges_to_full_util() {
        // A new nice-0 task alone on a CPU, ticked every 4 ms (HZ=250) for 2 s. Exact values
        // cross-checked against an independent transcription of pelt.c/fair.c.
        let mut cfs = CfsRqPelt::new();
        let mut t = TaskPelt::new(NICE0);
        new_task_running(&mut cfs, &mut t);
        assert_eq!((t.avg.util_avg, t.avg.load_avg), (512, 1024));
        let mut first = Vec::new();
        for k in 1..=500u64 {
            cfs.update_load_avg(B + 4 * MS * k, rq(NICE0, 1, true), &mut t, se(NICE0, true, true, true), UPDATE_TG);
            if k <= 3 {
                first.push(t.avg.util_avg);
            }
            if k > 250 {
                assert!((1023..=1024).contains(&t.avg.util_avg), "k={k}: {}", t.avg.util_avg);
                assert_eq!(t.avg.load_avg, 1023);
                assert!((1023..=1024).contains(&cfs.avg.util_avg));
                assert!((1023..=1024).contains(&cfs.avg.load_avg));
            }
        }
        assert_eq!(first, [552, 590, 624]);
        assert_eq!(
            t.avg,
            SchedAvg {
                last_update_time: 3_073_741_824,
                load_sum: 47_070,
                runnable_sum: 48_205_978,
                util_sum: 48_205_978,
                period_contrib: 357,
                load_avg: 1023,
                runnable_avg: 1024,
                util_avg: 1024,
            }
        );
        assert_eq!(
            (cfs.avg.load_sum, cfs.avg.util_sum, cfs.avg.load_avg, cfs.avg.util_avg),
            (48_205_978, 48_205_978, 1024, 1024)
        );
        assert_eq!(cfs.cpu_util_cfs(1024), 1024);
    }

    /// A nice-0 task alone on a CPU: runs 4 ms, sleeps 4 ms (period 8 ms), with one tick 1 ms
    /// into each run; the first wakeup is `offset` ns into a PELT period. Returns util_avg at
    /// each dequeue (peaks) and at each wakeup after aging (troughs).
    fn duty_cycle(offset: u64, cycles: u64) -> (Vec<u64>, Vec<u64>, TaskPelt, CfsRqPelt) {
        let mut cfs = CfsRqPelt::new();
        let mut t = TaskPelt::new(NICE0);
        cfs.post_init_entity_util_avg(&mut t.avg, NICE0, 1024);
        let (mut peaks, mut troughs) = (Vec::new(), Vec::new());
        for k in 0..cycles {
            let t0 = B + offset + 8 * MS * k;
            let (idle, queued) = (rq(0, 0, false), rq(NICE0, 1, false));
            let busy = rq(NICE0, 1, true);
            cfs.util_est_enqueue(&t);
            let waking = se(NICE0, false, false, false);
            cfs.update_load_avg(t0, idle, &mut t, waking, UPDATE_TG | DO_ATTACH);
            troughs.push(t.avg.util_avg);
            let picked = se(NICE0, true, true, false);
            cfs.update_load_avg(t0, queued, &mut t, picked, UPDATE_TG);
            let running = se(NICE0, true, true, true);
            cfs.update_load_avg(t0 + MS, busy, &mut t, running, UPDATE_TG);
            cfs.util_est_dequeue(&t);
            let flags = UPDATE_TG | UPDATE_UTIL_EST;
            cfs.update_load_avg(t0 + 4 * MS, busy, &mut t, running, flags);
            peaks.push(t.avg.util_avg);
        }
        (peaks, troughs, t, cfs)
    }

    #[test]
    fn fifty_percent_duty_cycle_oscillates_around_512() {
        // Continuous-time model: a = 4 ms / 1.048576 ms = 3.815 periods per phase,
        // y^a = 2^(-a/32) = 0.92069; the steady state peaks at 1024/(1+y^a) = 533.14 (at
        // dequeue) and bottoms at 1024·y^a/(1+y^a) = 490.86 (at the next wakeup): midpoint 512.0,
        // swing ±21.1. The kernel decays in whole-period steps (the d1/d2/d3 split) and divides
        // by a phase-dependent divider, which tracks the continuous curve closely at the update
        // instants; the final `/ divider` truncates. Tolerance asserted: ±1 unit around the
        // continuous values, at 16 phases of the first wakeup against the period grid (the
        // exact steady values are 533 and 490 at every phase tried).
        let ya = 2f64.powf(-(4.0e6 / PELT_WINDOW_NS as f64) / 32.0);
        let (hi, lo) = (1024.0 / (1.0 + ya), 1024.0 * ya / (1.0 + ya));
        assert!((hi - 533.14).abs() < 0.01 && (lo - 490.86).abs() < 0.01);
        assert!(((hi + lo) / 2.0 - 512.0).abs() < 1e-9);

        let (peaks, troughs, t, cfs) = duty_cycle(0, 125);
        assert_eq!(&peaks[..3], &[552, 549, 547]);
        assert_eq!(&troughs[..3], &[512, 508, 506]);
        for k in 50..125 {
            assert_eq!((peaks[k], troughs[k]), (533, 490), "cycle {k}");
        }
        // The cfs_rq (only this task ever) follows the same curve.
        assert_eq!(cfs.avg.util_avg, 533);
        // util_est: the peaks fell from 552 towards 533; each dequeue moved the EWMA a quarter
        // of the way down until it came within UTIL_EST_MARGIN (10) of the sample, so it stops
        // at 540 (540 - 533 = 7 < 10).
        assert_eq!(t.util_est, 540 | UTIL_AVG_UNCHANGED);
        assert_eq!(cfs.util_est, 0); // nothing enqueued
        assert_eq!(cfs.cpu_util_cfs(1024), 533);

        for phase in 0..16 {
            let (peaks, troughs, _, _) = duty_cycle(phase * (PELT_WINDOW_NS / 16) + 333, 125);
            for k in 60..125 {
                assert!((peaks[k] as f64 - hi).abs() <= 1.0, "phase {phase}: {}", peaks[k]);
                assert!((troughs[k] as f64 - lo).abs() <= 1.0, "phase {phase}: {}", troughs[k]);
            }
        }
    }

    #[test]
    fn sleeping_task_load_halves_every_32_periods() {
        let mut cfs = CfsRqPelt::new();
        let mut t = TaskPelt::new(NICE0);
        new_task_running(&mut cfs, &mut t);
        let mut now = B;
        for _ in 0..100 {
            now += 4 * MS;
            cfs.update_load_avg(now, rq(NICE0, 1, true), &mut t, se(NICE0, true, true, true), UPDATE_TG);
        }
        cfs.update_load_avg(now, rq(NICE0, 1, true), &mut t, se(NICE0, true, true, true), UPDATE_TG | UPDATE_UTIL_EST);
        assert_eq!(t.avg.load_avg, 1023);
        let mut prev = t.avg;
        for _ in 0..8 {
            // 32 periods = 32 · 1024 units of 1024 ns = 33.55 ms: period_contrib (hence the
            // divider) is unchanged and every sum is decay_load(sum, 32) = sum/2 - 1.
            now += 32 * PELT_WINDOW_NS;
            assert!(update_blocked_se(&mut t.avg, now, NICE0));
            assert_eq!(t.avg.period_contrib, prev.period_contrib);
            assert_eq!(t.avg.load_sum, prev.load_sum / 2 - 1);
            let div = get_pelt_divider(&t.avg) as u64;
            assert_eq!(t.avg.load_avg, NICE0 * (prev.load_sum / 2 - 1) / div);
            assert!(t.avg.load_avg.abs_diff(prev.load_avg / 2) <= 1, "{} vs {}", t.avg.load_avg, prev.load_avg);
            assert!(t.avg.util_avg.abs_diff(prev.util_avg / 2) <= 1);
            prev = t.avg;
        }
        assert!(t.avg.load_avg <= 4);
    }

    #[test]
    fn attach_then_detach_restores_the_cfs_rq() {
        // CPU with one task that ran 10 ms; a second task migrates in (unattached) and
        // immediately out again at the same instant.
        let mut cfs = CfsRqPelt::new();
        let mut a = TaskPelt::new(NICE0);
        new_task_running(&mut cfs, &mut a);
        let now = B + 10 * MS + 12_345;
        cfs.update_load_avg(now, rq(NICE0, 1, true), &mut a, se(NICE0, true, true, true), UPDATE_TG);
        let before = cfs.avg;

        let w = 335; // nice 5
        let mut b = TaskPelt {
            avg: SchedAvg { load_avg: 200, util_avg: 150, runnable_avg: 180, ..SchedAvg::default() },
            util_est: 0,
        };
        cfs.update_load_avg(now, rq(NICE0, 1, true), &mut b, se(w, false, false, false), UPDATE_TG | DO_ATTACH);
        let div = get_pelt_divider(&cfs.avg) as u64;
        // The entity adopted the cfs_rq's window and had its sums rebuilt from its averages.
        assert_eq!(b.avg.last_update_time, cfs.avg.last_update_time);
        assert_eq!(b.avg.period_contrib, cfs.avg.period_contrib);
        assert_eq!(b.avg.util_sum as u64, 150 * div);
        assert_eq!(b.avg.runnable_sum, 180 * div);
        assert_eq!(b.avg.load_sum, 200 * div / w);
        assert_eq!(cfs.avg.load_avg, before.load_avg + 200);
        assert_eq!(cfs.avg.load_sum, before.load_sum + w * b.avg.load_sum);
        assert_eq!(cfs.avg.util_avg, before.util_avg + 150);
        assert_eq!(cfs.avg.util_sum, before.util_sum + b.avg.util_sum);
        assert_eq!(cfs.avg.runnable_avg, before.runnable_avg + 180);

        // Dequeue for migration at the same instant: no aging, DO_DETACH.
        cfs.update_load_avg(now, rq(NICE0 + w, 2, true), &mut b, se(w, true, true, false), UPDATE_TG | DO_DETACH);
        assert_eq!(cfs.avg, before);
    }

    #[test]
    fn detach_clamps_at_zero() {
        let mut cfs = CfsRqPelt::new();
        cfs.avg = SchedAvg {
            last_update_time: B,
            load_avg: 10,
            load_sum: 10 * 46718,
            util_avg: 5,
            util_sum: 5 * 46718,
            ..SchedAvg::default()
        };
        let se = SchedAvg {
            load_avg: 20,
            load_sum: 50_000,
            util_avg: 9,
            util_sum: 9 * 46718,
            runnable_avg: 1,
            runnable_sum: 46718,
            ..SchedAvg::default()
        };
        cfs.detach_entity_load_avg(&se, NICE0);
        assert_eq!((cfs.avg.load_avg, cfs.avg.load_sum, cfs.avg.util_avg, cfs.avg.util_sum), (0, 0, 0, 0));
        assert_eq!((cfs.avg.runnable_avg, cfs.avg.runnable_sum), (0, 0));
    }

    #[test]
    fn removed_load_is_subtracted_at_next_update() {
        // CPU0 runs task a; task b ran there earlier and sleeps; b migrates away while asleep.
        let mut cfs = CfsRqPelt::new();
        let mut a = TaskPelt::new(NICE0);
        let mut b = TaskPelt::new(NICE0);
        cfs.post_init_entity_util_avg(&mut b.avg, NICE0, 1024);
        cfs.update_load_avg(B, rq(0, 0, false), &mut b, se(NICE0, false, false, false), UPDATE_TG | DO_ATTACH);
        cfs.update_load_avg(B, rq(NICE0, 1, false), &mut b, se(NICE0, true, true, false), UPDATE_TG);
        let t1 = B + 20 * MS;
        cfs.update_load_avg(t1, rq(NICE0, 1, true), &mut b, se(NICE0, true, true, true), UPDATE_TG | UPDATE_UTIL_EST);
        // b slept; a arrives (new) and runs.
        cfs.post_init_entity_util_avg(&mut a.avg, NICE0, 1024);
        cfs.update_load_avg(t1, rq(0, 0, false), &mut a, se(NICE0, false, false, false), UPDATE_TG | DO_ATTACH);
        cfs.update_load_avg(t1, rq(NICE0, 1, false), &mut a, se(NICE0, true, true, false), UPDATE_TG);
        let t2 = t1 + 8 * MS;
        cfs.update_load_avg(t2, rq(NICE0, 1, true), &mut a, se(NICE0, true, true, true), UPDATE_TG);
        let before = cfs;

        // Wakeup migration at t3 (CPU0 busy: no pelt-lag estimate): b is synced to CPU0's
        // last_update_time and its averages are queued in `removed`; CPU0's averages are untouched.
        let t3 = t2 + 3 * MS;
        cfs.migrate_task_rq_fair(&mut b, NICE0, false, None);
        assert_eq!(b.avg.last_update_time, 0);
        assert_eq!(cfs.avg, before.avg);
        let b_synced = b.avg; // values after the sync (last_update_time then cleared)
        assert_eq!(
            cfs.removed,
            RemovedLoad {
                load_avg: b_synced.load_avg,
                util_avg: b_synced.util_avg,
                runnable_avg: b_synced.runnable_avg,
                nr: 1
            }
        );
        assert_eq!((b_synced.load_avg, b_synced.util_avg), (867, 580));

        // Next update of CPU0 (tick of a at t3): subtract r and r·divider (clamped), then decay.
        let div = get_pelt_divider(&cfs.avg) as u64;
        let mut expect = cfs.avg;
        expect.load_avg -= b_synced.load_avg;
        expect.load_sum = (expect.load_sum - b_synced.load_avg * div).max(expect.load_avg * PELT_MIN_DIVIDER as u64);
        expect.util_avg -= b_synced.util_avg;
        expect.util_sum = (expect.util_sum - (b_synced.util_avg * div) as u32)
            .max((expect.util_avg * PELT_MIN_DIVIDER as u64) as u32);
        expect.runnable_avg -= b_synced.runnable_avg;
        expect.runnable_sum =
            (expect.runnable_sum - b_synced.runnable_avg * div).max(expect.runnable_avg * PELT_MIN_DIVIDER as u64);
        update_cfs_rq(&mut expect, t3, NICE0, 1, true);
        assert!(cfs.update_load_avg(t3, rq(NICE0, 1, true), &mut a, se(NICE0, true, true, true), UPDATE_TG));
        assert_eq!(cfs.removed, RemovedLoad::default());
        assert_eq!(cfs.avg, expect);
        // What is left is about a's contribution alone.
        assert!(cfs.avg.load_avg.abs_diff(a.avg.load_avg) <= 2, "{} vs {}", cfs.avg.load_avg, a.avg.load_avg);
        assert!(cfs.avg.util_avg.abs_diff(a.avg.util_avg) <= 2);

        // b's last task leaves too: removing everything clamps the rq at zero.
        cfs.util_est_dequeue(&a);
        cfs.update_load_avg(t3, rq(NICE0, 1, true), &mut a, se(NICE0, true, true, true), UPDATE_TG | UPDATE_UTIL_EST);
        cfs.remove_entity_load_avg(&mut a.avg, NICE0);
        cfs.update_cfs_rq_load_avg(t3 + MS, rq(0, 0, false));
        // Rounding leaves a unit of residue (as in the kernel), kept alive by the
        // `sum >= avg · PELT_MIN_DIVIDER` clamp; it decays away as blocked load.
        assert_eq!((cfs.avg.load_avg, cfs.avg.util_avg, cfs.avg.runnable_avg), (1, 1, 1));
        assert!(cfs.has_blocked_load());
        let mut now = t3 + MS;
        while cfs.has_blocked_load() {
            now += 4 * MS;
            cfs.update_cfs_rq_load_avg(now, rq(0, 0, false));
        }
        assert!(now - t3 < 700 * MS, "{}", now - t3);
        assert_eq!((cfs.avg.load_avg, cfs.avg.util_avg, cfs.avg.runnable_avg), (0, 0, 0));
    }

    #[test]
    fn migration_while_idle_ages_to_now_and_attaches_on_destination() {
        let mut src = CfsRqPelt::new();
        let mut dst = CfsRqPelt::new();
        let mut t = TaskPelt::new(NICE0);
        new_task_running(&mut src, &mut t);
        let t1 = B + 30 * MS;
        src.update_load_avg(t1, rq(NICE0, 1, true), &mut t, se(NICE0, true, true, true), UPDATE_TG | UPDATE_UTIL_EST);
        // dst has its own busy task so its window phase differs.
        let mut d = TaskPelt::new(NICE0);
        dst.post_init_entity_util_avg(&mut d.avg, NICE0, 1024);
        dst.update_load_avg(B + 777_777, rq(0, 0, false), &mut d, se(NICE0, false, false, false), DO_ATTACH);
        let t2 = t1 + 50 * MS + 4321;
        dst.update_load_avg(t2, rq(NICE0, 1, true), &mut d, se(NICE0, true, true, true), UPDATE_TG);

        // Source idle since t1, its cfs_rq last updated at t1: the lag estimate ages t to t2.
        let mut aged = t.avg;
        update_blocked_se(&mut aged, t2, NICE0);
        src.migrate_task_rq_fair(&mut t, NICE0, false, Some(t2));
        assert_eq!(t.avg, SchedAvg { last_update_time: 0, ..aged });
        assert_eq!(src.removed.nr, 1);
        assert!(src.removed.load_avg > t.avg.load_avg); // removed at t1's value, carried at t2's

        // Enqueue on dst: unattached, so no aging; attach at dst's window.
        let dst_before = dst.avg;
        dst.util_est_enqueue(&t);
        dst.update_load_avg(t2, rq(NICE0, 1, true), &mut t, se(NICE0, false, false, false), UPDATE_TG | DO_ATTACH);
        assert_eq!(t.avg.last_update_time, dst.avg.last_update_time);
        assert_eq!(t.avg.period_contrib, dst_before.period_contrib);
        assert_eq!(dst.avg.load_avg, dst_before.load_avg + aged.load_avg);
        assert_eq!(dst.avg.util_avg, dst_before.util_avg + aged.util_avg);
        assert_eq!(dst.util_est, t.util_est_value() as u32);

        // Not idle: no lag estimate, the task keeps its value at the source's last update.
        let mut src2 = CfsRqPelt::new();
        let mut u = TaskPelt::new(NICE0);
        new_task_running(&mut src2, &mut u);
        src2.update_load_avg(t1, rq(NICE0, 1, true), &mut u, se(NICE0, true, true, true), UPDATE_TG);
        let at_t1 = u.avg;
        src2.migrate_task_rq_fair(&mut u, NICE0, false, None);
        assert_eq!(u.avg, SchedAvg { last_update_time: 0, ..at_t1 });
    }

    #[test]
    fn queued_migration_detaches_without_removed() {
        let mut src = CfsRqPelt::new();
        let mut t = TaskPelt::new(NICE0);
        new_task_running(&mut src, &mut t);
        let now = B + 5 * MS;
        src.update_load_avg(now, rq(NICE0, 1, true), &mut t, se(NICE0, true, true, true), 0);
        src.update_load_avg(now, rq(NICE0, 1, false), &mut t, se(NICE0, true, true, false), UPDATE_TG | DO_DETACH);
        src.migrate_task_rq_fair(&mut t, NICE0, true, None);
        assert_eq!(src.removed, RemovedLoad::default());
        assert_eq!(t.avg.last_update_time, 0);
        assert_eq!((src.avg.load_avg, src.avg.util_avg, src.avg.runnable_avg), (0, 0, 0));
    }

    #[test]
    fn post_init_entity_util_avg_values() {
        // Empty rq: cap = (1024 - 0)/2 = 512, taken as is.
        let cfs = CfsRqPelt::new();
        let mut t = TaskPelt::new(NICE0);
        cfs.post_init_entity_util_avg(&mut t.avg, NICE0, 1024);
        assert_eq!((t.avg.load_avg, t.avg.util_avg, t.avg.runnable_avg), (1024, 512, 512));
        assert_eq!((t.avg.load_sum, t.avg.last_update_time), (0, 0));

        // Half-loaded rq (util 512, load 1024): 512·1024/1025 = 511 capped at (1024-512)/2 = 256.
        let mut half = CfsRqPelt::new();
        half.avg.util_avg = 512;
        half.avg.load_avg = 1024;
        let mut t = TaskPelt::new(NICE0);
        half.post_init_entity_util_avg(&mut t.avg, NICE0, 1024);
        assert_eq!((t.avg.load_avg, t.avg.util_avg, t.avg.runnable_avg), (1024, 256, 256));
        // A nice-19 task (weight 15) there: 512·15/1025 = 7.
        let mut t = TaskPelt::new(15);
        half.post_init_entity_util_avg(&mut t.avg, 15, 1024);
        assert_eq!((t.avg.load_avg, t.avg.util_avg), (15, 7));

        // Light rq with much load: 100·1024/2049 = 49 < cap 462.
        let mut light = CfsRqPelt::new();
        light.avg.util_avg = 100;
        light.avg.load_avg = 2048;
        let mut t = TaskPelt::new(NICE0);
        light.post_init_entity_util_avg(&mut t.avg, NICE0, 1024);
        assert_eq!(t.avg.util_avg, 49);

        // Full (or over-full) rq: cap ≤ 0, util stays 0.
        for util in [1023, 1024, 1030] {
            let mut full = CfsRqPelt::new();
            full.avg.util_avg = util;
            full.avg.load_avg = 3000;
            let mut t = TaskPelt::new(NICE0);
            full.post_init_entity_util_avg(&mut t.avg, NICE0, 1024);
            assert_eq!((t.avg.util_avg, t.avg.runnable_avg), (0, 0), "util {util}");
        }

        // The successive-fork series of the kernel comment: 512, 256, 128, ... on one CPU.
        let mut cfs = CfsRqPelt::new();
        let mut got = Vec::new();
        for i in 0..4u32 {
            let mut t = TaskPelt::new(NICE0);
            cfs.post_init_entity_util_avg(&mut t.avg, NICE0, 1024);
            cfs.update_load_avg(B, rq(NICE0 * i as u64, i, false), &mut t, se(NICE0, false, false, false), DO_ATTACH);
            got.push(t.avg.util_avg);
        }
        assert_eq!(got, [512, 256, 128, 64]);
        assert_eq!(cfs.avg.util_avg, 960);
    }

    #[test]
    fn util_est_ewma_and_cpu_util() {
        let mut cfs = CfsRqPelt::new();
        let mut t = TaskPelt::new(NICE0);
        // First sample: increase resets the EWMA to util_avg.
        t.avg.util_avg = 600;
        t.avg.runnable_avg = 600;
        util_est_update(&mut t, true);
        assert_eq!(t.util_est, 600 | UTIL_AVG_UNCHANGED);
        // No PELT update since: skipped.
        t.avg.util_avg = 100;
        util_est_update(&mut t, true);
        assert_eq!(t.util_est_value(), 600);
        // A PELT update clears the flag; then a decrease moves the EWMA by a quarter.
        cfs_se_util_change(&mut t.util_est, true);
        assert_eq!(t.util_est, 600);
        t.avg.util_avg = 400;
        t.avg.runnable_avg = 410;
        util_est_update(&mut t, true);
        assert_eq!(t.util_est, ((600 * 4 - 200) / 4) | UTIL_AVG_UNCHANGED);
        assert_eq!(t.util_est_value(), 550);
        // Within 1 %: unchanged value (flag set again).
        t.util_est &= !UTIL_AVG_UNCHANGED;
        t.avg.util_avg = 541;
        util_est_update(&mut t, true);
        assert_eq!(t.util_est, 550 | UTIL_AVG_UNCHANGED);
        // The task waited for the CPU (runnable > util + 1 %): no update.
        t.util_est &= !UTIL_AVG_UNCHANGED;
        t.avg.util_avg = 300;
        t.avg.runnable_avg = 311;
        util_est_update(&mut t, true);
        assert_eq!(t.util_est_value(), 550);
        assert_eq!(t.task_util_est(), 550);

        cfs.util_est_enqueue(&t);
        assert_eq!(cfs.util_est, 550);
        cfs.avg.util_avg = 200;
        cfs.avg.runnable_avg = 700;
        assert_eq!(cfs.cpu_util_cfs(1024), 550);
        assert_eq!(cfs.cpu_util_cfs(512), 512);
        assert_eq!(cfs.cpu_util_cfs_boost(1024), 700);
        // p on this CPU and queued: both its util and util_est come out.
        t.avg.last_update_time = 1;
        assert_eq!(cfs.cpu_util_without(1024, Some((&t, true))), 0);
        assert_eq!(cfs.cpu_util_without(1024, Some((&t, false))), 550);
        t.avg.last_update_time = 0; // new task: no contribution
        assert_eq!(cfs.cpu_util_without(1024, Some((&t, true))), 550);
        cfs.util_est_dequeue(&t);
        cfs.util_est_dequeue(&t);
        assert_eq!(cfs.util_est, 0);
        assert_eq!(cfs.cpu_util_cfs(1024), 200);

        cfs.feat_util_est = false;
        cfs.util_est_enqueue(&t);
        assert_eq!(cfs.util_est, 0);
        cfs.util_est = 900;
        assert_eq!(cfs.cpu_util_cfs(1024), 200);
    }

    #[test]
    fn task_h_load_root_task() {
        assert_eq!(task_h_load(1024, 1024), 1023);
        assert_eq!(task_h_load(1024, 3000), 1023);
        assert_eq!(task_h_load(300, 3000), 299);
        assert_eq!(task_h_load(0, 3000), 0);
        assert_eq!(task_h_load(500, 0), 0);
        let mut cfs = CfsRqPelt::new();
        cfs.avg.load_avg = 2048;
        assert_eq!(cfs.task_h_load(1024, 7), 1023);
        // Within the same jiffy h_load keeps its sample while load_avg moves.
        cfs.avg.load_avg = 1024;
        assert_eq!(cfs.task_h_load(1024, 7), 1024 * 2048 / 1025);
        assert_eq!(cfs.task_h_load(1024, 8), 1023);
        assert_eq!(cfs.cpu_load_without(Some(1023)), 1);
        assert_eq!(cfs.cpu_load_without(None), 1024);
        assert_eq!(cfs.cpu_load_without(Some(5000)), 0);
    }

    #[test]
    fn reweight_recomputes_load_avg() {
        let mut cfs = CfsRqPelt::new();
        let mut t = TaskPelt::new(NICE0);
        new_task_running(&mut cfs, &mut t);
        let now = B + 40 * MS;
        cfs.update_load_avg(now, rq(NICE0, 1, true), &mut t, se(NICE0, true, true, true), UPDATE_TG);
        let before_rq = cfs.avg;
        let old = t.avg;
        cfs.reweight_entity_load_avg(&mut t.avg, NICE0, 335);
        assert_eq!(t.avg.load_avg, 335 * old.load_sum / get_pelt_divider(&old) as u64);
        assert_eq!(cfs.avg.load_avg, before_rq.load_avg - old.load_avg + t.avg.load_avg);
        assert_eq!(cfs.avg.load_sum, before_rq.load_sum - NICE0 * old.load_sum + 335 * old.load_sum);
    }

    /// A pseudo-random two-CPU trace (wakeups with and without migration, sleeps, ticks with
    /// rotation, load-balance migrations, blocked updates) whose final state was computed by an
    /// independent Python transcription of pelt.c/fair.c v7.3.4.
    #[test]
    fn cross_check_random_trace() {
        struct Rng(u64);
        impl Rng {
            fn next(&mut self, n: u64) -> u64 {
                self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (self.0 >> 33) % n
            }
        }
        struct Task {
            p: TaskPelt,
            w: u64,
            cpu: usize,
            queued: bool,
            started: bool,
        }
        struct Cpu {
            c: CfsRqPelt,
            q: Vec<usize>,
            curr: Option<usize>,
        }
        fn state(cpus: &[Cpu], tasks: &[Task], ci: usize, running: Option<bool>) -> RqState {
            let cp = &cpus[ci];
            RqState {
                load_weight_down: cp.q.iter().map(|&i| tasks[i].w).sum(),
                h_nr_runnable: cp.q.len() as u32,
                running: running.unwrap_or(cp.curr.is_some()),
            }
        }
        fn set_next(cpus: &mut [Cpu], tasks: &mut [Task], ci: usize, now: u64) {
            if cpus[ci].curr.is_none() && !cpus[ci].q.is_empty() {
                let i = cpus[ci].q[0];
                let r = state(cpus, tasks, ci, None);
                let w = tasks[i].w;
                cpus[ci].c.update_load_avg(now, r, &mut tasks[i].p, se(w, true, true, false), UPDATE_TG);
                cpus[ci].curr = Some(i);
            }
        }
        fn enqueue(cpus: &mut [Cpu], tasks: &mut [Task], ci: usize, i: usize, now: u64) {
            let r = state(cpus, tasks, ci, None);
            let w = tasks[i].w;
            cpus[ci].c.util_est_enqueue(&tasks[i].p);
            cpus[ci].c.update_load_avg(now, r, &mut tasks[i].p, se(w, false, false, false), UPDATE_TG | DO_ATTACH);
            cpus[ci].q.push(i);
            tasks[i].queued = true;
            tasks[i].cpu = ci;
            set_next(cpus, tasks, ci, now);
        }

        let mut rng = Rng(7);
        let mut tasks: Vec<Task> = [1024, 1024, 1024, 335, 3121]
            .iter()
            .map(|&w| Task { p: TaskPelt::new(w), w, cpu: 0, queued: false, started: false })
            .collect();
        let mut cpus: Vec<Cpu> = (0..2).map(|_| Cpu { c: CfsRqPelt::new(), q: Vec::new(), curr: None }).collect();
        let mut now = B;
        let mut counts = [0u32; 7]; // wake, mig_wake, sleep, tick, lb, blocked, new
        for _ in 0..4000 {
            now += 100_000 + rng.next(3_000_000);
            let a = rng.next(100);
            if a < 30 {
                let sl: Vec<usize> = (0..tasks.len()).filter(|&i| !tasks[i].queued).collect();
                if !sl.is_empty() {
                    let i = sl[rng.next(sl.len() as u64) as usize];
                    let dst = rng.next(2) as usize;
                    let w = tasks[i].w;
                    if !tasks[i].started {
                        tasks[i].started = true;
                        counts[6] += 1;
                        cpus[dst].c.post_init_entity_util_avg(&mut tasks[i].p.avg, w, 1024);
                    } else if dst != tasks[i].cpu {
                        counts[1] += 1;
                        let src = tasks[i].cpu;
                        let idle = cpus[src].curr.is_none().then_some(now);
                        cpus[src].c.migrate_task_rq_fair(&mut tasks[i].p, w, false, idle);
                    }
                    counts[0] += 1;
                    enqueue(&mut cpus, &mut tasks, dst, i, now);
                }
            } else if a < 55 {
                let ci = rng.next(2) as usize;
                if let Some(i) = cpus[ci].curr {
                    let r = state(&cpus, &tasks, ci, None);
                    let w = tasks[i].w;
                    cpus[ci].c.util_est_dequeue(&tasks[i].p);
                    cpus[ci].c.update_load_avg(
                        now,
                        r,
                        &mut tasks[i].p,
                        se(w, true, true, true),
                        UPDATE_TG | UPDATE_UTIL_EST,
                    );
                    cpus[ci].q.retain(|&x| x != i);
                    tasks[i].queued = false;
                    cpus[ci].curr = None;
                    counts[2] += 1;
                    set_next(&mut cpus, &mut tasks, ci, now);
                }
            } else if a < 85 {
                let ci = rng.next(2) as usize;
                if let Some(i) = cpus[ci].curr {
                    let r = state(&cpus, &tasks, ci, None);
                    let w = tasks[i].w;
                    cpus[ci].c.update_load_avg(now, r, &mut tasks[i].p, se(w, true, true, true), UPDATE_TG);
                    counts[3] += 1;
                    if cpus[ci].q.len() > 1 {
                        cpus[ci].c.update_load_avg(now, r, &mut tasks[i].p, se(w, true, true, true), 0);
                        cpus[ci].curr = None;
                        cpus[ci].q.retain(|&x| x != i);
                        cpus[ci].q.push(i);
                        set_next(&mut cpus, &mut tasks, ci, now);
                    }
                }
            } else if a < 95 {
                let src = rng.next(2) as usize;
                let dst = 1 - src;
                let cand: Vec<usize> = cpus[src].q.iter().copied().filter(|&i| Some(i) != cpus[src].curr).collect();
                if !cand.is_empty() {
                    let i = cand[rng.next(cand.len() as u64) as usize];
                    let r = state(&cpus, &tasks, src, None);
                    let w = tasks[i].w;
                    cpus[src].c.util_est_dequeue(&tasks[i].p);
                    cpus[src].c.update_load_avg(
                        now,
                        r,
                        &mut tasks[i].p,
                        se(w, true, true, false),
                        UPDATE_TG | DO_DETACH,
                    );
                    cpus[src].q.retain(|&x| x != i);
                    tasks[i].queued = false;
                    cpus[src].c.migrate_task_rq_fair(&mut tasks[i].p, w, true, None);
                    counts[4] += 1;
                    enqueue(&mut cpus, &mut tasks, dst, i, now);
                }
            } else {
                let ci = rng.next(2) as usize;
                let r = state(&cpus, &tasks, ci, None);
                cpus[ci].c.update_cfs_rq_load_avg(now, r);
                counts[5] += 1;
            }
        }
        assert_eq!(counts, [785, 388, 782, 910, 197, 212, 5]);

        let fold = |h: u64, v: u64| (h ^ v).wrapping_mul(0x100000001b3);
        let tuple = |a: &SchedAvg| {
            [
                a.last_update_time,
                a.load_sum,
                a.runnable_sum,
                a.util_sum as u64,
                a.period_contrib as u64,
                a.load_avg,
                a.runnable_avg,
                a.util_avg,
            ]
        };
        let mut h = 0xcbf29ce484222325u64;
        for t in &tasks {
            h = tuple(&t.p.avg).into_iter().fold(h, fold);
        }
        for c in &cpus {
            h = tuple(&c.c.avg).into_iter().fold(h, fold);
        }
        assert_eq!(tuple(&tasks[0].p.avg), [7437862912, 38923, 39859151, 15711857, 306, 846, 846, 331]);
        assert_eq!(tuple(&tasks[4].p.avg), [7456139264, 36575, 37449096, 24491424, 746, 2405, 789, 516]);
        assert_eq!(tuple(&cpus[0].c.avg), [7458402304, 223707919, 162784642, 85760077, 908, 4697, 3417, 1800]);
        assert_eq!(tuple(&cpus[1].c.avg), [7453250560, 167878573, 86016624, 47833024, 997, 3518, 1802, 1002]);
        assert_eq!(cpus[1].c.removed, RemovedLoad { load_avg: 3516, util_avg: 1000, runnable_avg: 1800, nr: 2 });
        assert_eq!(h, 0x9b4023efd8f62540);
    }
}
