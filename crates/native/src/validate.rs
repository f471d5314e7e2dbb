//! `schedlab validate`: a benchmark run natively on this machine (the real tool when it is
//! installed, else the built-in workers) and in the model, side by side, with the native
//! run-to-run spread. Shared by the `validate` command and whatever else compares the model
//! with this machine (the fidelity scoreboard, a VM runner).
//!
//! Every quantity is computed the same way on both sides: per operation of the benchmark
//! ([`crate::run::operations`]; per switch when the tool sizes its own run), the involuntary
//! share of all switches, wakeups per operation and per switch (natively from ftrace, so with
//! `--trace`; schedstats are off on most kernels), wakeup latency and wakee placement.

use lab::runner::{RunRecord, RunRequest};

use crate::run::{NativeError, NativeOptions, NativeRun};

/// One run's figures, on either side.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    pub metric: f64,
    pub switches_per_op: Option<f64>,
    pub involuntary_share: f64,
    pub migrations_per_op: Option<f64>,
    pub wakeups_per_op: Option<f64>,
    pub wakeups_per_switch: Option<f64>,
    pub lat_p50_us: Option<f64>,
    pub lat_p99_us: Option<f64>,
    pub wakee_on_waker: Option<f64>,
}

/// The figures of a native run. Switches are the real tool's exact whole-tree totals when it
/// ran; wakeups come from the ftrace capture.
pub fn native_figures(r: &NativeRun) -> Figures {
    let (sw, _, inv) = r.switches();
    let mig: u64 = r.tasks.iter().map(|t| t.nr_migrations).sum();
    let an = r.analysis.as_ref();
    let per = |n: u64| r.ops.map(|ops| n as f64 / ops.max(1) as f64);
    // Wakeups per switch within the trace (a full buffer keeps only the start of the run), times
    // the run's exact switches.
    let wakeups_per_switch = an.filter(|a| a.nr_switches > 0).map(|a| a.nr_wakeups as f64 / a.nr_switches as f64);
    Figures {
        metric: r.metric,
        switches_per_op: per(sw),
        involuntary_share: inv as f64 / sw.max(1) as f64,
        migrations_per_op: per(mig),
        wakeups_per_op: wakeups_per_switch.and_then(|w| per(sw).map(|s| w * s)),
        wakeups_per_switch,
        lat_p50_us: an.map(|a| a.wakeup_latency_ns().p50 as f64 / 1e3),
        lat_p99_us: an.map(|a| a.wakeup_latency_ns().p99 as f64 / 1e3),
        wakee_on_waker: an.and_then(|a| a.wakee_on_waker_cpu()),
    }
}

/// One native run's figures from two runs of the workload: the benchmark's metric and every
/// `/proc` counter from `plain` (run without ftrace, whose events cost the tool a few µs per
/// switch and move its decisions: pinned `perf bench sched pipe` on this repository's host ran
/// 7.3 µs/op traced against 2.0 untraced, involuntary share 0.495 against 0.448), and what only
/// the trace gives (wakeups per switch, latency, placement) from `traced`; wakeups per operation
/// is the traced run's wakeups per switch times the plain run's switches per operation.
pub fn paired_figures(plain: &Figures, traced: &Figures) -> Figures {
    Figures {
        wakeups_per_switch: traced.wakeups_per_switch,
        wakeups_per_op: traced.wakeups_per_switch.and_then(|w| plain.switches_per_op.map(|s| w * s)),
        lat_p50_us: traced.lat_p50_us,
        lat_p99_us: traced.lat_p99_us,
        wakee_on_waker: traced.wakee_on_waker,
        ..*plain
    }
}

