//! `schedlab validate --vm KERNEL`: a benchmark on a real kernel in qemu beside the model of
//! that kernel, in the side-by-side table of `native::validate` (the same rows, criteria and
//! rendering as `validate` on this machine).
//!
//! The model runs with the guest's own costs: the first boot runs `schedlab calibrate` in the
//! guest before its workload (the same microbenchmarks and derivations as on a host; in a VM
//! guest the cross-CPU ping-pong gives the halted-vCPU wakeup cost), and its cost file is
//! applied to the `smp:N` machine. The model's kernel is the preset nearest to the guest's
//! release, with the guest kernel's HZ (its config) and the preemption model the guest reports
//! in force (`sched/preempt`). Each repetition is a separate boot with warm-up runs discarded;
//! the model runs seeds `seed..seed+runs`.

use native::validate::{self as nv, Figures, Row};

use crate::VmError;
use crate::compare::record;
use crate::console::GuestRun;
use crate::guest::GuestPlan;
use crate::session::{Session, SessionOptions};
use crate::spec;

/// Repetitions of each of the guest's calibration microbenchmarks (the host default is 5):
/// under TCG every microbenchmark runs 20-50x slower.
pub const GUEST_CALIBRATE_REPETITIONS: u32 = 3;

pub struct ValidateRequest {
    pub session: SessionOptions,
    pub runs: u32,
    pub warmup: u32,
    pub workload: Vec<String>,
    /// A guest SPEC applied to the guest and the model alike (`default`, features, sysctls,
    /// `preempt=`).
    pub variant: String,
    /// Calibrate in the guest (else the model keeps the `smp:N` machine's costs plus `costs`).
    pub calibrate: bool,
    /// `schedlab calibrate --scale` in the guest.
    pub calibrate_scale: f64,
    /// Cost overrides applied after the calibration.
    pub costs: Vec<(String, u64)>,
    /// First seed of the model's runs.
    pub seed: u64,
    /// With a trace: each guest run's ftrace text goes here ([`crate::compare::check_trace`]).
    pub trace_out: Option<std::path::PathBuf>,
}

pub struct VmValidation {
    pub kernel_label: String,
    pub accel: String,
    pub nr_cpus: u32,
    /// The machine as `--topology` named it (guest and model).
    pub topology: String,
    pub release: String,
    pub preset: String,
    /// What the model was set to and why (preset match, HZ and preemption sources).
    pub model_notes: Vec<String>,
    /// The cost keys the model ran with that differ from the `smp:N` defaults.
    pub costs: Vec<(String, u64)>,
    /// The cost file the guest's calibration wrote.
    pub cost_file: Vec<String>,
    pub metric_name: String,
    pub op: String,
    pub guest: Vec<Figures>,
    pub sim: Vec<Figures>,
    pub rows: Vec<Row>,
    pub warmup: u32,
    pub tools: Vec<String>,
    /// What ran in the guest and how its tasks were read ([`GuestRun::runner`] of the last
    /// boot's run).
    pub runner: String,
    /// The system-wide `/proc/schedstat` delta of each guest run (`None` where the guest had no
    /// decodable schedstats) and the model's totals of each seed, as named counters.
    pub schedstat: (Vec<Option<Named>>, Vec<Option<Named>>),
}

/// The model's run-length bound beside a guest: `validate`'s 10 s, or, for a workload sized by
/// its operations (`ops`: pipe loops, hackbench messages), ten times the guest's longest run
/// when that is longer. Such a workload ends when its tasks do, so the bound only has to be out
/// of its way: with a slow guest's calibrated costs (a loaded host under TCG) the model's
/// `pipe -l 5000` can need more than 10 simulated seconds. A workload that runs for a time of
/// its own keeps `validate`'s.
fn model_duration_ns(ops: Option<u64>, guest_elapsed_ns: &[u64]) -> u64 {
    let longest = guest_elapsed_ns.iter().copied().max().unwrap_or(0);
    match ops {
        Some(_) => nv::MODEL_DURATION_NS.max(longest.saturating_mul(10)),
        None => nv::MODEL_DURATION_NS,
    }
}

