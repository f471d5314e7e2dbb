//! `schedlab analyze TRACE.txt`: the `run --json` counters and a `perf sched latency`-style
//! table, recomputed from a real kernel trace (`/sys/kernel/debug/tracing/trace`,
//! `trace-cmd report`) or a simulated one (`schedlab run --trace FILE.txt`).

use std::io::Write;

use schedtrace::{Analysis, Filter, LagHistogram, PreemptCause};
use serde_json::{Value, json};

use crate::args::AnalyzeArgs;
use crate::setup::user;

pub fn analyze(a: &AnalyzeArgs) -> anyhow::Result<()> {
    let path = a.trace.display();
    let file = match schedtrace::open_trace(&a.trace) {
        Ok(f) => f,
        Err(e) => return user(format!("{path}: {e}")),
    };
    let filter = Filter { comm: a.comm.clone(), pid: a.pid, also_comms: Vec::new() };
    let an = match schedtrace::analyze(file, filter) {
        Ok(an) => an,
        Err(schedtrace::ParseError::Line { line, message }) => return user(format!("{path}:{line}: {message}")),
        // Unreadable or empty input is the user's file, not an internal error.
        Err(e @ schedtrace::ParseError::Empty { .. }) => return user(format!("{path}: {e}")),
        Err(schedtrace::ParseError::Io { line, source }) => return user(format!("{path}:{line}: {source}")),
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&json_report(a, &an))?)?;
    } else {
        write_text(&mut out, a, &an)?;
    }
    Ok(())
}

fn json_report(a: &AnalyzeArgs, an: &Analysis) -> Value {
    let lat = an.wakeup_latency_ns();
    let tasks: Vec<Value> = an
        .tasks
        .iter()
        .map(|t| {
            json!({
                "pid": t.pid, "comm": t.comm,
                "sum_exec_runtime_ns": t.runtime_ns,
                "nr_switches": t.nr_switches,
                "nr_voluntary_switches": t.nr_voluntary_switches,
                "nr_involuntary_switches": t.nr_involuntary_switches,
                "nr_migrations": t.nr_migrations,
                "nr_wakeups": t.nr_wakeups,
                "avg_delay_ns": t.avg_delay_ns(),
                "max_delay_ns": t.max_delay_ns,
                "max_delay_at_ns": t.max_delay_at_ns,
            })
        })
        .collect();
    let preempt: serde_json::Map<String, Value> = an
        .wakeup_preempt_reasons
        .iter()
        .map(|(k, c)| (k.clone(), json!({ "count": c.count, "preempt": c.preempt })))
        .collect();
    let preempted_by: serde_json::Map<String, Value> =
        PreemptCause::ALL.iter().zip(an.preempted_by).map(|(c, n)| (c.name().to_string(), json!(n))).collect();
    let placement: serde_json::Map<String, Value> =
        an.placement_reasons.iter().map(|(k, c)| (k.clone(), json!(c.count))).collect();
    json!({
        "schedlab_version": env!("CARGO_PKG_VERSION"),
        "trace": a.trace.display().to_string(),
        "filter": { "comm": a.comm, "pid": a.pid },
        "records": an.records,
        "nr_cpus": an.nr_cpus,
        "first_ts_ns": an.first_ts_ns,
        "last_ts_ns": an.last_ts_ns,
        "counters": {
            "nr_switches": an.nr_switches,
            "nr_voluntary_switches": an.nr_voluntary_switches,
            "nr_involuntary_switches": an.nr_involuntary_switches,
            "nr_migrations": an.nr_migrations,
            "nr_wakeups": an.nr_wakeups,
            "nr_wakeups_local": an.nr_wakeups_local,
            "nr_wakeups_remote": an.nr_wakeups_remote,
            "nr_wakeups_migrate": an.nr_wakeups_migrate,
            "idle_ns_per_cpu": an.idle_ns_per_cpu,
        },
        "migrations": {
            "at_wakeup": an.nr_migrations_at_wakeup,
            "other": an.nr_migrations_other,
            "other_passes": an.nr_migration_passes,
            "max_per_pass": an.max_migrations_per_pass,
        },
        "wakeup_latency_ns": { "p50": lat.p50, "p90": lat.p90, "p99": lat.p99, "max": lat.max },
        "wakee_on_waker_cpu": an.wakee_on_waker_cpu(),
        "wakeup_preempt_reasons": preempt,
        "preempted_by": preempted_by,
        "lag_ns": {
            "at_wakeup": lag_json(&an.wakeup_lag),
            "at_sleep": lag_json(&an.sleep_lag),
            "sleeps_delayed": an.nr_sleeps_delayed,
        },
        "wakee_flips": flips_json(an),
        "placement_reasons": placement,
        "tasks": tasks,
    })
}

/// `at N wakeups p10 .. p50 .. p90 .. (positive ..%, zero ..%); left at N sleeps ...`.
fn lag_line(an: &Analysis) -> String {
    let dist = |h: &LagHistogram| {
        let us = |q: f64| h.quantile(q) as f64 / 1e3;
        let (_, zero, pos) = h.shares();
        format!(
            "p10 {:.0} p50 {:.0} p90 {:.0} (positive {:.0}%, zero {:.0}%)",
            us(0.1),
            us(0.5),
            us(0.9),
            pos * 100.0,
            zero * 100.0
        )
    };
    let mut parts = Vec::new();
    if !an.wakeup_lag.is_empty() {
        parts.push(format!("at {} wakeups {}", an.wakeup_lag.len(), dist(&an.wakeup_lag)));
    }
    if !an.sleep_lag.is_empty() {
        parts.push(format!("left at {} sleeps {}", an.sleep_lag.len(), dist(&an.sleep_lag)));
    }
    if an.nr_sleeps_delayed > 0 {
        parts.push(format!("{} sleeps stayed queued as delayed", an.nr_sleeps_delayed));
    }
    parts.join("; ")
}

