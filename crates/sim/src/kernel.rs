//! Kernel-version presets, the named patches of the brief, and the variant SPEC grammar
//! (`v7.3 +next-buddy-eevdf NO_DELAY_DEQUEUE base_slice_ns=3000000`), from spec
//! `kernel-fair.md` §0.1, §4 and §6.
//!
//! A preset sets the feature defaults and the behaviour switches of one kernel version; a patch
//! changes exactly what the patch changed. Both are plain data on a [`SchedConfig`].

use std::fmt;

use crate::config::{
    BalanceVariant, Behavior, LagClamp, PreemptModel, ProtectVariant, ReweightForm, SchedConfig, Sysctls,
    WakeupPreemptVariant,
};
use crate::fair::weight::CalcDelta;
use crate::features::{Feature, FeatureSet};

/// A kernel preset: its name, what defines it, and the source its switches were checked against.
pub struct KernelPreset {
    pub name: &'static str,
    pub summary: &'static str,
    /// The kernel source the preset's switches were checked against, or what they rest on.
    pub source: &'static str,
    /// The features of the model that this version's `features.h` does not have: its debugfs
    /// neither lists nor accepts them.
    pub absent: &'static [Feature],
    build: fn() -> SchedConfig,
}

impl KernelPreset {
    pub fn config(&self) -> SchedConfig {
        (self.build)()
    }
}

/// The presets, oldest first, as distributions ship them (a stable release where a stable
/// series carries backports: `v6.12` is the 6.12 LTS); `v6.12.0` is upstream 6.12.0. v7.3 is the
/// default.
pub const KERNELS: &[KernelPreset] = &[
    KernelPreset {
        name: "v6.12",
        summary: "6.12 LTS as shipped (6.12.117): complete EEVDF, 0.70 ms base slice, whole-request run-to-parity (marker at every pick), wake_affine_idle delayed-task fix, NI_RANDOM (always rolls), forfeiting yield, no lazy preemption, multiply-shift calc_delta",
        source: "checked: Debian linux-source-6.12 (6.12.117) fair.c, features.h, core.c",
        absent: &[Feature::PARANOID_AVG, Feature::NI_RATE],
        build: v6_12,
    },
    KernelPreset {
        name: "v6.12.0",
        summary: "upstream 6.12.0: 0.75 ms base slice, delayed tasks counted in wake_affine_idle, no proportional newidle balance, yield pushes the deadline a slice",
        source: "from 6.12.117 minus the backports named in their upstream commits (aa3ee4f0b754, 33cf66d88306, 79104becf42b, the 0.70 ms slice); tree not checked",
        absent: &[Feature::PARANOID_AVG, Feature::NI_RANDOM, Feature::NI_RATE],
        build: v6_12_0,
    },
    KernelPreset {
        name: "v6.16",
        summary: "0.70 ms base slice (6.15); wake_affine_idle ignores delayed tasks (aa3ee4f0b754); 6.12 protection form; yield pushes the deadline",
        source: "not checked against a 6.16 tree (none found): 6.12.117 and 6.18.0 code around it plus the upstream commits named",
        absent: &[Feature::PARANOID_AVG, Feature::NI_RANDOM, Feature::NI_RATE],
        build: v6_16,
    },
    KernelPreset {
        name: "v6.18",
        summary: "6.18 LTS as shipped (6.18.44): vprot slice protection bounded by the shortest slice (6.17); backported 6.19 wakeup preemption (NEXT_BUDDY reimplementation, off) with a draining wakeup pick, max-slice lag clamp, NI_RANDOM (always rolls), forfeiting yield; voluntary preemption; multiply-shift calc_delta",
        source: "checked: 6.18.44 fair.c, features.h, core.c (a 6.18.y tree with one commit per stable release; 6.18.0 and 6.18.26 compared)",
        absent: &[Feature::PARANOID_AVG, Feature::NI_RATE],
        build: v6_18,
    },
    KernelPreset {
        name: "v6.19-rc6",
        summary: "NEXT_BUDDY reimplementation enabled (e837456fdca8, aceccac58ad7) and forced wakeup preemption of an ineligible waker",
        source: "the v6.19 preset (checked against 6.19.0) plus the two commits; the rc tree not checked",
        absent: &[Feature::PARANOID_AVG, Feature::NI_RATE],
        build: v6_19_rc6,
    },
    KernelPreset {
        name: "v6.19",
        summary: "reimplementation kept, NEXT_BUDDY off again (4f70f106bca1) and forced preemption reverted (15257cc2f905); wakeup pick without draining delayed tasks, buddy picked whatever the protection; zero_vruntime; voluntary preemption; multiply-shift calc_delta",
        source: "checked: 6.19.0 fair.c, features.h, core.c, Kconfig.preempt (6.19.9 compared: its max-slice lag clamp is not modelled)",
        absent: &[Feature::PARANOID_AVG, Feature::NI_RATE],
        build: v6_19,
    },
    KernelPreset {
        name: "v7.2",
        summary: "HRTICK on, full-resolution avg_vruntime weights, buddy only with protect (78cde54ea5f0), NI_RATE; 6.19-7.2 wakeup preemption; cache-aware load balancing (CONFIG_SCHED_CACHE) on multi-LLC machines",
        source: "checked: Debian linux-source-7.2 (7.2.12) fair.c, features.h, core.c",
        absent: &[],
        build: v7_2,
    },
    KernelPreset {
        name: "v7.3",
        summary: "flat runqueue; slice protection ends at ineligibility with shorter slices queued, short-eligible preemption, delayed tasks never preempt; cache-aware load balancing (CONFIG_SCHED_CACHE) on multi-LLC machines (reference, default)",
        source: "checked: Debian linux-source-7.3 (7.3.4) fair.c, features.h, core.c",
        absent: &[],
        build: SchedConfig::v7_3,
    },
];

