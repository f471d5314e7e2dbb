//! One run: a variant of the kernel on a topology, one workload, one seed.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sim::config::Limits;
use sim::engine::{Counters, Sim, SimReport, SimSetup, StopReason};
use sim::fair::group::GroupSpec;
use sim::ipc::ObjectSpec;
use sim::kernel::Variant;
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;

/// Which way a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

/// The headline number of one workload of a run (the foreground benchmark or one beside it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartMetric {
    /// The workload's command line.
    pub workload: String,
    pub metric_name: String,
    pub metric: f64,
    pub better: Better,
}

/// Computes the background workloads' metrics from a finished run.
pub type BackgroundMetrics = Box<dyn Fn(&SimReport) -> Vec<PartMetric> + Send + Sync>;

/// How a workload ends by itself, which decides whether a run reached its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It sets its own duration (`-T 5`, `--timeout 5`, rt-app's `duration`).
    Duration(u64),
    /// It ends when its work is done (`-l 1000`): a time or event limit that comes first cuts
    /// it short, and it has no result.
    Work,
    /// It never ends by itself (a hog without a timeout, rt-app threads looping forever): the
    /// run's duration is its end.
    Never,
}

/// A workload resolved from its command line, ready to simulate.
pub struct ResolvedWorkload {
    pub name: String,
    pub argv: Vec<String>,
    pub tasks: Vec<TaskSpec>,
    pub objects: Vec<ObjectSpec>,
    /// The workload's own time bound, if it has one.
    pub duration_ns: Option<u64>,
    pub ending: Ending,
    /// The foreground workload's tasks that exist from the start (not spawned): the first
    /// tasks of a run. When they have exited, the foreground's work is done.
    pub nr_roots: usize,
    /// Background benchmarks share the run (`--background`).
    pub has_background: bool,
    pub metric_name: String,
    pub better: Better,
    /// Computes the workload's metric from a finished run.
    pub metric: Box<dyn Fn(&SimReport) -> f64 + Send + Sync>,
    /// What the real tool prints (empty for rt-app, which prints nothing of its own).
    pub output: Box<dyn Fn(&SimReport) -> String + Send + Sync>,
    /// The metrics of the background workloads, in `--background` order (empty without any).
    pub background: BackgroundMetrics,
    /// The session of each task (0: the foreground workload, k: the k-th `--background`
    /// one, each started from its own shell) and the line's group options.
    pub sessions: Vec<u32>,
    pub group_options: GroupOptions,
}

/// Whether the benchmark `name` has a long option `--long` (exactly or as an unambiguous
/// prefix, as its own getopt_long would take it). An unknown benchmark or `rtapp` has none.
pub fn workload_has_option(name: &str, long: &str) -> bool {
    if !workload::bench::BENCHMARKS.contains(&name) {
        return false;
    }
    let argv = [name.to_string(), format!("--{long}")];
    match workload::bench::parse_benchmark(&argv) {
        Err(workload::bench::WorkloadError::Usage { message, .. }) => !message.starts_with("unrecognized option"),
        _ => true,
    }
}

/// A workload line: the options that may precede the benchmark (`--cpus LIST`, taskset-style
/// affinity for every task of the line, and repeatable `--background 'CMD'`, a benchmark run
/// beside it in the same simulation), then the benchmark and its own flags. The same words work
/// in `compare --workload`, plan `workloads` lines and stored results, so a stored run carries
/// everything that made it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkloadLine {
    pub cpus: Option<String>,
    pub background: Vec<Vec<String>>,
    /// Task groups of the line ([`GroupOptions`]).
    pub groups: GroupOptions,
    pub main: Vec<String>,
}

/// The task-group options of a workload line: `--autogroup on|off` (default: the kernel's
/// `sched_autogroup_enabled`), `--cgroup PATH` (the foreground workload's cgroup) and
/// repeatable `--cgroup-weight PATH=W` (`cpu.weight` 1..10000, or `idle` for `cpu.idle = 1`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupOptions {
    pub autogroup: Option<bool>,
    pub cgroup: Option<String>,
    pub weights: Vec<(String, CgroupWeight)>,
}

/// A cgroup's cpu controller setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupWeight {
    /// `cpu.weight`.
    Weight(u64),
    /// `cpu.idle = 1`.
    Idle,
}