/// The model's configuration for the guest: the preset nearest to its release, its HZ and its
/// preemption model in force, then the variant's tokens.
fn model_variant(
    release: &str,
    hz: Option<u32>,
    preempt_file: Option<&str>,
    v: &spec::GuestVariant,
) -> Result<(sim::kernel::Variant, Vec<String>), VmError> {
    // `none (voluntary) full`: the model in force is in parentheses.
    let preempt = preempt_file.and_then(|t| Some(&t[t.find('(')? + 1..t.find(')')?]));
    let (mut config, m, _) = native::host::model_config(release, hz, preempt).map_err(VmError::Guest)?;
    let mut notes = vec![format!(
        "kernel preset {} for release {release}{}",
        m.preset,
        if m.exact { "" } else { " (the nearest: no preset for this version)" }
    )];
    notes.push(match hz {
        Some(h) => format!("HZ {h} from the kernel's config"),
        None => format!("HZ {} (the preset's: the image has no config beside it)", config.hz),
    });
    notes.push(match preempt {
        Some(p) if sim::config::PreemptModel::parse(p).is_some() => {
            format!("preempt {p}, as the guest reports it in force")
        }
        _ => format!("preempt {} (the preset's)", config.preempt.name()),
    });
    // The guest's agent runs the benchmark in init's session, the root task group (as the
    // ground truth's did), whatever the guest's sched_autogroup_enabled: so does the model.
    config.sysctl.autogroup = false;
    notes.push("root task group, as the guest runs the benchmark in init's session".into());
    let model_err = |what: String| VmError::Usage(format!("--features/--variant: the model cannot express {what}"));
    for f in &v.settings.features {
        sim::kernel::apply_feature(&mut config, f).map_err(|e| model_err(format!("`{f}`: {e}")))?;
    }
    for (k, val) in &v.settings.sysctls {
        config.sysctl.set(k, val).map_err(|e| model_err(format!("`{k}={val}`: {e}")))?;
    }
    if let Some(p) = &v.settings.preempt {
        config.preempt = sim::config::PreemptModel::parse(p)
            .ok_or_else(|| model_err(format!("`preempt={p}`: not none, voluntary, full or lazy")))?;
        config.check_preempt().map_err(|e| model_err(format!("`preempt={p}`: {e}")))?;
    }
    let spec = format!("{} {}", m.preset, v.spec);
    Ok((sim::kernel::Variant { spec, config, patches: vec![] }, notes))
}

/// Figures of a guest run, computed as the model's are (`native::validate::sim_figures` on the
/// same counters, which the guest reads exactly from schedstats); wakeup latencies only from a
/// trace (`--trace`).
fn guest_figures(run: &GuestRun, ops: Option<u64>) -> Figures {
    let rec = record(run, "guest", "", "", 0);
    let f = nv::sim_figures(&rec, ops);
    match crate::compare::trace_latency(run) {
        Some(_) => f,
        None => Figures { lat_p50_us: None, lat_p99_us: None, ..f },
    }
}