/// Looks a preset up: `v7.3`, `7.3` and `v7.3.4` name the same one.
/// An exact name wins over a patch-level extension (`v6.12.0` is its own preset, `v6.12.117`
/// names the LTS).
pub fn preset(name: &str) -> Option<&'static KernelPreset> {
    let want = name.strip_prefix('v').unwrap_or(name);
    if let Some(k) = KERNELS.iter().find(|k| &k.name[1..] == want) {
        return Some(k);
    }
    KERNELS.iter().find(|k| {
        let have = &k.name[1..];
        want == have
            || want
                .strip_prefix(have)
                .is_some_and(|rest| rest.starts_with('.') && rest[1..].chars().all(|c| c.is_ascii_digit()))
    })
}

fn v7_2() -> SchedConfig {
    let mut c = SchedConfig::v7_3();
    c.kernel = "v7.2".into();
    c.behavior.wakeup_preempt = WakeupPreemptVariant::V7_2;
    c.behavior.protect = ProtectVariant::V6_17;
    c.behavior.place_lag_split_div = false;
    c.behavior.balance = BalanceVariant::V7_2;
    c.behavior.concur_shares = false;
    // 7.2.12 enqueue_task_fair()/pick_task_fair() walk the group levels (for_each_sched_entity);
    // 7.3.4's flat runqueue enqueues tasks only (enqueue_hierarchy()).
    c.behavior.group_levels = true;
    c
}

