//! The cost profile of a measured guest, fitted once from the guest's own timing columns.
//!
//! Emulation (or a different machine) changes costs, not rules. The profile takes the
//! `vm-2cpu` preset's costs and fits two numbers per guest: one factor that scales every kernel
//! cost (syscalls, switches, copies, IPC paths, wakeups) to the guest's default `hb_pipe`
//! seconds — hackbench keeps both CPUs busy, so its time is the sum of those costs — and the
//! exit latency of a halted vCPU to the guest's default `pp` µs per round trip, where every
//! wakeup goes to the other, idle, vCPU. Everything else the model is scored on is predicted
//! with that profile; the two fitted cells are not scored.

use sim::topology::{Costs, Topology};

use super::truth::{CaseKey, GroundTruth, Guest};
use crate::LabError;

/// The workloads whose default `bench_value` the profile is fitted to.
pub const FIT_WORKLOADS: [&str; 2] = ["hb_pipe", "pp"];

/// A fitted profile.
#[derive(Clone, Debug)]
pub struct Profile {
    pub guest: Guest,
    /// Factor on every kernel cost of `vm-2cpu`.
    pub scale: f64,
    /// Exit latency of a halted vCPU (both idle states), ns.
    pub wake_ns: u64,
    pub costs: Costs,
    /// (workload, real, model) of the fitted values.
    pub fit: Vec<(&'static str, f64, f64)>,
}

/// The base costs: the 2-vCPU KVM guest preset, whose idle vCPUs halt (no polling).
pub fn base_costs() -> Costs {
    Topology::preset("vm-2cpu").map(|t| t.costs).unwrap_or_else(Costs::x86_server)
}

/// `base` with every kernel cost scaled by `scale` and both idle exit latencies at `wake_ns`.
pub fn costs_for(base: &Costs, scale: f64, wake_ns: u64) -> Costs {
    let mut c = base.clone();
    for (key, value) in base.values() {
        // Jitter is a percentage, polling and residency are the idle governor's thresholds.
        if matches!(
            key,
            "jitter_pct" | "idle_poll_ns" | "idle_deep_residency_ns" | "idle_exit_ns_c1" | "idle_exit_ns_deep"
        ) {
            continue;
        }
        let scaled = (value as f64 * scale).round() as u64;
        // Every key of `values()` is settable; a failure would be a bug in Costs.
        let _ = c.set(key, scaled);
    }
    c.idle_exit_ns_c1 = wake_ns;
    c.idle_exit_ns_deep = wake_ns;
    c
}

/// The real default `bench_value` median of `workload` on `guest`.
pub fn real_bench(truth: &GroundTruth, guest: &Guest, workload: &str) -> Result<f64, LabError> {
    let key = CaseKey { guest: guest.clone(), variant: "default".into(), workload: workload.into() };
    truth.row(&key).and_then(|r| r.metrics.get("bench_value")).map(|s| s.median).filter(|v| *v > 0.0).ok_or_else(|| {
        LabError::Input(format!(
            "{}: no default {workload} bench_value for {guest}: the cost profile is fitted from it",
            truth.dir.join("summary.csv").display()
        ))
    })
}

/// Fits a profile. `model(costs, workload)` is the model's median `bench_value` of a default
/// run of `workload` on the guest with `costs`.
pub fn fit(
    truth: &GroundTruth,
    guest: &Guest,
    model: &dyn Fn(&Costs, &str) -> Result<f64, LabError>,
) -> Result<Profile, LabError> {
    let real_hb = real_bench(truth, guest, FIT_WORKLOADS[0])?;
    let real_pp = real_bench(truth, guest, FIT_WORKLOADS[1])?;
    let base = base_costs();
    let (mut scale, mut wake) = (1.0f64, base.idle_exit_ns_c1 as f64);
    // Alternate: the scale from the busy benchmark, then the wake latency from the ping-pong,
    // which is linear in it (two wakeups of an idle vCPU per round trip). Eight rounds settle
    // both to well under a percent.
    for _ in 0..8 {
        let hb = model(&costs_for(&base, scale, wake as u64), FIT_WORKLOADS[0])?;
        if hb > 0.0 {
            scale *= real_hb / hb;
        }
        let w0 = wake;
        let w1 = wake * 1.5 + 1_000.0;
        let p0 = model(&costs_for(&base, scale, w0 as u64), FIT_WORKLOADS[1])?;
        let p1 = model(&costs_for(&base, scale, w1 as u64), FIT_WORKLOADS[1])?;
        if p1 > p0 {
            wake = (w0 + (real_pp - p0) * (w1 - w0) / (p1 - p0)).clamp(0.0, 10_000_000.0);
        }
    }
    let costs = costs_for(&base, scale, wake as u64);
    let fit = vec![
        (FIT_WORKLOADS[0], real_hb, model(&costs, FIT_WORKLOADS[0])?),
        (FIT_WORKLOADS[1], real_pp, model(&costs, FIT_WORKLOADS[1])?),
    ];
    Ok(Profile { guest: guest.clone(), scale, wake_ns: wake as u64, costs, fit })
}
