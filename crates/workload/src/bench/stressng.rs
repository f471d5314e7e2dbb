//! stress-ng's `cpu` stressor (ColinIanKing/stress-ng `stress-cpu.c`, `stress-ng.c`;
//! workloads.md §7): `stress-ng --cpu N [--cpu-load P] [--cpu-load-slice S] [--cpu-method M]
//! [--timeout T] [--metrics|--metrics-brief]`.
//!
//! # Model (§7.3)
//!
//! * `stress-ng` parent (task 0) forks N `stress-ng-cpu` worker processes (`Spawn`, own `mm`)
//!   and waits for them.
//! * A worker is a CPU hog: "method calls" of [`CALL_NS`] CPU time, each counted. With the
//!   normalised metrics every method earns 1484.5 bogo ops per second of a reference CPU, so a
//!   call is worth `1484.5 × CALL_NS / 1e9` bogo ops (1 with `--cpu-old-metrics`).
//! * `--cpu-load P` (1–99): a busy slice (`--cpu-load-slice`: −n = n calls, default −64;
//!   +ms = that much CPU time; 0 = random up to 0.5 s, modelled as its mean 0.25 s) followed by
//!   a `select()` sleep of `busy × (100 − P) / P` — an hrtimer sleep with slack. stress-ng also
//!   subtracts the time the slice was preempted (wall − CPU) and its oversleep bias; those
//!   feedback terms need wall-clock readings the program vocabulary does not have, so the sleep
//!   here is open-loop. `--cpu-load 0` sleeps for the whole run.
//! * `--timeout T` bounds the simulation; without it stress-ng defaults to one day, and the
//!   simulation runs until its own time limit.
//! * Metric: `bogo_ops_per_sec` (real time).
//!
//! Output: the `info:` lines of a run and, with `--metrics`/`--metrics-brief`, the metrics
//! table (`metrc:` lines), with the parent's simulated pid in the prefix. `usr time` is the
//! workers' CPU time (system time is not separated: 0.00); `RSS Max` is not modelled (0).
//! Only the cpu stressor is modelled: any other stress-ng option is rejected.

use sim::program::Op;

use super::args::{OptDef, Style, getopt, int, opt};
use super::prog::Prog;
use super::{BenchParams, Better, Built, MetricSpec, View, WorkloadError, not_modelled, usage};

const BENCH: &str = "stress-ng";
/// Mark id of a worker's start (local).
pub const MARK_START: u16 = 0;
/// Count id of the method calls of all workers.
pub const COUNT_CALLS: u16 = 0;
/// CPU time of one method call **\[estimate\]** (the `all` method round-robins ~85 methods).
pub const CALL_NS: u64 = 100_000;
/// Normalised bogo ops per second of CPU time.
pub const BOGO_PER_CPU_SECOND: f64 = 1484.5;
/// stress-ng's `DEFAULT_TIMEOUT` (one day).
pub const DEFAULT_TIMEOUT_S: u64 = 86_400;

/// The methods of `stress-cpu.c` (`--cpu-method`).
pub const CPU_METHODS: &[&str] = &[
    "all",
    "ackermann",
    "apery",
    "bitops",
    "callfunc",
    "cdouble",
    "cfloat",
    "clongdouble",
    "collatz",
    "correlate",
    "crc16",
    "decimal32",
    "decimal64",
    "decimal128",
    "dither",
    "div8",
    "div16",
    "div32",
    "div64",
    "div128",
    "double",
    "euler",
    "explog",
    "factorial",
    "fibonacci",
    "fft",
    "fletcher16",
    "float",
    "float16",
    "float32",
    "float64",
    "float80",
    "float128",
    "floatconversion",
    "gamma",
    "gcd",
    "gray",
    "hamming",
    "hanoi",
    "hyperbolic",
    "idct",
    "int128",
    "int64",
    "int32",
    "int16",
    "int8",
    "int128float",
    "int128double",
    "int128longdouble",
    "int128decimal32",
    "int128decimal64",
    "int128decimal128",
    "int64float",
    "int64double",
    "int64longdouble",
    "int32float",
    "int32double",
    "int32longdouble",
    "intconversion",
    "ipv4checksum",
    "jmp",
    "lfsr32",
    "ln2",
    "logmap",
    "longdouble",
    "loop",
    "matrixprod",
    "nsqrt",
    "omega",
    "parity",
    "phi",
    "pi",
    "prime",
    "psi",
    "queens",
    "rand",
    "rand48",
    "rgb",
    "sieve",
    "stats",
    "sqrt",
    "trig",
    "union",
    "zeta",
];