fn v6_19() -> SchedConfig {
    let mut c = v7_2();
    c.kernel = "v6.19".into();
    // The restriction to full/lazy on x86-64 (7dadeaa6e851) is a 7.0 commit; lazy became the
    // Kconfig default in 7.x (6.19.0 Kconfig.preempt defaults to PREEMPT_NONE, 7.2.12's to
    // PREEMPT_LAZY). Distributions ship voluntary (Debian's 6.12.117, the ground truth's guest).
    c.behavior.has_none_voluntary = true;
    c.preempt = PreemptModel::Voluntary;
    c.features.set(Feature::HRTICK, false);
    c.features.set(Feature::HRTICK_DL, false);
    c.features.set(Feature::NI_RATE, false);
    c.behavior.avg_full_weight = false;
    c.behavior.lag_clamp = LagClamp::TwiceSlice;
    // 6.19.0 update_entity_lag() l.693 recomputes a delayed entity's lag from scratch,
    // requeue_delayed_entity() l.6841 drops a positive one, finish_delayed_dequeue_entity()
    // l.5340 too.
    c.behavior.delayed_lag_monotone = false;
    // 6.19.0 check_preempt_wakeup_fair(): the wakeup pick is `__pick_eevdf(cfs_rq, !short) ==
    // pse` (no drain of a delayed pick), whose next buddy ignores `protect` (l.918), and a
    // shorter-slice preemption only cancels the protection (the same in 6.19.9).
    c.behavior.wakeup_pick_drains_delayed = false;
    c.behavior.buddy_pick_needs_protect = false;
    c.behavior.short_preempt_clears_buddies = false;
    // 64-bit division in __calc_delta came with 7.0 (patch.msgid.link/20260219080625.183283814@infradead.org).
    c.behavior.calc_delta = CalcDelta::MulShift;
    // Before 7.0's NI_RATE (9fe89f022c05) the die is always rolled and the ratio unclamped.
    c.behavior.newidle_always_roll = true;
    // 7.2.12 requeue_delayed_entity() starts with update_curr(); 6.12.117 has none.
    c.behavior.requeue_updates_curr = false;
    // The deferred hrtick programming of 7.2.12 is not in 6.19.0 (hrtick_start() l.913
    // programs the timer at once).
    c.behavior.hrtick_armed_after_switch = false;
    // CONFIG_SCHED_CACHE is in 7.2.12's init/Kconfig and not in 6.19.0's.
    c.behavior.sched_cache = false;
    // 6.19 still has 6d71a9c61604's placement in reweight_entity(); its revert (101f3498b4bd)
    // is a 7.0 commit of the same series as the calc_delta division above.
    c.behavior.reweight = ReweightForm::Place;
    c
}

fn v6_19_rc6() -> SchedConfig {
    let mut c = v6_19();
    c.kernel = "v6.19-rc6".into();
    c.features.set(Feature::NEXT_BUDDY, true);
    c.behavior.force_wakeup_preempt = true;
    c
}

/// 6.18 LTS as shipped: 6.18.44 (this project's build machine runs it), whose fair class is
/// 6.19.0's with these stable backports (dated by the 6.18.y release that took them): the
/// 6.19 wakeup-preemption form with the NEXT_BUDDY reimplementation (6.18.33) but a wakeup pick
/// that drains delayed entities as 7.x does; the `cfs_rq_max_slice() + TICK_NSEC` lag clamp
/// (6.18.17); NI_RANDOM (6.18.5) and the forfeiting yield (6.18.2, inherited from v6.19).
fn v6_18() -> SchedConfig {
    let mut c = v6_19();
    c.kernel = "v6.18".into();
    // 6.18.44 check_preempt_wakeup_fair() l.8869: `pick_next_entity(rq, cfs_rq, !short)`,
    // retried while it drains delayed entities.
    c.behavior.wakeup_pick_drains_delayed = true;
    // 6.18.44 update_entity_lag() l.767, without 7.x's rule for delayed entities.
    c.behavior.lag_clamp = LagClamp::MaxSlicePlusTick;
    // 6.18.44 reweight_entity() l.3843 still places the entity (`place_entity(se, 0)`, vprot
    // kept relative): the revert of 6d71a9c61604 (101f3498b4bd) is not in 6.18.44.
    c.behavior.reweight = ReweightForm::Place;
    c
}

