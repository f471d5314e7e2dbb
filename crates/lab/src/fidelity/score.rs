//! Scoring the model against the ground truth, and the scoreboard as text and JSON.
//!
//! - An **effect** (a metric of an `effects.txt` line) is reproduced *in direction* when the
//!   model's median moves the same way between the default and the variant, and *within 2x*
//!   when the model's change is 0.5-2 times the real one: for shares (metrics named `*_share`,
//!   `affine_success`, `t_target_*`, `fair_jain`) the change in points, for the others the log
//!   of the ratio of medians.
//! - A **default cell** (a metric of a default-variant row that the model has) is *in range*
//!   when the model's median lies inside the real min-max over the boots, and *within 1.5x* when
//!   it is 2/3-1.5 times the real median. The two cells a profile was fitted to are not scored.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::json;

use super::Fidelity;
use super::profile::FIT_WORKLOADS;
use super::truth::{CaseKey, Stat};

/// Is `metric` a share (scored by the change in points) rather than a ratio?
pub fn is_share(metric: &str) -> bool {
    metric.ends_with("_share")
        || metric == "affine_success"
        || metric.starts_with("t_target_")
        || metric == "t_wakee_ran_on_waker_cpu"
        || metric == "fair_jain"
        || metric == "fair_share_nice0"
}

/// One scored effect.
#[derive(Clone, Debug)]
pub struct EffectScore {
    pub key: CaseKey,
    pub metric: String,
    pub real: (f64, f64),
    pub model: (f64, f64),
    pub direction: bool,
    pub within_2x: bool,
    /// Model change over real change (points or log ratios); NaN when undefined.
    pub size_ratio: f64,
}

/// One scored default cell.
#[derive(Clone, Debug)]
pub struct CellScore {
    pub key: CaseKey,
    pub metric: String,
    pub real: Stat,
    pub model: f64,
    pub in_range: bool,
    pub within_1_5x: bool,
}

/// The scoreboard.
#[derive(Clone, Debug, Default)]
pub struct Scores {
    pub effects: Vec<EffectScore>,
    /// Effects whose metric the model does not produce: (key, metric).
    pub effects_unscored: Vec<(CaseKey, String)>,
    pub cells: Vec<CellScore>,
    /// Default-row metrics the model does not produce, by metric name: count.
    pub cells_not_modelled: BTreeMap<String, u32>,
    pub cells_fitted: u32,
}

fn change(metric: &str, from: f64, to: f64) -> f64 {
    if is_share(metric) { to - from } else { (to / from).ln() }
}

/// Scores a finished run.
pub fn score(f: &Fidelity) -> Scores {
    let mut s = Scores::default();
    for e in &f.truth.effects {
        let dkey = CaseKey { variant: "default".into(), ..e.key.clone() };
        let (Some(mv), Some(md)) = (f.model.get(&e.key), f.model.get(&dkey)) else { continue };
        let (Some(rv), Some(rd)) = (f.truth.row(&e.key), f.truth.row(&dkey)) else { continue };
        let (Some(rv), Some(rd)) = (rv.metrics.get(&e.metric), rd.metrics.get(&e.metric)) else { continue };
        let (Some(&mv), Some(&md)) = (mv.get(e.metric.as_str()), md.get(e.metric.as_str())) else {
            s.effects_unscored.push((e.key.clone(), e.metric.clone()));
            continue;
        };
        let real = change(&e.metric, rd.median, rv.median);
        let model = change(&e.metric, md, mv);
        let size_ratio = model / real;
        let direction = model.is_finite() && model != 0.0 && model.signum() == real.signum();
        let within_2x = direction && (0.5..=2.0).contains(&size_ratio);
        s.effects.push(EffectScore {
            key: e.key.clone(),
            metric: e.metric.clone(),
            real: (rd.median, rv.median),
            model: (md, mv),
            direction,
            within_2x,
            size_ratio,
        });
    }
    for row in f.truth.rows.iter().filter(|r| r.key.variant == "default") {
        let Some(model) = f.model.get(&row.key) else { continue };
        for (metric, real) in &row.metrics {
            // `ops` is what the metrics are divided by, not a measurement of the scheduler.
            if metric == "ops" {
                continue;
            }
            if metric == "bench_value" && FIT_WORKLOADS.contains(&row.key.workload.as_str()) {
                s.cells_fitted += 1;
                continue;
            }
            let Some(&m) = model.get(metric.as_str()) else {
                *s.cells_not_modelled.entry(metric.clone()).or_default() += 1;
                continue;
            };
            let in_range = real.min <= m && m <= real.max;
            let within_1_5x = if real.median == 0.0 {
                m == 0.0
            } else {
                let r = m / real.median;
                (1.0 / 1.5..=1.5).contains(&r)
            };
            s.cells.push(CellScore {
                key: row.key.clone(),
                metric: metric.clone(),
                real: *real,
                model: m,
                in_range,
                within_1_5x,
            });
        }
    }
    s
}