/// stress-ng flags (cpu stressor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StressNg {
    /// `--cpu`/`-c` instances, resolved (0 → configured CPUs, <0 → online CPUs, N% of them).
    pub instances: u32,
    /// `--cpu-load`/`-l` percent (100).
    pub load: u32,
    /// `--cpu-load-slice` (−64).
    pub load_slice: i32,
    /// `--cpu-method` (all).
    pub method: String,
    /// `--cpu-old-metrics`.
    pub old_metrics: bool,
    /// `--timeout`/`-t` seconds (`None`: not given; `Some(0)`: infinite).
    pub timeout_s: Option<u64>,
    /// `--metrics`/`-M` or `--metrics-brief`.
    pub metrics: bool,
    /// `--metrics-brief`.
    pub metrics_brief: bool,
    /// `--log-brief`: no `stress-ng: info:  [pid] ` prefixes.
    pub log_brief: bool,
}

impl StressNg {
    /// Method calls per busy slice with `--cpu-load`.
    pub fn calls_per_slice(&self) -> u64 {
        match self.load_slice {
            s if s < 0 => u64::from(s.unsigned_abs()),
            0 => 250_000_000 / CALL_NS,
            ms => (u64::from(ms as u32) * 1_000_000).div_ceil(CALL_NS),
        }
    }

    fn bogo_per_call(&self) -> f64 {
        if self.old_metrics { 1.0 } else { BOGO_PER_CPU_SECOND * CALL_NS as f64 / 1e9 }
    }
}

const OPTS: &[OptDef] = &[
    opt("cpu", Some('c'), Some("cpu"), true),
    opt("cpu-load", Some('l'), Some("cpu-load"), true),
    opt("cpu-load-slice", None, Some("cpu-load-slice"), true),
    opt("cpu-method", None, Some("cpu-method"), true),
    opt("cpu-old-metrics", None, Some("cpu-old-metrics"), false),
    opt("timeout", Some('t'), Some("timeout"), true),
    opt("metrics", Some('M'), Some("metrics"), false),
    opt("metrics-brief", None, Some("metrics-brief"), false),
    opt("log-brief", None, Some("log-brief"), false),
    opt("cpu-ops", None, Some("cpu-ops"), true),
    opt("taskset", None, Some("taskset"), true),
    opt("sched", None, Some("sched"), true),
    opt("sched-prio", None, Some("sched-prio"), true),
];

/// `stress_get_uint64_time`: seconds with an optional s/m/h/d/w/y suffix.
fn time_arg(flag: &str, s: &str) -> Result<u64, WorkloadError> {
    let scale = match s.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('s') => 1,
        Some('m') => 60,
        Some('h') => 3_600,
        Some('d') => 86_400,
        Some('w') => 7 * 86_400,
        Some('y') => 31_536_000,
        _ => 0,
    };
    let num = if scale > 0 { &s[..s.len() - 1] } else { s };
    let v = int(BENCH, flag, num)?;
    if v < 0 {
        return usage(BENCH, format!("{flag}: invalid time `{s}`"));
    }
    Ok(v as u64 * if scale > 0 { scale } else { 1 })
}