fn v6_16() -> SchedConfig {
    let mut c = v6_18();
    c.kernel = "v6.16".into();
    c.behavior.protect = ProtectVariant::V6_16;
    // The old NEXT_BUDDY and wakeup pick (6.12.117 check_preempt_wakeup_fair() l.8865 and
    // 6.18.0 l.8738 both have them) and the 2·slice lag clamp (6.12.117, 6.18.0).
    c.behavior.wakeup_preempt = WakeupPreemptVariant::V6_18;
    c.behavior.lag_clamp = LagClamp::TwiceSlice;
    // Proportional newidle balance (33cf66d88306) and the forfeiting yield (79104becf42b) are
    // 6.19 commits; the 6.16 stable series had ended before either was backported.
    c.features.set(Feature::NI_RANDOM, false);
    c.behavior.yield_forfeits_vruntime = false;
    // 6d71a9c61604 is a 6.13 commit: 6.16 places a reweighted entity (no vprot yet).
    c.behavior.reweight = ReweightForm::Place;
    c
}

/// The 6.12 LTS as Debian ships it (6.12.117): 6.16's fair class without lazy preemption, with
/// the stable backports of the proportional newidle balance and the forfeiting yield.
fn v6_12() -> SchedConfig {
    let mut c = v6_16();
    c.kernel = "v6.12".into();
    c.features.set(Feature::NI_RANDOM, true);
    c.behavior = Behavior {
        has_lazy: false,
        yield_forfeits_vruntime: true,
        balance: BalanceVariant::V6_12,
        reweight: ReweightForm::Eevdf,
        ..c.behavior
    };
    c.preempt = PreemptModel::Voluntary;
    c
}

/// Upstream 6.12.0, before the stable backports.
fn v6_12_0() -> SchedConfig {
    let mut c = v6_12();
    c.kernel = "v6.12.0".into();
    c.sysctl = Sysctls { normalized_base_slice_ns: 750_000, ..Sysctls::v7_3() };
    c.features.set(Feature::NI_RANDOM, false);
    c.behavior = Behavior { wa_idle_ignore_delayed: false, yield_forfeits_vruntime: false, ..c.behavior };
    c
}

/// A named patch of the brief.
pub struct Patch {
    pub name: &'static str,
    pub summary: &'static str,
    pub reference: &'static str,
    /// Whether a configuration already has the patch.
    contains: fn(&SchedConfig) -> bool,
    /// Whether the code the patch changes exists in this configuration at all.
    applies: fn(&SchedConfig) -> bool,
    apply: fn(&mut SchedConfig),
    revert: fn(&mut SchedConfig),
}

