//! Everything that parameterises a simulated kernel: feature flags, sysctls, tick rate,
//! preemption model and the version/patch switches that are not kernel feature flags.
//!
//! There is deliberately no `Default`: a kernel preset (`SchedConfig::v7_3`) or the user decides.

use std::fmt;

use crate::fair::weight::CalcDelta;
use crate::features::FeatureSet;

/// `sysctl_sched_tunable_scaling` (kernel/sched/fair.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunableScaling {
    None = 0,
    Log = 1,
    Linear = 2,
}

/// The scheduler sysctls and debugfs knobs, by their debugfs names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sysctls {
    /// `normalized_sysctl_sched_base_slice`: the unscaled base slice (0.70 ms since 6.15).
    pub normalized_base_slice_ns: u64,
    /// An explicit `base_slice_ns` write; otherwise the slice is scaled from the CPU count.
    pub base_slice_ns: Option<u64>,
    pub migration_cost_ns: u64,
    pub nr_migrate: u32,
    pub tunable_scaling: TunableScaling,
    /// `kernel.sched_autogroup_enabled` (CONFIG_SCHED_AUTOGROUP): every session its own task
    /// group. On in the distribution builds the presets model.
    pub autogroup: bool,
    /// `/sys/kernel/debug/sched/llc_balancing/*` (CONFIG_SCHED_CACHE, debug.c 7.2.12/7.3.4).
    pub llc: LlcBalancing,
}

/// The cache-aware scheduling knobs (`llc_balancing/` in debugfs, 7.2.12 and 7.3.4 debug.c;
/// defaults from fair.c and topology.c). Kernels without CONFIG_SCHED_CACHE ignore them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LlcBalancing {
    /// `enabled` (`sysctl_sched_cache_user`, default 1); active only on a machine with more
    /// than one LLC (`sched_cache_present`).
    pub enabled: bool,
    /// `aggr_tolerance` (`llc_aggr_tolerance`, 1): 0 disables aggregation, 100 and more ignore
    /// the thread-count and footprint limits.
    pub aggr_tolerance: u32,
    /// `epoch_period` in jiffies (`llc_epoch_period`, `EPOCH_PERIOD` = HZ/100); `None` until
    /// written, so the default follows the configured HZ.
    pub epoch_period: Option<u32>,
    /// `epoch_affinity_timeout` in epochs (`llc_epoch_affinity_timeout`, 5).
    pub epoch_affinity_timeout: u32,
    /// `overaggr_pct` (`llc_overaggr_pct`, 50): how full an LLC may get by aggregation.
    pub overaggr_pct: u32,
    /// `imb_pct` (`llc_imb_pct`, 20): the utilisation hysteresis between LLCs.
    pub imb_pct: u32,
}

impl LlcBalancing {
    pub fn v7_3() -> LlcBalancing {
        LlcBalancing {
            enabled: true,
            aggr_tolerance: 1,
            epoch_period: None,
            epoch_affinity_timeout: 5,
            overaggr_pct: 50,
            imb_pct: 20,
        }
    }

    /// `llc_epoch_period` for `hz` (`EPOCH_PERIOD` = HZ / 100 jiffies unless written).
    pub fn epoch_period(&self, hz: u32) -> u64 {
        u64::from(self.epoch_period.unwrap_or(hz / 100))
    }
}