pub(crate) fn parse(argv: &[String], nr_cpus: Option<u32>) -> Result<Built, WorkloadError> {
    // Any long option not in the table is a real stress-ng option that is not modelled.
    for a in argv {
        if let Some(name) = a.strip_prefix("--") {
            let name = name.split('=').next().unwrap_or("");
            if !name.is_empty() && !OPTS.iter().any(|d| d.long == Some(name)) {
                return not_modelled(
                    BENCH,
                    a.split('=').next().unwrap_or(a),
                    "stressor or option",
                    "only the cpu stressor is modelled",
                );
            }
        }
    }
    let parsed = getopt(BENCH, argv, OPTS, Style { negation: false, exact_long: true })?;
    let mut s = StressNg {
        instances: 0,
        load: 100,
        load_slice: -64,
        method: "all".into(),
        old_metrics: false,
        timeout_s: None,
        metrics: false,
        metrics_brief: false,
        log_brief: false,
    };
    let mut cpu_given = false;
    for f in &parsed.opts {
        match f.key {
            "cpu" => {
                cpu_given = true;
                s.instances = instances(&f.flag, f.val(), nr_cpus)?;
            }
            "cpu-load" => s.load = int_range(&f.flag, f.val(), 0, 100)? as u32,
            "cpu-load-slice" => s.load_slice = int_range(&f.flag, f.val(), -5000, 5000)? as i32,
            "cpu-method" => {
                if !CPU_METHODS.contains(&f.val()) {
                    return usage(BENCH, format!("{} must be one of: {}", f.flag, CPU_METHODS.join(" ")));
                }
                s.method = f.val().to_owned();
            }
            "cpu-old-metrics" => s.old_metrics = true,
            "timeout" => s.timeout_s = Some(time_arg(&f.flag, f.val())?),
            "metrics" => s.metrics = true,
            "metrics-brief" => {
                s.metrics = true;
                s.metrics_brief = true;
            }
            "log-brief" => s.log_brief = true,
            "cpu-ops" => return not_modelled(BENCH, &f.flag, "bogo-op limit", "use --timeout"),
            "taskset" => return not_modelled(BENCH, &f.flag, "CPU affinity", "use schedlab's --cpus"),
            "sched" | "sched-prio" => return not_modelled(BENCH, &f.flag, "scheduling policy", ""),
            _ => unreachable!("option table"),
        }
    }
    if let Some(op) = parsed.operands.first() {
        return usage(BENCH, format!("unexpected argument `{op}`"));
    }
    if !cpu_given {
        return usage(BENCH, "no stress workers invoked (schedlab models --cpu N)");
    }
    if s.instances > 1 << 16 {
        return usage(BENCH, format!("{} instances are more than schedlab simulates", s.instances));
    }

    let mut tasks = Vec::new();
    let mut parent = Prog::new();
    for i in 0..s.instances {
        parent.op(Op::Spawn { spec: 1 + i });
    }
    parent.op(Op::WaitChildren);
    tasks.push(parent.task("stress-ng", 0, false));
    let call = |p: &mut Prog| {
        p.op(Op::Run { ns: CALL_NS }).op(Op::Count { id: COUNT_CALLS });
    };
    for i in 0..s.instances {
        let mut p = Prog::new();
        p.op(Op::Mark { id: MARK_START });
        match s.load {
            100 => {
                p.forever(&call);
            }
            0 => {
                // `sleep(g_opt_timeout)`.
                match s.timeout_s.filter(|&t| t > 0) {
                    Some(t) => p.op(Op::Sleep { ns: t * 1_000_000_000 }),
                    None => p.forever(&|p| {
                        p.op(Op::Sleep { ns: DEFAULT_TIMEOUT_S * 1_000_000_000 });
                    }),
                };
            }
            load => {
                let calls = s.calls_per_slice();
                let busy = calls * CALL_NS;
                let delay = busy * u64::from(100 - load) / u64::from(load);
                p.forever(&|p| {
                    p.repeat(calls, &call);
                    if delay > 0 {
                        p.op(Op::Sleep { ns: delay });
                    }
                });
            }
        }
        tasks.push(p.task("stress-ng-cpu", 1 + i, true));
    }
    Ok(Built {
        name: BENCH,
        tasks,
        objects: Vec::new(),
        duration_ns: s.timeout_s.filter(|&t| t > 0).map(|t| t.saturating_mul(1_000_000_000)),
        metric: MetricSpec { name: "bogo_ops_per_sec", better: Better::Higher },
        params: BenchParams::StressNg(s),
    })
}