/// Boots `runs` times and runs the model beside. With a store, every guest run is stored as
/// `compare --vm` stores its runs (key `vm:KERNEL SPEC`, smp:N, the workload, seeds
/// `seed..seed+runs`; a run already stored under that key is kept); the model's runs are not
/// (their machine carries the guest's calibrated costs, which no stored key names).
pub fn validate(
    req: &ValidateRequest,
    store: Option<&lab::store::Store>,
    note: &(dyn Fn(&str) + Sync),
) -> Result<VmValidation, VmError> {
    if req.runs == 0 {
        return Err(VmError::Usage("--runs 0: at least one boot".into()));
    }
    let v = spec::parse(&req.variant, None, "--features")?;
    let nr_cpus = req.session.topology.nr_cpus();
    let topology_name = req.session.topology.name.clone();
    let wl = workload::bench::parse_benchmark_on(&req.workload, nr_cpus).map_err(|e| VmError::Usage(e.to_string()))?;
    let ops = native::run::operations(&wl);
    let (ops_n, op) = (ops.map(|o| o.0), ops.map_or("switch", |o| o.1));
    // The model runs the machine the guest was booted as.
    let mut topology = req.session.topology.topology.clone();
    // Bad cost keys fail before anything boots.
    for (k, ns) in &req.costs {
        topology.costs.clone().set(k, *ns).map_err(|e| VmError::Usage(format!("--cost: {e}")))?;
    }
    let defaults = topology.costs.clone();
    let mut session = Session::new(&req.session, note)?;
    let mut guest = Vec::new();
    let (mut release, mut preempt_file, mut cost_file) = (String::new(), None, Vec::new());
    let mut runner = String::new();
    let mut guest_elapsed: Vec<u64> = Vec::new();
    let mut guest_ss: Vec<Option<Named>> = Vec::new();
    for i in 0..req.runs {
        let plan = GuestPlan {
            settings: v.settings.clone(),
            calibrate: (i == 0 && req.calibrate).then(|| {
                let scale = req.calibrate_scale.to_string();
                ["--scale", scale.as_str(), "--repetitions", &GUEST_CALIBRATE_REPETITIONS.to_string()]
                    .map(String::from)
                    .to_vec()
            }),
            warmup: req.warmup,
            runs: 1,
            workload: req.workload.clone(),
            builtin: req.session.builtin,
            replug: req.session.replug,
            trace_kb: req.session.trace_kb,
            own_session: false,
        };
        note(&format!(
            "vm: boot {}/{}{}",
            i + 1,
            req.runs,
            if plan.calibrate.is_some() { " (with schedlab calibrate first)" } else { "" }
        ));
        let b = session.boot(&plan, &format!("boot {}", i + 1), note)?;
        for run in &b.runs {
            let seed = req.seed.wrapping_add(u64::from(i));
            crate::compare::check_trace(run, &format!("boot {}", i + 1), req.trace_out.as_deref(), seed, &v, note)?;
            crate::compare::check_exact(run, &format!("boot {}", i + 1))?;
        }
        release = b.console.release.clone().unwrap_or_default();
        preempt_file = b.console.preempt.clone();
        if plan.calibrate.is_some() {
            cost_file = b.console.cost_lines.clone();
        }
        guest.extend(b.runs.iter().map(|r| guest_figures(r, ops_n)));
        guest_ss.extend(b.runs.iter().map(|r| {
            r.schedstat_delta().ok().map(|t| t.named().into_iter().map(|(k, v)| (k.to_string(), v)).collect())
        }));
        guest_elapsed.extend(b.runs.iter().filter_map(|r| r.json["native"]["elapsed_ns"].as_u64()));
        if let Some(r) = b.runs.last() {
            runner = r.runner();
        }
        if let Some(store) = store {
            let label = req.session.kernel.label();
            let seed = req.seed.wrapping_add(u64::from(i));
            let key = crate::compare::run_key(&label, &v, &topology_name, &req.workload, seed);
            let (hz, preempt) = session.kernel.sched_config();
            let lab_err = |e: lab::LabError| VmError::System(e.to_string());
            store.record_variant(&key.spec, &key.spec, 0).map_err(lab_err)?;
            for run in &b.runs {
                let mut rec = record(run, &v.name, b.console.release.as_deref().unwrap_or(""), &key.topology, seed);
                rec.vm = Some(lab::runner::GuestInfo {
                    kernel: label.clone(),
                    accel: if session.accel == crate::Accel::Kvm { "kvm" } else { "tcg" }.into(),
                    warmup: req.warmup,
                    hz,
                    preempt: preempt.map(String::from),
                    unmeasured: crate::compare::unmeasured(run),
                    replug: req.session.replug,
                    builtin: Some(req.session.builtin),
                    runner: Some(run.runner()),
                });
                if !store.insert(&key.spec, &key, &rec, b.total_secs * 1e3).map_err(lab_err)? {
                    note(&format!("vm: a run of {} seed {seed} was stored already; kept that one", key.spec));
                }
            }
        }
    }
    if req.calibrate {
        let keys = machine::parse_cost_toml(&cost_file.join("\n"), "the guest's calibration")
            .map_err(|e| VmError::Guest(e.to_string()))?;
        for (k, ns) in keys {
            topology.costs.set(&k, ns).map_err(|e| VmError::Guest(format!("the guest's calibration: {e}")))?;
        }
    }
    for (k, ns) in &req.costs {
        topology.costs.set(k, *ns).map_err(|e| VmError::Usage(format!("--cost: {e}")))?;
    }
    let costs: Vec<(String, u64)> = sim::topology::Costs::KEYS
        .iter()
        .filter_map(|(k, _)| {
            let (now, before) = (topology.costs.get(k)?, defaults.get(k)?);
            (now != before).then(|| (k.to_string(), now))
        })
        .collect();
    let (hz, _) = session.kernel.sched_config();
    let (variant, model_notes) = model_variant(&release, hz, preempt_file.as_deref(), &v)?;
    note(&format!("vm: the model ({}) on {topology_name}, {} seeds", variant.spec, req.runs));
    let records = nv::run_model_seeds(
        &variant,
        &topology,
        &req.workload,
        req.seed,
        req.runs,
        None,
        model_duration_ns(ops_n, &guest_elapsed),
    )
    .map_err(VmError::Usage)?;
    let sim: Vec<Figures> = records.iter().map(|r| nv::sim_figures(r, ops_n)).collect();
    let rows = nv::rows(wl.metric.name, op, &guest, &sim);
    Ok(VmValidation {
        kernel_label: session.kernel.label.clone(),
        accel: session.accel.name().to_string(),
        nr_cpus,
        topology: topology_name,
        release,
        preset: variant.spec.clone(),
        model_notes,
        costs,
        cost_file,
        metric_name: wl.metric.name.to_string(),
        op: op.to_string(),
        guest,
        sim,
        rows,
        warmup: req.warmup,
        tools: session.tools().to_vec(),
        runner,
        schedstat: (guest_ss, records.iter().map(|r| r.schedstat.clone()).collect()),
    })
}