/// The figures of a simulated run (`ops` as natively: `None` means per switch).
pub fn sim_figures(rec: &RunRecord, ops: Option<u64>) -> Figures {
    let c = &rec.counters;
    let per = |n: u64| ops.map(|ops| n as f64 / ops.max(1) as f64);
    let paired = c.nr_wakeups_local + c.nr_wakeups_remote;
    Figures {
        metric: rec.metric,
        switches_per_op: per(c.nr_switches),
        involuntary_share: c.nr_involuntary_switches as f64 / c.nr_switches.max(1) as f64,
        migrations_per_op: per(c.nr_migrations),
        wakeups_per_op: per(c.nr_wakeups),
        wakeups_per_switch: Some(c.nr_wakeups as f64 / c.nr_switches.max(1) as f64),
        lat_p50_us: Some(rec.wakeup_latency_ns[0] as f64 / 1e3),
        lat_p99_us: Some(rec.wakeup_latency_ns[2] as f64 / 1e3),
        wakee_on_waker: (paired > 0).then(|| c.nr_wakeups_local as f64 / paired as f64),
    }
}

/// The median of the finite values.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// How a row is judged against the native runs (issue 10's "done means").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Criterion {
    /// Inside the native min-max, or within 1.3x of the native median.
    SpreadOr1_3x,
    /// Within 0.1 (absolute) of the native median.
    Within0_1,
    /// Within 15 % of the native median.
    Within15Pct,
    /// Not judged; `*` marks a model value further from the median than the native spread.
    None,
}

/// One row of the validation table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub name: String,
    /// Native (median, min, max).
    pub native: Option<(f64, f64, f64)>,
    /// Model median over the seeds.
    pub sim: Option<f64>,
    pub criterion: Criterion,
}

impl Row {
    pub fn ratio(&self) -> Option<f64> {
        match (self.native, self.sim) {
            (Some((n, _, _)), Some(s)) if n != 0.0 => Some(s / n),
            _ => None,
        }
    }

    /// The model is further from the native median than the native runs are from each other.
    pub fn off(&self) -> bool {
        match (self.native, self.sim) {
            (Some((n, lo, hi)), Some(s)) => (s - n).abs() > (hi - lo),
            _ => false,
        }
    }

    /// The row's criterion: `Some(true)` met, `Some(false)` missed, `None` not judged.
    pub fn verdict(&self) -> Option<bool> {
        let (Some((n, lo, hi)), Some(s)) = (self.native, self.sim) else { return None };
        match self.criterion {
            Criterion::SpreadOr1_3x => {
                Some((lo..=hi).contains(&s) || (n > 0.0 && s > 0.0 && (s / n).max(n / s) <= 1.3))
            }
            Criterion::Within0_1 => Some((s - n).abs() <= 0.1),
            Criterion::Within15Pct => Some(n != 0.0 && ((s - n) / n).abs() <= 0.15),
            Criterion::None => None,
        }
    }
}

type Get = fn(&Figures) -> Option<f64>;

/// The table: one row per quantity, native median and spread beside the model's median.
pub fn rows(metric_name: &str, op: &str, nat: &[Figures], sim: &[Figures]) -> Vec<Row> {
    let per_op = op != "switch";
    let mut defs: Vec<(String, Get, Criterion)> =
        vec![(metric_name.to_string(), |f| Some(f.metric), Criterion::SpreadOr1_3x)];
    if per_op {
        defs.push((format!("switches/{op}"), |f| f.switches_per_op, Criterion::None));
    }
    defs.push(("involuntary share".into(), |f| Some(f.involuntary_share), Criterion::Within0_1));
    if per_op {
        defs.push((format!("migrations/{op}"), |f| f.migrations_per_op, Criterion::None));
        defs.push((format!("wakeups/{op}"), |f| f.wakeups_per_op, Criterion::Within15Pct));
    }
    // Judged when it is the only wakeup rate (the tool sizes its own run).
    let per_switch = if per_op { Criterion::None } else { Criterion::Within15Pct };
    defs.push(("wakeups/switch".into(), |f| f.wakeups_per_switch, per_switch));
    defs.push(("wakeup lat p50 us".into(), |f| f.lat_p50_us, Criterion::None));
    defs.push(("wakeup lat p99 us".into(), |f| f.lat_p99_us, Criterion::None));
    defs.push(("wakee on waker CPU".into(), |f| f.wakee_on_waker, Criterion::None));
    defs.into_iter()
        .map(|(name, get, criterion)| {
            let nv: Vec<f64> = nat.iter().filter_map(get).filter(|x| x.is_finite()).collect();
            let native = median(nv.clone()).map(|m| {
                (
                    m,
                    nv.iter().copied().fold(f64::INFINITY, f64::min),
                    nv.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                )
            });
            let sim = median(sim.iter().filter_map(get).collect());
            Row { name, native, sim, criterion }
        })
        .collect()
}

