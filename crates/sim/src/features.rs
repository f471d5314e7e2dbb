//! Scheduler features by their kernel names (`kernel/sched/features.h`, v7.3.4), with the
//! `/sys/kernel/debug/sched/features` syntax: a name turns a feature on, `NO_<name>` off.

use std::fmt;

macro_rules! features {
    ($($name:ident = $default:expr, $doc:literal;)*) => {
        /// One scheduler feature flag, named as in `kernel/sched/features.h`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        #[allow(non_camel_case_types)]
        pub enum Feature { $($name),* }

        impl Feature {
            /// Every feature in `features.h` order (the order debugfs prints them in).
            pub const ALL: &'static [Feature] = &[$(Feature::$name),*];

            /// The kernel's name of the feature.
            pub const fn name(self) -> &'static str {
                match self { $(Feature::$name => stringify!($name)),* }
            }

            /// The v7.3.4 default on x86-64 (HRTICK on with `CONFIG_HRTIMER_REARM_DEFERRED`,
            /// TTWU_QUEUE on and RT_PUSH_IPI off without PREEMPT_RT).
            pub const fn default_v7_3(self) -> bool {
                match self { $(Feature::$name => $default),* }
            }

            /// What the feature changes, in one line.
            pub const fn doc(self) -> &'static str {
                match self { $(Feature::$name => $doc),* }
            }
        }
    };
}

features! {
    PLACE_LAG = true, "keep (scaled) lag across sleep and migration when placing an entity";
    PLACE_DEADLINE_INITIAL = true, "a new task's first deadline is V + vslice/2";
    PLACE_REL_DEADLINE = true, "a non-sleep dequeue keeps the deadline relative to vruntime";
    RUN_TO_PARITY = true, "slice protection bounded by the shortest queued slice";
    PREEMPT_SHORT = true, "a wakee with a shorter slice ignores slice protection";
    NEXT_BUDDY = false, "nominate the wakee as the next buddy (WF_SYNC goes through preempt_sync)";
    PICK_BUDDY = true, "a protected pick returns an eligible next buddy first";
    CACHE_HOT_BUDDY = true, "load balancing treats the next buddy as cache hot";
    DELAY_DEQUEUE = true, "ineligible sleepers stay queued until picked or woken";
    DELAY_ZERO = true, "delayed tasks leave and return with lag clipped to <= 0";
    PARANOID_AVG = false, "overflow-checked avg_vruntime sums (not modelled: sums are exact)";
    WAKEUP_PREEMPTION = true, "master switch of wakeup preemption";
    HRTICK = true, "precise reschedule at the end of the current request";
    HRTICK_DL = true, "hrtick for the deadline class (no effect on the fair class)";
    NONTASK_CAPACITY = true, "CPU capacity excludes IRQ and RT time";
    TTWU_QUEUE = true, "remote wakeups go through the target's wake list";
    SIS_UTIL = true, "limit the idle-CPU scan depth by LLC utilisation";
    WARN_DOUBLE_CLOCK = false, "debug only";
    RT_PUSH_IPI = false, "RT class only";
    RT_RUNTIME_SHARE = false, "RT class only";
    LB_MIN = false, "load balancing skips tasks with tiny load";
    ATTACH_AGE_LOAD = true, "PELT aging on attach";
    WA_IDLE = true, "wake_affine_idle: prefer an idle waker or previous CPU";
    WA_WEIGHT = true, "wake_affine_weight: compare CPU loads";
    WA_BIAS = true, "imbalance bias in wake_affine_weight";
    UTIL_EST = true, "utilisation estimation";
    LATENCY_WARN = false, "debug only";
    NI_RANDOM = true, "newidle balance only with probability proportional to past success";
    NI_RATE = true, "the newidle success ratio also credits a low call rate";
}

impl Feature {
    /// Looks a feature up by its kernel name (exact, upper case).
    pub fn from_name(name: &str) -> Option<Feature> {
        Feature::ALL.iter().copied().find(|f| f.name() == name)
    }
}