/// Schedstat counters by name, in [`sim::schedstat::Totals::named`]'s order.
type Named = Vec<(String, u64)>;

/// The mean per run of each named counter over the runs that have them (`None` when none has).
fn mean_named(runs: &[Option<Named>]) -> Option<Vec<(String, f64)>> {
    let have: Vec<&Named> = runs.iter().flatten().collect();
    let first = have.first()?;
    Some(
        first
            .iter()
            .enumerate()
            .map(|(i, (name, _))| {
                let sum: u64 = have.iter().filter_map(|t| t.get(i)).map(|x| x.1).sum();
                (name.clone(), sum as f64 / have.len() as f64)
            })
            .collect(),
    )
}

impl VmValidation {
    /// `validate --vm --json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "schedlab_version": env!("CARGO_PKG_VERSION"),
            "vm": { "kernel": self.kernel_label, "release": self.release, "accel": self.accel, "vcpus": self.nr_cpus,
                    "warmup_runs_discarded": self.warmup },
            "model": { "kernel": self.preset, "notes": self.model_notes,
                       "costs": self.costs.iter().map(|(k, n)| (k.clone(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>() },
            "guest_cost_file": self.cost_file,
            "rows": nv::rows_json(&self.rows, "guest"),
            "schedstat": {
                "guest": mean_named(&self.schedstat.0).map(|v| v.into_iter().collect::<std::collections::BTreeMap<_, _>>()),
                "model": mean_named(&self.schedstat.1).map(|v| v.into_iter().collect::<std::collections::BTreeMap<_, _>>()),
            },
        })
    }

    /// The header, the side-by-side table (guest against model, within 100 columns) and the
    /// line saying how rows are judged.
    pub fn render_report(&self, workload: &[String]) -> String {
        let mut s = self.render(workload);
        s += &nv::check_line("guest");
        s.push('\n');
        s += &self.render_schedstat();
        s
    }

