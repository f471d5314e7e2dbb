//! `schedlab run`: one workload on one simulated machine.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sim::config::{Limits, SchedConfig};
use sim::engine::{Sim, SimReport, SimSetup, StopReason};
use sim::features::FeatureSet;
use sim::topology::Topology;

use lab::plan::DEFAULT_MAX_EVENTS;
use lab::runner::{Better, ResolvedWorkload};

use crate::args::RunArgs;
use crate::setup::{self, Incomplete, user};

pub fn run(a: &RunArgs) -> anyhow::Result<()> {
    let (cfg, patches) = setup::kernel_spec(&a.sim)?;
    let topo = setup::topology(&a.sim)?;
    let background: Vec<Vec<String>> =
        a.background.iter().map(|b| b.split_whitespace().map(String::from).collect()).collect();
    let mut wl = match lab::runner::resolve_workload_on(&a.workload, &background, topo.nr_cpus() as u32) {
        Ok(wl) => wl,
        Err(e) => return user(e),
    };
    if let Some(list) = &a.sim.cpus {
        let cpus = setup::cpu_list(list, topo.nr_cpus() as u32)?;
        for t in &mut wl.tasks {
            t.cpus = Some(cpus.clone());
        }
    }
    let g = &a.groups;
    let group_flags = g.autogroup.iter().map(|v| ("--autogroup", v)).chain(g.cgroup.iter().map(|v| ("--cgroup", v)));
    for (flag, value) in group_flags.chain(g.cgroup_weight.iter().map(|v| ("--cgroup-weight", v))) {
        if let Err(e) = wl.group_options.take(flag, value) {
            return user(e);
        }
    }
    let (tasks, groups) = wl.grouped_tasks(cfg.sysctl.autogroup);
    for t in &wl.tasks {
        if let Some(cpus) = &t.cpus
            && let Some(bad) = cpus.iter().find(|&&c| c as usize >= topo.nr_cpus())
        {
            return user(format!(
                "{}: task `{}` asks for CPU {bad}, but {} has {} CPUs",
                wl.name,
                t.comm,
                topo.name,
                topo.nr_cpus()
            ));
        }
    }
    if let Some(d) = a.duration
        && !(d > 0.0 && d <= 1e6)
    {
        return user(format!("--duration: {d} is not a positive number of seconds (at most 1e6)"));
    }
    if a.max_events == 0 {
        return user("--max-events: must be at least 1");
    }
    let max_time_ns = wl.time_limit(a.duration.map(|d| (d * 1e9).round() as u64), DEFAULT_DURATION_NS);
    let (groups_shown, tasks_shown): (Vec<_>, Vec<u32>) = (groups.clone(), tasks.iter().map(|t| t.group).collect());
    let setup = SimSetup {
        sched: cfg.clone(),
        topology: topo.clone(),
        seed: a.sim.seed,
        limits: Limits { max_events: a.max_events, max_time_ns },
        tasks,
        objects: wl.objects.clone(),
        check_invariants: a.check,
        groups,
    };
    let trace = match &a.trace {
        Some(path) => Some(crate::tracefile::create(path, topo.nr_cpus() as u32, &reproduce(a))?),
        None => None,
    };
    let started = Instant::now();
    let mut sim = Sim::new(setup).map_err(crate::setup::UserError)?;
    let drawn = Arc::new(AtomicBool::new(false));
    if !a.quiet && std::io::stderr().is_terminal() {
        sim.set_observer(PROGRESS_EVERY, progress_line(max_time_ns, wl.duration_ns.is_some(), drawn.clone()));
    }
    let result = crate::tracefile::run(sim, trace);
    if drawn.load(Ordering::Relaxed) {
        eprint!("\r\x1b[K");
    }
    let report = result?.map_err(|v| anyhow::anyhow!("{v}\nreproduce with: {}", reproduce(a)))?;
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = json_report(a, &cfg, &patches, &topo, &wl, &report, wall_ms);
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        let tool = (wl.output)(&report);
        if !tool.is_empty() {
            write!(out, "{tool}")?;
            if !tool.ends_with('\n') {
                writeln!(out)?;
            }
            writeln!(out)?;
        }
        write_text(&mut out, a, &cfg, &patches, &topo, &report, wl.name == "rtapp" || a.tasks, max_time_ns)?;
        write_groups(&mut out, &groups_shown, &tasks_shown)?;
        write_metrics(&mut out, &wl, &report)?;
        eprintln!(
            "[{} events in {:.0} ms wall: {:.1} M events/s]",
            report.events,
            wall_ms,
            report.events as f64 / wall_ms / 1e3
        );
    }
    stop_warning(&report)?;
    match wl.incomplete(&report) {
        Some(why) => {
            out.flush()?;
            Err(Incomplete(format!("{why}; no result (exit 3); reproduce: {}", reproduce(a))).into())
        }
        None => Ok(()),
    }
}

