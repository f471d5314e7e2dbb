//! `schedlab report RESULTS -o report.html`: one self-contained HTML report (see the `report`
//! crate) from a results database or `run --json` files.

use clap::Parser;
use sim::config::Limits;
use sim::engine::SimSetup;

use lab::compare::Sample;
use report::{Input, RunJson, Timeline};

use crate::args::{Cli, Command, ReportArgs};
use crate::setup::{self, UserError, lab_err, user};

pub fn report(a: &ReportArgs) -> anyhow::Result<()> {
    if !(a.timeline_ms >= 0.0 && a.timeline_ms <= 1000.0) {
        return user(format!("--timeline-ms: {} is not within 0..=1000", a.timeline_ms));
    }
    if let Some(at) = a.timeline_at
        && !(0.0..=1e9).contains(&at)
    {
        return user(format!("--timeline-at: {at} is not a non-negative number of milliseconds"));
    }
    for p in &a.results {
        if !p.exists() {
            return user(format!("{}: no such file or directory", p.display()));
        }
    }
    let dbs = a.results.iter().filter(|p| report::is_database(p)).count();
    let (input, jsons) = match (dbs, a.results.len()) {
        (1, 1) => (report::load_db(&a.results[0]).map_err(lab_err)?, Vec::new()),
        (0, _) => report::load_run_json(&a.results).map_err(lab_err)?,
        _ => return user("RESULTS: give one results database, or `run --json` files, not both or several databases"),
    };
    let (timelines, note) = timelines(a, &input, &jsons);
    let html = report::render(&input, &timelines, note.as_deref()).map_err(|e| anyhow::anyhow!(e))?;
    std::fs::write(&a.output, &html).map_err(|e| UserError(format!("{}: cannot write: {e}", a.output.display())))?;
    eprintln!(
        "wrote {} ({} KiB): {} runs, {} workloads, {} charts",
        a.output.display(),
        html.len().div_ceil(1024),
        input.samples.len(),
        input.comparison.groups.len(),
        html.matches("<svg").count()
    );
    Ok(())
}

/// The simulation a `run --json` file came from, rebuilt from its `command` line.
fn setup_from_command(command: &str, max_time_ns: u64) -> anyhow::Result<SimSetup> {
    let words = lab::words::split(command).map_err(|e| anyhow::anyhow!("command `{command}`: {e}"))?;
    let cli = Cli::try_parse_from(&words).map_err(|e| anyhow::anyhow!("command `{command}`: {e}"))?;
    let Command::Run(r) = cli.command else { anyhow::bail!("command `{command}` is not `schedlab run`") };
    let cfg = setup::sched_config(&r.sim)?;
    let topo = setup::topology(&r.sim)?;
    let background: Vec<Vec<String>> =
        r.background.iter().map(|b| b.split_whitespace().map(String::from).collect()).collect();
    let mut wl = lab::runner::resolve_workload_on(&r.workload, &background, topo.nr_cpus() as u32)
        .map_err(|e| anyhow::anyhow!(e))?;
    if let Some(list) = &r.sim.cpus {
        let cpus = setup::cpu_list(list, topo.nr_cpus() as u32)?;
        for t in &mut wl.tasks {
            t.cpus = Some(cpus.clone());
        }
    }
    let bound =
        wl.time_limit(r.duration.map(|d| (d * 1e9).round() as u64), crate::run::DEFAULT_DURATION_NS).min(max_time_ns);
    let (tasks, groups) = wl.grouped_tasks(cfg.sysctl.autogroup);
    Ok(SimSetup {
        sched: cfg,
        topology: topo,
        seed: r.sim.seed,
        limits: Limits { max_events: r.max_events, max_time_ns: bound },
        tasks,
        objects: wl.objects,
        check_invariants: false,
        groups,
    })
}

/// Timelines of the first workload's base and first variant (lowest seed of each), and a note
/// about what was left out.
fn timelines(a: &ReportArgs, input: &Input, jsons: &[RunJson]) -> (Vec<Timeline>, Option<String>) {
    if a.timeline_ms == 0.0 {
        return (Vec::new(), Some("No timeline: --timeline-ms 0.".into()));
    }
    let Some(g) = input.comparison.groups.first() else { return (Vec::new(), None) };
    let mut names = vec![g.base.name.clone()];
    if let Some(v) = g.variants.iter().find(|v| v.arm.is_some()) {
        names.push(v.name.clone());
    }
    let len_ns = (a.timeline_ms * 1e6).round() as u64;
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for name in names {
        let Some(s) = input.runs_of(g, &name).into_iter().next() else { continue };
        let start =
            a.timeline_at.map_or_else(|| report::default_start_ns(s.record.simulated_ns), |ms| (ms * 1e6) as u64);
        let setup = match setup_for(s, jsons, start + len_ns) {
            Ok(s) => s,
            Err(e) => {
                problems.push(format!("{name}: cannot re-run ({e:#})"));
                continue;
            }
        };
        let label =
            format!("{name} — {} on {}, seed {}", lab::words::join(&s.key.workload), s.key.topology, s.key.seed);
        match report::trace_timeline(setup, label, start, len_ns) {
            Ok(t) => out.push(t),
            Err(e) => problems.push(format!("{name}: the traced re-run failed ({e})")),
        }
    }
    let mut note = format!(
        "Which task ran on which CPU during {} ms of simulated time, from a traced re-run (same variant, seed and \
         workload) of the first workload, for the base and the first variant.",
        a.timeline_ms
    );
    for p in problems {
        note += &format!(" Left out: {p}.");
    }
    (out, Some(note))
}

fn setup_for(s: &Sample, jsons: &[RunJson], max_time_ns: u64) -> anyhow::Result<SimSetup> {
    if jsons.is_empty() {
        return report::setup_for_key(&s.key, max_time_ns).map_err(|e| anyhow::anyhow!(e));
    }
    let run = jsons.iter().find(|r| r.key == s.key).ok_or_else(|| anyhow::anyhow!("no run file for this run"))?;
    let command =
        run.command.as_deref().ok_or_else(|| anyhow::anyhow!("{}: no `command` field", run.path.display()))?;
    setup_from_command(command, max_time_ns)
}
