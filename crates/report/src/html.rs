//! The report page: one self-contained HTML file (inline CSS, inline SVG, no script, no external
//! resource). The same inputs give the same bytes: nothing depends on the clock or the machine.

use std::fmt::Write as _;

use lab::compare::{COUNTERS, Group, Mark};
use lab::report::{CHANGE_CONVENTION, fmt_value, rule_text, seeds_text};
use lab::runner::Better;

use crate::charts::{self, Bar, CdfSeries};
use crate::input::{Input, SourceKind};
use crate::timeline::Timeline;

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const CSS: &str = r#"
body { font-family: "DejaVu Sans", Verdana, "Bitstream Vera Sans", sans-serif; margin: 24px auto; max-width: 1100px;
       color: #1d1d1d; background: #fff; line-height: 1.4; padding: 0 16px; }
h1 { font-size: 24px; margin-bottom: 4px; }
h2 { font-size: 19px; border-bottom: 1px solid #ccc; padding-bottom: 3px; margin-top: 32px; }
h3 { font-size: 16px; margin-bottom: 6px; }
p.meta, p.note, figcaption, .small { color: #555; font-size: 13px; }
table { border-collapse: collapse; margin: 8px 0 12px; font-size: 13px; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; text-align: right; vertical-align: top; }
th { background: #f2f2f2; }
td.l, th.l { text-align: left; }
td.imp { color: #1a7f37; font-weight: bold; }
td.reg { color: #c62828; font-weight: bold; }
figure { margin: 10px 0 18px; }
svg { max-width: 100%; height: auto; display: block; }
svg text { font-family: "DejaVu Sans", Verdana, "Bitstream Vera Sans", sans-serif; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; white-space: pre-wrap; }
.swatch { display: inline-block; width: 11px; height: 11px; margin: 0 4px 0 12px; vertical-align: -1px; }
.legend { font-size: 12px; }
.legend .item { white-space: nowrap; }
details { margin: 6px 0 14px; font-size: 13px; }
"#;

fn better_text(b: Better) -> &'static str {
    match b {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    }
}

fn group_title(g: &Group) -> String {
    format!("{} on {}", lab::words::join(&g.workload), g.topology)
}

fn pct(p: Option<f64>) -> String {
    match p {
        Some(p) if p.is_finite() => format!("{p:+.2}%"),
        _ => "n/a".into(),
    }
}

/// The page for `input`, with per-CPU timelines (possibly none) and a note about them.
pub fn render(input: &Input, timelines: &[Timeline], timeline_note: Option<&str>) -> Result<String, String> {
    let c = &input.comparison;
    let mut h = String::new();
    let title = if c.variants.is_empty() {
        format!("schedlab report: {}", c.base)
    } else {
        format!("schedlab report: {} vs {}", c.variants.join(", "), c.base)
    };
    let _ = writeln!(h, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">");
    let _ = writeln!(h, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    let _ = writeln!(h, "<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>", esc(&title));
    let _ = writeln!(h, "<h1>schedlab report</h1>");
    let source = match &input.kind {
        SourceKind::Database(p) => format!("results database <code>{}</code>", esc(&p.display().to_string())),
        SourceKind::RunJson(files) => format!(
            "{} <code>schedlab run --json</code> file{}: {}",
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            files
                .iter()
                .map(|f| format!("<code>{}</code>", esc(&f.display().to_string())))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    // One variant only: say so instead of an empty list of variants.
    let against = if c.variants.is_empty() {
        "one variant only, so there is nothing to compare it with".to_string()
    } else {
        format!("variants: {}", c.variants.iter().map(|v| format!("<b>{}</b>", esc(v))).collect::<Vec<_>>().join(", "))
    };
    let _ = writeln!(
        h,
        "<p class=\"meta\">From {source}: {} runs, schedlab {}, seeds {}. Base: <b>{}</b>; {against}.</p>",
        input.samples.len(),
        esc(&c.schedlab_version),
        esc(&seeds_text(&c.seeds())),
        esc(&c.base),
    );
    for n in &input.notes {
        let _ = writeln!(h, "<p class=\"note\">Note: {}</p>", esc(n));
    }

    // The comparison table.
    let _ = writeln!(h, "<h2 id=\"comparison\">Comparison</h2>");
    let _ = writeln!(
        h,
        "<table class=\"comparison\">\n<thead><tr><th class=\"l\">workload</th><th class=\"l\">topology</th><th class=\"l\">metric</th><th>{} median</th>",
        esc(&c.base)
    );
    for v in &c.variants {
        let _ = write!(h, "<th>{} median</th><th>{} %change</th>", esc(v), esc(v));
    }
    let _ = writeln!(h, "</tr></thead>\n<tbody>");
    for g in &c.groups {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{} ({})</td><td>{} <span class=\"small\">n={}, ±{:.2}%</span></td>",
            esc(&lab::words::join(&g.workload)),
            esc(&g.topology),
            esc(&g.metric),
            better_text(g.better),
            fmt_value(g.base.summary.median),
            g.base.summary.n,
            g.base.summary.stddev_pct
        );
        for v in &g.variants {
            match &v.arm {
                None => {
                    let _ = write!(h, "<td>—</td><td>—</td>");
                }
                Some(arm) => {
                    let class = match v.mark {
                        Mark::Improvement => " class=\"imp\"",
                        Mark::Regression => " class=\"reg\"",
                        Mark::None => "",
                    };
                    let mark = v.mark.label();
                    let _ = write!(
                        h,
                        "<td>{} <span class=\"small\">n={}</span></td><td{class}>{}{}{}</td>",
                        fmt_value(arm.summary.median),
                        arm.summary.n,
                        pct(v.change_pct),
                        if mark.is_empty() { "" } else { " " },
                        mark
                    );
                }
            }
        }
        let _ = writeln!(h, "</tr>");
    }
    let _ = writeln!(h, "</tbody>\n</table>");
    let _ = writeln!(
        h,
        "<p class=\"note\">{}. ± is the base's %stddev over seeds. {}.</p>",
        esc(CHANGE_CONVENTION),
        esc(&rule_text(c))
    );

    // Per group: metric bars, latency CDF, counters.
    let _ = writeln!(h, "<h2 id=\"charts\">Metrics and wakeup latency</h2>");
    let _ = writeln!(
        h,
        "<p class=\"note\">Bars are the mean of the metric over seeds; whiskers the 95% confidence interval of that mean \
         (Student's t: mean ± t<sub>0.975, n−1</sub>·s/√n; none with a single run); black lines the medians the table uses. \
         Latency curves join the four quantiles each run stores (p50, p90, p99, max: the points at 0.5, 0.9, 0.99 and 1) \
         with straight lines: they are not the full distribution. Thin lines are single runs, thick lines the median over runs \
         of each quantile.</p>"
    );
    let sel = input.selection();
    let names: Vec<String> =
        std::iter::once(sel.base.0.clone()).chain(sel.variants.iter().map(|v| v.0.clone())).collect();
    for (gi, g) in c.groups.iter().enumerate() {
        let _ = writeln!(h, "<h3 id=\"group-{gi}\">{}</h3>", esc(&group_title(g)));
        let mut bars = Vec::new();
        let mut cdfs = Vec::new();
        for name in &names {
            let runs = input.runs_of(g, name);
            if runs.is_empty() {
                continue;
            }
            let values: Vec<f64> = runs.iter().map(|s| s.record.metric).collect();
            let (mean, ci) = charts::mean_ci(&values);
            bars.push(Bar { name: name.clone(), mean, median: lab::stats::median(&values), ci, n: values.len() });
            cdfs.push(CdfSeries {
                name: name.clone(),
                runs: runs.iter().map(|s| s.record.wakeup_latency_ns).collect(),
            });
        }
        let y_desc = format!("{} ({})", g.metric, better_text(g.better));
        let bar_svg = charts::metric_bars(&format!("{} — {}", g.metric, group_title(g)), &y_desc, &bars)?;
        let _ = writeln!(
            h,
            "<figure>{bar_svg}<figcaption>{}: mean per variant (bar) with the 95% t-interval of the mean (whiskers) and the median (black line).</figcaption></figure>",
            esc(&g.metric)
        );
        let cdf_svg = charts::latency_cdf(&format!("wakeup latency — {}", group_title(g)), &cdfs)?;
        let _ = writeln!(
            h,
            "<figure>{cdf_svg}<figcaption>Wakeup latency (time from wakeup to running) from the stored quantiles p50/p90/p99/max.</figcaption></figure>"
        );
        // Quantile table, then counters.
        let _ = writeln!(
            h,
            "<table><thead><tr><th class=\"l\">variant</th><th>runs</th><th>p50 µs</th><th>p90 µs</th><th>p99 µs</th><th>max µs</th></tr></thead><tbody>"
        );
        for s in &cdfs {
            let m = charts::median_quantiles(&s.runs);
            let _ = writeln!(
                h,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&s.name),
                s.runs.len(),
                fmt_value(m[0]),
                fmt_value(m[1]),
                fmt_value(m[2]),
                fmt_value(m[3])
            );
        }
        let _ = writeln!(h, "</tbody></table>");
        let _ = writeln!(h, "<details><summary>Counters (mean per run) and per-seed values</summary>");
        let _ = write!(h, "<table><thead><tr><th class=\"l\">counter</th><th>{}</th>", esc(&g.base.name));
        for v in &g.variants {
            let _ = write!(h, "<th>{}</th><th>change</th>", esc(&v.name));
        }
        let _ = writeln!(h, "</tr></thead><tbody>");
        for (ci, name) in COUNTERS.iter().enumerate() {
            let b = g.base.counters[ci];
            let _ = write!(h, "<tr><td class=\"l\">{name}</td><td>{}</td>", fmt_value(b));
            for v in &g.variants {
                match &v.arm {
                    Some(a) => {
                        let x = a.counters[ci];
                        let ch = if b != 0.0 {
                            format!("{:+.1}%", 100.0 * (x - b) / b)
                        } else if x == 0.0 {
                            "=".into()
                        } else {
                            "new".into()
                        };
                        let _ = write!(h, "<td>{}</td><td>{ch}</td>", fmt_value(x));
                    }
                    None => {
                        let _ = write!(h, "<td>—</td><td></td>");
                    }
                }
            }
            let _ = writeln!(h, "</tr>");
        }
        let _ = writeln!(h, "</tbody></table>");
        let _ = writeln!(
            h,
            "<table><thead><tr><th class=\"l\">variant</th><th class=\"l\">seed: {}</th></tr></thead><tbody>",
            esc(&g.metric)
        );
        for arm in std::iter::once(&g.base).chain(g.variants.iter().filter_map(|v| v.arm.as_ref())) {
            let vals: Vec<String> =
                arm.seeds.iter().zip(&arm.values).map(|(s, v)| format!("{s}: {}", fmt_value(*v))).collect();
            let _ = writeln!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                esc(&arm.name),
                esc(&vals.join(", "))
            );
        }
        let _ = writeln!(
            h,
            "</tbody></table>\n<p class=\"small\">reproduce: <code>{}</code></p></details>",
            esc(&g.reproduce)
        );
    }

    // Timelines.
    let _ = writeln!(h, "<h2 id=\"timeline\">Per-CPU timeline excerpt</h2>");
    if let Some(note) = timeline_note {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(note));
    }
    let colours = charts::task_colours(timelines);
    for tl in timelines {
        let svg = charts::gantt(tl, &colours)?;
        let _ = writeln!(h, "<figure>{svg}<figcaption class=\"legend\">");
        let here = tl.tasks_by_time();
        for (pid, colour) in
            colours.iter().take(charts::TASK_COLOURS.len()).filter(|(p, _)| here.iter().any(|t| t.0 == *p))
        {
            let comm = tl.comms.get(pid).map_or("?", String::as_str);
            let _ = write!(
                h,
                "<span class=\"item\"><span class=\"swatch\" style=\"background:{}\"></span>{}:{pid}</span> ",
                charts::hex(*colour),
                esc(comm)
            );
        }
        let grey = here
            .iter()
            .filter(|t| colours.iter().position(|c| c.0 == t.0).is_none_or(|i| i >= charts::TASK_COLOURS.len()))
            .count();
        if grey > 0 {
            let _ = write!(
                h,
                "<span class=\"item\"><span class=\"swatch\" style=\"background:{}\"></span>{grey} other tasks</span>",
                charts::hex(charts::OTHER_TASK)
            );
        }
        let shown = charts::shown_cpus(tl).len();
        let extra = if shown < tl.nr_cpus as usize {
            format!(" The {shown} busiest of {} CPUs are shown.", tl.nr_cpus)
        } else {
            String::new()
        };
        let _ = writeln!(
            h,
            "<br>{}: {:.3}–{:.3} ms, {} stretches of tasks on CPUs; blank is idle.{extra}</figcaption></figure>",
            esc(&tl.label),
            tl.start_ns as f64 / 1e6,
            tl.end_ns as f64 / 1e6,
            tl.slices.len()
        );
    }

    let _ = writeln!(h, "<h2 id=\"reproduce\">Reproduce</h2>\n<pre>");
    for line in &input.reproduce {
        let _ = writeln!(h, "{}", esc(line));
    }
    let _ = writeln!(
        h,
        "</pre>\n<p class=\"small\">Generated by schedlab report {}.</p>\n</body>\n</html>",
        esc(&c.schedlab_version)
    );
    Ok(h)
}