    /// The system-wide `/proc/schedstat` counters, mean per run, guest beside model; empty when
    /// the guest's were not decoded. The guest's count every task of the guest (its kernel
    /// threads and the agent included), the model's the workload's tasks.
    pub fn render_schedstat(&self) -> String {
        let (Some(g), Some(m)) = (mean_named(&self.schedstat.0), mean_named(&self.schedstat.1)) else {
            return String::new();
        };
        let fmt = |v: f64| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.1}") };
        let mut s = String::from(
            "\n/proc/schedstat, mean per run (guest: every task of the guest, its kernel threads and the agent \
             included; model: the workload's tasks)\n",
        );
        s += &format!("{:<18} {:>10} {:>10}\n", "counter", "guest", "model");
        for ((name, gv), (_, mv)) in g.iter().zip(&m) {
            s += &format!("{name:<18} {:>10} {:>10}\n", fmt(*gv), fmt(*mv));
        }
        s
    }

    /// The header and the side-by-side table (guest against model), within 100 columns.
    pub fn render(&self, workload: &[String]) -> String {
        let mut head = vec![
            format!(
                "validate --vm {} (release {}): {} guest boots vs {} simulated seeds, {} vCPUs, {}",
                self.kernel_label,
                self.release,
                self.guest.len(),
                self.sim.len(),
                self.nr_cpus,
                self.accel
            ),
            format!("workload: {}", lab::words::join(workload)),
            format!(
                "guest: one measured run per boot after {} warm-up run(s) discarded; ran {}; tools in the initramfs: {}",
                self.warmup,
                if self.runner == "built-in workers" {
                    "schedlab's built-in workers (every task read as a zombie)"
                } else {
                    self.runner.as_str()
                },
                if self.tools.is_empty() { "none".to_string() } else { self.tools.join(", ") }
            ),
            format!("model: {} on {}; {}", self.preset, self.topology, self.model_notes.join("; ")),
        ];
        let costs: Vec<String> = self.costs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        head.push(if self.cost_file.is_empty() {
            format!(
                "model costs: the smp:N machine's, with {}",
                if costs.is_empty() { "no changes".into() } else { costs.join(" ") }
            )
        } else {
            format!(
                "model costs from the guest's `schedlab calibrate` (keys that differ from smp:N's): {}",
                costs.join(" ")
            )
        });
        let emulated = if self.accel.starts_with("TCG") { " (emulated under TCG)" } else { "" };
        head.push(format!("{} in the guest's time{emulated}", self.metric_name));
        let mut s = String::new();
        for h in head {
            for line in lab::report::wrap(&h, 100, "# ", "#   ") {
                s += &line;
                s.push('\n');
            }
        }
        s += &nv::render_rows_as(&self.rows, "guest", "gst");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_follows_the_guest_kernel() {
        let v = spec::parse("NO_WAKEUP_PREEMPTION base_slice_ns=3000000", None, "--features").unwrap();
        let (m, notes) = model_variant("6.12.117+deb13-amd64", Some(250), Some("none (voluntary) full"), &v).unwrap();
        assert_eq!(m.spec, "v6.12 NO_WAKEUP_PREEMPTION base_slice_ns=3000000");
        assert_eq!(m.config.preempt, sim::config::PreemptModel::Voluntary);
        assert!(!m.config.sysctl.autogroup, "the guest's benchmark runs in the root task group");
        assert_eq!(m.config.hz, 250);
        assert!(!m.config.features.has(sim::features::Feature::WAKEUP_PREEMPTION));
        assert_eq!(m.config.sysctl.base_slice_ns, Some(3_000_000));
        assert!(notes[0].starts_with("kernel preset v6.12 for release 6.12.117"), "{notes:?}");
        // A feature the guest has and the model does not: a usage error naming it.
        let v = spec::parse("NO_SUCH_THING", None, "--features").unwrap();
        match model_variant("6.12.117", None, None, &v) {
            Err(VmError::Usage(m)) => assert!(m.contains("`NO_SUCH_THING`"), "{m}"),
            other => panic!("{:?}", other.map(|x| x.0.spec)),
        }
    }
}