/// Events between two looks at the wall clock during a run (a few ms of simulation).
const PROGRESS_EVERY: u64 = 1 << 16;
/// A run shorter than this (wall time) shows no progress.
const PROGRESS_AFTER: Duration = Duration::from_secs(2);

/// The observer that redraws one stderr line (simulated time, events, rate, ETA when the run
/// ends at a known simulated time) every quarter second once the run has taken 2 s; `drawn`
/// tells the caller to clear it.
fn progress_line(max_time_ns: u64, bounded: bool, drawn: Arc<AtomicBool>) -> Box<dyn FnMut(u64, u64) + Send> {
    let start = Instant::now();
    let mut last = start;
    Box::new(move |now_ns, events| {
        let t = Instant::now();
        let elapsed = t.duration_since(start);
        if elapsed < PROGRESS_AFTER || t.duration_since(last) < Duration::from_millis(250) {
            return;
        }
        last = t;
        let secs = elapsed.as_secs_f64();
        let eta = if bounded && now_ns > 0 {
            let left = secs * (max_time_ns.saturating_sub(now_ns)) as f64 / now_ns as f64;
            format!(", ETA {left:.0} s")
        } else {
            String::new()
        };
        eprint!(
            "\r\x1b[Kschedlab: simulated {:.3} of at most {:.3} s, {:.1} M events ({:.1} M/s){eta}",
            now_ns as f64 / 1e9,
            max_time_ns as f64 / 1e9,
            events as f64 / 1e6,
            events as f64 / 1e6 / secs
        );
        drawn.store(true, Ordering::Relaxed);
    })
}

/// `--duration` when a workload that runs forever (or has background benchmarks) gives none.
pub(crate) const DEFAULT_DURATION_NS: u64 = 10_000_000_000;

/// A deadlock (a broken chain: every remaining task blocked with nothing left to wake it) is
/// bad input, exit 2; runs cut by a limit are [`ResolvedWorkload::incomplete`]'s.
fn stop_warning(r: &SimReport) -> anyhow::Result<()> {
    match r.stop {
        StopReason::Deadlock => {
            let stuck: Vec<String> =
                r.tasks.iter().filter(|t| !t.exited).take(8).map(|t| format!("{}:{}", t.comm, t.pid)).collect();
            user(format!(
                "deadlock at {:.6} s: every remaining task is blocked and nothing can wake it ({}{})",
                r.simulated_ns as f64 / 1e9,
                stuck.join(", "),
                if r.tasks.iter().filter(|t| !t.exited).count() > 8 { ", ..." } else { "" }
            ))
        }
        StopReason::TimeLimit | StopReason::EventLimit | StopReason::AllExited => Ok(()),
    }
}

/// The command line that reproduces this run exactly.
pub fn reproduce(a: &RunArgs) -> String {
    let s = &a.sim;
    let mut cmd = format!(
        "schedlab run --seed {} --topology {} --kernel {}",
        s.seed,
        lab::words::quote(&s.topology),
        lab::words::quote(&lab::spec::normalize(&s.kernel))
    );
    if let Some(f) = &s.features {
        cmd += &format!(" --features {f}");
    }
    for kv in &s.sysctl {
        cmd += &format!(" --sysctl {kv}");
    }
    if let Some(p) = &s.preempt {
        cmd += &format!(" --preempt {p}");
    }
    if let Some(hz) = s.hz {
        cmd += &format!(" --hz {hz}");
    }
    if let Some(f) = &s.cost_file {
        cmd += &format!(" --cost-file {}", lab::words::quote(&f.display().to_string()));
    }
    for kv in &s.cost {
        cmd += &format!(" --cost {kv}");
    }
    if let Some(c) = &s.cpus {
        cmd += &format!(" --cpus {c}");
    }
    if let Some(d) = a.duration {
        cmd += &format!(" --duration {d}");
    }
    if a.max_events != DEFAULT_MAX_EVENTS {
        cmd += &format!(" --max-events {}", a.max_events);
    }
    for b in &a.background {
        cmd += &format!(" --background {}", lab::words::quote(b));
    }
    if let Some(v) = &a.groups.autogroup {
        cmd += &format!(" --autogroup {v}");
    }
    if let Some(c) = &a.groups.cgroup {
        cmd += &format!(" --cgroup {}", lab::words::quote(c));
    }
    for w in &a.groups.cgroup_weight {
        cmd += &format!(" --cgroup-weight {}", lab::words::quote(w));
    }
    cmd + " " + &lab::words::join(&a.workload)
}

