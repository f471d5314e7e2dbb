//! `schedlab fidelity`: the model against real-kernel measurements.
//!
//! A ground-truth directory ([`truth`]) holds real feature A/B runs of benchmarks on real
//! kernels. For every guest (kernel, preempt model, vCPU count, traced or not) a cost profile is
//! fitted once from the guest's own timing ([`profile`]); then every measured case is run in
//! the model with several seeds ([`cases`]) and scored ([`score`]): each real effect — in
//! direction and within 2x — and each metric of the default variant — inside the real min-max
//! and within 1.5x of the real median.

pub mod cases;
pub mod profile;
pub mod score;
pub mod truth;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use rayon::prelude::*;
use sim::config::Limits;
use sim::engine::{Sim, SimSetup, StopReason};
use sim::kernel::{self, Variant};
use sim::topology::{Costs, Topology};

use crate::LabError;
use profile::Profile;
use truth::{CaseKey, GroundTruth, Guest};

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Seeds per case (the real data has three boots).
    pub runs: u32,
    /// Only these workloads (all when `None`).
    pub workloads: Option<Vec<String>>,
    /// Only these kernels, by release (`7.3.4`) (all when `None`).
    pub kernels: Option<Vec<String>>,
    /// Write every scored model run's ftrace text here, one file per case and seed (see
    /// [`trace_name`]), to read beside the real traces with `schedlab analyze`.
    pub trace_dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options { runs: 3, workloads: None, kernels: None, trace_dir: None }
    }
}

/// The model's median of each metric over the seeds of one case.
pub type ModelMetrics = BTreeMap<&'static str, f64>;

/// Everything a fidelity run computed.
pub struct Fidelity {
    pub truth: GroundTruth,
    pub options: Options,
    pub profiles: Vec<Profile>,
    /// The preset each real kernel release runs as.
    pub presets: BTreeMap<String, String>,
    pub model: BTreeMap<CaseKey, ModelMetrics>,
}

/// The kernel preset for a real release: `7.3.4` → `v7.3`; `6.12.117` → the 6.12 LTS preset.
pub fn preset_for(release: &str) -> Result<String, String> {
    let mut parts = release.split('.');
    let (Some(major), Some(minor)) = (parts.next(), parts.next()) else {
        return Err(format!("kernel `{release}`: expected a release like 7.3.4"));
    };
    let name = format!("v{major}.{minor}");
    if kernel::preset(&name).is_some() {
        Ok(name)
    } else {
        Err(format!("kernel `{release}`: schedlab has no preset {name} (`schedlab kernels` lists them)"))
    }
}

/// The SPEC of a case: the preset, the variant's feature token, the guest's preempt model.
pub fn case_spec(preset: &str, guest: &Guest, variant: &str) -> String {
    let mut spec = preset.to_string();
    if variant != "default" {
        spec = format!("{spec} {variant}");
    }
    if guest.preempt != "default" {
        spec = format!("{spec} preempt={}", guest.preempt);
    }
    spec
}

fn variant_of(preset: &str, guest: &Guest, variant: &str) -> Result<Variant, LabError> {
    let spec = case_spec(preset, guest, variant);
    kernel::parse_spec(&spec, None).map_err(|e| LabError::Input(format!("ground-truth variant `{spec}`: {e}")))
}

/// `wakee_flips` of the shell that started each benchmark in the ground truth's guests, which
/// the benchmark's processes inherit (fork copies it). Right before a run that shell took vCPUs
/// 1..N-1 offline and online again (the README's method around feature writes): `cpu_down()`
/// kicks the hotplug thread (`cpuhp/1`) and `stop_machine()` wakes the stopper of every online
/// vCPU (`migration/0`, `migration/1`), and `cpu_up()` kicks `cpuhp/1` again, from the shell's
/// context: four changes of `last_wakee`, so at least 4 flips (`record_wakee()`, fair.c).
/// Inherited, they make hackbench's senders wake their receivers "wide" (`wake_wide()`:
/// the receiver's flips reach `sd_llc_size` = 2), so `wake_affine()` is skipped: the real
/// kernels try it at only 1-5 % of hackbench wakeups (`nr_wakeups_affine_attempts`), against
/// 30-50 % with flips starting at 0.
pub const LAUNCHER_WAKEE_FLIPS: u32 = 4;

/// Whether a case runs beside the guest's kernel threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// The guest's kernel threads share the CPUs (`workload::kthreads`): the scored cases.
    Guest,
    /// The benchmark alone: the profile fit. Its two timing cells measure the guest's costs,
    /// and the kernel threads (1-2 % of a CPU) would only add noise to them; on v7.3 they can
    /// also trap a ping-pong pair on one CPU (docs/fidelity.md), where no exit latency slows it.
    Alone,
}

