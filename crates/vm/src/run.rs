//! `schedlab vm run`: one boot per variant (retried once in a fresh boot when the guest
//! oopses), each running the workload `runs` times in the guest, and the per-variant table.

use std::fmt::Write as _;

use crate::VmError;
use crate::console::GuestRun;
use crate::guest::{self, GuestPlan, Settings};
use crate::kernel::Kernel;
use crate::qemu::Accel;
use crate::session::{Session, SessionOptions};

/// A variant: `default` (the kernel's own features) or feature tokens to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    pub name: String,
    pub features: Vec<String>,
}

impl Variant {
    /// `default`, or `TOKEN[,TOKEN...]` (e.g. `NO_WAKEUP_PREEMPTION`).
    pub fn parse(spec: &str) -> Result<Variant, VmError> {
        if spec == "default" {
            return Ok(Variant { name: spec.into(), features: vec![] });
        }
        let features: Vec<String> = spec.split(',').map(|t| t.trim().to_string()).collect();
        if let Some(bad) = features.iter().find(|t| !guest::valid_feature_token(t)) {
            return Err(VmError::Usage(format!(
                "--variant {spec}: {bad:?} is not a feature token (NAME or NO_NAME in capitals, as /sys/kernel/debug/sched/features lists them)"
            )));
        }
        Ok(Variant { name: spec.into(), features })
    }
}

/// The guest's machine: `smp:N`, a preset or a topology file that qemu can boot
/// ([`crate::topology::parse`]).
pub fn parse_topology(spec: &str) -> Result<crate::topology::GuestTopology, VmError> {
    crate::topology::parse(spec)
}

pub struct VmOptions {
    pub session: SessionOptions,
    pub variants: Vec<Variant>,
    pub runs: u32,
    /// Repetitions run first in each boot and discarded.
    pub warmup: u32,
    pub workload: Vec<String>,
    /// Start the benchmark in a session of its own ([`GuestPlan::own_session`]).
    pub own_session: bool,
}

#[derive(Debug)]
pub struct VariantResult {
    pub variant: Variant,
    pub features: String,
    pub boot_secs: Option<f64>,
    pub total_secs: f64,
    pub runs: Vec<GuestRun>,
    /// Oopses that were retried, with their console tails.
    pub retried: Vec<String>,
    /// The benchmark's task group in each run, warm-up runs included (`root` or
    /// `/autogroup-N nice 0`).
    pub groups: Vec<String>,
}

#[derive(Debug)]
pub struct VmReport {
    pub kernel: Kernel,
    pub accel: Accel,
    pub release: String,
    pub online: String,
    pub tools: Vec<String>,
    pub warmup: u32,
    pub variants: Vec<VariantResult>,
    /// The check of the guest's sched domains and LLCs against the topology's.
    pub domains: Vec<String>,
}

/// Boots once per variant (a second, fresh boot when the first oopses) and collects the
/// guest's counters. `note` receives progress messages for stderr.
pub fn run(opts: &VmOptions, note: &(dyn Fn(&str) + Sync)) -> Result<VmReport, VmError> {
    if opts.runs == 0 {
        return Err(VmError::Usage("--runs 0: at least one repetition".into()));
    }
    if opts.workload.is_empty() {
        return Err(VmError::Usage("no workload given (e.g. `hackbench -p -g 1 -l 20`)".into()));
    }
    crate::session::check_workload(&opts.workload, &opts.session.topology)?;
    let mut session = Session::new(&opts.session, note)?;
    let mut out = VmReport {
        kernel: session.kernel.clone(),
        accel: session.accel,
        release: String::new(),
        online: String::new(),
        tools: session.tools().to_vec(),
        warmup: opts.warmup,
        variants: vec![],
        domains: vec![],
    };
    for v in &opts.variants {
        let plan = GuestPlan {
            settings: Settings { features: v.features.clone(), ..Settings::default() },
            calibrate: None,
            warmup: opts.warmup,
            runs: opts.runs,
            workload: opts.workload.clone(),
            builtin: false,
            replug: opts.session.replug,
            trace_kb: opts.session.trace_kb,
            own_session: opts.own_session,
        };
        note(&format!("vm: booting for variant {} ({} runs)", v.name, opts.runs));
        let b = session.boot(&plan, &format!("--variant {}", v.name), note)?;
        // The accelerator actually used (auto falls back to TCG when KVM fails).
        out.accel = session.accel;
        out.release = b.console.release.clone().unwrap_or_default();
        out.online = b.console.online.clone().unwrap_or_default();
        let result = VariantResult {
            variant: v.clone(),
            features: b.console.features.clone().unwrap_or_default(),
            boot_secs: b.boot_secs,
            total_secs: b.total_secs,
            runs: b.runs,
            retried: b.retried,
            groups: b.console.groups.clone(),
        };
        note(&format!(
            "vm: variant {} done in {:.1} s (boot {:.1} s)",
            v.name,
            result.total_secs,
            result.boot_secs.unwrap_or(f64::NAN)
        ));
        out.variants.push(result);
    }
    out.domains = session.domains_check.map(|d| d.1).unwrap_or_default();
    Ok(out)
}

/// Median, min and max.
fn mmm(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let med = if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 };
    (med, xs[0], xs[n - 1])
}

