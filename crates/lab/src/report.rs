//! Renders a [`Comparison`]: a terminal table (comfy-table), Markdown, CSV or JSON. Every format
//! carries the seeds and the command line that reproduces it.
//!
//! Table and Markdown: first one summary table, one row per (workload, topology): the base's
//! median, min–max and %stddev, then for each variant its median and % change with its mark;
//! then, per group, the counters that explain a difference side by side (mean per run, and the
//! raw change `(variant − base)/base` in percent, like `perf sched stats diff`).
//!
//! CSV: one row per (group, variant including the base) with every statistic and counter.
//! JSON: the whole comparison, with per-seed values and the test of each variant.

use std::fmt::Write as _;

use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::compare::{Arm, COUNTERS, Comparison, Group, VariantResult};
use crate::runner::Better;
use crate::stats::TestKind;
use crate::words;

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "table" => Some(Format::Table),
            "markdown" | "md" => Some(Format::Markdown),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

pub const CHANGE_CONVENTION: &str = "%change: positive = better; lower-is-better metrics 100*(base-variant)/base, \
     higher-is-better 100*(variant-base)/base, on the medians over seeds";

/// The significance rule in one line, with the thresholds in force.
pub fn rule_text(c: &Comparison) -> String {
    format!(
        "(I)/(R) = significant improvement/regression: paired t-test on per-seed differences (Welch's t-test \
         when fewer than 3 seeds are shared), two-sided p < {}, |%change| >= {}%, at least 3 runs, mean and \
         median agree in direction",
        c.options.alpha, c.options.min_effect_pct
    )
}

/// Renders the comparison in `format`; the text ends with a newline.
pub fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Table => render_text(c, false),
        Format::Markdown => render_text(c, true),
        Format::Csv => render_csv(c),
        Format::Json => render_json(c),
    }
}

/// `1..5` for consecutive seeds, else `1,7,42`.
pub fn seeds_text(seeds: &[u64]) -> String {
    let consecutive = seeds.windows(2).all(|w| w[0].checked_add(1) == Some(w[1]));
    match seeds {
        [] => "none".into(),
        [one] => one.to_string(),
        [first, .., last] if consecutive => format!("{first}..{last}"),
        _ => seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
    }
}

/// A metric value with a precision that depends on its magnitude (deterministic text).
pub fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        format!("{v}")
    } else if a >= 10_000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{v:.5}")
    }
}

/// A counter mean: an integer when it is one, else one decimal.
fn fmt_count(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v:.1}") }
}

fn fmt_pct(p: Option<f64>) -> String {
    match p {
        Some(p) if p.is_finite() => format!("{:+.2}%", p + 0.0),
        _ => "n/a".into(),
    }
}

fn better_text(b: Better) -> &'static str {
    match b {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    }
}

fn change_cell(v: &VariantResult) -> String {
    match &v.arm {
        None => "—".into(),
        Some(_) => {
            let mark = v.mark.label();
            if mark.is_empty() { fmt_pct(v.change_pct) } else { format!("{} {mark}", fmt_pct(v.change_pct)) }
        }
    }
}

/// A rectangular grid of strings with a header, rendered by comfy-table or as Markdown.
struct Grid {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns from this index on are right-aligned (numbers).
    numeric_from: usize,
}