pub const PATCHES: &[Patch] = &[
    Patch {
        name: "preempt-sync-runtime-fix",
        summary: "preempt_sync() measures the waker's runtime since it was picked (sum_exec_runtime - prev_sum_exec_runtime), not rq_clock_task - exec_start (always 0 after update_curr)",
        reference: "unmerged as of 7.3.4 (kernel-fair.md §6.3); fixes e837456fdca8",
        contains: |c| c.behavior.preempt_sync_runtime_fix,
        applies: |c| c.behavior.wakeup_preempt != WakeupPreemptVariant::V6_18,
        apply: |c| c.behavior.preempt_sync_runtime_fix = true,
        revert: |c| c.behavior.preempt_sync_runtime_fix = false,
    },
    Patch {
        name: "revert-force-wakeup-preemption",
        summary: "drop \"reschedule if the waker is no longer eligible\" from the wakeup preemption path",
        reference: "15257cc2f905 (6.19-rc7), https://patch.msgid.link/20260123102858.52428-1-vincent.guittot@linaro.org",
        contains: |c| !c.behavior.force_wakeup_preempt && c.behavior.wakeup_preempt != WakeupPreemptVariant::V6_18,
        applies: |c| c.behavior.force_wakeup_preempt,
        apply: |c| c.behavior.force_wakeup_preempt = false,
        revert: |c| c.behavior.force_wakeup_preempt = true,
    },
    Patch {
        name: "next-buddy-eevdf",
        summary: "the NEXT_BUDDY reimplementation aligned with EEVDF (set_preempt_buddy, preempt_sync, wakeup preemption actions), with NEXT_BUDDY enabled",
        reference: "e837456fdca8 + aceccac58ad7 (6.19-rc1), https://patch.msgid.link/20251112122521.1331238-3-mgorman@techsingularity.net",
        contains: |c| c.features.has(Feature::NEXT_BUDDY) && c.behavior.wakeup_preempt != WakeupPreemptVariant::V6_18,
        applies: |_| true,
        apply: |c| {
            if c.behavior.wakeup_preempt == WakeupPreemptVariant::V6_18 {
                c.behavior.wakeup_preempt = WakeupPreemptVariant::V7_2;
            }
            c.features.set(Feature::NEXT_BUDDY, true);
        },
        revert: |c| {
            c.features.set(Feature::NEXT_BUDDY, false);
            if c.behavior.wakeup_preempt == WakeupPreemptVariant::V7_2 && c.behavior.force_wakeup_preempt {
                c.behavior.force_wakeup_preempt = false;
            }
        },
    },
    Patch {
        name: "wake-affine-idle-delayed-fix",
        summary: "wake_affine_idle() counts only really-running tasks, not delayed-dequeue entities, in the sync \"waker is alone\" test",
        reference: "aa3ee4f0b754 (6.16), https://lore.kernel.org/r/20250303105241.17251-2-xuewen.yan@unisoc.com",
        contains: |c| c.behavior.wa_idle_ignore_delayed,
        applies: |_| true,
        apply: |c| c.behavior.wa_idle_ignore_delayed = true,
        revert: |c| c.behavior.wa_idle_ignore_delayed = false,
    },
    Patch {
        name: "wake-affine-sync-reciprocal",
        summary: "keep the wake-affine waker CPU for narrow reciprocal WF_SYNC wakeups on non-SMT systems when the waker's runqueue has no other runnable fair task, skipping select_idle_sibling",
        reference: "unmerged v5, https://lore.kernel.org/all/20261008-b4-sched-sync-wakeup-v5-1-1af9fab48965@gentwo.org/",
        contains: |c| c.behavior.sync_reciprocal_waker_cpu,
        applies: |_| true,
        apply: |c| c.behavior.sync_reciprocal_waker_cpu = true,
        revert: |c| c.behavior.sync_reciprocal_waker_cpu = false,
    },
];

pub fn patch(name: &str) -> Option<&'static Patch> {
    PATCHES.iter().find(|p| p.name == name)
}

/// A SPEC that cannot be used: the message names the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// A resolved variant: the configuration, the patches applied and reverted (in order), and the
/// SPEC text it came from.
#[derive(Clone, Debug)]
pub struct Variant {
    pub spec: String,
    pub config: SchedConfig,
    pub patches: Vec<String>,
}