/// A number in the table: 4 significant-ish digits, no exponent.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// The rows as an ASCII table (fits 100 columns).
pub fn render_rows(table: &[Row]) -> String {
    render_rows_as(table, "native", "nat")
}

/// The same table with the measured side named `side` (`guest` for a kernel in a VM) and
/// abbreviated `short` in the ratio column.
pub fn render_rows_as(table: &[Row], side: &str, short: &str) -> String {
    let mut s = format!(
        "{:<20} {:>11} {:>21} {:>11} {:>7}  {}\n",
        "quantity",
        format!("{side} med"),
        format!("{side} min-max"),
        "model med",
        format!("mod/{short}"),
        "check"
    );
    for r in table {
        let (n, spread) = match r.native {
            Some((m, lo, hi)) => (num(m), format!("{}-{}", num(lo), num(hi))),
            None => ("n/a".into(), String::new()),
        };
        let check = match r.verdict() {
            Some(true) => "ok",
            Some(false) => "OFF",
            None if r.off() => "*",
            None => "",
        };
        s += &format!(
            "{:<20} {:>11} {:>21} {:>11} {:>7}  {check}\n",
            r.name,
            n,
            spread,
            r.sim.map_or("n/a".into(), num),
            r.ratio().map_or(String::new(), |x| format!("{x:.2}")),
        );
    }
    s
}

/// What to validate.
pub struct Request {
    /// The workload command line (benchmark name first).
    pub workload: Vec<String>,
    pub runs: u32,
    pub native: NativeOptions,
    /// The model: variant, topology, seed of the first run, affinity.
    pub variant: sim::kernel::Variant,
    pub topology: sim::topology::Topology,
    pub seed: u64,
    pub cpus: Option<Vec<u32>>,
}

/// The result: per-run figures on both sides and the table.
pub struct Validation {
    pub metric_name: &'static str,
    pub op: &'static str,
    pub native: Vec<Figures>,
    pub sim: Vec<Figures>,
    pub rows: Vec<Row>,
    /// What ran natively, and why the built-in workers ran if they did.
    pub runner: String,
    pub note: Option<String>,
    /// ftrace events lost over all runs.
    pub lost_events: u64,
}

/// Why a validation failed.
#[derive(Debug)]
pub enum ValidateError {
    /// The model refused the workload (bad input).
    Model(String),
    Native(NativeError),
}

/// The validation rows as JSON, the measured side named `side` (`native`, `guest`).
pub fn rows_json(rows: &[Row], side: &str) -> Vec<serde_json::Value> {
    rows.iter()
        .map(|r| {
            serde_json::json!({
                "quantity": r.name,
                format!("{side}_median"): r.native.map(|n| n.0),
                format!("{side}_min"): r.native.map(|n| n.1),
                format!("{side}_max"): r.native.map(|n| n.2),
                "sim_median": r.sim,
                "ratio": r.ratio(),
                format!("outside_{side}_spread"): r.off(),
                "ok": r.verdict(),
            })
        })
        .collect()
}

/// The line under a validation table saying how rows are judged, the measured side named
/// `side` (`native`, `guest`).
pub fn check_line(side: &str) -> String {
    format!(
        "check: metric inside the {side} min-max or within 1.3x; involuntary share within 0.1; wakeups within 15 %; \
         * = further from the {side} median than the {side} spread"
    )
}

