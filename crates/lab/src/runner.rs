//! One run: a variant of the kernel on a topology, one workload, one seed.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sim::config::Limits;
use sim::engine::{Counters, Sim, SimReport, SimSetup, StopReason};
use sim::ipc::ObjectSpec;
use sim::kernel::Variant;
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;

/// Which way a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

/// How a workload ends by itself, which decides whether a run reached its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It sets its own duration (`-T 5`, `--timeout 5`, rt-app's `duration`).
    Duration(u64),
    /// It ends when its work is done (`-l 1000`): a time or event limit that comes first cuts
    /// it short, and it has no result.
    Work,
    /// It never ends by itself (a hog without a timeout, rt-app threads looping forever): the
    /// run's duration is its end.
    Never,
}

/// A workload resolved from its command line, ready to simulate.
pub struct ResolvedWorkload {
    pub name: String,
    pub argv: Vec<String>,
    pub tasks: Vec<TaskSpec>,
    pub objects: Vec<ObjectSpec>,
    /// The workload's own time bound, if it has one.
    pub duration_ns: Option<u64>,
    pub ending: Ending,
    /// The foreground workload's tasks that exist from the start (not spawned): the first
    /// tasks of a run. When they have exited, the foreground's work is done.
    pub nr_roots: usize,
    /// Background benchmarks share the run (`--background`).
    pub has_background: bool,
    pub metric_name: String,
    pub better: Better,
    /// Computes the workload's metric from a finished run.
    pub metric: Box<dyn Fn(&SimReport) -> f64 + Send + Sync>,
    /// What the real tool prints (empty for rt-app, which prints nothing of its own).
    pub output: Box<dyn Fn(&SimReport) -> String + Send + Sync>,
}

/// Checks a workload command line without a machine (CPU-count-dependent defaults are taken
/// for one CPU): for validating plans before any run.
pub fn resolve_workload(argv: &[String]) -> Result<ResolvedWorkload, String> {
    resolve_workload_on(argv, &[], 1)
}

/// The workloads `run`, `compare` and sweeps accept.
pub const WORKLOADS: &[&str] =
    &["rtapp FILE.json", "hackbench", "messaging", "pipe", "schbench", "lat_ctx", "netperf", "stress-ng", "pgbench"];

/// Resolves a workload command line (`rtapp FILE.json`, or a benchmark with its flags) for a
/// machine of `nr_cpus` CPUs, with optional background benchmarks sharing the simulation (for
/// example a `stress-ng --cpu 4` hog beside schbench).
pub fn resolve_workload_on(
    argv: &[String],
    background: &[Vec<String>],
    nr_cpus: u32,
) -> Result<ResolvedWorkload, String> {
    let Some(name) = argv.first() else { return Err("empty workload".into()) };
    if name == "rtapp" {
        if !background.is_empty() {
            return Err("--background works with benchmarks, not with rtapp files".into());
        }
        let [_, file] = argv else {
            return Err("rtapp: expected exactly one argument, the rt-app JSON file: `rtapp FILE.json`".into());
        };
        let app = workload::rtapp::load_rtapp(Path::new(file)).map_err(|e| e.to_string())?;
        let forever = app.tasks.iter().any(|t| t.ops.iter().any(|op| matches!(op, Op::Loop { count: u32::MAX, .. })));
        return Ok(ResolvedWorkload {
            name: "rtapp".into(),
            argv: argv.to_vec(),
            ending: match app.duration_ns {
                Some(d) => Ending::Duration(d),
                None if forever => Ending::Never,
                None => Ending::Work,
            },
            nr_roots: app.tasks.iter().filter(|t| !t.spawned).count(),
            has_background: false,
            tasks: app.tasks,
            objects: Vec::new(),
            duration_ns: app.duration_ns,
            metric_name: "wakeup_latency_us_p99".into(),
            better: Better::Lower,
            metric: Box::new(|r: &SimReport| r.wakeup_latency.percentiles().p99 as f64 / 1e3),
            output: Box::new(|_| String::new()),
        });
    }
    if name.ends_with(".toml") {
        return Err(format!("{name}: TOML workload files are not supported yet; use `rtapp FILE.json` or a benchmark"));
    }
    let mut parts = vec![workload::bench::parse_benchmark_on(argv, nr_cpus).map_err(|e| e.to_string())?];
    for bg in background {
        parts.push(workload::bench::parse_benchmark_on(bg, nr_cpus).map_err(|e| format!("--background: {e}"))?);
    }
    let merged = workload::bench::merge_workloads(parts).map_err(|e| e.to_string())?;
    let main = merged.parts[0].clone();
    let (metric_name, better) = (
        main.metric.name.to_string(),
        match main.metric.better {
            workload::bench::Better::Lower => Better::Lower,
            workload::bench::Better::Higher => Better::Higher,
        },
    );
    let parts = merged.parts;
    let main_for_metric = main.clone();
    Ok(ResolvedWorkload {
        name: main.name.to_string(),
        argv: argv.to_vec(),
        ending: match merged.duration_ns {
            Some(d) => Ending::Duration(d),
            None if main.runs_forever() => Ending::Never,
            None => Ending::Work,
        },
        nr_roots: main.tasks.iter().filter(|t| !t.spawned).count(),
        has_background: parts.len() > 1,
        tasks: merged.tasks,
        objects: merged.objects,
        duration_ns: merged.duration_ns,
        metric_name,
        better,
        metric: Box::new(move |r: &SimReport| main_for_metric.metric_value(r)),
        output: Box::new(move |r: &SimReport| parts.iter().map(|p| p.format_output(r)).collect::<Vec<_>>().join("\n")),
    })
}

