//! Turns command-line arguments into the simulator's values. Every bad input becomes a
//! [`UserError`] that names what is wrong and where (exit code 2).

use std::fmt;
use std::path::Path;

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

/// The kernel configuration from `--kernel`, `--features`, `--sysctl`, `--preempt`, `--hz`.
pub fn sched_config(a: &SimArgs) -> anyhow::Result<SchedConfig> {
    let mut cfg = kernel_preset(&a.kernel)?;
    if let Some(list) = &a.features
        && let Err(e) = cfg.features.apply_list(list)
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
    }
    if let Some(hz) = a.hz {
        if !(24..=10_000).contains(&hz) {
            return user(format!("--hz: {hz} is outside 24..=10000"));
        }
        cfg.hz = hz;
    }
    Ok(cfg)
}

/// A kernel preset by name, or a `UserError` listing the known ones.
pub fn kernel_preset(name: &str) -> anyhow::Result<SchedConfig> {
    if name == "host" {
        return crate::native_cmd::host_kernel_config();
    }
    match sim::kernel::preset(name) {
        Some(p) => Ok(p.config()),
        None => {
            let known: Vec<&str> = sim::kernel::KERNELS.iter().map(|k| k.name).collect();
            user(format!("--kernel: unknown kernel preset `{name}` (known: {})", known.join(", ")))
        }
    }
}

/// The machine from `--topology` (preset, `smp:N` or a TOML file) and `--cost`.
pub fn topology(a: &SimArgs) -> anyhow::Result<Topology> {
    let spec = a.topology.as_str();
    let mut topo = if spec.ends_with(".toml") || Path::new(spec).is_file() {
        match machine::load_topology_file(Path::new(spec)) {
            Ok(t) => t,
            Err(e) => return user(format!("--topology: {e}")),
        }
    } else if spec == "host" {
        match machine::host_topology() {
            Ok(t) => t,
            Err(e) => return user(format!("--topology host: {e}")),
        }
    } else {
        match Topology::by_name(spec) {
            Ok(t) => t,
            Err(e) => return user(format!("--topology: {e}")),
        }
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
    for kv in &a.cost {
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
    Ok(topo)
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