/// The file a traced model run of `key` with `seed` is written to, under `--trace DIR`:
/// `<kernel>-<preempt>-<vcpus>cpu-<variant>-<workload>-<mode>-seed<N>.txt`, e.g.
/// `7.3.4-default-2cpu-default-pp-n-seed1.txt`.
pub fn trace_name(key: &CaseKey, seed: u64) -> String {
    let g = &key.guest;
    format!(
        "{}-{}-{}cpu-{}-{}-{}-seed{seed}.txt",
        g.kernel,
        g.preempt,
        g.vcpus,
        key.variant,
        key.workload,
        g.mode.letter()
    )
}

/// Where a run's trace goes, and what its header says.
pub struct TraceTo {
    pub path: PathBuf,
    pub comments: Vec<String>,
}

/// One model run of a case: its metrics; its ftrace text is written to `trace` if given.
pub fn run_case(
    variant: &Variant,
    vcpus: u32,
    costs: &Costs,
    workload: &str,
    seed: u64,
    threads: Threads,
    trace: Option<&TraceTo>,
) -> Result<BTreeMap<&'static str, f64>, LabError> {
    let w = cases::build(workload, vcpus).map_err(LabError::Input)?;
    let mut topology = Topology::smp(vcpus);
    topology.costs = costs.clone();
    // The guest's kernel threads share the CPUs with the benchmark (workload::kthreads); they
    // are not counted in its metrics, as the measurement read only the benchmark's tasks.
    let mut tasks = w.tasks.clone();
    for t in tasks.iter_mut().filter(|t| !t.spawned) {
        t.wakee_flips = LAUNCHER_WAKEE_FLIPS;
    }
    if threads == Threads::Guest {
        // Busy loops queue almost no work for the kernel's threads; every other case runs
        // beside the activity traced under hackbench (workload::kthreads).
        let beside = match w.kind {
            cases::Kind::Fairness => workload::kthreads::Beside::BusyLoops,
            _ => workload::kthreads::Beside::Syscalls,
        };
        tasks.extend(workload::kthreads::guest(vcpus, seed, beside));
    }
    let setup = SimSetup {
        sched: variant.config.clone(),
        topology,
        seed,
        // Emulated guests are slow: a generous bound that still ends a runaway run.
        limits: Limits { max_events: 400_000_000, max_time_ns: w.duration_ns.unwrap_or(600_000_000_000) },
        tasks,
        objects: w.objects.clone(),
        check_invariants: false,
        // The guests ran every benchmark in the root task group (no autogroup, no cgroup:
        // data/ground-truth/qemu-2vcpu/README.md), so the model runs without groups too,
        // whatever the preset's sched_autogroup_enabled says.
        groups: Vec::new(),
    };
    let sim = Sim::new(setup).map_err(|e| LabError::Internal(format!("{workload}: {e}")))?;
    let report = match trace {
        None => sim.run(),
        Some(to) => {
            use schedtrace::{SharedSink, TraceFile, TraceFormat, TraceHeader};
            let header = TraceHeader { nr_cpus: vcpus, comments: to.comments.clone() };
            let io_err = |e: std::io::Error| LabError::Input(format!("--trace: {}: {e}", to.path.display()));
            let file = TraceFile::create(&to.path, TraceFormat::FtraceText, &header).map_err(io_err)?;
            let (shared, sink) = SharedSink::new(file);
            let (result, sink) = sim.run_traced(sink);
            drop(sink);
            let file = shared
                .into_inner()
                .ok_or_else(|| LabError::Internal("fidelity: the trace sink outlived its run".into()))?;
            file.finish().map_err(io_err)?;
            result
        }
    }
    .map_err(|v| LabError::Internal(format!("{workload} (seed {seed}): invariant violated: {v}")))?;
    let finished = match w.kind {
        // Busy loops that run until the time limit, or hogs that exit by themselves.
        cases::Kind::Fairness => matches!(report.stop, StopReason::TimeLimit | StopReason::AllExited),
        _ => report.stop == StopReason::AllExited,
    };
    if !finished {
        return Err(LabError::Internal(format!(
            "{workload} ({}, seed {seed}) did not finish: stopped by {:?} at {} ns",
            variant.spec, report.stop, report.simulated_ns
        )));
    }
    let bench = cases::bench_value(&w, &report);
    Ok(cases::metrics(w.kind, &report, bench))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// Medians over seeds `1..=runs`, metric by metric (a metric missing from any run is dropped).
fn median_metrics(runs: Vec<BTreeMap<&'static str, f64>>) -> ModelMetrics {
    let Some(first) = runs.first() else { return ModelMetrics::new() };
    let names: Vec<&'static str> = first.keys().copied().collect();
    let mut out = ModelMetrics::new();
    for name in names {
        let values: Vec<f64> = runs.iter().filter_map(|r| r.get(name).copied()).collect();
        if values.len() == runs.len() {
            out.insert(name, median(values));
        }
    }
    out
}