/// A cgroup path as the options take it: `/a/b` (a missing leading `/` is added); `/` alone,
/// empty components, `.` and `..` are refused.
pub fn cgroup_path(flag: &str, text: &str) -> Result<String, String> {
    let inner = text.trim_start_matches('/').trim_end_matches('/');
    if inner.is_empty() || inner.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(format!("{flag} {text}: expected a cgroup path below the root, such as /bench or /a/b"));
    }
    Ok(format!("/{inner}"))
}

impl GroupOptions {
    /// Takes one of the group flags; `Ok(false)` if `flag` is not one.
    pub fn take(&mut self, flag: &str, value: &str) -> Result<bool, String> {
        match flag {
            "--autogroup" => {
                self.autogroup = Some(match value {
                    "on" | "1" => true,
                    "off" | "0" => false,
                    _ => return Err(format!("--autogroup {value}: expected on or off")),
                });
            }
            "--cgroup" => self.cgroup = Some(cgroup_path("--cgroup", value)?),
            "--cgroup-weight" => {
                let Some((path, w)) = value.rsplit_once('=') else {
                    return Err(format!("--cgroup-weight {value}: expected PATH=WEIGHT (e.g. /bench=200)"));
                };
                let path = cgroup_path("--cgroup-weight", path)?;
                let weight = if w == "idle" {
                    CgroupWeight::Idle
                } else {
                    match w.parse::<u64>() {
                        Ok(v)
                            if (sim::fair::group::CGROUP_WEIGHT_MIN..=sim::fair::group::CGROUP_WEIGHT_MAX)
                                .contains(&v) =>
                        {
                            CgroupWeight::Weight(v)
                        }
                        _ => {
                            return Err(format!(
                                "--cgroup-weight {value}: cpu.weight must be 1..10000 (or `idle`), not `{w}`"
                            ));
                        }
                    }
                };
                self.weights.retain(|(p, _)| *p != path);
                self.weights.push((path, weight));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The options given as flags (`compare`, `explain`, `run`: `--autogroup on|off`,
    /// `--cgroup PATH`, repeatable `--cgroup-weight PATH=W`), each checked as on a workload line.
    pub fn from_flags(
        autogroup: Option<&str>,
        cgroup: Option<&str>,
        weights: &[String],
    ) -> Result<GroupOptions, String> {
        let mut g = GroupOptions::default();
        let flags = autogroup.map(|v| ("--autogroup", v)).into_iter().chain(cgroup.map(|v| ("--cgroup", v)));
        for (flag, value) in flags.chain(weights.iter().map(|w| ("--cgroup-weight", w.as_str()))) {
            g.take(flag, value)?;
        }
        Ok(g)
    }

    pub fn is_empty(&self) -> bool {
        self.autogroup.is_none() && self.cgroup.is_none() && self.weights.is_empty()
    }

    /// These options (a plan's or compare's, for every line) under a line's own: the line's
    /// `--autogroup` and `--cgroup` win, and its `--cgroup-weight` replaces ours for the same
    /// path; our other weights come first, in our order.
    pub fn under(&self, line: &GroupOptions) -> GroupOptions {
        let mut weights: Vec<(String, CgroupWeight)> =
            self.weights.iter().filter(|(p, _)| !line.weights.iter().any(|(q, _)| q == p)).cloned().collect();
        weights.extend(line.weights.iter().cloned());
        GroupOptions {
            autogroup: line.autogroup.or(self.autogroup),
            cgroup: line.cgroup.clone().or_else(|| self.cgroup.clone()),
            weights,
        }
    }

    /// The options as words (what a workload line or a command line takes).
    pub fn to_words(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.to_argv(&mut out);
        out
    }

    fn to_argv(&self, out: &mut Vec<String>) {
        if let Some(a) = self.autogroup {
            out.extend(["--autogroup".to_string(), if a { "on" } else { "off" }.to_string()]);
        }
        if let Some(c) = &self.cgroup {
            out.extend(["--cgroup".to_string(), c.clone()]);
        }
        for (p, w) in &self.weights {
            let w = match w {
                CgroupWeight::Weight(v) => v.to_string(),
                CgroupWeight::Idle => "idle".to_string(),
            };
            out.extend(["--cgroup-weight".to_string(), format!("{p}={w}")]);
        }
    }
}

/// The flags a workload line may start with.
const LINE_FLAGS: &[&str] = &["--cpus", "--background", "--autogroup", "--cgroup", "--cgroup-weight"];

impl WorkloadLine {
    /// Splits the leading options off `argv`.
    pub fn parse(argv: &[String]) -> Result<WorkloadLine, String> {
        let mut line = WorkloadLine::default();
        let mut i = 0;
        while i < argv.len() {
            let (flag, attached) = match argv[i].split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (argv[i].as_str(), None),
            };
            if !LINE_FLAGS.contains(&flag) {
                break;
            }
            let value = match attached {
                Some(v) => v,
                None => {
                    i += 1;
                    argv.get(i).cloned().ok_or_else(|| format!("{flag}: needs a value"))?
                }
            };
            i += 1;
            if flag == "--cpus" {
                let cpus = sim::topology::parse_cpu_list(&value).map_err(|e| format!("--cpus: {e}"))?;
                if cpus.is_empty() {
                    return Err("--cpus: empty CPU list".into());
                }
                line.cpus = Some(value);
            } else if line.groups.take(flag, &value)? {
            } else {
                let words = crate::words::split(&value).map_err(|e| format!("--background: {e}"))?;
                if words.is_empty() {
                    return Err("--background: empty command".into());
                }
                line.background.push(words);
            }
        }
        line.main = argv[i..].to_vec();
        Ok(line)
    }

    /// The line as words: options first, then the benchmark (what [`WorkloadLine::parse`] reads).
    pub fn to_argv(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(c) = &self.cpus {
            out.extend(["--cpus".to_string(), c.clone()]);
        }
        for b in &self.background {
            out.extend(["--background".to_string(), crate::words::join(b)]);
        }
        self.groups.to_argv(&mut out);
        out.extend(self.main.iter().cloned());
        out
    }

    /// The CPUs of `--cpus`, checked against a machine of `nr_cpus` CPUs.
    pub fn cpus_on(&self, nr_cpus: u32) -> Result<Option<Vec<u32>>, String> {
        let Some(text) = &self.cpus else { return Ok(None) };
        let cpus = sim::topology::parse_cpu_list(text).map_err(|e| format!("--cpus: {e}"))?;
        if let Some(bad) = cpus.iter().find(|&&c| c >= nr_cpus) {
            return Err(format!("--cpus {text}: CPU {bad} is not within the machine's CPUs 0-{}", nr_cpus - 1));
        }
        Ok(Some(cpus))
    }
}

/// Checks a workload command line without a machine (CPU-count-dependent defaults are taken
/// for one CPU): for validating plans before any run.
/// `--cpus` is checked only for its syntax here; [`resolve_workload_on`] checks it against the
/// machine.
pub fn resolve_workload(argv: &[String]) -> Result<ResolvedWorkload, String> {
    let line = WorkloadLine::parse(argv)?;
    resolve_main(&line.main, &line.background, 1)
}

/// The workloads `run`, `compare` and sweeps accept.
pub const WORKLOADS: &[&str] =
    &["rtapp FILE.json", "hackbench", "messaging", "pipe", "schbench", "lat_ctx", "netperf", "stress-ng", "pgbench"];

/// One line per workload: the name as typed and what it models (for `--help`).
pub const WORKLOAD_HELP: &[(&str, &str)] = &[
    ("hackbench", "rt-tests hackbench: groups of senders and receivers over pipes or sockets"),
    ("messaging", "perf bench sched messaging: hackbench as perf ships it"),
    ("pipe", "perf bench sched pipe: two tasks ping-ponging over a pair of pipes"),
    ("schbench", "schbench: message and worker threads, wakeup and request latency percentiles"),
    ("lat_ctx", "lmbench lat_ctx: a ring of processes passing a token, context-switch time"),
    ("netperf", "netperf TCP_RR/UDP_RR/TCP_STREAM over loopback (--clients N: N concurrent pairs)"),
    ("stress-ng", "stress-ng --cpu and friends: CPU hogs with a load percentage, bogo-ops"),
    ("pgbench", "pgbench against a modelled PostgreSQL: clients, backends, transactions per second"),
    ("rtapp FILE.json", "an rt-app JSON file (the subset crates/workload documents)"),
];

/// Resolves a workload command line (`rtapp FILE.json`, or a benchmark with its flags) for a
/// machine of `nr_cpus` CPUs, with optional background benchmarks sharing the simulation (for
/// example a `stress-ng --cpu 4` hog beside schbench).
pub fn resolve_workload_on(
    argv: &[String],
    background: &[Vec<String>],
    nr_cpus: u32,
) -> Result<ResolvedWorkload, String> {
    let line = WorkloadLine::parse(argv)?;
    let mut wl = resolve_main(&line.main, &[&line.background[..], background].concat(), nr_cpus)?;
    wl.argv = argv.to_vec();
    wl.group_options = line.groups.clone();
    if let Some(cpus) = line.cpus_on(nr_cpus)? {
        for t in &mut wl.tasks {
            t.cpus = Some(cpus.clone());
        }
    }
    Ok(wl)
}

fn resolve_main(argv: &[String], background: &[Vec<String>], nr_cpus: u32) -> Result<ResolvedWorkload, String> {
    let Some(name) = argv.first() else { return Err("empty workload".into()) };
    if name.starts_with('-') {
        return Err(format!(
            "`{name}` is not a workload; options of a workload line (--cpus, --background) go before the benchmark"
        ));
    }
    if name == "rtapp" {
        if !background.is_empty() {
            return Err("--background works with benchmarks, not with rtapp files".into());
        }
        let [_, file] = argv else {
            return Err("rtapp: expected exactly one argument, the rt-app JSON file: `rtapp FILE.json`".into());
        };
        let app = workload::rtapp::load_rtapp(Path::new(file)).map_err(|e| e.to_string())?;
        let forever = app.tasks.iter().any(|t| t.ops.iter().any(|op| matches!(op, Op::Loop { count: u32::MAX, .. })));
        return Ok(ResolvedWorkload {
            name: "rtapp".into(),
            argv: argv.to_vec(),
            ending: match app.duration_ns {
                Some(d) => Ending::Duration(d),
                None if forever => Ending::Never,
                None => Ending::Work,
            },
            nr_roots: app.tasks.iter().filter(|t| !t.spawned).count(),
            has_background: false,
            tasks: app.tasks,
            objects: Vec::new(),
            duration_ns: app.duration_ns,
            metric_name: "wakeup_latency_us_p99".into(),
            better: Better::Lower,
            metric: Box::new(|r: &SimReport| r.wakeup_latency.percentiles().p99 as f64 / 1e3),
            output: Box::new(|_| String::new()),
            background: Box::new(|_| Vec::new()),
            sessions: Vec::new(),
            group_options: GroupOptions::default(),
        });
    }
    if name.ends_with(".toml") {
        return Err(format!("{name}: TOML workload files are not supported yet; use `rtapp FILE.json` or a benchmark"));
    }
    let mut parts = vec![workload::bench::parse_benchmark_on(argv, nr_cpus).map_err(|e| e.to_string())?];
    for bg in background {
        parts.push(workload::bench::parse_benchmark_on(bg, nr_cpus).map_err(|e| format!("--background: {e}"))?);
    }
    let merged = workload::bench::merge_workloads(parts).map_err(|e| e.to_string())?;
    let main = merged.parts[0].clone();
    let (metric_name, better) = (
        main.metric.name.to_string(),
        match main.metric.better {
            workload::bench::Better::Lower => Better::Lower,
            workload::bench::Better::Higher => Better::Higher,
        },
    );
    let parts = merged.parts;
    let sessions: Vec<u32> =
        parts.iter().enumerate().flat_map(|(k, p)| std::iter::repeat_n(k as u32, p.tasks.len())).collect();
    let main_for_metric = main.clone();
    let beside: Vec<workload::bench::BenchWorkload> = parts[1..].to_vec();
    Ok(ResolvedWorkload {
        name: main.name.to_string(),
        argv: argv.to_vec(),
        ending: match merged.duration_ns {
            Some(d) => Ending::Duration(d),
            None if main.runs_forever() => Ending::Never,
            None => Ending::Work,
        },
        nr_roots: main.tasks.iter().filter(|t| !t.spawned).count(),
        has_background: parts.len() > 1,
        tasks: merged.tasks,
        objects: merged.objects,
        duration_ns: merged.duration_ns,
        metric_name,
        better,
        metric: Box::new(move |r: &SimReport| main_for_metric.metric_value(r)),
        output: Box::new(move |r: &SimReport| parts.iter().map(|p| p.format_output(r)).collect::<Vec<_>>().join("\n")),
        background: Box::new(move |r: &SimReport| {
            beside
                .iter()
                .map(|p| PartMetric {
                    workload: crate::words::join(&p.argv),
                    metric_name: p.metric.name.to_string(),
                    metric: p.metric_value(r),
                    better: match p.metric.better {
                        workload::bench::Better::Lower => Better::Lower,
                        workload::bench::Better::Higher => Better::Higher,
                    },
                })
                .collect()
        }),
        sessions,
        group_options: GroupOptions::default(),
    })
}

impl ResolvedWorkload {
    /// The tasks with their task groups, and the groups, for a kernel whose
    /// `sched_autogroup_enabled` is `autogroup_default` (a line's `--autogroup` wins).
    ///
    /// A task's cgroup is its workload's (rt-app `taskgroup`, `pipe -G`), else `--cgroup` for
    /// the foreground workload. A task left in the root cgroup goes, with autogroup on, to its
    /// session's autogroup (`autogroup_task_get()`: only tasks of the root task group are
    /// autogrouped): the foreground workload and each `--background` one are sessions of
    /// their own, as when started from different shells. Groups are built parents first:
    /// every prefix of a path is a cgroup, weighted 100 unless `--cgroup-weight` says.
    pub fn grouped_tasks(&self, autogroup_default: bool) -> (Vec<TaskSpec>, Vec<GroupSpec>) {
        use sim::fair::group::{IDLE_GROUP_SHARES, shares_from_autogroup_nice, shares_from_cpu_weight};
        let opts = &self.group_options;
        let autogroup = opts.autogroup.unwrap_or(autogroup_default);
        let session = |i: usize| self.sessions.get(i).copied().unwrap_or(0);
        let cgroup_of = |i: usize, t: &TaskSpec| {
            t.cgroup.clone().or_else(|| if session(i) == 0 { opts.cgroup.clone() } else { None })
        };
        let mut paths = std::collections::BTreeSet::new();
        for p in self
            .tasks
            .iter()
            .enumerate()
            .filter_map(|(i, t)| cgroup_of(i, t))
            .chain(opts.weights.iter().map(|w| w.0.clone()))
        {
            for (at, _) in p.match_indices('/').skip(1) {
                paths.insert(p[..at].to_string());
            }
            paths.insert(p);
        }
        let mut groups: Vec<GroupSpec> = Vec::new();
        let id_of =
            |groups: &[GroupSpec], path: &str| groups.iter().position(|g| g.name == path).map_or(0, |i| i as u32 + 1);
        for p in &paths {
            let parent = p.rfind('/').filter(|&at| at > 0).map_or(0, |at| id_of(&groups, &p[..at]));
            let (shares, idle) = match opts.weights.iter().find(|w| w.0 == *p).map(|w| w.1) {
                Some(CgroupWeight::Weight(w)) => (shares_from_cpu_weight(w), false),
                Some(CgroupWeight::Idle) => (IDLE_GROUP_SHARES, true),
                None => (shares_from_cpu_weight(sim::fair::group::CGROUP_WEIGHT_DFL), false),
            };
            groups.push(GroupSpec { name: p.clone(), parent, shares, idle });
        }
        let mut tasks = self.tasks.clone();
        let mut autogroups: Vec<(u32, u32)> = Vec::new();
        for (i, t) in tasks.iter_mut().enumerate() {
            t.group = match cgroup_of(i, t) {
                Some(p) => id_of(&groups, &p),
                None if autogroup => {
                    let s = session(i);
                    match autogroups.iter().find(|a| a.0 == s) {
                        Some(a) => a.1,
                        None => {
                            groups.push(GroupSpec {
                                name: format!("/autogroup-{}", s + 1),
                                parent: 0,
                                shares: shares_from_autogroup_nice(0),
                                idle: false,
                            });
                            autogroups.push((s, groups.len() as u32));
                            groups.len() as u32
                        }
                    }
                }
                None => 0,
            };
        }
        (tasks, groups)
    }

    /// The simulated-time bound of a run. A workload's own duration wins. One that runs
    /// forever stops at `duration_ns` (the user's, else `default_ns`). One that ends by itself
    /// has no time limit unless the user gives one, or unless background benchmarks, which
    /// never end, share the run.
    pub fn time_limit(&self, duration_ns: Option<u64>, default_ns: u64) -> u64 {
        match self.ending {
            Ending::Duration(d) => d,
            Ending::Never => duration_ns.unwrap_or(default_ns),
            Ending::Work if self.has_background => duration_ns.unwrap_or(default_ns),
            Ending::Work => duration_ns.unwrap_or(u64::MAX),
        }
    }

    /// Why a finished simulation has no result for this workload, or `None` if it has one:
    /// what cut it (`time limit`, `event limit`, deadlock) and how far it got.
    pub fn incomplete(&self, r: &SimReport) -> Option<String> {
        let roots = &r.tasks[..self.nr_roots.min(r.tasks.len())];
        let work_done = roots.iter().all(|t| t.exited);
        let cut = match (r.stop, self.ending) {
            (StopReason::AllExited, _) => return None,
            (_, Ending::Work) if work_done && r.stop != StopReason::Deadlock => return None,
            (StopReason::TimeLimit, Ending::Duration(_) | Ending::Never) => return None,
            (StopReason::TimeLimit, Ending::Work) => "the time limit",
            (StopReason::EventLimit, _) => "the event limit",
            (StopReason::Deadlock, _) => "a deadlock",
        };
        let exited = roots.iter().filter(|t| t.exited).count();
        Some(format!(
            "{} did not finish: cut by {cut} at {:.6} simulated s after {} events ({exited} of its {} tasks had exited)",
            self.name,
            r.simulated_ns as f64 / 1e9,
            r.events,
            roots.len()
        ))
    }
}

/// How the error of [`run_one`] for a run without a result begins (see [`is_incomplete`]).
pub const INCOMPLETE: &str = "incomplete run: ";

/// Whether a [`run_one`] error is a run cut before its benchmark finished, rather than bad
/// input: the CLI gives those exit code 3.
pub fn is_incomplete(error: &str) -> bool {
    error.starts_with(INCOMPLETE)
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub variant: Variant,
    pub topology: Topology,
    pub workload: Vec<String>,
    pub seed: u64,
    /// Simulated time when the workload sets no bound.
    pub default_duration_ns: u64,
    pub max_events: u64,
    /// Affinity for every task (`--cpus`).
    pub cpus: Option<Vec<u32>>,
}

/// The result of one run: what the lab stores and compares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub variant: String,
    pub kernel: String,
    pub patches: Vec<String>,
    pub topology: String,
    pub workload: String,
    pub seed: u64,
    pub metric_name: String,
    pub metric: f64,
    pub better: Better,
    pub simulated_ns: u64,
    pub events: u64,
    pub counters: CounterRecord,
    pub wakeup_latency_ns: [u64; 4],
    /// The metrics of the workloads run beside the foreground one (`--background`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<PartMetric>,
    /// Set when the run was measured on a real kernel booted under qemu (`compare --vm`, a
    /// plan's `[[vm]]`), not simulated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<GuestInfo>,
    /// The model's `/proc/schedstat` totals over the run, named as
    /// [`sim::schedstat::Totals::named`] names them (`None` for a run measured on a real kernel
    /// and for runs stored before the field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedstat: Option<Vec<(String, u64)>>,
}

/// How a run on a real kernel under qemu was measured: what a table from stored runs says
/// about it and how it reruns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestInfo {
    /// The `--vm` argument: a Debian kernel package or an image path.
    pub kernel: String,
    /// `kvm` or `tcg`, as `--accel` takes it.
    pub accel: String,
    /// Repetitions discarded before the measured one in its boot.
    pub warmup: u32,
    /// The guest kernel's HZ (from its config) and the preemption model it reported in force.
    pub hz: Option<u32>,
    pub preempt: Option<String>,
    /// The counters (as [`crate::compare::COUNTERS`] names them) the run could not measure:
    /// shown as n/a, never as 0.
    pub unmeasured: Vec<String>,
    /// vCPUs 1..N-1 were taken offline and back online right before the run, from the shell
    /// that started it (the ground truth's method; runs stored before the option existed were
    /// measured without it and read `false`).
    #[serde(default)]
    pub replug: bool,
    /// `--builtin`: schedlab's built-in workers were asked for even where the real tool is in
    /// the guest. `None`: stored before the option existed, when `compare --vm` always ran the
    /// built-in workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtin: Option<bool>,
    /// What ran in the guest and how its tasks were read (`schedlab native`'s runner and
    /// counter source), when the guest said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

impl GuestInfo {
    /// Whether the built-in workers were asked for (runs stored before `--builtin` existed
    /// always ran them).
    pub fn asked_builtin(&self) -> bool {
        self.builtin.unwrap_or(true)
    }
}

/// The run-wide counters, by their schedstat names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterRecord {
    pub nr_switches: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    pub nr_migrations: u64,
    pub nr_wakeups: u64,
    pub nr_wakeups_sync: u64,
    pub nr_wakeups_local: u64,
    pub nr_wakeups_remote: u64,
    pub nr_wakeups_affine: u64,
    pub nr_wakeups_affine_attempts: u64,
    pub nr_wakeups_migrate: u64,
    pub nr_wakeup_preemptions: u64,
    pub nr_tick_preemptions: u64,
    pub nr_ipis: u64,
}

impl From<&Counters> for CounterRecord {
    fn from(c: &Counters) -> Self {
        CounterRecord {
            nr_switches: c.nr_switches,
            nr_voluntary_switches: c.nr_voluntary_switches,
            nr_involuntary_switches: c.nr_involuntary_switches,
            nr_migrations: c.nr_migrations,
            nr_wakeups: c.nr_wakeups,
            nr_wakeups_sync: c.nr_wakeups_sync,
            nr_wakeups_local: c.nr_wakeups_local,
            nr_wakeups_remote: c.nr_wakeups_remote,
            nr_wakeups_affine: c.nr_wakeups_affine,
            nr_wakeups_affine_attempts: c.nr_wakeups_affine_attempts,
            nr_wakeups_migrate: c.nr_wakeups_migrate,
            nr_wakeup_preemptions: c.nr_wakeup_preemptions,
            nr_tick_preemptions: c.nr_tick_preemptions,
            nr_ipis: c.nr_ipis,
        }
    }
}

/// Runs one simulation. Bad input (workload, affinity) is an `Err` with a one-line message.
pub fn run_one(req: &RunRequest) -> Result<RunRecord, String> {
    let wl = resolve_workload_on(&req.workload, &[], req.topology.nr_cpus() as u32)?;
    let (mut tasks, groups) = wl.grouped_tasks(req.variant.config.sysctl.autogroup);
    if let Some(cpus) = &req.cpus {
        for t in &mut tasks {
            t.cpus = Some(cpus.clone());
        }
    }
    let setup = SimSetup {
        sched: req.variant.config.clone(),
        topology: req.topology.clone(),
        seed: req.seed,
        limits: Limits {
            max_events: req.max_events,
            max_time_ns: wl.time_limit(Some(req.default_duration_ns), req.default_duration_ns),
        },
        tasks,
        objects: wl.objects.clone(),
        check_invariants: false,
        groups,
    };
    let report = Sim::new(setup)?.run().map_err(|v| v.to_string())?;
    // No statistics on a run without a result: it is an error the caller shows, not a NaN.
    if let Some(why) = wl.incomplete(&report) {
        return Err(format!("{INCOMPLETE}{why}; raise duration or max_events"));
    }
    let lat = report.wakeup_latency.percentiles();
    Ok(RunRecord {
        variant: req.variant.spec.clone(),
        kernel: req.variant.config.kernel.clone(),
        patches: req.variant.patches.clone(),
        topology: req.topology.name.clone(),
        workload: req.workload.join(" "),
        seed: req.seed,
        metric_name: wl.metric_name,
        metric: (wl.metric)(&report),
        better: wl.better,
        simulated_ns: report.simulated_ns,
        events: report.events,
        counters: CounterRecord::from(&report.counters),
        wakeup_latency_ns: [lat.p50, lat.p90, lat.p99, lat.max],
        background: (wl.background)(&report),
        vm: None,
        schedstat: Some(report.schedstat.totals().named().into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
    })
}
