//! Renders a [`Comparison`]: plain or boxed text tables, Markdown, CSV or JSON. Every format
//! carries the seeds and the command line that reproduces it.
//!
//! Table (plain ASCII columns, as mmtests' compare prints them, so a table pastes into a
//! plain-text email), box (the same drawn with box characters) and Markdown: `#` lines first
//! with the legend (variants are labelled A = the base, B, C, ... with their full SPEC), the
//! conventions and the reproduce line, all within [`TEXT_WIDTH`] columns; then per
//! (workload, topology) one row per variant: median, min, max, %stddev, % change with its
//! mark, the 95 % interval of the change and the p-value; the same for every workload run
//! beside it (`--background`); then the counters that explain a difference side by side (mean
//! per run, and the raw change `(X − A)/A` in percent, like `perf sched stats diff`). One row
//! per variant keeps the width independent of the number of variants, except for the counters
//! table, which fits 100 columns up to four variants (A-D).
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
    /// Plain ASCII columns (mmtests-style), for terminals and plain-text email.
    Table,
    /// The same tables drawn with box-drawing characters.
    Box,
    Markdown,
    Csv,
    Json,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "table" => Some(Format::Table),
            "box" => Some(Format::Box),
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
        Format::Table => render_text(c, Style::Ascii),
        Format::Box => render_text(c, Style::Box),
        Format::Markdown => render_text(c, Style::Markdown),
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

/// How the text tables are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    /// Plain ASCII, columns separated by two spaces (mmtests' compare output), `#` comments.
    Ascii,
    /// comfy-table's box drawing.
    Box,
    Markdown,
}

/// Widest line of the default table output a variant count up to three is kept within.
pub const TEXT_WIDTH: usize = 100;

/// The label of variant `i` in tables: A (the base), B, C, ... Z, then V27, V28, ...
pub fn label(i: usize) -> String {
    if i < 26 { char::from(b'A' + i as u8).to_string() } else { format!("V{}", i + 1) }
}

/// A p-value in four decimals (`<0.0001` below that).
fn fmt_p(p: f64) -> String {
    if p < 1e-4 { "<0.0001".into() } else { format!("{p:.4}") }
}

fn fmt_ci(ci: Option<[f64; 2]>) -> String {
    match ci {
        Some([lo, hi]) if lo.is_finite() && hi.is_finite() => format!("[{:+.2}, {:+.2}]", lo + 0.0, hi + 0.0),
        _ => String::new(),
    }
}

/// A rectangular grid of strings with a header.
struct Grid {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns from this index on are right-aligned (numbers).
    numeric_from: usize,
}

impl Grid {
    fn render(&self, style: Style) -> String {
        match style {
            Style::Markdown => {
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
            }
            Style::Box => {
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
            Style::Ascii => {
                let cols = self.header.len();
                let mut width = vec![0; cols];
                for r in std::iter::once(&self.header).chain(&self.rows) {
                    for (w, c) in width.iter_mut().zip(r) {
                        *w = (*w).max(c.chars().count());
                    }
                }
                let mut out = String::new();
                for r in std::iter::once(&self.header).chain(&self.rows) {
                    let mut line = String::new();
                    for (i, c) in r.iter().enumerate() {
                        if i > 0 {
                            line += "  ";
                        }
                        if i >= self.numeric_from {
                            let _ = write!(line, "{c:>w$}", w = width[i]);
                        } else {
                            let _ = write!(line, "{c:<w$}", w = width[i]);
                        }
                    }
                    out += line.trim_end();
                    out.push('\n');
                }
                out
            }
        }
    }
}

/// Words of `text` on lines of at most `width` characters (a longer word gets a line of its
/// own): the first line starts with `first`, the others with `cont`.
pub fn wrap(text: &str, width: usize, first: &str, cont: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut line, cont.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line += word;
        empty = false;
    }
    lines.push(line);
    lines
}

/// A command line on lines of at most `width` characters, broken before ` --` options (never
/// inside quotes), each line but the last ending in ` \` so the lines paste into a shell.
pub fn wrap_command(cmd: &str, width: usize, first: &str, cont: &str) -> Vec<String> {
    // Split into option groups at ` --` outside single quotes.
    let mut groups: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let chars: Vec<char> = cmd.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '\'' {
            quoted = !quoted;
        }
        if !quoted && c == ' ' && chars.get(i + 1) == Some(&'-') && chars.get(i + 2) == Some(&'-') {
            groups.push(std::mem::take(&mut current));
            continue;
        }
        current.push(c);
    }
    groups.push(current);
    let mut lines = Vec::new();
    let mut line = first.to_string() + &groups[0];
    for g in &groups[1..] {
        if line.chars().count() + 1 + g.chars().count() + 2 > width {
            lines.push(line + " \\");
            line = cont.to_string() + g;
        } else {
            line = line + " " + g;
        }
    }
    lines.push(line);
    lines
}