impl ResolvedWorkload {
    /// The simulated-time bound of a run. A workload's own duration wins. One that runs
    /// forever stops at `duration_ns` (the user's, else `default_ns`). One that ends by itself
    /// has no time limit unless the user gives one, or unless background benchmarks, which
    /// never end, share the run.
    pub fn time_limit(&self, duration_ns: Option<u64>, default_ns: u64) -> u64 {
        match self.ending {
            Ending::Duration(d) => d,
            Ending::Never => duration_ns.unwrap_or(default_ns),
            Ending::Work if self.has_background => duration_ns.unwrap_or(default_ns),
            Ending::Work => duration_ns.unwrap_or(u64::MAX),
        }
    }

    /// Why a finished simulation has no result for this workload, or `None` if it has one:
    /// what cut it (`time limit`, `event limit`, deadlock) and how far it got.
    pub fn incomplete(&self, r: &SimReport) -> Option<String> {
        let roots = &r.tasks[..self.nr_roots.min(r.tasks.len())];
        let work_done = roots.iter().all(|t| t.exited);
        let cut = match (r.stop, self.ending) {
            (StopReason::AllExited, _) => return None,
            (_, Ending::Work) if work_done && r.stop != StopReason::Deadlock => return None,
            (StopReason::TimeLimit, Ending::Duration(_) | Ending::Never) => return None,
            (StopReason::TimeLimit, Ending::Work) => "the time limit",
            (StopReason::EventLimit, _) => "the event limit",
            (StopReason::Deadlock, _) => "a deadlock",
        };
        let exited = roots.iter().filter(|t| t.exited).count();
        Some(format!(
            "{} did not finish: cut by {cut} at {:.6} simulated s after {} events ({exited} of its {} tasks had exited)",
            self.name,
            r.simulated_ns as f64 / 1e9,
            r.events,
            roots.len()
        ))
    }
}

/// How the error of [`run_one`] for a run without a result begins (see [`is_incomplete`]).
pub const INCOMPLETE: &str = "incomplete run: ";

/// Whether a [`run_one`] error is a run cut before its benchmark finished, rather than bad
/// input: the CLI gives those exit code 3.
pub fn is_incomplete(error: &str) -> bool {
    error.starts_with(INCOMPLETE)
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub variant: Variant,
    pub topology: Topology,
    pub workload: Vec<String>,
    pub seed: u64,
    /// Simulated time when the workload sets no bound.
    pub default_duration_ns: u64,
    pub max_events: u64,
    /// Affinity for every task (`--cpus`).
    pub cpus: Option<Vec<u32>>,
}