impl Grid {
    fn render(&self, markdown: bool) -> String {
        if markdown {
            let esc = |s: &str| s.replace('|', "\\|");
            let mut out = format!("| {} |\n|", self.header.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | "));
            for i in 0..self.header.len() {
                out += if i >= self.numeric_from { " ---: |" } else { " --- |" };
            }
            out.push('\n');
            for r in &self.rows {
                let _ = writeln!(out, "| {} |", r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "));
            }
            out
        } else {
            let mut t = Table::new();
            t.load_style(presets::UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
            t.set_header(self.header.clone());
            for r in &self.rows {
                t.add_row(r.clone());
            }
            for i in self.numeric_from..self.header.len() {
                if let Some(col) = t.column_mut(i) {
                    col.set_cell_alignment(CellAlignment::Right);
                }
            }
            format!("{t}\n")
        }
    }
}

fn render_text(c: &Comparison, markdown: bool) -> String {
    let mut out = String::new();
    let base_spec = &c.groups[0].base.spec;
    let seeds = c.seeds();
    let lines = [
        format!(
            "schedlab {} compare: base `{}` ({base_spec}) against {}",
            c.schedlab_version,
            c.base,
            c.groups[0].variants.iter().map(|v| format!("`{}` ({})", v.name, v.spec)).collect::<Vec<_>>().join(", ")
        ),
        format!("seeds {} ({} runs per variant), the same seeds for every variant", seeds_text(&seeds), seeds.len()),
        CHANGE_CONVENTION.to_string(),
        rule_text(c),
    ];
    for l in lines {
        if markdown {
            let _ = writeln!(out, "- {l}");
        } else {
            let _ = writeln!(out, "# {l}");
        }
    }
    for r in c.reproduce() {
        if markdown {
            let _ = writeln!(out, "- reproduce: `{r}`");
        } else {
            let _ = writeln!(out, "# reproduce: {r}");
        }
    }
    out.push('\n');

    let mut header: Vec<String> = ["workload", "topology", "metric"].map(String::from).to_vec();
    header.push(format!("{} median", c.base));
    header.push("min–max".into());
    header.push("%stddev".into());
    for v in &c.variants {
        header.push(format!("{v} median"));
        header.push(format!("{v} %change"));
    }
    let mut rows = Vec::new();
    for g in &c.groups {
        let mut row = vec![
            words::join(&g.workload),
            g.topology.clone(),
            format!("{} ({})", g.metric, better_text(g.better)),
            fmt_value(g.base.summary.median),
            format!("{}–{}", fmt_value(g.base.summary.min), fmt_value(g.base.summary.max)),
            format!("{:.2}%", g.base.summary.stddev_pct),
        ];
        for v in &g.variants {
            row.push(v.arm.as_ref().map_or("—".into(), |a| fmt_value(a.summary.median)));
            row.push(change_cell(v));
        }
        rows.push(row);
    }
    out += &Grid { header, rows, numeric_from: 3 }.render(markdown);

    for g in &c.groups {
        out.push('\n');
        let title = format!(
            "counters: {} on {} (mean per run over {} seeds; Δ% = (variant − base)/base)",
            words::join(&g.workload),
            g.topology,
            g.base.seeds.len()
        );
        if markdown {
            let _ = writeln!(out, "**{title}**\n");
        } else {
            let _ = writeln!(out, "{title}");
        }
        let mut header = vec!["counter".to_string(), c.base.clone()];
        for v in &g.variants {
            header.push(v.name.clone());
            header.push("Δ%".into());
        }
        let rows = COUNTERS
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let base = g.base.counters[i];
                let mut row = vec![name.to_string(), fmt_count(base)];
                for v in &g.variants {
                    match &v.arm {
                        Some(a) => {
                            row.push(fmt_count(a.counters[i]));
                            let d = if base == 0.0 {
                                if a.counters[i] == 0.0 { Some(0.0) } else { None }
                            } else {
                                Some(100.0 * (a.counters[i] - base) / base)
                            };
                            row.push(fmt_pct(d));
                        }
                        None => row.extend(["—".to_string(), "—".to_string()]),
                    }
                }
                row
            })
            .collect();
        out += &Grid { header, rows, numeric_from: 1 }.render(markdown);
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

fn fnum(v: f64) -> String {
    if v.is_finite() { format!("{v}") } else { String::new() }
}

fn render_csv(c: &Comparison) -> String {
    let mut header: Vec<String> = [
        "topology",
        "workload",
        "duration_s",
        "max_events",
        "metric",
        "better",
        "role",
        "name",
        "spec",
        "runs",
        "seeds",
        "median",
        "mean",
        "min",
        "max",
        "q1",
        "q3",
        "stddev_pct",
        "change_pct",
        "test",
        "t",
        "df",
        "p_value",
        "mark",
    ]
    .map(String::from)
    .to_vec();
    header.extend(COUNTERS.iter().map(|c| c.to_string()));
    header.push("reproduce".into());
    let mut out = header.join(",") + "\n";
    for g in &c.groups {
        let mut row_of = |role: &str, name: &str, spec: &str, arm: Option<&Arm>, v: Option<&VariantResult>| {
            let mut f: Vec<String> = vec![
                g.topology.clone(),
                words::join(&g.workload),
                fnum(g.duration_ns as f64 / 1e9),
                g.max_events.to_string(),
                g.metric.clone(),
                match g.better {
                    Better::Lower => "lower".into(),
                    Better::Higher => "higher".into(),
                },
                role.into(),
                name.into(),
                spec.into(),
            ];
            match arm {
                Some(a) => {
                    let s = &a.summary;
                    f.push(s.n.to_string());
                    f.push(a.seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
                    f.extend([s.median, s.mean, s.min, s.max, s.q1, s.q3, s.stddev_pct].map(fnum));
                }
                None => f.extend(std::iter::repeat_n(String::new(), 9)),
            }
            let test = v.and_then(|v| v.test);
            f.push(v.and_then(|v| v.change_pct).map_or(String::new(), fnum));
            f.push(test.map_or(String::new(), |t| test_name(t.kind).into()));
            f.push(test.map_or(String::new(), |t| fnum(t.t)));
            f.push(test.map_or(String::new(), |t| fnum(t.df)));
            f.push(test.map_or(String::new(), |t| fnum(t.p)));
            f.push(v.map_or(String::new(), |v| v.mark.label().into()));
            match arm {
                Some(a) => f.extend(a.counters.iter().map(|&x| fnum(x))),
                None => f.extend(std::iter::repeat_n(String::new(), COUNTERS.len())),
            }
            f.push(g.reproduce.clone());
            out += &(f.iter().map(|x| csv_field(x)).collect::<Vec<_>>().join(",") + "\n");
        };
        row_of("base", &g.base.name, &g.base.spec, Some(&g.base), None);
        for v in &g.variants {
            row_of("variant", &v.name, &v.spec, v.arm.as_ref(), Some(v));
        }
    }
    out
}

fn test_name(k: TestKind) -> &'static str {
    match k {
        TestKind::PairedT => "paired-t",
        TestKind::WelchT => "welch-t",
    }
}

/// The JSON document: the comparison plus its conventions, seeds and reproduce lines.
#[derive(Serialize)]
struct JsonDoc<'a> {
    schedlab_version: &'a str,
    seeds: Vec<u64>,
    reproduce: Vec<String>,
    change_convention: &'static str,
    significance_rule: String,
    alpha: f64,
    min_effect_pct: f64,
    base: &'a str,
    variants: &'a [String],
    groups: Vec<JsonGroup<'a>>,
}

#[derive(Serialize)]
struct JsonGroup<'a> {
    topology: &'a str,
    workload: &'a [String],
    duration_ns: u64,
    max_events: u64,
    metric: &'a str,
    better: Better,
    base: JsonBase<'a>,
    variants: Vec<JsonVariant<'a>>,
    reproduce: &'a str,
}

#[derive(Serialize)]
struct JsonBase<'a> {
    name: &'a str,
    spec: &'a str,
    #[serde(flatten)]
    arm: JsonArm<'a>,
}