/// Parses a SPEC: an optional kernel preset, then `+patch`, `-patch`, `FEATURE`, `NO_FEATURE`
/// and `key=value` tokens (sysctls, `preempt=`, `hz=`), separated by spaces or commas. Without
/// a preset the tokens apply on top of `base` (or v7.3 when there is none).
pub fn parse_spec(spec: &str, base: Option<&Variant>) -> Result<Variant, SpecError> {
    let mut tokens = spec.split(|c: char| c.is_whitespace() || c == ',').filter(|t| !t.is_empty()).peekable();
    let (mut config, mut patches) = match tokens.peek().and_then(|t| preset(t)) {
        Some(p) => {
            tokens.next();
            (p.config(), Vec::new())
        }
        None => match base {
            Some(b) => (b.config.clone(), b.patches.clone()),
            None => (SchedConfig::v7_3(), Vec::new()),
        },
    };
    for tok in tokens {
        if let Some(name) = tok.strip_prefix('+') {
            let p = find_patch(name)?;
            if (p.contains)(&config) {
                return Err(SpecError(format!("`{tok}`: {} already contains {}", config.kernel, p.name)));
            }
            if !(p.applies)(&config) {
                return Err(SpecError(format!("`{tok}`: {} does not have the code {} changes", config.kernel, p.name)));
            }
            (p.apply)(&mut config);
            patches.push(tok.to_string());
        } else if let Some(name) = tok.strip_prefix('-') {
            let p = find_patch(name)?;
            if !(p.contains)(&config) {
                return Err(SpecError(format!(
                    "`{tok}`: {} does not contain {}, nothing to revert",
                    config.kernel, p.name
                )));
            }
            (p.revert)(&mut config);
            patches.push(tok.to_string());
        } else if let Some((k, v)) = tok.split_once('=') {
            match k {
                "preempt" => {
                    config.preempt = PreemptModel::parse(v)
                        .ok_or_else(|| SpecError(format!("`{tok}`: preempt must be none, voluntary, full or lazy")))?;
                    config.check_preempt().map_err(|e| SpecError(format!("`{tok}`: {e}")))?;
                }
                "hz" => {
                    config.hz = v
                        .parse::<u32>()
                        .ok()
                        .filter(|hz| (24..=10_000).contains(hz))
                        .ok_or_else(|| SpecError(format!("`{tok}`: hz must be a number in 24..=10000")))?;
                }
                _ => config.sysctl.set(k, v).map_err(|e| SpecError(format!("`{tok}`: {e}")))?,
            }
        } else if preset(tok).is_some() {
            return Err(SpecError(format!("`{tok}`: the kernel preset must be the first token")));
        } else {
            apply_feature(&mut config, tok).map_err(|e| SpecError(format!("`{tok}`: {e}")))?;
        }
    }
    Ok(Variant { spec: spec.trim().to_string(), config, patches })
}

fn find_patch(name: &str) -> Result<&'static Patch, SpecError> {
    patch(name).ok_or_else(|| {
        let known: Vec<&str> = PATCHES.iter().map(|p| p.name).collect();
        SpecError(format!("unknown patch `{name}` (known: {})", known.join(", ")))
    })
}

/// The features `kernel`'s `features.h` lacks (none for a name that is not a preset).
pub fn absent_features(kernel: &str) -> &'static [Feature] {
    preset(kernel).map_or(&[], |p| p.absent)
}

/// Applies one feature token (`NAME` or `NO_NAME`) to `config` as a write to its kernel's
/// `/sys/kernel/debug/sched/features` would: a feature the version does not have is refused
/// (the kernel's `sched_feat_set()` finds no such name and the write fails with EINVAL).
pub fn apply_feature(config: &mut SchedConfig, token: &str) -> Result<(), String> {
    let name = token.trim();
    let feature = Feature::from_name(name).or_else(|| name.strip_prefix("NO_").and_then(Feature::from_name));
    if let Some(f) = feature
        && absent_features(&config.kernel).contains(&f)
    {
        return Err(format!("{} has no scheduler feature {} (its features.h lacks it)", config.kernel, f.name()));
    }
    config.features.apply(name).map_err(|e| e.to_string())
}

/// [`apply_feature`] for each token of a comma-separated list.
pub fn apply_features(config: &mut SchedConfig, list: &str) -> Result<(), String> {
    list.split(',').filter(|t| !t.trim().is_empty()).try_for_each(|t| apply_feature(config, t))
}

/// The feature line `kernel`'s debugfs prints for `features`: [`FeatureSet`]'s, without the
/// features the version lacks.
pub fn features_line(kernel: &str, features: &FeatureSet) -> String {
    features.line_without(absent_features(kernel))
}