impl Sysctls {
    /// The names `--sysctl KEY=VALUE` accepts, with what each sets.
    pub const KEYS: &'static [(&'static str, &'static str)] = &[
        ("base_slice_ns", "sysctl_sched_base_slice (scaled value; default 0.70 ms x (1 + ilog2(min(ncpus, 8))))"),
        ("migration_cost_ns", "sysctl_sched_migration_cost (task_hot, preempt_sync threshold)"),
        ("nr_migrate", "sysctl_sched_nr_migrate (tasks detached per balance pass)"),
        ("tunable_scaling", "sysctl_sched_tunable_scaling: 0 none, 1 log, 2 linear"),
        ("sched_autogroup_enabled", "kernel.sched_autogroup_enabled: 1 a task group per session, 0 none"),
        ("llc_balancing/enabled", "cache-aware load balancing on (1) or off (0), kernels with CONFIG_SCHED_CACHE"),
        ("llc_balancing/aggr_tolerance", "llc_aggr_tolerance: scales the thread-count limit (0 off, 100+ no limit)"),
        ("llc_balancing/epoch_period", "llc_epoch_period in jiffies (default HZ/100)"),
        ("llc_balancing/epoch_affinity_timeout", "llc_epoch_affinity_timeout in epochs (default 5)"),
        ("llc_balancing/overaggr_pct", "llc_overaggr_pct: LLC utilisation up to which tasks are aggregated (50)"),
        ("llc_balancing/imb_pct", "llc_imb_pct: utilisation imbalance between LLCs tolerated (20)"),
    ];

    pub fn v7_3() -> Sysctls {
        Sysctls {
            normalized_base_slice_ns: 700_000,
            base_slice_ns: None,
            migration_cost_ns: 500_000,
            nr_migrate: 32,
            tunable_scaling: TunableScaling::Log,
            autogroup: true,
            llc: LlcBalancing::v7_3(),
        }
    }

    /// `get_update_sysctl_factor()` (kernel/sched/fair.c v7.3.4).
    pub fn factor(&self, ncpus: u32) -> u64 {
        let cpus = ncpus.clamp(1, 8);
        match self.tunable_scaling {
            TunableScaling::None => 1,
            TunableScaling::Linear => u64::from(cpus),
            TunableScaling::Log => 1 + u64::from(cpus.ilog2()),
        }
    }

    /// `sysctl_sched_base_slice` as `update_sysctl()` leaves it for `ncpus` online CPUs.
    pub fn base_slice(&self, ncpus: u32) -> u64 {
        self.base_slice_ns.unwrap_or(self.normalized_base_slice_ns * self.factor(ncpus))
    }

    /// Applies one `KEY=VALUE` assignment, within the kernel's own bounds.
    ///
    /// v7.3.4 exposes `base_slice_ns`, `migration_cost_ns` and `nr_migrate` through
    /// `debugfs_create_u32()` (kernel/sched/debug.c), so they hold `0..=u32::MAX`; the model
    /// refuses larger values rather than truncating them as a 64-bit write to the debugfs file
    /// would. `tunable_scaling` goes through `sched_scaling_write()`, which refuses values from
    /// `SCHED_TUNABLESCALING_END` (3) on.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let bad =
            |expected: &'static str| ConfigError::BadValue { key: key.to_string(), value: value.to_string(), expected };
        let u32_value = || -> Result<u32, ConfigError> {
            value.trim().parse::<u32>().map_err(|_| bad("an integer in 0..=4294967295 (a debugfs u32)"))
        };
        match key {
            "base_slice_ns" => match u32_value()? {
                // debugfs accepts 0; it would end every request at once and stall the model.
                0 => return Err(bad("a positive slice (1..=4294967295 ns)")),
                ns => self.base_slice_ns = Some(u64::from(ns)),
            },
            "migration_cost_ns" => self.migration_cost_ns = u64::from(u32_value()?),
            "nr_migrate" => self.nr_migrate = u32_value()?,
            "sched_autogroup_enabled" => {
                self.autogroup = match value.trim() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(bad("0 or 1")),
                }
            }
            // sched_cache_enable_write(): kstrtobool_from_user.
            "llc_balancing/enabled" => {
                self.llc.enabled = match value.trim() {
                    "1" | "y" | "Y" | "on" => true,
                    "0" | "n" | "N" | "off" => false,
                    _ => return Err(bad("a boolean (1/0, y/n, on/off)")),
                }
            }
            "llc_balancing/aggr_tolerance" => self.llc.aggr_tolerance = u32_value()?,
            "llc_balancing/epoch_period" => self.llc.epoch_period = Some(u32_value()?),
            "llc_balancing/epoch_affinity_timeout" => self.llc.epoch_affinity_timeout = u32_value()?,
            "llc_balancing/overaggr_pct" => self.llc.overaggr_pct = u32_value()?,
            "llc_balancing/imb_pct" => self.llc.imb_pct = u32_value()?,
            "tunable_scaling" => {
                self.tunable_scaling = match value.trim().parse::<u32>() {
                    Ok(0) => TunableScaling::None,
                    Ok(1) => TunableScaling::Log,
                    Ok(2) => TunableScaling::Linear,
                    _ => return Err(bad("0, 1 or 2")),
                }
            }
            _ => return Err(ConfigError::UnknownSysctl(key.to_string())),
        }
        Ok(())
    }

    /// `sysctl_sched_migration_cost == -1` as the u32 holds it: every task is cache hot
    /// (`task_hot()`, fair.c v7.3.4).
    pub fn migration_cost_always_hot(&self) -> bool {
        self.migration_cost_ns == u64::from(u32::MAX)
    }
}

