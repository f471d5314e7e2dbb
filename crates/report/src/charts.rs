//! SVG charts drawn with plotters (SVG backend, no default features). Text is laid out with the
//! embedded DejaVu Sans (`assets/DejaVuSans.ttf`, registered through plotters' `ab_glyph`
//! support), so the output is the same on every machine and needs no system font library; the
//! SVG names the same family, which the page's CSS falls back from.
//!
//! Everything drawn is a pure function of the data: no HashMap iteration, no clock.

use std::sync::Once;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, register_font};

use crate::timeline::Timeline;

/// The font family charts use (and register).
pub const FONT: &str = "DejaVu Sans";
static FONT_BYTES: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");

/// Registers the embedded font with plotters (once per process).
pub fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for name in [FONT, "sans-serif"] {
            assert!(
                register_font(name, FontStyle::Normal, FONT_BYTES).is_ok(),
                "the embedded DejaVu Sans is a valid font"
            );
        }
    });
}

/// Tableau 10: the colour of the i-th variant.
pub const VARIANT_COLOURS: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

/// Tableau 20 without its greys: task colours in timelines; later tasks share [`OTHER_TASK`].
pub const TASK_COLOURS: [RGBColor; 18] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xae, 0xc7, 0xe8),
    RGBColor(0xff, 0xbb, 0x78),
    RGBColor(0x98, 0xdf, 0x8a),
    RGBColor(0xff, 0x98, 0x96),
    RGBColor(0xc5, 0xb0, 0xd5),
    RGBColor(0xc4, 0x9c, 0x94),
    RGBColor(0xf7, 0xb6, 0xd2),
    RGBColor(0xdb, 0xdb, 0x8d),
    RGBColor(0x9e, 0xda, 0xe5),
];
pub const OTHER_TASK: RGBColor = RGBColor(0x9a, 0x9a, 0x9a);

pub fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("chart: {e:?}")
}

/// One bar of a metric chart: a variant's runs of one workload.
#[derive(Clone, Debug)]
pub struct Bar {
    pub name: String,
    pub mean: f64,
    pub median: f64,
    /// The 95% t-interval of the mean; `None` with fewer than two runs.
    pub ci: Option<(f64, f64)>,
    pub n: usize,
}

/// Mean with a 95% Student-t confidence interval: `mean ± t(0.975, n−1)·s/√n`.
pub fn mean_ci(values: &[f64]) -> (f64, Option<(f64, f64)>) {
    let n = values.len();
    let mean = lab::stats::mean(values);
    if n < 2 {
        return (mean, None);
    }
    let s = lab::stats::stddev(values);
    let t = statrs::distribution::StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .map(|d| statrs::distribution::ContinuousCDF::inverse_cdf(&d, 0.975))
        .unwrap_or(f64::NAN);
    let half = t * s / (n as f64).sqrt();
    (mean, Some((mean - half, mean + half)))
}

/// An axis value with as many decimals as a span of `span` needs.
fn axis_label(v: f64, span: f64) -> String {
    let decimals = if span > 0.0 { (2.0 - span.log10().floor()).clamp(0.0, 9.0) as usize } else { 3 };
    format!("{v:.decimals$}")
}

/// A log-axis value: integers as integers, fractions with their significant digits.
fn log_label(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Ticks of a log axis over `[lo, hi]`: 1, 2 and 5 times the powers of ten inside it, or only
/// the powers of ten when that gives more than 10 ticks. plotters' own log ticks are the powers
/// of ten alone, so data within one decade (2.9 to 8.7 µs) got no tick at all.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let mut ticks = Vec::new();
    for e in lo.log10().floor() as i32..=hi.log10().ceil() as i32 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(e);
            if v >= lo && v <= hi {
                ticks.push(v);
            }
        }
    }
    if ticks.len() > 10 {
        ticks.retain(|v| (v.log10().round() - v.log10()).abs() < 1e-9);
    }
    ticks
}

/// A chart caption of at most the characters that fit `width` pixels at 19 px (about 10 px a
/// character): a longer caption, centred, would be cut at both ends.
fn caption(title: &str, width: u32) -> String {
    short(title, (width.saturating_sub(24) / 10).max(8) as usize)
}