/// One line naming the run's task groups and how many tasks each started with.
fn write_groups(out: &mut impl Write, groups: &[sim::fair::group::GroupSpec], tasks: &[u32]) -> anyhow::Result<()> {
    if groups.is_empty() {
        return Ok(());
    }
    let root = tasks.iter().filter(|&&g| g == 0).count();
    let mut parts = vec![format!("/ ({root} tasks)")];
    for (i, g) in groups.iter().enumerate() {
        let n = tasks.iter().filter(|&&t| t == i as u32 + 1).count();
        let weight = if g.idle { "idle".to_string() } else { format!("shares {}", g.shares >> 10) };
        parts.push(format!("{} ({n} tasks, {weight})", g.name));
    }
    writeln!(out, "# task groups: {}", parts.join(", "))?;
    Ok(())
}

fn feature_tokens(f: &FeatureSet, kernel: &str) -> Vec<String> {
    sim::kernel::feature_changes(kernel, f)
}

#[allow(clippy::too_many_arguments)]
fn write_text(
    out: &mut impl Write,
    a: &RunArgs,
    cfg: &SchedConfig,
    patches: &[String],
    topo: &Topology,
    r: &SimReport,
    per_task: bool,
    max_time_ns: u64,
) -> anyhow::Result<()> {
    let changed = feature_tokens(&cfg.features, &cfg.kernel);
    // The glued SPEC form (v7.3+preempt-sync-runtime-fix) keeps the line's words one each.
    let kernel = format!("{}{}", cfg.kernel, patches.concat());
    writeln!(
        out,
        "# schedlab {} seed={} topology={} kernel={kernel} preempt={} hz={} features={}",
        env!("CARGO_PKG_VERSION"),
        a.sim.seed,
        topo.name,
        cfg.preempt.name(),
        cfg.hz,
        if changed.is_empty() { "defaults".to_string() } else { changed.join(",") }
    )?;
    writeln!(out, "# reproduce: {}", reproduce(a))?;
    if max_time_ns == u64::MAX {
        // The only bound left on a benchmark that ends by itself.
        writeln!(out, "# limits: none on simulated time; safety bound {} events (--max-events)", a.max_events)?;
    }
    if per_task {
        writeln!(
            out,
            "{:<16} {:>6} {:>4} {:>12} {:>9} {:>9} {:>9} {:>6} {:>8} {:>10} {:>10}",
            "comm",
            "pid",
            "nice",
            "runtime_ms",
            "switches",
            "voluntary",
            "involunt",
            "migr",
            "wakeups",
            "lat_p50_us",
            "lat_p99_us"
        )?;
        for t in &r.tasks {
            let p = t.stats.wakeup_latency.percentiles();
            writeln!(
                out,
                "{:<16} {:>6} {:>4} {:>12.3} {:>9} {:>9} {:>9} {:>6} {:>8} {:>10.1} {:>10.1}",
                t.comm,
                t.pid,
                t.nice,
                t.sum_exec_runtime_ns as f64 / 1e6,
                t.stats.nr_switches,
                t.stats.nr_voluntary_switches,
                t.stats.nr_involuntary_switches,
                t.stats.nr_migrations,
                t.stats.nr_wakeups,
                p.p50 as f64 / 1e3,
                p.p99 as f64 / 1e3
            )?;
        }
    }
    let c = &r.counters;
    let p = r.wakeup_latency.percentiles();
    writeln!(out, "simulated {:.6} s, {} events, stopped: {:?}", r.simulated_ns as f64 / 1e9, r.events, r.stop)?;
    writeln!(
        out,
        "switches {} (voluntary {}, involuntary {}), wakeups {} (sync {}, local {}, remote {}, affine {}/{}), migrations {}, preemptions: wakeup {} tick {}, IPIs {}",
        c.nr_switches,
        c.nr_voluntary_switches,
        c.nr_involuntary_switches,
        c.nr_wakeups,
        c.nr_wakeups_sync,
        c.nr_wakeups_local,
        c.nr_wakeups_remote,
        c.nr_wakeups_affine,
        c.nr_wakeups_affine_attempts,
        c.nr_migrations,
        c.nr_wakeup_preemptions,
        c.nr_tick_preemptions,
        c.nr_ipis
    )?;
    let idle = if r.idle_ns_per_cpu.len() <= 8 {
        let per: Vec<String> = r.idle_ns_per_cpu.iter().map(|n| format!("{:.1}", *n as f64 / 1e6)).collect();
        format!("idle ms per CPU: {}", per.join(" "))
    } else {
        let total: u64 = r.idle_ns_per_cpu.iter().sum();
        let (min, max) = (r.idle_ns_per_cpu.iter().min().unwrap_or(&0), r.idle_ns_per_cpu.iter().max().unwrap_or(&0));
        let share = total as f64 / (r.simulated_ns.max(1) as f64 * r.idle_ns_per_cpu.len() as f64) * 100.0;
        format!("idle {share:.1}% of CPU time (per CPU {:.1}-{:.1} ms)", *min as f64 / 1e6, *max as f64 / 1e6)
    };
    writeln!(
        out,
        "wakeup latency us: p50 {:.1} p90 {:.1} p99 {:.1} max {:.1}; {idle}",
        p.p50 as f64 / 1e3,
        p.p90 as f64 / 1e3,
        p.p99 as f64 / 1e3,
        p.max as f64 / 1e3,
    )?;
    let t = r.schedstat.totals();
    let [busy, idle, newidle] = t.balance;
    writeln!(
        out,
        "/proc/schedstat: goidle {}, ttwu {} (local {}, remote {}, move_affine {}), balance passes busy {} idle {} newidle {}: gained {} (hot {}), failed {}, active pushes {}",
        t.sched_goidle,
        t.ttwu_count,
        t.ttwu_local,
        t.ttwu_wake_remote,
        t.ttwu_move_affine,
        busy.count,
        idle.count,
        newidle.count,
        t.lb_gained(),
        t.lb_hot_gained(),
        t.lb_failed(),
        t.alb_pushed
    )?;
    Ok(())
}