/// `CONFIG_PREEMPT*` / `preempt=`: where a pending reschedule is acted upon (spec §3.12.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptModel {
    None,
    Voluntary,
    Full,
    Lazy,
}

impl PreemptModel {
    pub fn parse(s: &str) -> Option<PreemptModel> {
        match s {
            "none" => Some(PreemptModel::None),
            "voluntary" => Some(PreemptModel::Voluntary),
            "full" => Some(PreemptModel::Full),
            "lazy" => Some(PreemptModel::Lazy),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            PreemptModel::None => "none",
            PreemptModel::Voluntary => "voluntary",
            PreemptModel::Full => "full",
            PreemptModel::Lazy => "lazy",
        }
    }
    /// Whether a full reschedule request preempts kernel-mode code at once.
    pub fn preempts_kernel(self) -> bool {
        matches!(self, PreemptModel::Full | PreemptModel::Lazy)
    }
}

/// Which form of `wakeup_preempt_fair()` runs (spec §3.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeupPreemptVariant {
    /// v7.3 (reference, §3.13.2).
    V7_3,
    /// 6.19 – 7.2 (§3.13.4), and 6.18.33+ by backport: unconditional need_resched return, no
    /// SHORT-eligible rule.
    V7_2,
    /// ≤ 6.18.32 (§6.1 "OFF"; the `v6.12` and `v6.16` presets): the old NEXT_BUDDY, which only
    /// chose who runs next.
    V6_18,
}

/// How slice protection is set (spec §3.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtectVariant {
    /// 7.3: `ineligible_vruntime` with PREEMPT_SHORT; `update_protect_slice` credits positive lag.
    V7_3,
    /// 6.17 – 7.2: `vprot` bounded by the shortest queued slice.
    V6_17,
    /// ≤ 6.16: the vlag marker, protecting the whole current request when RUN_TO_PARITY is on.
    V6_16,
}

/// How far the lag of an entity is clamped (spec §3.4): `entity_lag()`'s span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LagClamp {
    /// 7.x, and 6.18.17+ / 6.19.9 by backport: `calc_delta_fair(max_slice_on_rq + TICK_NSEC)`.
    MaxSlicePlusTick,
    /// 6.12 - 6.19.0: `calc_delta_fair(max(2 * se.slice, TICK_NSEC))`.
    TwiceSlice,
}