/// The wakee's `wakee_flips` at its `sched_waking` (`schedlab_waking_flips`), if recorded.
fn flips_json(an: &Analysis) -> Value {
    if an.wakee_flips.is_empty() {
        return Value::Null;
    }
    let p = an.wakee_flips.percentiles();
    json!({ "count": p.count, "p50": p.p50, "p90": p.p90, "p99": p.p99, "max": p.max })
}

fn lag_json(h: &LagHistogram) -> Value {
    let (neg, zero, pos) = h.shares();
    json!({
        "count": h.len(),
        "p10": h.quantile(0.1), "p50": h.quantile(0.5), "p90": h.quantile(0.9),
        "negative": neg, "zero": zero, "positive": pos,
    })
}

fn write_text(out: &mut impl Write, a: &AnalyzeArgs, an: &Analysis) -> anyhow::Result<()> {
    let mut filter = String::new();
    if let Some(c) = &a.comm {
        filter += &format!(" comm={c}");
    }
    if let Some(p) = a.pid {
        filter += &format!(" pid={p}");
    }
    writeln!(
        out,
        "# {}: {} records, {:.6} s, {} CPUs{}",
        a.trace.display(),
        an.records,
        an.span_ns() as f64 / 1e9,
        an.nr_cpus,
        if filter.is_empty() { String::new() } else { format!(", filter:{filter}") }
    )?;
    writeln!(
        out,
        "switches {} (voluntary {}, involuntary {}), wakeups {} (local {}, remote {}, migrate {}), migrations {}",
        an.nr_switches,
        an.nr_voluntary_switches,
        an.nr_involuntary_switches,
        an.nr_wakeups,
        an.nr_wakeups_local,
        an.nr_wakeups_remote,
        an.nr_wakeups_migrate,
        an.nr_migrations
    )?;
    if an.nr_migrations > 0 {
        writeln!(
            out,
            "migrations: {} at wakeup, {} other (balancing, affinity) in {} passes of up to {} tasks",
            an.nr_migrations_at_wakeup, an.nr_migrations_other, an.nr_migration_passes, an.max_migrations_per_pass
        )?;
    }
    if let Some(f) = an.wakee_on_waker_cpu() {
        writeln!(out, "wakee on waker CPU: {:.1}% of wakeups", f * 100.0)?;
    }
    let p = an.wakeup_latency_ns();
    let idle = &an.idle_ns_per_cpu;
    let idle = if idle.len() <= 8 {
        let per: Vec<String> = idle.iter().map(|n| format!("{:.1}", *n as f64 / 1e6)).collect();
        format!("idle ms per CPU: {}", per.join(" "))
    } else {
        let total: u64 = idle.iter().sum();
        let share = total as f64 / (an.span_ns().max(1) as f64 * idle.len() as f64) * 100.0;
        format!("idle {share:.1}% of CPU time")
    };
    writeln!(
        out,
        "wakeup latency us: p50 {:.1} p90 {:.1} p99 {:.1} max {:.1}; {idle}",
        p.p50 as f64 / 1e3,
        p.p90 as f64 / 1e3,
        p.p99 as f64 / 1e3,
        p.max as f64 / 1e3
    )?;
    if an.nr_involuntary_switches > 0 {
        let r: Vec<String> = PreemptCause::ALL
            .iter()
            .zip(an.preempted_by)
            .filter(|&(_, n)| n > 0)
            .map(|(c, n)| format!("{} {n} ({:.1}%)", c.name(), n as f64 * 100.0 / an.nr_involuntary_switches as f64))
            .collect();
        writeln!(out, "involuntary switch-outs by what asked for them: {}", r.join(", "))?;
    }
    if !an.wakeup_lag.is_empty() || !an.sleep_lag.is_empty() || an.nr_sleeps_delayed > 0 {
        writeln!(out, "lag carried (se->vlag, virtual us): {}", lag_line(an))?;
    }
    if !an.wakee_flips.is_empty() {
        let p = an.wakee_flips.percentiles();
        writeln!(
            out,
            "wakee_flips of wakees at sched_waking (wake_wide()'s wakee side): at {} wakeups p50 {} p90 {} p99 {} max {}",
            p.count, p.p50, p.p90, p.p99, p.max
        )?;
    }
    if !an.wakeup_preempt_reasons.is_empty() {
        let r: Vec<String> =
            an.wakeup_preempt_reasons.iter().map(|(k, c)| format!("{k} {}/{}", c.preempt, c.count)).collect();
        writeln!(out, "wakeup preemption checks (preempted/checked): {}", r.join(", "))?;
    }
    if !an.placement_reasons.is_empty() {
        let r: Vec<String> = an.placement_reasons.iter().map(|(k, c)| format!("{k} {}", c.count)).collect();
        writeln!(out, "placements: {}", r.join(", "))?;
    }
    writeln!(out)?;
    write!(out, "{}", an.latency_table())?;
    Ok(())
}