fn cell(xs: Vec<f64>, prec: usize) -> String {
    if xs.iter().any(|x| x.is_nan()) {
        return "n/a".into();
    }
    let (m, lo, hi) = mmm(xs);
    if lo == hi { format!("{m:.prec$}") } else { format!("{m:.prec$} ({lo:.prec$}-{hi:.prec$})") }
}

impl VmReport {
    /// The report as one JSON object: the kernel, the accelerator and, per variant, the
    /// features read back and each run's counters.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let (hz, preempt) = self.kernel.sched_config();
        json!({
            "kernel": self.kernel.label,
            "release": self.release,
            "online": self.online,
            "accel": if self.accel == Accel::Kvm { "kvm" } else { "tcg" },
            "hz": hz,
            "preempt": preempt,
            "tools": self.tools,
            "sched_domains_check": self.domains,
            "warmup_runs_discarded": self.warmup,
            "variants": self.variants.iter().map(|v| json!({
                "variant": v.variant.name,
                "features": v.features,
                "boot_secs": v.boot_secs,
                "total_secs": v.total_secs,
                "oopses_retried": v.retried.len(),
                "task_groups": v.groups,
                "runs": v.runs.iter().map(|r| json!({
                    "ops": r.ops,
                    "op": r.op,
                    "nr_switches": r.switches,
                    "nr_involuntary_switches": r.involuntary,
                    "nr_wakeups": r.wakeups,
                    "nr_migrations": r.migrations,
                    "metric": {"name": r.metric_name, "value": r.metric},
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }

    /// The per-variant table: medians over the runs, min-max in parentheses.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let (hz, preempt) = self.kernel.sched_config();
        let _ = writeln!(
            s,
            "# schedlab vm: {} (release {}), vCPUs online {}, {}, HZ {}, preempt {} (built-in default)",
            self.kernel.label,
            self.release,
            self.online,
            self.accel.name(),
            hz.map_or("?".into(), |h| h.to_string()),
            preempt.unwrap_or("?")
        );
        let _ = writeln!(
            s,
            "# guest tools: {}",
            if self.tools.is_empty() { "none (schedlab's built-in workers)".into() } else { self.tools.join(", ") }
        );
        for l in &self.domains {
            let _ = writeln!(s, "# {l}");
        }
        let Some(first) = self.variants.first().and_then(|v| v.runs.first()) else { return s };
        let _ = writeln!(
            s,
            "# per {}; median (min-max) over {} runs in one boot per variant, after {} warm-up run(s) discarded; {} in the guest's time",
            first.op,
            first_runs(self),
            self.warmup,
            first.metric_name
        );
        let _ = writeln!(
            s,
            "{:<28} {:>26} {:>22} {:>24} {:>26} {:>28}",
            "variant", "switches/op", "invol_share", "wakeups/op", "migrations/op", first.metric_name
        );
        for v in &self.variants {
            let r = &v.runs;
            let _ = writeln!(
                s,
                "{:<28} {:>26} {:>22} {:>24} {:>26} {:>28}",
                v.variant.name,
                cell(r.iter().map(|x| x.per_op(x.switches)).collect(), 4),
                cell(r.iter().map(|x| x.involuntary as f64 / x.switches.max(1) as f64).collect(), 3),
                cell(r.iter().map(|x| x.wakeups.map_or(f64::NAN, |w| x.per_op(w))).collect(), 4),
                cell(r.iter().map(|x| x.per_op(x.migrations)).collect(), 5),
                cell(r.iter().map(|x| x.metric).collect(), 4),
            );
        }
        for v in &self.variants {
            let _ = writeln!(
                s,
                "# {}: boot {} s, {:.1} s in all; features read back: {}",
                v.variant.name,
                v.boot_secs.map_or("?".into(), |b| format!("{b:.1}")),
                v.total_secs,
                v.features
            );
            let mut groups = v.groups.clone();
            groups.dedup();
            if !groups.is_empty() {
                let _ = writeln!(s, "# {}: the benchmark's task group: {}", v.variant.name, groups.join(", "));
            }
            for _ in &v.retried {
                let _ = writeln!(s, "# {}: the first boot oopsed and was retried", v.variant.name);
            }
        }
        s
    }
}

fn first_runs(r: &VmReport) -> usize {
    r.variants.first().map_or(0, |v| v.runs.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_checked() {
        assert_eq!(parse_topology("smp:2").unwrap().nr_cpus(), 2);
        assert!(matches!(parse_topology("2s4c"), Err(VmError::Usage(_))));
        assert!(matches!(parse_topology("smp:0"), Err(VmError::Usage(_))));
        assert_eq!(
            Variant::parse("NO_WAKEUP_PREEMPTION,PLACE_LAG").unwrap().features,
            ["NO_WAKEUP_PREEMPTION", "PLACE_LAG"]
        );
        assert!(Variant::parse("default").unwrap().features.is_empty());
        assert!(matches!(Variant::parse("no_wakeup"), Err(VmError::Usage(_))));
    }

    #[test]
    fn cells_are_median_min_max() {
        assert_eq!(cell(vec![3.0, 1.0, 2.0], 1), "2.0 (1.0-3.0)");
        assert_eq!(cell(vec![2.0, 2.0], 2), "2.00");
        assert_eq!(cell(vec![f64::NAN], 2), "n/a");
    }
}
