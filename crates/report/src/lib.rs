//! schedlab's HTML reports (`schedlab report RESULTS -o report.html`).
//!
//! A report is one self-contained HTML file: inline CSS, SVG charts drawn by plotters with the
//! embedded DejaVu Sans (see `assets/`), no script and no external resource, so it can be mailed
//! or attached to a patch review. It holds:
//!
//! - the comparison table of `schedlab compare` (medians, % change, (R)/(I) marks), computed by
//!   `lab::compare` with its default thresholds;
//! - per workload, a bar chart of the metric (mean, 95% Student-t interval of the mean, median)
//!   and wakeup-latency CDFs drawn from the four quantiles each run stores (p50, p90, p99, max:
//!   labelled as such, not interpolated into a full distribution), with the counters;
//! - a per-CPU timeline excerpt (a Gantt chart of which task ran where) from a short traced
//!   re-run of the first workload, for the base and the first variant;
//! - the command lines that reproduce every number.
//!
//! Inputs ([`input`]): a results database (`results.db` or its directory) or `run --json`
//! files. The same inputs give byte-identical HTML.

pub mod charts;
pub mod html;
pub mod input;
pub mod timeline;

use lab::plan::RunKey;
use sim::config::Limits;
use sim::engine::SimSetup;

pub use html::render;
pub use input::{Input, RunJson, SourceKind, is_database, load_db, load_run_json};
pub use timeline::{Timeline, default_start_ns, trace_timeline};

/// The simulation of a stored run (a results-database key), limited to `max_time_ns`.
pub fn setup_for_key(key: &RunKey, max_time_ns: u64) -> Result<SimSetup, String> {
    let variant = lab::spec::parse_full(&key.spec)?;
    let topology = lab::plan::resolve_topology(&key.topology)?;
    let wl = lab::runner::resolve_workload_on(&key.workload, &[], topology.nr_cpus() as u32)?;
    let bound = wl.duration_ns.unwrap_or(key.duration_ns).min(max_time_ns);
    // Groups as `run_one` makes them, so the re-run is the stored run.
    let (tasks, groups) = wl.grouped_tasks(variant.config.sysctl.autogroup);
    Ok(SimSetup {
        sched: variant.config,
        topology,
        seed: key.seed,
        limits: Limits { max_events: key.max_events.max(1), max_time_ns: bound },
        tasks,
        objects: wl.objects,
        check_invariants: false,
        groups,
    })
}