/// The result of one run: what the lab stores and compares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub variant: String,
    pub kernel: String,
    pub patches: Vec<String>,
    pub topology: String,
    pub workload: String,
    pub seed: u64,
    pub metric_name: String,
    pub metric: f64,
    pub better: Better,
    pub simulated_ns: u64,
    pub events: u64,
    pub counters: CounterRecord,
    pub wakeup_latency_ns: [u64; 4],
}

/// The run-wide counters, by their schedstat names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterRecord {
    pub nr_switches: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    pub nr_migrations: u64,
    pub nr_wakeups: u64,
    pub nr_wakeups_sync: u64,
    pub nr_wakeups_local: u64,
    pub nr_wakeups_remote: u64,
    pub nr_wakeups_affine: u64,
    pub nr_wakeups_affine_attempts: u64,
    pub nr_wakeups_migrate: u64,
    pub nr_wakeup_preemptions: u64,
    pub nr_tick_preemptions: u64,
    pub nr_ipis: u64,
}

impl From<&Counters> for CounterRecord {
    fn from(c: &Counters) -> Self {
        CounterRecord {
            nr_switches: c.nr_switches,
            nr_voluntary_switches: c.nr_voluntary_switches,
            nr_involuntary_switches: c.nr_involuntary_switches,
            nr_migrations: c.nr_migrations,
            nr_wakeups: c.nr_wakeups,
            nr_wakeups_sync: c.nr_wakeups_sync,
            nr_wakeups_local: c.nr_wakeups_local,
            nr_wakeups_remote: c.nr_wakeups_remote,
            nr_wakeups_affine: c.nr_wakeups_affine,
            nr_wakeups_affine_attempts: c.nr_wakeups_affine_attempts,
            nr_wakeups_migrate: c.nr_wakeups_migrate,
            nr_wakeup_preemptions: c.nr_wakeup_preemptions,
            nr_tick_preemptions: c.nr_tick_preemptions,
            nr_ipis: c.nr_ipis,
        }
    }
}

/// Runs one simulation. Bad input (workload, affinity) is an `Err` with a one-line message.
pub fn run_one(req: &RunRequest) -> Result<RunRecord, String> {
    let mut wl = resolve_workload_on(&req.workload, &[], req.topology.nr_cpus() as u32)?;
    let mut tasks = std::mem::take(&mut wl.tasks);
    if let Some(cpus) = &req.cpus {
        for t in &mut tasks {
            t.cpus = Some(cpus.clone());
        }
    }
    let setup = SimSetup {
        sched: req.variant.config.clone(),
        topology: req.topology.clone(),
        seed: req.seed,
        limits: Limits {
            max_events: req.max_events,
            max_time_ns: wl.time_limit(Some(req.default_duration_ns), req.default_duration_ns),
        },
        tasks,
        objects: std::mem::take(&mut wl.objects),
        check_invariants: false,
    };
    let report = Sim::new(setup)?.run().map_err(|v| v.to_string())?;
    // No statistics on a run without a result: it is an error the caller shows, not a NaN.
    if let Some(why) = wl.incomplete(&report) {
        return Err(format!("{INCOMPLETE}{why}; raise duration or max_events"));
    }
    let lat = report.wakeup_latency.percentiles();
    Ok(RunRecord {
        variant: req.variant.spec.clone(),
        kernel: req.variant.config.kernel.clone(),
        patches: req.variant.patches.clone(),
        topology: req.topology.name.clone(),
        workload: req.workload.join(" "),
        seed: req.seed,
        metric_name: wl.metric_name,
        metric: (wl.metric)(&report),
        better: wl.better,
        simulated_ns: report.simulated_ns,
        events: report.events,
        counters: CounterRecord::from(&report.counters),
        wakeup_latency_ns: [lat.p50, lat.p90, lat.p99, lat.max],
    })
}