/// The variants' rows of one metric: median, range, %stddev, then the change, its mark, the
/// 95 % interval and the p-value.
fn metric_grid(base: &Arm, variants: &[VariantResult]) -> Grid {
    let header = ["", "median", "min", "max", "%stddev", "%chg", "", "95% CI of %chg", "p"].map(String::from).to_vec();
    let arm_cells = |a: &Arm| {
        vec![
            fmt_value(a.summary.median),
            fmt_value(a.summary.min),
            fmt_value(a.summary.max),
            format!("{:.2}%", a.summary.stddev_pct),
        ]
    };
    let mut rows = Vec::new();
    let mut row = vec![label(0)];
    row.extend(arm_cells(base));
    row.extend(["", "", "", ""].map(String::from));
    rows.push(row);
    for (i, v) in variants.iter().enumerate() {
        let mut row = vec![label(i + 1)];
        match &v.arm {
            Some(a) => {
                row.extend(arm_cells(a));
                row.push(fmt_pct(v.change_pct));
                row.push(v.mark.label().to_string());
                row.push(fmt_ci(v.change_ci95_pct));
                row.push(v.test.map_or("n/a".into(), |t| fmt_p(t.p)));
            }
            None => row.extend(["-", "", "", "", "no runs", "", "", ""].map(String::from)),
        }
        rows.push(row);
    }
    Grid { header, rows, numeric_from: 1 }
}