/// Shortens a label to `max` characters with an ellipsis.
fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_string() } else { s.chars().take(max - 1).collect::<String>() + "…" }
}

/// A bar chart of the metric per variant: bars are means, whiskers the 95% t-interval of the
/// mean, dots the medians.
pub fn metric_bars(title: &str, y_desc: &str, bars: &[Bar]) -> Result<String, String> {
    register_fonts();
    let n = bars.len().max(1);
    let (w, h) = ((120 + 170 * n as u32).max(520), 360u32);
    let hi = bars
        .iter()
        .map(|b| b.ci.map_or(b.mean, |c| c.1).max(b.median).max(b.mean))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let lo = bars
        .iter()
        .map(|b| b.ci.map_or(b.mean, |c| c.0).min(b.median).min(b.mean))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::min);
    let span = if hi - lo > 0.0 { hi - lo } else { 1.0 };
    let (y0, y1) = (if lo < 0.0 { lo - 0.1 * span } else { 0.0 }, hi + 0.15 * span);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption(title, w), (FONT, 19))
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(y_desc)
            .light_line_style(RGBColor(238, 238, 238))
            .y_label_formatter(&|v| axis_label(*v, y1 - y0))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(err)?;
        for (i, b) in bars.iter().enumerate() {
            let x = i as f64;
            let colour = VARIANT_COLOURS[i % VARIANT_COLOURS.len()];
            if b.mean.is_finite() {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.3, 0.0), (x + 0.3, b.mean)],
                        colour.mix(0.85).filled(),
                    )))
                    .map_err(err)?;
            }
            if let Some((l, u)) = b.ci.filter(|c| c.0.is_finite() && c.1.is_finite()) {
                chart
                    .draw_series(std::iter::once(ErrorBar::new_vertical(x, l, b.mean, u, BLACK.stroke_width(1), 14)))
                    .map_err(err)?;
            }
            if b.median.is_finite() {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x - 0.3, b.median), (x + 0.3, b.median)],
                        BLACK.stroke_width(2),
                    )))
                    .map_err(err)?;
            }
            // The value above the bar, the name under the axis.
            let top = b.ci.map_or(b.mean, |c| c.1).max(b.median);
            let (px, py) = chart.backend_coord(&(x, top));
            let value = format!("{} (n={})", lab::report::fmt_value(b.mean), b.n);
            root.draw(&Text::new(
                value,
                (px, py - 6),
                (FONT, 14).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))
            .map_err(err)?;
            let (px, py) = chart.backend_coord(&(x, y0));
            root.draw(&Text::new(
                short(&b.name, 26),
                (px, py + 8),
                (FONT, 14).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One variant's wakeup-latency quantiles: per run `[p50, p90, p99, max]` in ns.
#[derive(Clone, Debug)]
pub struct CdfSeries {
    pub name: String,
    pub runs: Vec<[u64; 4]>,
}

/// The cumulative fractions of the stored quantiles.
pub const QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 1.0];

/// The median over runs of each quantile, in µs.
pub fn median_quantiles(runs: &[[u64; 4]]) -> [f64; 4] {
    let mut out = [0.0; 4];
    for (q, o) in out.iter_mut().enumerate() {
        let v: Vec<f64> = runs.iter().map(|r| r[q] as f64 / 1e3).collect();
        *o = lab::stats::median(&v);
    }
    out
}

/// Wakeup-latency CDFs from the four stored quantiles: thin lines per run, a thick line with
/// dots for the median over runs of each quantile; x in µs on a log scale.
pub fn latency_cdf(title: &str, series: &[CdfSeries]) -> Result<String, String> {
    register_fonts();
    let all: Vec<f64> =
        series.iter().flat_map(|s| s.runs.iter().flat_map(|r| r.iter().map(|&v| v as f64 / 1e3))).collect();
    let pos_min = all.iter().copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let max = all.iter().copied().fold(0.0f64, f64::max);
    let (x0, x1) = if pos_min.is_finite() { (pos_min / 2.0, max * 2.0) } else { (0.01, 10.0) };
    let clamp = |v: f64| v.max(x0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption(title, 640), (FONT, 19))
            .margin(12)
            .margin_right(30)
            .x_label_area_size(44)
            .y_label_area_size(60)
            .build_cartesian_2d((x0..x1).log_scale().with_key_points(log_ticks(x0, x1)), 0.0f64..1.05)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("wakeup latency (µs, log scale)")
            .y_desc("fraction of wakeups ≤ x")
            .light_line_style(RGBColor(238, 238, 238))
            .x_label_formatter(&|v| log_label(*v))
            .y_label_formatter(&|v| format!("{v:.1}"))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(err)?;
        for (i, s) in series.iter().enumerate() {
            let colour = VARIANT_COLOURS[i % VARIANT_COLOURS.len()];
            for r in &s.runs {
                let pts: Vec<(f64, f64)> = r.iter().zip(QUANTILES).map(|(&v, q)| (clamp(v as f64 / 1e3), q)).collect();
                chart.draw_series(LineSeries::new(pts, colour.mix(0.3).stroke_width(1))).map_err(err)?;
            }
            let med = median_quantiles(&s.runs);
            let pts: Vec<(f64, f64)> = med.iter().zip(QUANTILES).map(|(&v, q)| (clamp(v), q)).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(3)))
                .map_err(err)?
                .label(short(&s.name, 40))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3)));
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, colour.filled()))).map_err(err)?;
        }
        if !pos_min.is_finite() {
            let (px, py) = chart.backend_coord(&(x0 * 10.0f64.sqrt(), 0.3));
            root.draw(&Text::new(
                "every wakeup latency is 0: nothing waited",
                (px, py),
                (FONT, 15).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Colours of the tasks of timelines, the same in all of them: the 18 tasks with the most time
/// (over all the timelines) get their own, the others share grey. Ordered by that time.
pub fn task_colours(tls: &[Timeline]) -> Vec<(u32, RGBColor)> {
    let mut per: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
    for tl in tls {
        for (pid, ns) in tl.tasks_by_time() {
            *per.entry(pid).or_default() += ns;
        }
    }
    let mut v: Vec<(u32, u64)> = per.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.iter().enumerate().map(|(i, &(pid, _))| (pid, TASK_COLOURS.get(i).copied().unwrap_or(OTHER_TASK))).collect()
}

/// The CPUs a timeline chart shows: all up to 32, else the 32 busiest (in CPU order).
pub fn shown_cpus(tl: &Timeline) -> Vec<u32> {
    let busy = tl.busy_ns();
    let mut cpus: Vec<u32> = (0..tl.nr_cpus).collect();
    if cpus.len() > 32 {
        cpus.sort_by(|a, b| busy[*b as usize].cmp(&busy[*a as usize]).then(a.cmp(b)));
        cpus.truncate(32);
        cpus.sort_unstable();
    }
    cpus
}

/// A Gantt chart of a timeline: one row per CPU, one box per stretch a task ran, labelled with
/// the task when it is wide enough.
pub fn gantt(tl: &Timeline, colours: &[(u32, RGBColor)]) -> Result<String, String> {
    register_fonts();
    let cpus = shown_cpus(tl);
    let colour_of = |pid: u32| colours.iter().find(|c| c.0 == pid).map_or(OTHER_TASK, |c| c.1);
    let rows = cpus.len().max(1);
    let (w, h) = (1000u32, 90 + 30 * rows as u32);
    let (t0, t1) = (tl.start_ns as f64 / 1e6, (tl.end_ns.max(tl.start_ns + 1)) as f64 / 1e6);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption(&tl.label, w), (FONT, 18))
            .margin(12)
            // Room for the last x label, centred on the right edge.
            .margin_right(30)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(t0..t1, 0.0f64..rows as f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc("simulated time since the start of the run (ms)")
            .x_label_formatter(&|v| format!("{v:.2}"))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(err)?;
        for (row, &cpu) in cpus.iter().enumerate() {
            let y = (rows - 1 - row) as f64;
            let (px, py) = chart.backend_coord(&(t0, y + 0.5));
            root.draw(&Text::new(
                format!("CPU {cpu}"),
                (px - 8, py),
                (FONT, 14).into_font().color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center)),
            ))
            .map_err(err)?;
            for s in tl.slices.iter().filter(|s| s.cpu == cpu) {
                let (a, b) = (s.start_ns as f64 / 1e6, s.end_ns as f64 / 1e6);
                let colour = colour_of(s.pid);
                chart
                    .draw_series(std::iter::once(Rectangle::new([(a, y + 0.12), (b, y + 0.88)], colour.filled())))
                    .map_err(err)?;
                // A white edge keeps neighbouring stretches of same-coloured tasks apart.
                chart
                    .draw_series(std::iter::once(Rectangle::new([(a, y + 0.12), (b, y + 0.88)], WHITE.stroke_width(1))))
                    .map_err(err)?;
                let (xa, _) = chart.backend_coord(&(a, y));
                let (xb, ym) = chart.backend_coord(&(b, y + 0.5));
                let comm = tl.comms.get(&s.pid).map_or("?", String::as_str);
                let long = format!("{comm}:{}", s.pid);
                // About 7 px per character at 11 px; the pid alone when the name does not fit.
                let fits = ((xb - xa - 6) / 7).max(0) as usize;
                let label = if long.chars().count() <= fits { long } else { s.pid.to_string() };
                if label.chars().count() <= fits {
                    root.draw(&Text::new(
                        label,
                        (xa + 3, ym),
                        (FONT, 13).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center)),
                    ))
                    .map_err(err)?;
                }
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_interval_of_the_mean() {
        // n = 4, mean 2.5, s = 1.29099; t(0.975, 3) = 3.18245 → half-width 2.05426.
        let (m, ci) = mean_ci(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        let (lo, hi) = ci.unwrap();
        assert!((hi - m - 2.05426).abs() < 1e-4, "{hi}");
        assert!((m - lo - 2.05426).abs() < 1e-4, "{lo}");
        assert_eq!(mean_ci(&[7.0]), (7.0, None));
    }

    #[test]
    fn charts_are_svg_with_text_and_deterministic() {
        let bars = [
            Bar { name: "base".into(), mean: 1.0, median: 1.0, ci: Some((0.9, 1.1)), n: 3 },
            Bar { name: "variant".into(), mean: 0.8, median: 0.81, ci: None, n: 1 },
        ];
        let a = metric_bars("title", "seconds", &bars).unwrap();
        assert!(a.starts_with("<svg"), "{a}");
        assert!(a.contains(">\ntitle\n</text>") && a.contains(">\nvariant\n</text>"), "{a}");
        assert_eq!(metric_bars("title", "seconds", &bars).unwrap(), a);
        let zeros = [CdfSeries { name: "x".into(), runs: vec![[0; 4]] }];
        let c = latency_cdf("lat", &zeros).unwrap();
        assert!(c.contains("every wakeup latency is 0"), "{c}");
        assert_eq!(axis_label(0.12, 0.16), "0.120");
        assert_eq!(log_label(1000.0), "1000");
        assert_eq!(log_label(0.05), "0.05");
    }

    #[test]
    fn log_axis_has_ticks_inside_narrow_data() {
        assert_eq!(log_ticks(1.45, 17.4), [2.0, 5.0, 10.0]);
        assert_eq!(log_ticks(0.3, 3e6), [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6]);
        // The chart of latencies between 2.9 and 8.7 µs labels 5 (inside the data).
        let s = [CdfSeries { name: "x".into(), runs: vec![[2900, 4000, 6000, 8700]] }];
        let c = latency_cdf("lat", &s).unwrap();
        assert!(c.contains(">\n5\n</text>"), "{c}");
    }

    #[test]
    fn long_captions_are_shortened_to_the_chart() {
        let bars = [Bar { name: "a".into(), mean: 1.0, median: 1.0, ci: None, n: 1 }];
        let long = "seconds — hackbench -p -g 2 -l 200 --some --long --flags on xeon-8369hb-4s:cpus=0-15";
        let svg = metric_bars(long, "seconds", &bars).unwrap();
        assert!(!svg.contains(long) && svg.contains("seconds — hackbench"), "{svg}");
        assert!(caption(long, 520).chars().count() <= 50);
    }
}