fn int_range(flag: &str, s: &str, lo: i64, hi: i64) -> Result<i64, WorkloadError> {
    let v = int(BENCH, flag, s)?;
    if v < lo || v > hi {
        return usage(BENCH, format!("{flag}: value {v} is out of range, allowed range is {lo} to {hi}"));
    }
    Ok(v)
}

/// `stress_get_int32_instance_percent`.
fn instances(flag: &str, s: &str, nr_cpus: Option<u32>) -> Result<u32, WorkloadError> {
    let cpus = || {
        nr_cpus.ok_or(WorkloadError::NeedsCpuCount {
            bench: BENCH,
            what: "--cpu 0, --cpu -1 or --cpu N%",
            flag: "--cpu N",
        })
    };
    if let Some(pct) = s.strip_suffix('%').filter(|p| !p.is_empty()) {
        let Ok(v) = pct.parse::<f64>() else {
            return usage(BENCH, format!("{flag}: invalid percentage {s}"));
        };
        // Negative: online CPUs; zero: configured CPUs (the same machine here).
        return if v <= 0.0 {
            cpus()
        } else {
            let n = f64::from(cpus()?) * v / 100.0;
            Ok(if n < 1.0 { 1 } else { n.min(f64::from(u32::MAX)) as u32 })
        };
    }
    let v = int(BENCH, flag, s)?;
    if v <= 0 { cpus() } else { Ok(v.min(i64::from(u32::MAX)) as u32) }
}

/// `stress_time_duration_to_str(duration, int_secs, report_secs)`.
fn duration_str(duration: f64, int_secs: bool, report_secs: bool) -> String {
    let units: [(f64, &str); 5] =
        [(31_536_000.0, "year"), (86_400.0, "day"), (3_600.0, "hour"), (60.0, "min"), (1.0, "sec")];
    let mut out = String::new();
    let mut dur = duration;
    for (i, (secs, unit)) in units.iter().enumerate() {
        let last = i == units.len() - 1;
        let val = (dur / secs) as u64;
        if (last && report_secs) || val > 0 {
            if !out.is_empty() {
                out.push(' ');
            }
            let plural = if val > 1 { "s" } else { "" };
            if last && int_secs {
                out += &format!("{dur:.2} {unit}{plural}");
            } else {
                out += &format!("{val} {unit}{plural}");
            }
        }
        dur -= secs * val as f64;
    }
    if out.is_empty() { "0 secs".into() } else { out }
}

impl StressNg {
    /// `(bogo ops, real time s, usr time s)` of the run.
    fn totals(&self, v: &View) -> (u64, f64, f64) {
        let bogo = (v.count(COUNT_CALLS) as f64 * self.bogo_per_call()) as u64;
        let real = v.since(MARK_START).map_or(0.0, |ns| ns as f64 / 1e9);
        let usr: u64 = v.r.tasks.iter().filter(|t| t.comm == "stress-ng-cpu").map(|t| t.sum_exec_runtime_ns).sum();
        (bogo, real, usr as f64 / 1e9)
    }

    pub(crate) fn metric_value(&self, v: &View) -> f64 {
        let (bogo, real, _) = self.totals(v);
        if real > 0.0 { bogo as f64 / real } else { f64::NAN }
    }