fn render_text(c: &Comparison, style: Style) -> String {
    let mut out = String::new();
    let seeds = c.seeds();
    let g0 = &c.groups[0];
    let mut comments: Vec<String> = vec![format!(
        "schedlab {} compare: seeds {}, {} runs per variant, the same seeds for every variant",
        c.schedlab_version,
        seeds_text(&seeds),
        seeds.len()
    )];
    let legend = |i: usize, name: &str, spec: &str| {
        // A variant typed as its SPEC is shown once; a named one (plans) as `name: SPEC`.
        let named = if crate::spec::normalize(name) == spec { spec.to_string() } else { format!("{name}: {spec}") };
        format!("{} = {named}{}", label(i), if i == 0 { " (base)" } else { "" })
    };
    comments.push(legend(0, &c.base, &g0.base.spec));
    for (i, v) in g0.variants.iter().enumerate() {
        comments.push(legend(i + 1, &v.name, &v.spec));
    }
    let conventions = [
        "%chg: change of the median over seeds, positive = better: 100*(A-X)/A when lower is better, \
         100*(X-A)/A when higher is better"
            .to_string(),
        "95% CI: of the mean per-seed change, in % of A's mean, positive = better; p: two-sided paired \
         t-test on the per-seed differences (Welch's t-test when fewer than 3 seeds are shared)"
            .to_string(),
        format!(
            "(I)/(R): significant improvement/regression: p < {}, |%chg| >= {}%, at least 3 runs, and the \
             mean and median changes agree in direction",
            c.options.alpha, c.options.min_effect_pct
        ),
    ];
    let (first, cont) = if style == Style::Markdown { ("- ", "  ") } else { ("# ", "#   ") };
    for l in comments.iter().chain(&conventions) {
        for line in wrap(l, TEXT_WIDTH, first, cont) {
            let _ = writeln!(out, "{line}");
        }
    }
    for r in c.reproduce() {
        if style == Style::Markdown {
            let _ = writeln!(out, "- reproduce: `{r}`");
        } else {
            for line in wrap_command(&r, TEXT_WIDTH, "# reproduce: ", "#   ") {
                let _ = writeln!(out, "{line}");
            }
        }
    }

    let heading = |out: &mut String, text: String| {
        out.push('\n');
        if style == Style::Markdown {
            let _ = writeln!(out, "**{text}**\n");
        } else {
            for line in wrap(&text, TEXT_WIDTH, "", "    ") {
                let _ = writeln!(out, "{line}");
            }
        }
    };
    for g in &c.groups {
        heading(
            &mut out,
            format!("{} on {}: {}, {}", words::join(&g.workload), g.topology, g.metric, better_text(g.better)),
        );
        out += &metric_grid(&g.base, &g.variants).render(style);
        for b in &g.background {
            heading(&mut out, format!("beside it, {}: {}, {}", b.workload, b.metric, better_text(b.better)));
            out += &metric_grid(&b.base, &b.variants).render(style);
        }
        heading(
            &mut out,
            format!(
                "counters: mean per run over {} seeds; X %diff = 100*(X-A)/A{}",
                g.base.seeds.len(),
                if g.background.is_empty() { "" } else { "; every task of the run" }
            ),
        );
        let mut header = vec!["counter".to_string(), label(0)];
        for (i, _) in g.variants.iter().enumerate() {
            header.push(label(i + 1));
            header.push(format!("{} %diff", label(i + 1)));
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
                            row.push(match d {
                                Some(p) if p.is_finite() => format!("{:+.1}%", p + 0.0),
                                _ => "n/a".into(),
                            });
                        }
                        None => row.extend(["-".to_string(), "-".to_string()]),
                    }
                }
                row
            })
            .collect();
        out += &Grid { header, rows, numeric_from: 1 }.render(style);
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
        "change_ci95_low_pct",
        "change_ci95_high_pct",
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
        // `part`: None for the foreground workload, or a background one's command and metric.
        let mut row_of = |part: Option<(&str, &str, Better)>,
                          role: &str,
                          name: &str,
                          spec: &str,
                          arm: Option<&Arm>,
                          v: Option<&VariantResult>| {
            let (workload, metric, better) = match part {
                None => (words::join(&g.workload), g.metric.as_str(), g.better),
                Some((w, m, b)) => (format!("{} --background {}", words::join(&g.workload), words::quote(w)), m, b),
            };
            let mut f: Vec<String> = vec![
                g.topology.clone(),
                workload,
                fnum(g.duration_ns as f64 / 1e9),
                g.max_events.to_string(),
                metric.to_string(),
                match better {
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
            let ci = v.and_then(|v| v.change_ci95_pct);
            f.push(ci.map_or(String::new(), |c| fnum(c[0])));
            f.push(ci.map_or(String::new(), |c| fnum(c[1])));
            f.push(test.map_or(String::new(), |t| test_name(t.kind).into()));
            f.push(test.map_or(String::new(), |t| fnum(t.t)));
            f.push(test.map_or(String::new(), |t| fnum(t.df)));
            f.push(test.map_or(String::new(), |t| fnum(t.p)));
            f.push(v.map_or(String::new(), |v| v.mark.label().into()));
            match arm {
                Some(a) if !a.counters.is_empty() => f.extend(a.counters.iter().map(|&x| fnum(x))),
                _ => f.extend(std::iter::repeat_n(String::new(), COUNTERS.len())),
            }
            f.push(g.reproduce.clone());
            out += &(f.iter().map(|x| csv_field(x)).collect::<Vec<_>>().join(",") + "\n");
        };
        row_of(None, "base", &g.base.name, &g.base.spec, Some(&g.base), None);
        for v in &g.variants {
            row_of(None, "variant", &v.name, &v.spec, v.arm.as_ref(), Some(v));
        }
        for b in &g.background {
            let part = Some((b.workload.as_str(), b.metric.as_str(), b.better));
            row_of(part, "base", &b.base.name, &b.base.spec, Some(&b.base), None);
            for v in &b.variants {
                row_of(part, "variant", &v.name, &v.spec, v.arm.as_ref(), Some(v));
            }
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
    /// The workloads run beside the foreground one, each compared like it.
    background: Vec<JsonBackground<'a>>,
    reproduce: &'a str,
}

#[derive(Serialize)]
struct JsonBackground<'a> {
    workload: &'a str,
    metric: &'a str,
    better: Better,
    base: JsonBase<'a>,
    variants: Vec<JsonVariant<'a>>,
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
    change_ci95_pct: Option<[f64; 2]>,
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

fn json_variant(v: &VariantResult) -> JsonVariant<'_> {
    JsonVariant {
        name: &v.name,
        spec: &v.spec,
        arm: v.arm.as_ref().map(json_arm),
        change_pct: v.change_pct,
        change_ci95_pct: v.change_ci95_pct,
        test: v.test,
        mark: v.mark.label(),
    }
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
        variants: g.variants.iter().map(json_variant).collect(),
        background: g
            .background
            .iter()
            .map(|b| JsonBackground {
                workload: &b.workload,
                metric: &b.metric,
                better: b.better,
                base: JsonBase { name: &b.base.name, spec: &b.base.spec, arm: json_arm(&b.base) },
                variants: b.variants.iter().map(json_variant).collect(),
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
    #[allow(clippy::expect_used, reason = "a serde_json::Value always serialises")]
    let json = serde_json::to_string_pretty(&doc).expect("a comparison serialises");
    json + "\n"
}