/// Behaviour switches that are not kernel feature flags: kernel-version differences and the
/// five named patches of the brief (spec §6), each a precise toggle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behavior {
    pub wakeup_preempt: WakeupPreemptVariant,
    pub protect: ProtectVariant,
    pub lag_clamp: LagClamp,
    /// 7.x `update_entity_lag()` (7.2.12 l.859): a delayed entity's lag may only move towards
    /// zero (and DELAY_ZERO clips it there), and `requeue_delayed_entity()` re-places it only
    /// when that lag moved it. Before (6.12.117 l.5541 and l.6984, 6.18.44, 6.19.9): the lag is
    /// recomputed from scratch, `finish_delayed_dequeue_entity()` drops a positive one under
    /// DELAY_ZERO, and a requeue drops a positive fresh lag and re-places the entity at V.
    pub delayed_lag_monotone: bool,
    /// 7.2+ (78cde54ea5f0): `pick_eevdf()` takes an eligible next buddy only when it honours
    /// slice protection (`protect`), so a shorter-slice wakee's pick ignores the buddy. 6.18.44
    /// and 6.19 return an eligible buddy whatever `protect` says.
    pub buddy_pick_needs_protect: bool,
    /// 7.2+: a shorter-slice wakeup preemption (PREEMPT_WAKEUP_SHORT) also clears curr's
    /// buddies (`clear_buddies()` after `cancel_protect_slice()`); 6.18.44 and 6.19 only cancel
    /// the protection.
    pub short_preempt_clears_buddies: bool,
    /// The wakeup-preemption pick of the 6.19 form (`WakeupPreemptVariant::V7_2`): 7.x and
    /// 6.18.33+ go through `pick_next_entity()`, which dequeues a picked delayed entity for good
    /// and picks again; 6.19.0 - 6.19.9 compare `__pick_eevdf()` with the wakee directly, so a
    /// delayed pick means no preemption and stays queued.
    pub wakeup_pick_drains_delayed: bool,
    pub calc_delta: CalcDelta,
    /// 7.1+: avg_vruntime sums use full-resolution weights; before, `scale_load_down(w)`.
    pub avg_full_weight: bool,
    /// 7.3.4 lag inflation `lag + lag*w/W`; before, `lag*(W+w)/W`.
    pub place_lag_split_div: bool,
    /// 6.19-rc1..rc6: reschedule when the waker is no longer eligible (spec §6.2).
    pub force_wakeup_preempt: bool,
    /// Unmerged fix: `preempt_sync` measures the waker's runtime since it was picked (§6.3).
    pub preempt_sync_runtime_fix: bool,
    /// 6.16+: `wake_affine_idle` does not count delayed entities (§6.4).
    pub wa_idle_ignore_delayed: bool,
    /// Unmerged: keep the waker CPU for reciprocal sync wakeups on non-SMT systems (§6.5).
    pub sync_reciprocal_waker_cpu: bool,
    /// Kernels before 6.13 have no lazy preemption (no `preempt=lazy`, and every
    /// `resched_curr_lazy` is a full request).
    pub has_lazy: bool,
    /// Up to 6.19, x86-64 offers `preempt=none` and `voluntary`; 7.0 (7dadeaa6e851, "Further
    /// restrict the preemption modes") leaves architectures with lazy support only full and lazy
    /// (7.2.12/7.3.4 core.c `sched_dynamic_mode`).
    pub has_none_voluntary: bool,
    /// 7.2+: curr is charged (`update_curr`) before a delayed task is requeued at wakeup;
    /// up to 6.19 `requeue_delayed_entity` runs against a V without curr's latest runtime
    /// (6.12.117 fair.c l.6984, 7.2.12 l.7995, 7.3.4 l.8237).
    pub requeue_updates_curr: bool,
    /// The first proportional newidle form (33cf66d88306, 6.19, backported to 6.12.y and
    /// 6.18.y): NI_RANDOM always rolls the die and the success ratio is not clamped to 1024.
    /// 7.0 (9fe89f022c05) adds NI_RATE, the clamp and the `ratio < 1024` short-circuit.
    pub newidle_always_roll: bool,
    /// `yield_task_fair` forfeits the request (`vruntime = deadline`, 79104becf42b, 6.19,
    /// backported to 6.12.y and 6.18.y); before, it pushed the deadline one slice further.
    pub yield_forfeits_vruntime: bool,
    /// Load-balancing version differences (`engine/balance`).
    pub balance: BalanceVariant,
    /// 7.3: group entity weights from `calc_concur_shares()` (the default `cgroup_mode`
    /// "concur", fb1050ac8e40); before, `calc_group_shares()` (`fair/group.rs`).
    pub concur_shares: bool,
    /// ≤7.2: EEVDF runs per level of the task-group hierarchy (group entities in their
    /// parents' trees, `find_matching_se()`, group slices: `fair/hier.rs`); 7.3's flat
    /// runqueue holds only tasks, with effective weights (`fair/group.rs`).
    pub group_levels: bool,
    /// 7.2.12/7.3.4: an hrtick started inside `__schedule()` is only noted
    /// (`HRTICK_SCHED_START`) and programmed by `hrtick_schedule_exit()` from
    /// `finish_lock_switch()`, i.e. after the context switch (core.c 7.3.4 l.970, l.1007,
    /// l.5263), so it expires the request's length after the switch ends while the task's
    /// runtime counts from the pick. 6.12.117 `hrtick_start()` programs the timer at once.
    pub hrtick_armed_after_switch: bool,
    /// CONFIG_SCHED_CACHE (init/Kconfig 7.2.12/7.3.4, `default y`; Debian's 7.2.12 and 7.3.4
    /// amd64 configs have it): cache-aware load balancing (`engine/balance/llc.rs`). Not in
    /// 6.12.117; the version that added it between the two was not checked.
    pub sched_cache: bool,
    /// The form of `reweight_entity()` that ≤7.2's group levels use for a group entity
    /// (`fair/hier.rs`).
    pub reweight: ReweightForm,
}