/// `schedlab validate` on this machine: the request as the command line gave it.
pub struct HostRequest {
    pub workload: Vec<String>,
    pub runs: u32,
    /// `--pin` as typed (for the header), and the CPUs it names.
    pub pin_text: Option<String>,
    pub pin: Option<Vec<u32>>,
    /// `--trace` (`Some(true)`), `--no-trace` (`Some(false)`), or neither: trace when this
    /// process can (root), since the wakeup rows need ftrace (schedstats are off on most
    /// kernels).
    pub trace: Option<bool>,
    pub trace_buffer_kb: u32,
    pub builtin: bool,
    /// The model: `--kernel` as typed, its configuration, the machine, the first seed, and the
    /// affinity on the model's machine.
    pub kernel: String,
    pub config: sim::config::SchedConfig,
    pub topology: sim::topology::Topology,
    pub seed: u64,
    pub cpus: Option<Vec<u32>>,
    /// `--cost-file`, for the header.
    pub cost_file: Option<std::path::PathBuf>,
    /// `--calibrate`: the model's costs were measured on this machine just before.
    pub calibrated: bool,
}

/// A host validation with what its header and JSON show.
pub struct HostValidation {
    pub request: HostRequest,
    pub traced: bool,
    /// This machine's kernel release.
    pub release: String,
    pub validation: Validation,
}

/// Runs [`validate`] for a [`HostRequest`]; `progress(i)` before native run `i`.
pub fn validate_host(req: HostRequest, progress: impl FnMut(u32)) -> Result<HostValidation, ValidateError> {
    if req.runs == 0 {
        return Err(ValidateError::Model("--runs: must be at least 1".into()));
    }
    let traced = req.trace.unwrap_or_else(crate::ftrace::can_trace);
    let r = Request {
        workload: req.workload.clone(),
        runs: req.runs,
        native: NativeOptions {
            pin: req.pin.clone(),
            trace_buffer_kb: traced.then_some(req.trace_buffer_kb),
            builtin: req.builtin,
        },
        variant: sim::kernel::Variant { spec: req.kernel.clone(), config: req.config.clone(), patches: vec![] },
        topology: req.topology.clone(),
        seed: req.seed,
        cpus: req.cpus.clone(),
    };
    let validation = validate(&r, progress)?;
    let release = crate::host::host_release().unwrap_or_default();
    Ok(HostValidation { request: req, traced, release, validation })
}

impl HostValidation {
    fn last_seed(&self) -> u64 {
        self.request.seed + u64::from(self.request.runs) - 1
    }

    /// `validate --json`.
    pub fn to_json(&self) -> serde_json::Value {
        let (q, v, cfg) = (&self.request, &self.validation, &self.request.config);
        serde_json::json!({
            "schedlab_version": env!("CARGO_PKG_VERSION"),
            "workload": { "name": q.workload[0], "argv": q.workload },
            "runs": q.runs,
            "native": { "kernel": self.release, "pin": q.pin_text, "trace": self.traced, "lost_events": v.lost_events,
                        "runner": v.runner, "note": v.note },
            "sim": { "topology": q.topology.name, "kernel": cfg.kernel, "preempt": cfg.preempt.name(), "hz": cfg.hz,
                     "seeds": [q.seed, self.last_seed()], "cost_file": q.cost_file, "calibrated": q.calibrated },
            "rows": rows_json(&v.rows, "native"),
        })
    }

    /// The header, the side-by-side table and the notes under it.
    pub fn render(&self) -> String {
        let (q, v, cfg) = (&self.request, &self.validation, &self.request.config);
        let mut out =
            format!("# validate {}: {} native runs vs {} simulated seeds\n", q.workload.join(" "), q.runs, q.runs);
        out += &format!(
            "# native: kernel {}{}; ran {}\n",
            self.release,
            q.pin_text.as_ref().map_or(String::new(), |p| format!(", pinned to {p}")),
            v.runner
        );
        if let Some(n) = &v.note {
            out += &format!("# note: {n}\n");
        }
        out += &format!(
            "# model:  topology {} kernel {} preempt {} hz {}{}, seeds {}..{}\n",
            q.topology.name,
            cfg.kernel,
            cfg.preempt.name(),
            cfg.hz,
            match (&q.cost_file, q.calibrated) {
                (Some(f), _) => format!(", costs {}", f.display()),
                (None, true) => ", costs calibrated on this machine now".to_string(),
                (None, false) => String::new(),
            },
            q.seed,
            self.last_seed()
        );
        out += &render_rows(&v.rows);
        out += &check_line("native");
        out.push('\n');
        if self.traced {
            out += "(native: the metric and counters from runs without ftrace; wakeups, wakeup latency and wakee placement from a traced run after each)\n";
        } else {
            out += "(wakeups, wakeup latency and wakee placement natively need --trace (root): schedstats are off)\n";
        }
        if v.lost_events > 0 {
            out += &format!(
                "ftrace lost {} events (buffer full): trace rows cover the start of the runs only\n",
                v.lost_events
            );
        }
        out
    }
}