/// Runs the whole scoreboard: fits the profiles, runs every case the scores need (the default
/// rows and the cases of the effects) with `runs` seeds each, in parallel, in a fixed order.
pub fn run(mut truth: GroundTruth, options: Options) -> Result<Fidelity, LabError> {
    if let Ok(dir) = truth.dir.canonicalize() {
        truth.dir = dir;
    }
    if options.runs == 0 {
        return Err(LabError::Input("--runs must be at least 1".into()));
    }
    let selected = |key: &CaseKey| {
        options.workloads.as_ref().is_none_or(|w| w.contains(&key.workload))
            && options.kernels.as_ref().is_none_or(|k| k.contains(&key.guest.kernel))
    };
    if let Some(ws) = &options.workloads {
        for w in ws {
            if !truth.rows.iter().any(|r| r.key.workload == *w) {
                return Err(LabError::Input(format!("--workloads: the ground truth has no workload `{w}`")));
            }
        }
    }
    if let Some(ks) = &options.kernels {
        for k in ks {
            if !truth.rows.iter().any(|r| r.key.guest.kernel == *k) {
                return Err(LabError::Input(format!("--kernels: the ground truth has no kernel `{k}`")));
            }
        }
    }
    // The cases to run: every selected default row, and both sides of every selected effect.
    let mut needed: BTreeSet<CaseKey> = BTreeSet::new();
    for r in truth.rows.iter().filter(|r| r.key.variant == "default" && selected(&r.key)) {
        needed.insert(r.key.clone());
    }
    for e in truth.effects.iter().filter(|e| selected(&e.key)) {
        needed.insert(e.key.clone());
        needed.insert(CaseKey { variant: "default".into(), ..e.key.clone() });
    }
    let guests: BTreeSet<Guest> = needed.iter().map(|k| k.guest.clone()).collect();
    let mut presets = BTreeMap::new();
    for g in &guests {
        presets.insert(g.kernel.clone(), preset_for(&g.kernel).map_err(LabError::Input)?);
    }
    let seeds: Vec<u64> = (1..=u64::from(options.runs)).collect();
    let mut profiles = Vec::new();
    for g in &guests {
        let preset = &presets[&g.kernel];
        let variant = variant_of(preset, g, "default")?;
        let model = |costs: &Costs, workload: &str| -> Result<f64, LabError> {
            let runs: Result<Vec<_>, LabError> = seeds
                .par_iter()
                .map(|&s| run_case(&variant, g.vcpus, costs, workload, s, Threads::Alone, None))
                .collect();
            let values: Vec<f64> = runs?.iter().filter_map(|m| m.get("bench_value").copied()).collect();
            if values.len() != seeds.len() {
                return Err(LabError::Internal(format!("{workload}: the model gave no bench_value")));
            }
            Ok(median(values))
        };
        profiles.push(profile::fit(&truth, g, &model)?);
    }
    let jobs: Vec<(&CaseKey, u64)> = needed.iter().flat_map(|k| seeds.iter().map(move |&s| (k, s))).collect();
    let results: Vec<Result<BTreeMap<&'static str, f64>, LabError>> = jobs
        .par_iter()
        .map(|(key, seed)| {
            let profile = profiles
                .iter()
                .find(|p| p.guest == key.guest)
                .ok_or_else(|| LabError::Internal(format!("no cost profile for {}", key.guest)))?;
            let variant = variant_of(&presets[&key.guest.kernel], &key.guest, &key.variant)?;
            let trace = options.trace_dir.as_ref().map(|dir| TraceTo {
                path: dir.join(trace_name(key, *seed)),
                comments: vec![
                    format!(
                        "schedlab fidelity model run: {} ({}), variant {}, workload {} ({}), seed {seed}",
                        key.guest,
                        presets[&key.guest.kernel],
                        key.variant,
                        key.workload,
                        cases::WORKLOADS.iter().find(|(n, _)| *n == key.workload).map_or("", |(_, c)| *c)
                    ),
                    format!(
                        "cost profile: vm-2cpu costs x {:.4}, idle exit {} ns; the guest's kernel threads beside it",
                        profile.scale, profile.wake_ns
                    ),
                ],
            });
            run_case(&variant, key.guest.vcpus, &profile.costs, &key.workload, *seed, Threads::Guest, trace.as_ref())
        })
        .collect();
    let mut per_case: BTreeMap<CaseKey, Vec<BTreeMap<&'static str, f64>>> = BTreeMap::new();
    for ((key, _), r) in jobs.iter().zip(results) {
        per_case.entry((*key).clone()).or_default().push(r?);
    }
    let model = per_case.into_iter().map(|(k, runs)| (k, median_metrics(runs))).collect();
    Ok(Fidelity { truth, options, profiles, presets, model })
}