/// One line per workload of the run with its headline metric, the foreground one first.
fn write_metrics(out: &mut impl Write, wl: &ResolvedWorkload, r: &SimReport) -> anyhow::Result<()> {
    let better = |b: Better| match b {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    };
    let main = (wl.metric)(r);
    writeln!(
        out,
        "metric: {} {} = {} ({})",
        lab::words::join(&lab::runner::WorkloadLine::parse(&wl.argv).map(|l| l.main).unwrap_or_default()),
        wl.metric_name,
        lab::report::fmt_value(main),
        better(wl.better)
    )?;
    for p in (wl.background)(r) {
        writeln!(
            out,
            "metric: {} {} = {} ({}; beside it)",
            p.workload,
            p.metric_name,
            lab::report::fmt_value(p.metric),
            better(p.better)
        )?;
    }
    Ok(())
}

fn json_report(
    a: &RunArgs,
    cfg: &SchedConfig,
    patches: &[String],
    topo: &Topology,
    wl: &ResolvedWorkload,
    r: &SimReport,
    wall_ms: f64,
) -> Value {
    let c = &r.counters;
    let lat = r.wakeup_latency.percentiles();
    let incomplete = wl.incomplete(r);
    let sysctl = json!({
        "base_slice_ns": cfg.sysctl.base_slice(topo.nr_cpus() as u32),
        "migration_cost_ns": cfg.sysctl.migration_cost_ns,
        "nr_migrate": cfg.sysctl.nr_migrate,
        "tunable_scaling": cfg.sysctl.tunable_scaling as u32,
    });
    let tasks: Vec<Value> = r
        .tasks
        .iter()
        .map(|t| {
            let p = t.stats.wakeup_latency.percentiles();
            json!({
                "pid": t.pid, "comm": t.comm, "nice": t.nice,
                "sum_exec_runtime_ns": t.sum_exec_runtime_ns,
                "nr_switches": t.stats.nr_switches,
                "nr_voluntary_switches": t.stats.nr_voluntary_switches,
                "nr_involuntary_switches": t.stats.nr_involuntary_switches,
                "nr_migrations": t.stats.nr_migrations,
                "nr_wakeups": t.stats.nr_wakeups,
                "nr_wakeups_sync": t.stats.nr_wakeups_sync,
                "nr_wakeups_local": t.stats.nr_wakeups_local,
                "nr_wakeups_remote": t.stats.nr_wakeups_remote,
                "nr_wakeups_migrate": t.stats.nr_wakeups_migrate,
                "nr_wakeups_affine": t.stats.nr_wakeups_affine,
                "nr_wakeups_affine_attempts": t.stats.nr_wakeups_affine_attempts,
                "nr_wakeup_preemptions": t.stats.nr_wakeup_preemptions,
                "se.avg.util_avg": t.util_avg,
                "se.avg.load_avg": t.load_avg,
                "wakeup_latency_ns": { "p50": p.p50, "p90": p.p90, "p99": p.p99, "max": p.max },
            })
        })
        .collect();
    json!({
        "schedlab_version": env!("CARGO_PKG_VERSION"),
        "seed": a.sim.seed,
        "command": reproduce(a),
        "topology": topo.name,
        "kernel": cfg.kernel,
        "preempt": cfg.preempt.name(),
        "hz": cfg.hz,
        "features": feature_tokens(&cfg.features, &cfg.kernel),
        "patches": patches,
        "sysctl": sysctl,
        "workload": { "name": wl.name, "argv": wl.argv },
        "metric": {
            "name": wl.metric_name,
            "value": if incomplete.is_some() { Value::Null } else { json!((wl.metric)(r)) },
            "better": better_name(wl.better),
            "incomplete": incomplete,
        },
        "background": (wl.background)(r).iter().map(|p| json!({
            "workload": p.workload,
            "metric": { "name": p.metric_name, "value": p.metric, "better": better_name(p.better) },
        })).collect::<Vec<_>>(),
        "sim": { "simulated_ns": r.simulated_ns, "events": r.events, "wall_ms": (wall_ms * 1000.0).round() / 1000.0, "stop": format!("{:?}", r.stop) },
        "counters": {
            "nr_switches": c.nr_switches,
            "nr_voluntary_switches": c.nr_voluntary_switches,
            "nr_involuntary_switches": c.nr_involuntary_switches,
            "nr_migrations": c.nr_migrations,
            "nr_wakeups": c.nr_wakeups,
            "nr_wakeups_sync": c.nr_wakeups_sync,
            "nr_wakeups_local": c.nr_wakeups_local,
            "nr_wakeups_remote": c.nr_wakeups_remote,
            "nr_wakeups_affine": c.nr_wakeups_affine,
            "nr_wakeups_affine_attempts": c.nr_wakeups_affine_attempts,
            "nr_wakeups_migrate": c.nr_wakeups_migrate,
            "nr_wakeup_preemptions": c.nr_wakeup_preemptions,
            "nr_tick_preemptions": c.nr_tick_preemptions,
            "nr_ipis": c.nr_ipis,
            "idle_ns_per_cpu": r.idle_ns_per_cpu,
        },
        "wakeup_latency_ns": { "p50": lat.p50, "p90": lat.p90, "p99": lat.p99, "max": lat.max },
        "schedstat": schedstat_json(&r.schedstat),
        "tasks": tasks,
    })
}