/// `reweight_entity()` of a queued entity by version (fair.c 6.12.117 l.3901, 7.2.12 l.4871;
/// the 6.13-6.19 form from the diff of its revert, 101f3498b4bd).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReweightForm {
    /// ≤6.12: `reweight_eevdf()` keeps the clamped lag and the deadline's distance from V,
    /// scaled by old/new.
    Eevdf,
    /// 6.13-6.19 (6d71a9c61604, "Fix EEVDF entity placement bug causing scheduling lag"): the
    /// lag saved, the deadline made relative to the entity's vruntime, both (and a running
    /// entity's protection) scaled, then `place_entity(se, 0)` places it back, the lag
    /// inflated against the runqueue's remaining load.
    Place,
    /// 7.0+ (101f3498b4bd reverts the above; in 6.18.y from the stable queue of 2026-08-11)
    /// and 7.2.12: `rescale_entity()` keeps V invariant, the entity back at `V - vlag`, its
    /// deadline and protection relative to V.
    Rescale,
}

/// Where the load balancer of a version differs (fair.c of 6.12.117, 7.2.12, 7.3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum BalanceVariant {
    /// 6.12.117: `can_migrate_task()` has no ineligibility filter and moves delayed tasks for
    /// any migration type; `find_new_ilb()` takes the first idle CPU of the NOHZ mask other
    /// than the kicking one.
    V6_12,
    /// 7.2.12 (presets 6.16-7.2; the version that added the filter was not checked):
    /// `task_is_ineligible_on_dst_cpu()` refuses an ineligible task for a busy destination
    /// until a balance has failed, and a delayed task moves only for `migrate_load` (the model:
    /// never); the ILB choice as 6.12.
    V7_2,
    /// 7.3.4: as 7.2, and `find_new_ilb()` prefers an idle CPU on a wholly idle core.
    V7_3,
}