#[derive(Serialize)]
struct JsonArm<'a> {
    seeds: &'a [u64],
    values: &'a [f64],
    summary: &'a crate::stats::Summary,
    #[serde(serialize_with = "counters_map")]
    counters: &'a [f64],
}

#[derive(Serialize)]
struct JsonVariant<'a> {
    name: &'a str,
    spec: &'a str,
    #[serde(flatten)]
    arm: Option<JsonArm<'a>>,
    change_pct: Option<f64>,
    test: Option<crate::stats::TTest>,
    mark: &'static str,
}

fn counters_map<S: Serializer>(v: &&[f64], s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(v.len()))?;
    for (name, x) in COUNTERS.iter().zip(v.iter()) {
        m.serialize_entry(name, x)?;
    }
    m.end()
}

fn json_arm(a: &Arm) -> JsonArm<'_> {
    JsonArm { seeds: &a.seeds, values: &a.values, summary: &a.summary, counters: &a.counters }
}

fn json_group(g: &Group) -> JsonGroup<'_> {
    JsonGroup {
        topology: &g.topology,
        workload: &g.workload,
        duration_ns: g.duration_ns,
        max_events: g.max_events,
        metric: &g.metric,
        better: g.better,
        base: JsonBase { name: &g.base.name, spec: &g.base.spec, arm: json_arm(&g.base) },
        variants: g
            .variants
            .iter()
            .map(|v| JsonVariant {
                name: &v.name,
                spec: &v.spec,
                arm: v.arm.as_ref().map(json_arm),
                change_pct: v.change_pct,
                test: v.test,
                mark: v.mark.label(),
            })
            .collect(),
        reproduce: &g.reproduce,
    }
}

fn render_json(c: &Comparison) -> String {
    let doc = JsonDoc {
        schedlab_version: &c.schedlab_version,
        seeds: c.seeds(),
        reproduce: c.reproduce(),
        change_convention: CHANGE_CONVENTION,
        significance_rule: rule_text(c),
        alpha: c.options.alpha,
        min_effect_pct: c.options.min_effect_pct,
        base: &c.base,
        variants: &c.variants,
        groups: c.groups.iter().map(json_group).collect(),
    };
    serde_json::to_string_pretty(&doc).expect("a comparison serialises") + "\n"
}
