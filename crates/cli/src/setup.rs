//! Turns command-line arguments into the simulator's values. Every bad input becomes a
//! [`UserError`] that names what is wrong and where (exit code 2).

use std::fmt;

use sim::config::{PreemptModel, SchedConfig};
use sim::topology::Topology;

use crate::args::SimArgs;

/// Bad input: printed as one line, exit code 2.
#[derive(Debug)]
pub struct UserError(pub String);

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

/// A run that stopped before its benchmark finished: no result, exit code 3. The message says
/// what cut it and how far it got.
#[derive(Debug)]
pub struct Incomplete(pub String);

impl fmt::Display for Incomplete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Incomplete {}

pub fn user<T>(msg: impl Into<String>) -> Result<T, anyhow::Error> {
    Err(UserError(msg.into()).into())
}

/// A lab error as the binary reports it: bad input exits 2, anything else is internal.
pub fn lab_err(e: lab::LabError) -> anyhow::Error {
    match e {
        lab::LabError::Input(m) => UserError(m).into(),
        lab::LabError::Internal(m) => anyhow::anyhow!(m),
    }
}

/// The kernel configuration from `--kernel` (a full SPEC: preset, patches, features, sysctls),
/// then `--features`, `--sysctl`, `--preempt`, `--hz` on top; and the patches the SPEC applied.
pub fn sched_config(a: &SimArgs) -> anyhow::Result<SchedConfig> {
    Ok(kernel_spec(a)?.0)
}

/// [`sched_config`] and the patch tokens of `--kernel`, in order.
pub fn kernel_spec(a: &SimArgs) -> anyhow::Result<(SchedConfig, Vec<String>)> {
    let (mut cfg, patches) = kernel(&a.kernel)?;
    if let Some(list) = &a.features
        && let Err(e) = sim::kernel::apply_features(&mut cfg, list)
    {
        return user(format!("--features: {e}"));
    }
    for kv in &a.sysctl {
        let Some((k, v)) = kv.split_once('=') else {
            return user(format!("--sysctl: `{kv}` is not KEY=VALUE"));
        };
        if let Err(e) = cfg.sysctl.set(k.trim(), v) {
            return user(format!("--sysctl: {e}"));
        }
    }
    if let Some(p) = &a.preempt {
        match PreemptModel::parse(p) {
            Some(m) => cfg.preempt = m,
            None => return user(format!("--preempt: `{p}` is not one of none, voluntary, full, lazy")),
        }
        if let Err(e) = cfg.check_preempt() {
            return user(format!("--preempt: {e}"));
        }
    }
    if let Some(hz) = a.hz {
        if !(24..=10_000).contains(&hz) {
            return user(format!("--hz: {hz} is outside 24..=10000"));
        }
        cfg.hz = hz;
    }
    Ok((cfg, patches))
}

/// A kernel SPEC (`v7.3 +preempt-sync-runtime-fix NEXT_BUDDY`, glued forms too, as in
/// `compare`), or `host`; the message names the bad token and lists the presets.
pub fn kernel(spec: &str) -> anyhow::Result<(SchedConfig, Vec<String>)> {
    if spec.trim() == "host" {
        return Ok((crate::native_cmd::host_kernel_config()?, Vec::new()));
    }
    let full = lab::spec::full_base(spec);
    // A first word that is no preset, patch, feature or key=value is a mistyped preset.
    let normalized = lab::spec::normalize(spec);
    let first = normalized.split(' ').next().unwrap_or("");
    let is_feature = |w: &str| sim::features::Feature::from_name(w.strip_prefix("NO_").unwrap_or(w)).is_some();
    if !lab::spec::has_preset(&normalized)
        && !first.starts_with(['+', '-'])
        && !first.contains('=')
        && !is_feature(first)
    {
        let known: Vec<&str> = sim::kernel::KERNELS.iter().map(|k| k.name).collect();
        return user(format!("--kernel: unknown kernel preset `{first}` (known: {}, host)", known.join(", ")));
    }
    match lab::spec::parse_full(&full) {
        Ok(v) => Ok((v.config, v.patches)),
        Err(e) => user(format!("--kernel `{spec}`: {e}")),
    }
}

/// A kernel preset or SPEC by name, or a `UserError` naming what is wrong.
pub fn kernel_preset(name: &str) -> anyhow::Result<SchedConfig> {
    Ok(kernel(name)?.0)
}

/// The machine from `--topology` (preset, `smp:N`, `host` or a TOML file, with optional
/// `:cpus=`/`:nodes=`) and `--cost`.
pub fn topology(a: &SimArgs) -> anyhow::Result<Topology> {
    let mut topo = match machine::resolve_topology(&a.topology) {
        Ok(t) => t,
        Err(e) => return user(format!("--topology: {e}")),
    };
    if let Some(file) = &a.cost_file {
        match machine::load_cost_file(file) {
            Ok(overrides) => {
                for (k, ns) in overrides {
                    if let Err(e) = topo.costs.set(&k, ns) {
                        return user(format!("--cost-file {}: {e}", file.display()));
                    }
                }
            }
            Err(e) => return user(format!("--cost-file: {e}")),
        }
    }
    apply_costs(&mut topo, &a.cost)?;
    Ok(topo)
}

/// Applies `--cost KEY=VALUE` settings, in order, to `topo`'s costs.
pub fn apply_costs(topo: &mut Topology, costs: &[String]) -> anyhow::Result<()> {
    for kv in costs {
        let Some((k, v)) = kv.split_once('=') else {
            return user(format!("--cost: `{kv}` is not KEY=VALUE"));
        };
        let Ok(ns) = v.trim().parse::<u64>() else {
            return user(format!("--cost: `{v}` for `{k}` is not a whole number of nanoseconds"));
        };
        if let Err(e) = topo.costs.set(k.trim(), ns) {
            return user(format!("--cost: {e}"));
        }
    }
    Ok(())
}

/// Parses a taskset-style CPU list (`0-3,8,10-11`) against the machine's CPU count.
pub fn cpu_list(list: &str, ncpus: u32) -> anyhow::Result<Vec<u32>> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let (Ok(lo), Ok(hi)) = (lo.parse::<u32>(), hi.parse::<u32>()) else {
            return user(format!("--cpus: `{part}` is not a CPU number or range"));
        };
        if lo > hi || hi >= ncpus {
            return user(format!("--cpus: `{part}` is not within the machine's CPUs 0-{}", ncpus - 1));
        }
        out.extend(lo..=hi);
    }
    if out.is_empty() {
        return user("--cpus: empty CPU list");
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list("0-3,8,2", 16).unwrap(), [0, 1, 2, 3, 8]);
        assert!(cpu_list("4", 4).is_err());
        assert!(cpu_list("3-1", 4).is_err());
        assert!(cpu_list("x", 4).is_err());
    }
}