impl Behavior {
    pub fn v7_3() -> Behavior {
        Behavior {
            wakeup_preempt: WakeupPreemptVariant::V7_3,
            protect: ProtectVariant::V7_3,
            lag_clamp: LagClamp::MaxSlicePlusTick,
            delayed_lag_monotone: true,
            buddy_pick_needs_protect: true,
            short_preempt_clears_buddies: true,
            wakeup_pick_drains_delayed: true,
            calc_delta: CalcDelta::Div,
            avg_full_weight: true,
            place_lag_split_div: true,
            force_wakeup_preempt: false,
            preempt_sync_runtime_fix: false,
            wa_idle_ignore_delayed: true,
            sync_reciprocal_waker_cpu: false,
            has_lazy: true,
            has_none_voluntary: false,
            requeue_updates_curr: true,
            newidle_always_roll: false,
            yield_forfeits_vruntime: true,
            balance: BalanceVariant::V7_3,
            concur_shares: true,
            group_levels: false,
            hrtick_armed_after_switch: true,
            sched_cache: true,
            reweight: ReweightForm::Rescale,
        }
    }
}

/// The whole scheduler configuration of one simulated kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedConfig {
    /// Preset name, e.g. `v7.3`, for reports.
    pub kernel: String,
    pub features: FeatureSet,
    pub sysctl: Sysctls,
    pub behavior: Behavior,
    pub hz: u32,
    pub preempt: PreemptModel,
}

impl SchedConfig {
    /// Linux v7.3.4 on x86-64 with its Kconfig defaults (HZ=250, PREEMPT_LAZY).
    pub fn v7_3() -> SchedConfig {
        SchedConfig {
            kernel: "v7.3".to_string(),
            features: FeatureSet::v7_3(),
            sysctl: Sysctls::v7_3(),
            behavior: Behavior::v7_3(),
            hz: 250,
            preempt: PreemptModel::Lazy,
        }
    }
    /// Whether this kernel offers its preemption model (`sched_dynamic_mode()`, core.c); the
    /// error names the model and the ones the kernel has.
    pub fn check_preempt(&self) -> Result<(), String> {
        let offered = match self.preempt {
            PreemptModel::None | PreemptModel::Voluntary => self.behavior.has_none_voluntary,
            PreemptModel::Full => true,
            PreemptModel::Lazy => self.behavior.has_lazy,
        };
        if offered {
            return Ok(());
        }
        let have: Vec<&str> = [PreemptModel::None, PreemptModel::Voluntary, PreemptModel::Full, PreemptModel::Lazy]
            .into_iter()
            .filter(|m| match m {
                PreemptModel::None | PreemptModel::Voluntary => self.behavior.has_none_voluntary,
                PreemptModel::Full => true,
                PreemptModel::Lazy => self.behavior.has_lazy,
            })
            .map(PreemptModel::name)
            .collect();
        Err(format!(
            "{} does not offer preempt={} (it has: {}; since 7.0 an architecture with lazy preemption, x86-64 and arm64 among them, builds neither none nor voluntary)",
            self.kernel,
            self.preempt.name(),
            have.join(", ")
        ))
    }

    /// Whether `resched_curr_lazy()` sets TIF_NEED_RESCHED_LAZY: only under preempt=lazy
    /// (`dynamic_preempt_lazy()`, core.c v7.3.4 `get_lazy_tif_bit`); otherwise it is a full
    /// request.
    pub fn lazy_resched(&self) -> bool {
        self.behavior.has_lazy && self.preempt == PreemptModel::Lazy
    }

    /// `TICK_NSEC`: `(NSEC_PER_SEC + HZ/2) / HZ`.
    pub fn tick_nsec(&self) -> u64 {
        (1_000_000_000 + u64::from(self.hz) / 2) / u64::from(self.hz)
    }
}

/// Bounds on one run: the main loop stops at whichever is reached first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_events: u64,
    pub max_time_ns: u64,
}

