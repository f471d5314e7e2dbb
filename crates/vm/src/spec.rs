//! Variant SPECs for a guest kernel: the model's SPEC grammar (`sim::kernel::parse_spec`)
//! restricted to what a running kernel can be told. `default` (the kernel as booted),
//! `FEATURE`/`NO_FEATURE` (written to `sched/features`), `preempt=MODEL` (`sched/preempt`) and
//! the scheduler sysctls `base_slice_ns`, `migration_cost_ns`, `nr_migrate`, `tunable_scaling`
//! (their debugfs files), checked with the model's own bounds. Everything else the model
//! accepts is a usage error naming the token and saying why: a kernel preset (the guest *is*
//! the kernel), `+patch`/`-patch` (a patch needs a kernel built with it: boot that image),
//! `hz=` (a build option).
//!
//! Whether the guest kernel has the feature, the sysctl file or the preemption model is checked
//! in the guest, which reports an unknown one as a usage error too.

use crate::VmError;
use crate::guest::{Settings, valid_feature_token};

/// A variant as the user typed it, and what the guest applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestVariant {
    /// As typed (the table's legend).
    pub name: String,
    /// The tokens in force, base's first, single spaces; `default` when there are none.
    pub spec: String,
    pub settings: Settings,
}

/// The sysctls a guest accepts, in the order they are written: `tunable_scaling` first, since
/// its write (`sched_scaling_write` → `update_sysctl`) recomputes the base slice.
const SYSCTLS: &[&str] = &["tunable_scaling", "base_slice_ns", "migration_cost_ns", "nr_migrate"];

/// Parses `text` on top of `base` (a variant's tokens apply after the base's, as in the model).
/// `flag` names the option in errors (`--variant`).
pub fn parse(text: &str, base: Option<&GuestVariant>, flag: &str) -> Result<GuestVariant, VmError> {
    let mut settings = base.map(|b| b.settings.clone()).unwrap_or_default();
    let mut tokens: Vec<String> =
        base.map(|b| b.spec.split(' ').filter(|t| *t != "default").map(String::from).collect()).unwrap_or_default();
    let err = |tok: &str, why: String| VmError::Usage(format!("{flag} `{text}`: `{tok}`: {why}"));
    for tok in text.split(|c: char| c.is_whitespace() || c == ',').filter(|t| !t.is_empty()) {
        if tok == "default" {
            continue;
        }
        if sim::kernel::preset(tok).is_some() {
            return Err(err(
                tok,
                "a kernel preset names a model kernel; with --vm the kernel is the guest's own (drop the preset)"
                    .into(),
            ));
        }
        if tok.starts_with(['+', '-']) {
            return Err(err(
                tok,
                "a booted kernel cannot apply or revert a patch; build a kernel with it and give its image (--vm PATH/bzImage)"
                    .into(),
            ));
        }
        if let Some((k, v)) = tok.split_once('=') {
            match k {
                "hz" => {
                    return Err(err(tok, "HZ is a build option (CONFIG_HZ): the guest runs with its kernel's".into()));
                }
                "preempt" => {
                    if sim::config::PreemptModel::parse(v).is_none() {
                        return Err(err(tok, "preempt must be none, voluntary, full or lazy".into()));
                    }
                    settings.preempt = Some(v.to_string());
                }
                _ => {
                    if !SYSCTLS.contains(&k) {
                        return Err(err(
                            tok,
                            format!("not a scheduler sysctl a guest can be given (known: {})", SYSCTLS.join(", ")),
                        ));
                    }
                    // The model's own bounds (the debugfs files are u32, tunable_scaling 0..=2).
                    let mut probe = sim::config::SchedConfig::v7_3();
                    probe.sysctl.set(k, v).map_err(|e| err(tok, e.to_string()))?;
                    let v: u64 = v.trim().parse().map_err(|_| err(tok, "not a whole number".into()))?;
                    settings.sysctls.retain(|(key, _)| key != k);
                    settings.sysctls.push((k.to_string(), v.to_string()));
                    settings.sysctls.sort_by_key(|(key, _)| SYSCTLS.iter().position(|s| s == key));
                }
            }
        } else if valid_feature_token(tok) {
            // The last word on a feature wins, as the writes happen in order.
            let name = tok.strip_prefix("NO_").unwrap_or(tok);
            settings.features.retain(|f| f.strip_prefix("NO_").unwrap_or(f) != name);
            settings.features.push(tok.to_string());
        } else {
            return Err(err(
                tok,
                "not a feature token (NAME or NO_NAME in capitals, as /sys/kernel/debug/sched/features lists them)"
                    .into(),
            ));
        }
        tokens.push(tok.to_string());
    }
    let spec = if tokens.is_empty() { "default".to_string() } else { tokens.join(" ") };
    Ok(GuestVariant { name: text.trim().to_string(), spec, settings })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(r: Result<GuestVariant, VmError>) -> String {
        match r {
            Err(VmError::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn what_a_guest_can_be_told() {
        let base = parse("default", None, "--base").unwrap();
        assert_eq!(base.spec, "default");
        assert_eq!(base.settings, Settings::default());
        let v = parse(
            "NO_WAKEUP_PREEMPTION preempt=full base_slice_ns=3000000 tunable_scaling=0",
            Some(&base),
            "--variant",
        )
        .unwrap();
        assert_eq!(v.settings.features, ["NO_WAKEUP_PREEMPTION"]);
        assert_eq!(v.settings.preempt.as_deref(), Some("full"));
        // tunable_scaling is written before base_slice_ns.
        assert_eq!(
            v.settings.sysctls,
            [("tunable_scaling".to_string(), "0".to_string()), ("base_slice_ns".to_string(), "3000000".to_string())]
        );
        // A variant applies on top of its base; the last word on a feature wins.
        let b = parse("NO_PLACE_LAG", None, "--base").unwrap();
        let v = parse("PLACE_LAG,NEXT_BUDDY", Some(&b), "--variant").unwrap();
        assert_eq!(v.settings.features, ["PLACE_LAG", "NEXT_BUDDY"]);
        assert_eq!(v.spec, "NO_PLACE_LAG PLACE_LAG NEXT_BUDDY");
    }

    #[test]
    fn what_a_guest_cannot_express_is_named() {
        let e = usage(parse("v6.12 NO_WAKEUP_PREEMPTION", None, "--base"));
        assert!(e.starts_with("--base `v6.12 NO_WAKEUP_PREEMPTION`: `v6.12`: a kernel preset"), "{e}");
        let e = usage(parse("+preempt-sync-runtime-fix", None, "--variant"));
        assert!(e.contains("`+preempt-sync-runtime-fix`: a booted kernel cannot apply or revert a patch"), "{e}");
        assert!(usage(parse("hz=1000", None, "--variant")).contains("`hz=1000`: HZ is a build option"));
        assert!(usage(parse("preempt=rt", None, "--variant")).contains("preempt must be none"));
        assert!(usage(parse("sched_min_granularity=3", None, "--variant")).contains("not a scheduler sysctl"));
        // The model's bounds: the debugfs file is a u32.
        assert!(usage(parse("base_slice_ns=99999999999", None, "--variant")).contains("`base_slice_ns=99999999999`"));
        assert!(usage(parse("no_wakeup", None, "--variant")).contains("not a feature token"));
    }
}