/// The feature tokens that turn a preset's defaults into `features`.
pub fn feature_changes(kernel: &str, features: &FeatureSet) -> Vec<String> {
    let base = preset(kernel).map(|p| p.config().features).unwrap_or_else(FeatureSet::v7_3);
    features.diff_from(&base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_by_name() {
        assert_eq!(preset("v7.3").unwrap().name, "v7.3");
        assert_eq!(preset("7.3.4").unwrap().name, "v7.3");
        assert_eq!(preset("v6.19-rc6").unwrap().name, "v6.19-rc6");
        assert!(preset("v6.1").is_none());
        assert!(preset("v7.30").is_none());
        // An exact name wins; a patch level of another release names the series' preset.
        assert_eq!(preset("v6.12.0").unwrap().name, "v6.12.0");
        assert_eq!(preset("6.12.117").unwrap().name, "v6.12");
        for k in KERNELS {
            assert_eq!(k.config().kernel, k.name, "preset {} names itself", k.name);
        }
    }

    /// The version switches spec §0.1 lists.
    #[test]
    fn presets_follow_the_timeline() {
        let rc6 = preset("v6.19-rc6").unwrap().config();
        assert!(rc6.features.has(Feature::NEXT_BUDDY) && rc6.behavior.force_wakeup_preempt);
        let v619 = preset("v6.19").unwrap().config();
        assert!(!v619.features.has(Feature::NEXT_BUDDY) && !v619.behavior.force_wakeup_preempt);
        assert_eq!(v619.behavior.wakeup_preempt, WakeupPreemptVariant::V7_2);
        assert!(!v619.features.has(Feature::HRTICK) && preset("v7.2").unwrap().config().features.has(Feature::HRTICK));
        // 6.18.33 backported the 6.19 form, with the draining wakeup pick of 7.x; 6.19.0 has none
        // (docs/presets.md). 6.16 keeps the old form.
        let v618 = preset("v6.18").unwrap().config().behavior;
        assert_eq!(v618.wakeup_preempt, WakeupPreemptVariant::V7_2);
        assert!(v618.wakeup_pick_drains_delayed && !v619.behavior.wakeup_pick_drains_delayed);
        assert!(!v618.buddy_pick_needs_protect && !v619.behavior.buddy_pick_needs_protect);
        assert!(preset("v7.2").unwrap().config().behavior.buddy_pick_needs_protect);
        assert_eq!(v618.lag_clamp, LagClamp::MaxSlicePlusTick);
        assert!(!v618.delayed_lag_monotone && preset("v7.2").unwrap().config().behavior.delayed_lag_monotone);
        assert_eq!(preset("v6.16").unwrap().config().behavior.wakeup_preempt, WakeupPreemptVariant::V6_18);
        assert_eq!(preset("v6.16").unwrap().config().behavior.lag_clamp, LagClamp::TwiceSlice);
        assert_eq!(v619.preempt, PreemptModel::Voluntary);
        assert!(!preset("v6.12.0").unwrap().config().behavior.wa_idle_ignore_delayed);
        assert!(preset("v6.16").unwrap().config().behavior.wa_idle_ignore_delayed);
        assert_eq!(preset("v6.12.0").unwrap().config().sysctl.base_slice(8), 3_000_000);
        assert_eq!(preset("v7.3").unwrap().config().sysctl.base_slice(8), 2_800_000);
    }

    /// 6.12.117 as Debian ships it against upstream 6.12.0 (checked in linux-source-6.12:
    /// fair.c l.76, l.7467, l.12943, features.h NI_RANDOM, yield_task_fair).
    #[test]
    fn v6_12_is_the_lts_as_shipped() {
        let lts = preset("v6.12").unwrap().config();
        assert_eq!(lts.sysctl.base_slice(1), 700_000);
        assert!(lts.behavior.wa_idle_ignore_delayed && lts.behavior.yield_forfeits_vruntime);
        assert!(lts.features.has(Feature::NI_RANDOM) && !lts.features.has(Feature::NI_RATE));
        assert!(lts.behavior.newidle_always_roll && !lts.behavior.requeue_updates_curr);
        assert!(!lts.behavior.has_lazy && lts.behavior.has_none_voluntary);
        let up = preset("v6.12.0").unwrap().config();
        assert_eq!(up.sysctl.base_slice(1), 750_000);
        assert!(!up.behavior.wa_idle_ignore_delayed && !up.behavior.yield_forfeits_vruntime);
        assert!(!up.features.has(Feature::NI_RANDOM));
        // 7.2.12 requeue_delayed_entity() calls update_curr() first; 7.3.4 enqueue_task_fair does.
        assert!(preset("v7.2").unwrap().config().behavior.requeue_updates_curr);
        assert!(!preset("v6.18").unwrap().config().behavior.requeue_updates_curr);
        for k in KERNELS {
            assert!(!k.source.is_empty(), "{} says what its switches were checked against", k.name);
            assert!(k.config().check_preempt().is_ok(), "{}: its default model is offered", k.name);
        }
    }

    #[test]
    fn specs_apply_tokens_in_order() {
        let base = parse_spec("v7.3", None).unwrap();
        let v =
            parse_spec("+preempt-sync-runtime-fix NEXT_BUDDY base_slice_ns=3000000 preempt=full", Some(&base)).unwrap();
        assert!(v.config.behavior.preempt_sync_runtime_fix && v.config.features.has(Feature::NEXT_BUDDY));
        assert_eq!(v.config.sysctl.base_slice_ns, Some(3_000_000));
        assert_eq!(v.config.preempt, PreemptModel::Full);
        assert_eq!(v.patches, ["+preempt-sync-runtime-fix"]);
        let v = parse_spec("v6.19-rc6,-next-buddy-eevdf", None).unwrap();
        assert!(!v.config.features.has(Feature::NEXT_BUDDY));
        let v = parse_spec("v6.19-rc6 +revert-force-wakeup-preemption", None).unwrap();
        assert!(!v.config.behavior.force_wakeup_preempt);
        let v = parse_spec("v6.12.0 +wake-affine-idle-delayed-fix", None).unwrap();
        assert!(v.config.behavior.wa_idle_ignore_delayed);
    }

    /// A version's features are those of its `features.h` (docs/presets.md: NI_RATE and
    /// PARANOID_AVG are 7.x's; NI_RANDOM came to 6.12.y and 6.18.y as a stable backport).
    #[test]
    fn features_a_version_lacks_are_refused_and_not_listed() {
        let err = parse_spec("v6.18 NI_RATE", None).unwrap_err().0;
        assert!(err.contains("`NI_RATE`") && err.contains("v6.18 has no scheduler feature NI_RATE"), "{err}");
        assert!(parse_spec("v6.19 NO_PARANOID_AVG", None).is_err());
        assert!(parse_spec("v6.12.0 NI_RANDOM", None).is_err());
        assert!(parse_spec("v6.12 NO_NI_RANDOM", None).is_ok());
        assert!(parse_spec("v7.3 NO_NI_RATE", None).is_ok());
        let cfg = preset("v6.18").unwrap().config();
        let line = features_line("v6.18", &cfg.features);
        assert!(line.contains("NI_RANDOM ") && !line.contains("NI_RATE") && !line.contains("PARANOID_AVG"), "{line}");
        let v73 = SchedConfig::v7_3();
        assert_eq!(features_line("v7.3", &v73.features), v73.features.to_string());
        let mut c = preset("v6.16").unwrap().config();
        assert!(apply_features(&mut c, "NEXT_BUDDY,NI_RANDOM").is_err());
    }

    #[test]
    fn spec_errors_name_the_token() {
        let err = |s: &str| parse_spec(s, None).unwrap_err().0;
        assert!(err("v7.3 +wake-affine-idle-delayed-fix").contains("already contains"));
        assert!(err("v7.3 -wake-affine-sync-reciprocal").contains("nothing to revert"));
        assert!(err("v7.3 +revert-force-wakeup-preemption").contains("already contains"));
        assert!(err("v6.16 +preempt-sync-runtime-fix").contains("does not have the code"));
        assert!(err("v7.3 +no-such-patch").contains("unknown patch"));
        assert!(err("v7.3 NO_SUCH").contains("NO_SUCH"));
        assert!(err("v7.3 v7.2").contains("first token"));
        assert!(err("v7.3 preempt=rt").contains("preempt=rt"));
        assert!(err("v7.3 preempt=none").contains("does not offer preempt=none"));
        assert!(err("v6.12 preempt=lazy").contains("it has: none, voluntary, full"));
        assert!(err("v7.3 bogus_ns=1").contains("bogus_ns"));
    }
}