/// Runs the model (first: bad model input fails before any native run), then the native runs,
/// `progress(i)` before native run `i`.
pub fn validate(req: &Request, mut progress: impl FnMut(u32)) -> Result<Validation, ValidateError> {
    let nr_cpus = crate::host::nr_cpus() as u32;
    let wl = workload::bench::parse_benchmark_on(&req.workload, nr_cpus)
        .map_err(|e| ValidateError::Native(NativeError::Usage(e.to_string())))?;
    let ops = crate::run::operations(&wl);
    let (ops_n, op) = (ops.map(|o| o.0), ops.map_or("switch", |o| o.1));
    let sim_records = run_model(req)?;
    let mut nat = Vec::new();
    let (mut lost, mut runner, mut note) = (0, String::new(), None);
    let untraced = NativeOptions { trace_buffer_kb: None, ..req.native.clone() };
    for i in 0..req.runs {
        progress(i);
        // Traced: a plain run first for the time and the counters, then the traced one.
        let plain = match req.native.trace_buffer_kb {
            Some(_) => Some(crate::run::run_native(&req.workload, &untraced).map_err(ValidateError::Native)?),
            None => None,
        };
        let r = crate::run::run_native(&req.workload, &req.native).map_err(ValidateError::Native)?;
        lost += r.trace.as_ref().map_or(0, |t| t.dropped + t.overrun);
        let traced = native_figures(&r);
        nat.push(plain.as_ref().map_or(traced, |p| paired_figures(&native_figures(p), &traced)));
        runner = r.runner.clone();
        note = r.note.clone();
    }
    let sim: Vec<Figures> = sim_records.iter().map(|r| sim_figures(r, ops_n)).collect();
    let rows = rows(wl.metric.name, op, &nat, &sim);
    Ok(Validation { metric_name: wl.metric.name, op, native: nat, sim, rows, runner, note, lost_events: lost })
}

/// The simulated runs of `req`, seeds `seed..seed+runs`.
fn run_model(req: &Request) -> Result<Vec<RunRecord>, ValidateError> {
    run_model_seeds(
        &req.variant,
        &req.topology,
        &req.workload,
        req.seed,
        req.runs,
        req.cpus.as_deref(),
        MODEL_DURATION_NS,
    )
    .map_err(ValidateError::Model)
}

/// The model's default run length for `validate` (a workload that sizes its own run, such as
/// stress-ng without `--timeout`, runs this long; one sized by loops must end within it).
pub const MODEL_DURATION_NS: u64 = 10_000_000_000;