    pub(crate) fn format_output(&self, v: &View) -> String {
        let pid = v.r.tasks.iter().find(|t| t.comm == "stress-ng").map_or(0, |t| t.pid);
        let (info, metrc) = if self.log_brief {
            (String::new(), String::new())
        } else {
            (format!("stress-ng: info:  [{pid}] "), format!("stress-ng: metrc: [{pid}] "))
        };
        let mut s = String::new();
        match self.timeout_s {
            None => {
                s += &format!(
                    "{info}defaulting to a {} run per stressor\n",
                    duration_str(DEFAULT_TIMEOUT_S as f64, false, false)
                )
            }
            Some(0) => s += &format!("{info}setting to a infinite run per stressor\n"),
            Some(t) => s += &format!("{info}setting to a {} run per stressor\n", duration_str(t as f64, false, false)),
        }
        s += &format!("{info}dispatching hogs: {} cpu\n", self.instances);
        if self.load != 100 && self.method == "all" {
            for _ in 0..self.instances {
                s += &format!(
                    "{info}cpu: for stable load results, select a specific cpu stress method with --cpu-method other than 'all'\n"
                );
            }
        }
        let (bogo, real, usr) = self.totals(v);
        if self.metrics {
            let sys = 0.0;
            let rate_real = if real > 0.0 { bogo as f64 / real } else { 0.0 };
            let rate_cpu = if usr + sys > 0.0 { bogo as f64 / (usr + sys) } else { 0.0 };
            let n = f64::from(self.instances.max(1));
            let cpu_pct = if real > 0.0 { 100.0 * (usr + sys) / real / n } else { 0.0 };
            if self.metrics_brief {
                s += &format!(
                    "{metrc}{:<13} {:>9.9} {:>9.9} {:>9.9} {:>9.9} {:>12} {:>14}\n",
                    "stressor", "bogo ops", "real time", "usr time", "sys time", "bogo ops/s", "bogo ops/s"
                );
                s += &format!(
                    "{metrc}{:<13} {:>9.9} {:>9.9} {:>9.9} {:>9.9} {:>12} {:>14}\n",
                    "", "", "(secs) ", "(secs) ", "(secs) ", "(real time)", "(usr+sys time)"
                );
                if bogo > 0 {
                    s += &format!(
                        "{metrc}{:<13} {bogo:>9} {real:>9.2} {usr:>9.2} {sys:>9.2} {rate_real:>12.2} {rate_cpu:>14.2}\n",
                        "cpu"
                    );
                }
            } else {
                s += &format!(
                    "{metrc}{:<13} {:>9.9} {:>9.9} {:>9.9} {:>9.9} {:>12} {:>14} {:>12.12} {:>13.13}\n",
                    "stressor",
                    "bogo ops",
                    "real time",
                    "usr time",
                    "sys time",
                    "bogo ops/s",
                    "bogo ops/s",
                    "CPU used per",
                    "RSS Max"
                );
                s += &format!(
                    "{metrc}{:<13} {:>9.9} {:>9.9} {:>9.9} {:>9.9} {:>12} {:>14} {:>12.12} {:>13.13}\n",
                    "", "", "(secs) ", "(secs) ", "(secs) ", "(real time)", "(usr+sys time)", "instance (%)", "(KB)"
                );
                s += &format!(
                    "{metrc}{:<13} {bogo:>9} {real:>9.2} {usr:>9.2} {sys:>9.2} {rate_real:>12.2} {rate_cpu:>14.2} {cpu_pct:>12.2} {:>13}\n",
                    "cpu", 0
                );
            }
        }
        s += &format!("{info}skipped: 0\n");
        s += &format!("{info}passed: {}: cpu ({})\n", self.instances, self.instances);
        s += &format!("{info}failed: 0\n");
        s += &format!("{info}metrics untrustworthy: 0\n");
        s += &format!(
            "{info}successful run completed in {}\n",
            duration_str(v.r.simulated_ns as f64 / 1e9, true, false)
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::duration_str;

    #[test]
    fn durations() {
        assert_eq!(duration_str(10.0, false, false), "10 secs");
        assert_eq!(duration_str(1.0, false, false), "1 sec");
        assert_eq!(duration_str(86_400.0, false, false), "1 day");
        assert_eq!(duration_str(90.0, false, false), "1 min 30 secs");
        assert_eq!(duration_str(10.004, true, false), "10.00 secs");
        assert_eq!(duration_str(0.5, true, false), "0 secs");
        assert_eq!(duration_str(0.5, true, true), "0.50 sec");
    }
}