/// The state of every feature flag: a bit set indexed by `Feature`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FeatureSet(u64);

impl FeatureSet {
    /// The v7.3.4 defaults.
    pub fn v7_3() -> FeatureSet {
        let mut s = FeatureSet(0);
        for &f in Feature::ALL {
            s.set(f, f.default_v7_3());
        }
        s
    }
    #[inline]
    pub fn has(&self, f: Feature) -> bool {
        self.0 & (1 << f as u32) != 0
    }
    pub fn set(&mut self, f: Feature, on: bool) {
        if on {
            self.0 |= 1 << f as u32;
        } else {
            self.0 &= !(1 << f as u32);
        }
    }
    /// Applies one token of the debugfs syntax: `NAME` or `NO_NAME`.
    pub fn apply(&mut self, token: &str) -> Result<(), UnknownFeature> {
        let token = token.trim();
        if let Some(f) = Feature::from_name(token) {
            self.set(f, true);
            return Ok(());
        }
        match token.strip_prefix("NO_").and_then(Feature::from_name) {
            Some(f) => {
                self.set(f, false);
                Ok(())
            }
            None => Err(UnknownFeature(token.to_string())),
        }
    }
    /// Applies a comma-separated list such as `NO_NEXT_BUDDY,DELAY_DEQUEUE`.
    pub fn apply_list(&mut self, list: &str) -> Result<(), UnknownFeature> {
        list.split(',').filter(|t| !t.trim().is_empty()).try_for_each(|t| self.apply(t))
    }
    /// The tokens that turn the defaults of v7.3 into this set, in `features.h` order.
    pub fn diff_from(&self, base: &FeatureSet) -> Vec<String> {
        Feature::ALL
            .iter()
            .filter(|&&f| self.has(f) != base.has(f))
            .map(|&f| if self.has(f) { f.name().to_string() } else { format!("NO_{}", f.name()) })
            .collect()
    }
}

impl FeatureSet {
    /// As `cat /sys/kernel/debug/sched/features` prints on a kernel without the features in
    /// `absent`: every other feature, `NAME` or `NO_NAME`, each followed by a space.
    pub fn line_without(&self, absent: &[Feature]) -> String {
        let on_off = |&f: &Feature| if self.has(f) { format!("{} ", f.name()) } else { format!("NO_{} ", f.name()) };
        Feature::ALL.iter().filter(|f| !absent.contains(f)).map(on_off).collect()
    }
}

impl fmt::Display for FeatureSet {
    /// Exactly as `cat /sys/kernel/debug/sched/features` prints on 7.3.4 (every feature).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line_without(&[]))
    }
}

impl fmt::Debug for FeatureSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FeatureSet({self})")
    }
}

/// A feature name the kernel does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownFeature(pub String);

impl fmt::Display for UnknownFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown scheduler feature `{}` (see `schedlab features`)", self.0)
    }
}

impl std::error::Error for UnknownFeature {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debugfs_syntax_round_trips() {
        let mut s = FeatureSet::v7_3();
        assert!(!s.has(Feature::NEXT_BUDDY));
        s.apply_list("NEXT_BUDDY,NO_DELAY_DEQUEUE").unwrap();
        assert!(s.has(Feature::NEXT_BUDDY) && !s.has(Feature::DELAY_DEQUEUE));
        assert_eq!(s.diff_from(&FeatureSet::v7_3()), ["NEXT_BUDDY", "NO_DELAY_DEQUEUE"]);
        let printed = s.to_string();
        assert!(printed.starts_with("PLACE_LAG PLACE_DEADLINE_INITIAL "));
        assert!(printed.contains(" NEXT_BUDDY ") && printed.contains(" NO_DELAY_DEQUEUE "));
        assert_eq!(s.apply("NO_SUCH"), Err(UnknownFeature("NO_SUCH".into())));
        assert_eq!(s.apply("next_buddy"), Err(UnknownFeature("next_buddy".into())));
    }
}