/// The simulated runs, seeds `seed..seed+runs`, each `default_duration_ns` long at most (see
/// [`MODEL_DURATION_NS`]), in parallel (one thread per run, at most the CPU count at a time),
/// in seed order; the error is the model's one-line refusal.
pub fn run_model_seeds(
    variant: &sim::kernel::Variant,
    topology: &sim::topology::Topology,
    workload: &[String],
    seed: u64,
    runs: u32,
    cpus: Option<&[u32]>,
    default_duration_ns: u64,
) -> Result<Vec<RunRecord>, String> {
    let seeds: Vec<u64> = (0..u64::from(runs)).map(|i| seed + i).collect();
    let width = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut out = Vec::with_capacity(seeds.len());
    for chunk in seeds.chunks(width) {
        let results: Vec<Result<RunRecord, String>> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|&seed| {
                    s.spawn(move || {
                        lab::runner::run_one(&RunRequest {
                            variant: variant.clone(),
                            topology: topology.clone(),
                            workload: workload.to_vec(),
                            seed,
                            default_duration_ns,
                            max_events: 2_000_000_000,
                            cpus: cpus.map(<[u32]>::to_vec),
                        })
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("model run panicked".into()))).collect()
        });
        for r in results {
            out.push(r?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(metric: f64, inv: f64, wk: Option<f64>) -> Figures {
        Figures {
            metric,
            switches_per_op: Some(2.0),
            involuntary_share: inv,
            wakeups_per_op: wk,
            wakeups_per_switch: wk.map(|w| w / 2.0),
            ..Figures::default()
        }
    }

    #[test]
    fn rows_judge_the_model_against_the_native_spread() {
        let nat = [f(40.0, 0.40, Some(1.10)), f(44.0, 0.45, Some(1.14)), f(42.0, 0.44, Some(1.12))];
        let good = [f(50.0, 0.50, Some(1.20))];
        let t = rows("usecs_per_op", "loop", &nat, &good);
        let get = |t: &[Row], n: &str| t.iter().find(|r| r.name == n).unwrap().clone();
        assert_eq!(get(&t, "usecs_per_op").native, Some((42.0, 40.0, 44.0)));
        assert_eq!(get(&t, "usecs_per_op").verdict(), Some(true)); // 50/42 = 1.19
        assert_eq!(get(&t, "involuntary share").verdict(), Some(true)); // 0.06 off
        assert_eq!(get(&t, "wakeups/loop").verdict(), Some(true)); // 7 % off
        let bad = [f(60.0, 0.0, Some(2.0))];
        let t = rows("usecs_per_op", "loop", &nat, &bad);
        assert_eq!(get(&t, "usecs_per_op").verdict(), Some(false));
        assert_eq!(get(&t, "involuntary share").verdict(), Some(false));
        assert_eq!(get(&t, "wakeups/loop").verdict(), Some(false));
        assert!(get(&t, "switches/loop").verdict().is_none());
        let text = render_rows(&t);
        assert!(text.lines().all(|l| l.len() <= 100), "{text}");
        assert!(text.contains("OFF"));
        // Without native wakeups (no --trace) the row is not judged.
        let t = rows("usecs_per_op", "loop", &[f(1.0, 0.0, None)], &bad);
        assert_eq!(get(&t, "wakeups/loop").verdict(), None);
    }

    /// A traced validation takes the metric and the counters of the run without ftrace and
    /// only the trace's own rows from the traced run; wakeups per operation combine the two.
    #[test]
    fn paired_runs_take_time_and_counters_from_the_plain_run() {
        let plain = Figures { metric: 2.0, switches_per_op: Some(2.0), involuntary_share: 0.45, ..Figures::default() };
        let traced = Figures {
            metric: 7.3,
            switches_per_op: Some(2.2),
            involuntary_share: 0.50,
            wakeups_per_switch: Some(0.5),
            lat_p50_us: Some(3.0),
            lat_p99_us: Some(4.0),
            wakee_on_waker: Some(1.0),
            ..Figures::default()
        };
        let p = paired_figures(&plain, &traced);
        assert_eq!((p.metric, p.switches_per_op, p.involuntary_share), (2.0, Some(2.0), 0.45));
        assert_eq!((p.wakeups_per_switch, p.wakeups_per_op), (Some(0.5), Some(1.0)));
        assert_eq!((p.lat_p50_us, p.lat_p99_us, p.wakee_on_waker), (Some(3.0), Some(4.0), Some(1.0)));
    }

    #[test]
    fn per_switch_tables_drop_the_per_op_rows() {
        let t = rows("usecs_per_switch", "switch", &[f(5.0, 0.1, Some(1.0))], &[f(5.0, 0.1, Some(1.0))]);
        let names: Vec<&str> = t.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names.iter().filter(|n| n.ends_with("/switch")).count(), 1, "{names:?}");
        let w = t.iter().find(|r| r.name == "wakeups/switch").unwrap();
        assert_eq!(w.verdict(), Some(true));
    }
}