/// The default cells split by where the real figure was read: the benchmark's own tasks
/// (`/proc/<tid>/sched` and the traces) or the system-wide `/proc/schedstat` deltas (`ss_*`,
/// every task of the guest). Each: (name, cells, in range, within 1.5x).
fn by_source(s: &Scores) -> [(&'static str, usize, usize, usize); 2] {
    let count = |schedstat: bool| {
        let v: Vec<&CellScore> = s.cells.iter().filter(|c| c.metric.starts_with("ss_") == schedstat).collect();
        (v.len(), v.iter().filter(|c| c.in_range).count(), v.iter().filter(|c| c.within_1_5x).count())
    };
    let (t, ss) = (count(false), count(true));
    [("tasks' counters", t.0, t.1, t.2), ("system-wide schedstat", ss.0, ss.1, ss.2)]
}

/// The default cells of one metric, over every case: how many, in the real min-max, within
/// 1.5x, and the median over them of the model's value divided by the real median (cells whose
/// real median is 0 left out; `None` when all are): below 1 the model is low for that metric
/// throughout, above 1 high, which tells a systematic error from scattered ones.
struct MetricRow {
    metric: String,
    cells: usize,
    in_range: usize,
    within_1_5x: usize,
    model_over_real: Option<f64>,
}

/// The cells by metric, those with the most cells outside 1.5x first (then by name).
fn by_metric(s: &Scores) -> Vec<MetricRow> {
    let mut by: BTreeMap<&str, Vec<&CellScore>> = BTreeMap::new();
    for c in &s.cells {
        by.entry(c.metric.as_str()).or_default().push(c);
    }
    let mut rows: Vec<MetricRow> = by
        .into_iter()
        .map(|(metric, cells)| {
            let ratios: Vec<f64> =
                cells.iter().filter(|c| c.real.median > 0.0).map(|c| c.model / c.real.median).collect();
            let model_over_real = (!ratios.is_empty()).then(|| crate::stats::median(&ratios));
            MetricRow {
                metric: metric.to_string(),
                cells: cells.len(),
                in_range: cells.iter().filter(|c| c.in_range).count(),
                within_1_5x: cells.iter().filter(|c| c.within_1_5x).count(),
                model_over_real,
            }
        })
        .collect();
    rows.sort_by(|a, b| (b.cells - b.within_1_5x).cmp(&(a.cells - a.within_1_5x)).then(a.metric.cmp(&b.metric)));
    rows
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 { "-".into() } else { format!("{:.0}%", 100.0 * n as f64 / d as f64) }
}

fn fmt_value(metric: &str, v: f64) -> String {
    if is_share(metric) {
        format!("{:.1}%", 100.0 * v)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

fn case_name(k: &CaseKey) -> String {
    let mode = if k.guest.mode == super::truth::Mode::Traced { " [t]" } else { "" };
    format!("{} {}{}", k.guest.kernel, k.workload, mode)
}

/// How far off an effect is, for ranking (direction misses first).
fn effect_badness(e: &EffectScore) -> f64 {
    if !e.direction {
        return f64::INFINITY;
    }
    e.size_ratio.ln().abs()
}

fn cell_badness(c: &CellScore) -> f64 {
    if c.real.median == 0.0 || c.model == 0.0 {
        return if c.real.median == c.model { 0.0 } else { f64::MAX };
    }
    (c.model / c.real.median).ln().abs()
}

/// The scoreboard as the terminal shows it (fits 100 columns).
pub fn render_text(f: &Fidelity, s: &Scores) -> String {
    let mut o = String::new();
    let t = &f.truth;
    let _ = writeln!(
        o,
        "schedlab fidelity: {}\n  {} rows, {} effect lines, {} effect metrics",
        t.dir.display(),
        t.rows.len(),
        t.effect_lines,
        t.effects.len()
    );
    let presets: Vec<String> = f.presets.iter().map(|(k, p)| format!("{k} as {p}")).collect();
    let _ = writeln!(o, "model: smp:N, {} seeds per case; {}", f.options.runs, presets.join(", "));
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "cost profiles: vm-2cpu costs x scale (fitted to default hb_pipe seconds) and a halted-vCPU\n\
         exit latency (fitted to default pp us per round trip), once per guest:"
    );
    let _ = writeln!(
        o,
        "  {:<28} {:>7} {:>10} {:>20} {:>20}",
        "guest", "scale", "wake us", "hb_pipe real/model", "pp real/model"
    );
    for p in &f.profiles {
        let fit = |i: usize| p.fit.get(i).map_or("-".to_string(), |(_, r, m)| format!("{r:.3}/{m:.3}"));
        let _ = writeln!(
            o,
            "  {:<28} {:>7.2} {:>10.1} {:>20} {:>20}",
            p.guest.to_string(),
            p.scale,
            p.wake_ns as f64 / 1e3,
            fit(0),
            fit(1)
        );
        if p.wake_ns == 0 {
            let _ =
                writeln!(o, "    (wake at its floor of 0: with this scale the model's pp is slower than the guest's)");
        }
    }
    let _ = writeln!(o);
    // Effects by variant and kernel.
    let mut by: BTreeMap<(String, String), (usize, usize, usize)> = BTreeMap::new();
    for e in &s.effects {
        let v = by.entry((e.key.variant.clone(), e.key.guest.kernel.clone())).or_default();
        v.0 += 1;
        v.1 += usize::from(e.direction);
        v.2 += usize::from(e.within_2x);
    }
    let _ = writeln!(o, "effects (real effects.txt metrics; model change vs real change):");
    let _ = writeln!(o, "  {:<22} {:<10} {:>7} {:>10} {:>10}", "variant", "kernel", "scored", "direction", "within 2x");
    for ((v, k), (n, d, m)) in &by {
        let _ = writeln!(o, "  {v:<22} {k:<10} {n:>7} {d:>10} {m:>10}");
    }
    let (n, d, m) = (
        s.effects.len(),
        s.effects.iter().filter(|e| e.direction).count(),
        s.effects.iter().filter(|e| e.within_2x).count(),
    );
    let _ =
        writeln!(o, "  {:<33} {n:>7} {:>10} {:>10}", "all", format!("{d} {}", pct(d, n)), format!("{m} {}", pct(m, n)));
    if !s.effects_unscored.is_empty() {
        let mut names: Vec<&str> = s.effects_unscored.iter().map(|(_, m)| m.as_str()).collect();
        names.dedup();
        let _ = writeln!(o, "  not scored: {} (metric not modelled: {})", s.effects_unscored.len(), names.join(", "));
    }
    let _ = writeln!(o);
    // Default cells by workload and kernel.
    let mut by: BTreeMap<(String, String), (usize, usize, usize)> = BTreeMap::new();
    for c in &s.cells {
        let mode = if c.key.guest.mode == super::truth::Mode::Traced { " [t]" } else { "" };
        let v = by.entry((format!("{}{mode}", c.key.workload), c.key.guest.kernel.clone())).or_default();
        v.0 += 1;
        v.1 += usize::from(c.in_range);
        v.2 += usize::from(c.within_1_5x);
    }
    let _ = writeln!(o, "default-variant metrics (model median vs the real boots):");
    let _ =
        writeln!(o, "  {:<22} {:<10} {:>7} {:>10} {:>11}", "workload", "kernel", "cells", "in min-max", "within 1.5x");
    for ((w, k), (n, r, x)) in &by {
        let _ = writeln!(o, "  {w:<22} {k:<10} {n:>7} {r:>10} {x:>11}");
    }
    let (n, r, x) = (
        s.cells.len(),
        s.cells.iter().filter(|c| c.in_range).count(),
        s.cells.iter().filter(|c| c.within_1_5x).count(),
    );
    let _ =
        writeln!(o, "  {:<33} {n:>7} {:>10} {:>11}", "all", format!("{r} {}", pct(r, n)), format!("{x} {}", pct(x, n)));
    for (source, n, r, x) in by_source(s) {
        let label = format!("  {source}");
        let _ = writeln!(
            o,
            "  {label:<33} {n:>7} {:>10} {:>11}",
            format!("{r} {}", pct(r, n)),
            format!("{x} {}", pct(x, n))
        );
    }
    let _ = writeln!(o, "  by metric, most cells outside 1.5x first (model/real: median of the cells' ratios):");
    for r in by_metric(s) {
        let ratio = r.model_over_real.map_or("-".to_string(), |x| format!("{x:.2}"));
        let _ =
            writeln!(o, "    {:<31} {:>7} {:>10} {:>11} {:>11}", r.metric, r.cells, r.in_range, r.within_1_5x, ratio);
    }
    let nm: Vec<String> = s.cells_not_modelled.iter().map(|(k, v)| format!("{k} ({v})")).collect();
    let _ = writeln!(o, "  fitted, not scored: {}; not modelled:", s.cells_fitted);
    for chunk in nm.chunks(3) {
        let _ = writeln!(o, "    {}", chunk.join(", "));
    }
    let _ = writeln!(o);
    let mut worst: Vec<&EffectScore> = s.effects.iter().filter(|e| !e.within_2x).collect();
    worst.sort_by(|a, b| effect_badness(b).total_cmp(&effect_badness(a)));
    let _ = writeln!(o, "worst effects:");
    for e in worst.iter().take(10) {
        let _ = writeln!(
            o,
            "  {} {} {}:\n      real {} -> {}, model {} -> {}",
            e.key.variant,
            case_name(&e.key),
            e.metric,
            fmt_value(&e.metric, e.real.0),
            fmt_value(&e.metric, e.real.1),
            fmt_value(&e.metric, e.model.0),
            fmt_value(&e.metric, e.model.1)
        );
    }
    let mut worst: Vec<&CellScore> = s.cells.iter().filter(|c| !c.within_1_5x).collect();
    worst.sort_by(|a, b| cell_badness(b).total_cmp(&cell_badness(a)));
    let _ = writeln!(o, "worst default cells:");
    for c in worst.iter().take(10) {
        let _ = writeln!(
            o,
            "  {} {}: real {} [{}-{}], model {}",
            case_name(&c.key),
            c.metric,
            fmt_value(&c.metric, c.real.median),
            fmt_value(&c.metric, c.real.min),
            fmt_value(&c.metric, c.real.max),
            fmt_value(&c.metric, c.model)
        );
    }
    o
}

/// The scoreboard as one JSON object.
pub fn render_json(f: &Fidelity, s: &Scores) -> serde_json::Value {
    let key = |k: &CaseKey| {
        json!({
            "kernel": k.guest.kernel, "preempt": k.guest.preempt, "vcpus": k.guest.vcpus,
            "mode": k.guest.mode.letter(), "variant": k.variant, "workload": k.workload,
        })
    };
    let effects: Vec<_> = s
        .effects
        .iter()
        .map(|e| {
            json!({
                "case": key(&e.key), "metric": e.metric,
                "real": [e.real.0, e.real.1], "model": [e.model.0, e.model.1],
                "direction": e.direction, "within_2x": e.within_2x,
            })
        })
        .collect();
    let cells: Vec<_> = s
        .cells
        .iter()
        .map(|c| {
            json!({
                "case": key(&c.key), "metric": c.metric,
                "real": {"median": c.real.median, "min": c.real.min, "max": c.real.max},
                "model": c.model, "in_range": c.in_range, "within_1_5x": c.within_1_5x,
            })
        })
        .collect();
    let profiles: Vec<_> = f
        .profiles
        .iter()
        .map(|p| {
            json!({
                "guest": {"kernel": p.guest.kernel, "preempt": p.guest.preempt, "vcpus": p.guest.vcpus,
                          "mode": p.guest.mode.letter()},
                "scale": p.scale, "wake_ns": p.wake_ns,
                "fit": p.fit.iter().map(|(w, r, m)| json!({"workload": w, "real": r, "model": m})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "ground_truth": f.truth.dir.display().to_string(),
        "runs_per_case": f.options.runs,
        "presets": f.presets,
        "profiles": profiles,
        "effects": {
            "scored": s.effects.len(),
            "direction": s.effects.iter().filter(|e| e.direction).count(),
            "magnitude": s.effects.iter().filter(|e| e.within_2x).count(),
            "unscored": s.effects_unscored.len(),
            "list": effects,
        },
        "defaults": {
            "cells": s.cells.len(),
            "in_range": s.cells.iter().filter(|c| c.in_range).count(),
            "within_1_5x": s.cells.iter().filter(|c| c.within_1_5x).count(),
            "by_source": by_source(s).into_iter().map(|(source, n, r, x)| {
                (source.to_string(), json!({ "cells": n, "in_range": r, "within_1_5x": x }))
            }).collect::<serde_json::Map<String, serde_json::Value>>(),
            "by_metric": by_metric(s).into_iter().map(|r| json!({
                "metric": r.metric, "cells": r.cells, "in_range": r.in_range,
                "within_1_5x": r.within_1_5x, "model_over_real": r.model_over_real,
            })).collect::<Vec<_>>(),
            "fitted": s.cells_fitted,
            "not_modelled": s.cells_not_modelled,
            "list": cells,
        },
    })
}