/// The `/proc/schedstat` counters: the machine's totals (the names `compare --vm` prints for a
/// guest), then each CPU's line and its domains' counters, lowest domain first.
fn schedstat_json(s: &sim::schedstat::Schedstat) -> Value {
    let totals: serde_json::Map<String, Value> =
        s.totals().named().into_iter().map(|(k, v)| (k.into(), json!(v))).collect();
    let cpus: Vec<Value> = s
        .cpus
        .iter()
        .zip(&s.domains)
        .map(|(c, doms)| {
            let domains: Vec<Value> = doms
                .iter()
                .map(|d| {
                    let lb: serde_json::Map<String, Value> = sim::schedstat::IDLE_TYPES
                        .iter()
                        .zip(&d.lb)
                        .map(|(ty, l)| {
                            let v = json!({
                                "lb_count": l.count, "lb_balanced": l.balanced, "lb_failed": l.failed,
                                "lb_imbalance_load": l.imbalance[0], "lb_imbalance_util": l.imbalance[1],
                                "lb_imbalance_task": l.imbalance[2], "lb_imbalance_misfit": l.imbalance[3],
                                "lb_gained": l.gained, "lb_hot_gained": l.hot_gained,
                                "lb_nobusyq": l.nobusyq, "lb_nobusyg": l.nobusyg,
                            });
                            ((*ty).to_string(), v)
                        })
                        .collect();
                    json!({
                        "lb": lb,
                        "alb_count": d.alb_count, "alb_failed": d.alb_failed, "alb_pushed": d.alb_pushed,
                        "ttwu_wake_remote": d.ttwu_wake_remote, "ttwu_move_affine": d.ttwu_move_affine,
                    })
                })
                .collect();
            json!({
                "yld_count": c.yld_count, "sched_count": c.sched_count, "sched_goidle": c.sched_goidle,
                "ttwu_count": c.ttwu_count, "ttwu_local": c.ttwu_local, "domains": domains,
            })
        })
        .collect();
    json!({ "totals": totals, "cpus": cpus })
}

fn better_name(b: Better) -> &'static str {
    match b {
        Better::Lower => "lower",
        Better::Higher => "higher",
    }
}