/// A configuration value that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    UnknownSysctl(String),
    BadValue { key: String, value: String, expected: &'static str },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::UnknownSysctl(k) => {
                let known: Vec<&str> = Sysctls::KEYS.iter().map(|(k, _)| *k).collect();
                write!(f, "unknown sysctl `{k}` (known: {})", known.join(", "))
            }
            ConfigError::BadValue { key, value, expected } => {
                write!(f, "sysctl `{key}`: `{value}` is not {expected}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_slice_scales_with_log_of_cpus() {
        let s = Sysctls::v7_3();
        assert_eq!(s.base_slice(1), 700_000);
        assert_eq!(s.base_slice(2), 1_400_000);
        assert_eq!(s.base_slice(3), 1_400_000);
        assert_eq!(s.base_slice(4), 2_100_000);
        assert_eq!(s.base_slice(8), 2_800_000);
        assert_eq!(s.base_slice(192), 2_800_000);
    }

    #[test]
    fn sysctl_assignments() {
        let mut s = Sysctls::v7_3();
        s.set("base_slice_ns", "3000000").unwrap();
        assert_eq!(s.base_slice(64), 3_000_000);
        s.set("migration_cost_ns", "0").unwrap();
        assert_eq!(s.migration_cost_ns, 0);
        assert!(matches!(s.set("sched_latency_ns", "1"), Err(ConfigError::UnknownSysctl(_))));
        assert!(matches!(s.set("migration_cost_ns", "-1"), Err(ConfigError::BadValue { .. })));
    }

    /// The debugfs files are u32: the largest value is taken as written, one more is refused
    /// (not wrapped or truncated), and so are zero slices and scaling modes from 3 on.
    #[test]
    fn sysctls_hold_the_kernels_ranges() {
        let mut s = Sysctls::v7_3();
        s.set("base_slice_ns", "4294967295").unwrap();
        assert_eq!(s.base_slice(4), 4_294_967_295);
        s.set("migration_cost_ns", "4294967295").unwrap();
        assert!(s.migration_cost_always_hot());
        s.set("nr_migrate", "4294967295").unwrap();
        assert_eq!(s.nr_migrate, u32::MAX);
        let before = s.clone();
        for (key, value) in [
            ("base_slice_ns", "4294967296"),
            ("base_slice_ns", "9223372036854775807"),
            ("base_slice_ns", "18446744073709551615"),
            ("base_slice_ns", "0"),
            ("migration_cost_ns", "4294967296"),
            ("nr_migrate", "99999999999"),
            ("tunable_scaling", "3"),
            ("tunable_scaling", "-1"),
        ] {
            let err = s.set(key, value).expect_err(value);
            assert!(matches!(err, ConfigError::BadValue { .. }), "{key}={value}: {err}");
            assert!(err.to_string().contains(key), "{err}");
        }
        assert_eq!(s, before, "a refused value changes nothing");
    }

    /// The `llc_balancing/` debugfs files: `enabled` is a kstrtobool, the rest u32s;
    /// `epoch_period` defaults to HZ/100 jiffies until written.
    #[test]
    fn llc_balancing_knobs() {
        let mut s = Sysctls::v7_3();
        assert!(s.llc.enabled && s.llc.epoch_period(250) == 2 && s.llc.epoch_period(1000) == 10);
        s.set("llc_balancing/enabled", "n").unwrap();
        s.set("llc_balancing/epoch_period", "7").unwrap();
        s.set("llc_balancing/imb_pct", "30").unwrap();
        assert!(!s.llc.enabled && s.llc.epoch_period(250) == 7 && s.llc.imb_pct == 30);
        assert!(matches!(s.set("llc_balancing/enabled", "2"), Err(ConfigError::BadValue { .. })));
        assert!(matches!(s.set("llc_balancing/overaggr_pct", "-1"), Err(ConfigError::BadValue { .. })));
        assert!(matches!(s.set("llc_balancing/nope", "1"), Err(ConfigError::UnknownSysctl(_))));
    }

    #[test]
    fn tick_nsec_rounds_like_the_kernel() {
        let mut c = SchedConfig::v7_3();
        assert_eq!(c.tick_nsec(), 4_000_000);
        c.hz = 300;
        assert_eq!(c.tick_nsec(), 3_333_333);
    }
}
