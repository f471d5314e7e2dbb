//! The lab commands: `kernels`, `patches`, `compare`, `sweep`, `merge`. Thin: the work is in the
//! `lab` crate; this file parses flags, draws the progress bar and maps errors to exit codes.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use lab::compare::{self, CompareOptions, Sample, Selection};
use lab::plan::{self, Plan, PlanFlags, RunKey, Shard};
use lab::report::{self, Format};
use lab::store::{self, Store};
use lab::sweep::{self, Outcome, SweepProgress};
use lab::words;

use crate::args::{CompareArgs, MergeArgs, SweepArgs};
use crate::setup::{Incomplete, UserError, lab_err, user};

/// `schedlab kernels`: one line per preset, with the source its switches were checked against.
pub fn kernels() -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for k in sim::kernel::KERNELS {
        let autogroup = if k.config().sysctl.autogroup { "on" } else { "off" };
        writeln!(out, "{:<10} {} [autogroup: {autogroup}] [source: {}]", k.name, k.summary, k.source)?;
    }
    let host = if native::host::autogroup_enabled() { "on" } else { "off" };
    let vendor = native::host::host_vendor_sched_sysctls();
    let vendor = if vendor.is_empty() {
        String::new()
    } else {
        format!(" [not modelled: vendor scheduler sysctls {}]", native::host::vendor_sysctl_list(&vendor))
    };
    writeln!(
        out,
        "{:<10} this machine's kernel mapped to a preset [autogroup: {host}, from /proc/sys/kernel/sched_autogroup_enabled]{vendor}",
        "host"
    )?;
    Ok(())
}

/// `schedlab patches`: one line per named patch: name, summary, reference.
pub fn patches() -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for p in sim::kernel::PATCHES {
        writeln!(out, "{:<31} {} [{}]", p.name, p.summary, p.reference)?;
    }
    Ok(())
}

/// Progress on stderr: a bar on a terminal; otherwise (Slurm, Kubernetes and CI logs) a plain
/// line at most every [`LOG_EVERY`]; nothing with --quiet. And the Ctrl-C flag.
struct Progress {
    bar: ProgressBar,
    cancel: Arc<AtomicBool>,
    log: Option<Mutex<LogState>>,
}

/// The plain-line progress of a log: when it started and last printed.
struct LogState {
    start: Instant,
    last: Instant,
}

/// At most one plain progress line per this interval.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// console's stderr terminal, reporting 3 columns fewer than it has. indicatif pads its line to
/// the reported width, leaving the cursor at the right edge; on a full-width line the terminal's
/// `^C` echo would wrap onto a new line, and the final clear would then miss the bar.
#[derive(Debug)]
struct NarrowTerm(console::Term);

impl TermLike for NarrowTerm {
    fn width(&self) -> u16 {
        self.0.size().1.saturating_sub(3).max(20)
    }
    fn height(&self) -> u16 {
        self.0.size().0
    }
    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_up(n)
    }
    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_down(n)
    }
    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_right(n)
    }
    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_left(n)
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.0.write_line(s)
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.0.write_str(s)
    }
    fn clear_line(&self) -> std::io::Result<()> {
        self.0.clear_line()
    }
    fn flush(&self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Progress {
    /// `vm`: real kernels boot under qemu too, so the first signal kills them (by pid) and
    /// exits 130 at once; every run already finished is stored.
    fn new(quiet: bool, vm: bool) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let target = if terminal && !quiet {
            ProgressDrawTarget::term_like_with_hz(Box::new(NarrowTerm(console::Term::stderr())), 10)
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(0), target);
        bar.set_style(
            #[allow(clippy::expect_used, reason = "the template is a literal, rendered by every sweep test")]
            ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {elapsed_precise} eta {eta}  {msg}")
                .expect("valid template"),
        );
        let cancel = Arc::new(AtomicBool::new(false));
        let (flag, b) = (cancel.clone(), bar.clone());
        // First Ctrl-C or SIGTERM (or SIGHUP: ctrlc's `termination` feature): start no new
        // runs, let the ones in progress finish (and be stored), exit 130. Second: leave at
        // once; every finished run is already committed.
        let _ = ctrlc::set_handler(move || {
            if vm {
                b.abandon();
                vm::interrupt();
                eprintln!("schedlab: interrupted: the qemu in progress was killed; stored runs are kept");
                std::process::exit(130);
            }
            if flag.swap(true, Ordering::SeqCst) {
                b.abandon();
                eprintln!("schedlab: interrupted");
                std::process::exit(130);
            }
            b.set_message("interrupted: finishing the runs in progress (Ctrl-C again to quit now)");
        });
        let log = (!terminal && !quiet).then(|| Mutex::new(LogState { start: Instant::now(), last: Instant::now() }));
        Progress { bar, cancel, log }
    }

    /// One run finished: advance the bar, or print a log line when one is due.
    fn tick(&self) {
        self.bar.inc(1);
        let Some(log) = &self.log else { return };
        let mut st = log.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let (done, total) = (self.bar.position(), self.bar.length().unwrap_or(0));
        if now.duration_since(st.last) < LOG_EVERY || done >= total {
            return;
        }
        st.last = now;
        let elapsed = now.duration_since(st.start).as_secs_f64();
        let eta = elapsed * (total - done) as f64 / done.max(1) as f64;
        eprintln!("schedlab: {done}/{total} runs done, {elapsed:.0} s elapsed, about {eta:.0} s left");
    }

    fn interrupted(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }
}

impl SweepProgress for Progress {
    fn start(&self, to_run: usize, _already: usize) {
        self.bar.set_length(to_run as u64);
    }
    fn done(&self, _key: &RunKey, _outcome: &Outcome) {
        self.tick();
    }
}

/// Runs `f` on a pool of `jobs` threads, or on rayon's global pool.
fn with_jobs<T: Send>(jobs: Option<usize>, f: impl FnOnce() -> T + Send) -> anyhow::Result<T> {
    match jobs {
        None => Ok(f()),
        Some(0) => user("--jobs: must be at least 1"),
        Some(n) => Ok(rayon::ThreadPoolBuilder::new().num_threads(n).build()?.install(f)),
    }
}

pub fn compare(a: &CompareArgs) -> anyhow::Result<()> {
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        return user(format!("--alpha: {} is not in (0, 1)", a.alpha));
    }
    if !(a.min_effect >= 0.0 && a.min_effect.is_finite()) {
        return user(format!("--min-effect: {} is not a non-negative percentage", a.min_effect));
    }
    let opts = CompareOptions { alpha: a.alpha, min_effect_pct: a.min_effect };
    let Some(format) = Format::parse(&a.format) else {
        return user(format!("--format: unknown format `{}`", a.format));
    };
    if let Some(kernel) = &a.vm {
        return crate::vm_cmd::compare_vm(a, kernel, opts, format);
    }
    a.vm_opts.refuse_without_vm()?;
    if a.builtin {
        return user("--builtin: only with --vm KERNEL (the model has no real tool to leave out)");
    }
    if a.trace {
        return user("--trace: only with --vm KERNEL (a model run writes its trace with `schedlab run --trace FILE`)");
    }
    if a.out.is_some() {
        return user(
            "--out: only with --vm KERNEL (model runs go to a results store with `schedlab sweep PLAN --out DIR`)",
        );
    }
    let run_flags = [
        ("--topology", !a.topology.is_empty()),
        ("--runs", a.runs.is_some()),
        ("--seed", a.seed.is_some()),
        ("--seeds", a.seeds.is_some()),
        ("--duration", a.duration.is_some()),
        ("--max-events", a.max_events.is_some()),
        ("--cpus", a.cpus.is_some()),
        ("--background", !a.background.is_empty()),
        ("--autogroup", a.groups.autogroup.is_some()),
        ("--cgroup", a.groups.cgroup.is_some()),
        ("--cgroup-weight", !a.groups.cgroup_weight.is_empty()),
        ("--workload", !a.workloads.is_empty()),
        ("a positional workload", !a.workload.is_empty()),
    ];
    let comparison = match (&a.plan, &a.from) {
        (Some(_), Some(_)) => return user("--plan and --from: give one source of runs, not both"),
        (source_plan, source_from) if source_plan.is_some() || source_from.is_some() => {
            let what = if source_plan.is_some() { "--plan" } else { "--from" };
            if let Some((flag, _)) = run_flags.iter().find(|(_, given)| *given) {
                return user(format!("{flag}: not with {what}, which sets the runs"));
            }
            match (source_plan, source_from) {
                (Some(p), _) => {
                    let plan = plan::load_plan(p).map_err(lab_err)?;
                    if !plan.vm.is_empty() {
                        return user(format!(
                            "--plan {}: its [[vm]] tables boot real kernels: run the plan with `schedlab sweep`, \
                             then `schedlab compare --from DIR`",
                            p.display()
                        ));
                    }
                    let sel = Selection::in_plan(&plan, a.base.as_deref(), &a.variant).map_err(lab_err)?;
                    let samples = run_plan(&plan, a.jobs, a.quiet)?;
                    compare::build(&samples, &sel, opts).map_err(lab_err)?
                }
                (_, Some(dir)) => from_store(dir, a, opts)?,
                _ => unreachable!(),
            }
        }
        _ => {
            let plan = plan_from_flags(a)?;
            let samples = run_plan(&plan, a.jobs, a.quiet)?;
            compare::build(&samples, &Selection::from_plan(&plan), opts).map_err(lab_err)?
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(report::render(&comparison, format).as_bytes())?;
    out.flush()?;
    Ok(())
}

fn plan_from_flags(a: &CompareArgs) -> anyhow::Result<Plan> {
    let Some(base) = &a.base else {
        return user("--base: give the base SPEC (e.g. --base v7.3), or use --plan or --from");
    };
    let mut workloads = Vec::new();
    for w in &a.workloads {
        match words::split(w) {
            Ok(argv) if !argv.is_empty() => workloads.push(argv),
            Ok(_) => return user("--workload: empty workload"),
            Err(e) => return user(format!("--workload: {e}")),
        }
    }
    if !a.workload.is_empty() {
        workloads.push(a.workload.clone());
    }
    let seeds = match &a.seeds {
        Some(list) => {
            let mut seeds = Vec::new();
            for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                match s.parse::<u64>() {
                    Ok(v) if !seeds.contains(&v) => seeds.push(v),
                    Ok(v) => return user(format!("--seeds: seed {v} is listed twice")),
                    Err(_) => return user(format!("--seeds: `{s}` is not a seed (a whole number)")),
                }
            }
            seeds.sort_unstable();
            seeds
        }
        None => plan::seed_range(a.seed.unwrap_or(1), a.runs.unwrap_or(5)),
    };
    let topologies = if a.topology.is_empty() { vec!["smp:2".to_string()] } else { a.topology.clone() };
    Plan::from_flags(PlanFlags {
        topologies: &topologies,
        base,
        variants: &a.variant,
        workloads,
        seeds,
        duration_s: a.duration.unwrap_or(plan::DEFAULT_DURATION_S),
        max_events: a.max_events.unwrap_or(plan::DEFAULT_MAX_EVENTS),
        cpus: a.cpus.as_deref(),
        background: &a.background,
        autogroup: a.groups.autogroup.as_deref(),
        cgroup: a.groups.cgroup.as_deref(),
        cgroup_weights: &a.groups.cgroup_weight,
    })
    .map_err(lab_err)
}

/// Runs every run of a plan in parallel; the samples come back in plan order.
fn run_plan(plan: &Plan, jobs: Option<usize>, quiet: bool) -> anyhow::Result<Vec<Sample>> {
    let slots = plan.runs();
    let requests: Vec<_> = slots.iter().map(|s| plan.request(s)).collect();
    let progress = Progress::new(quiet, false);
    progress.bar.set_length(requests.len() as u64);
    let outcomes = with_jobs(jobs, || sweep::run_all(&requests, &progress.cancel, |_, _| progress.tick()))?;
    progress.bar.finish_and_clear();
    if progress.interrupted() {
        eprintln!("schedlab: interrupted");
        std::process::exit(130);
    }
    let mut samples = Vec::with_capacity(slots.len());
    let mut incomplete = 0;
    for (slot, outcome) in slots.iter().zip(outcomes) {
        let key = plan.key(slot);
        let Some(outcome) = outcome else { unreachable!("not interrupted, so every run ran") };
        match outcome.result {
            Ok(record) => samples.push(Sample { variant: plan.variants[slot.variant].name.clone(), key, record }),
            // Shown, every one, and no statistics over the rest.
            Err(e) if lab::runner::is_incomplete(&e) => {
                incomplete += 1;
                eprintln!(
                    "schedlab: variant `{}`, topology {}, seed {}: {e}",
                    plan.variants[slot.variant].name, key.topology, key.seed
                );
            }
            Err(e) => {
                return user(format!(
                    "run failed: variant `{}` ({}), topology {}, workload `{}`, seed {}: {e}",
                    plan.variants[slot.variant].name,
                    key.spec,
                    key.topology,
                    words::join(&key.workload),
                    key.seed
                ));
            }
        }
    }
    if incomplete > 0 {
        return Err(Incomplete(format!(
            "{incomplete} of {} runs did not finish their benchmark: no statistics (exit 3); raise --duration or --max-events",
            slots.len()
        ))
        .into());
    }
    Ok(samples)
}

/// `compare --from`: stored runs, selected by variant name or SPEC.
fn from_store(dir: &std::path::Path, a: &CompareArgs, opts: CompareOptions) -> anyhow::Result<compare::Comparison> {
    let store = Store::open(dir).map_err(lab_err)?;
    let stored = compare::select_stored(&store, a.base.as_deref(), &a.variant).map_err(lab_err)?;
    if let Some(note) = &stored.note {
        eprintln!("schedlab: note: {note}");
    }
    compare::build(&stored.samples, &stored.selection, opts).map_err(lab_err)
}

pub fn sweep(a: &SweepArgs) -> anyhow::Result<()> {
    let shard = match &a.shard {
        Some(s) => Some(Shard::parse(s).map_err(|e| UserError(format!("--shard: {e}")))?),
        None => None,
    };
    let plan = plan::load_plan(&a.plan).map_err(lab_err)?;
    let store = Store::create(&a.out).map_err(lab_err)?;
    let progress = Progress::new(a.quiet, !plan.vm.is_empty());
    let report = with_jobs(a.jobs, || sweep::sweep(&plan, &store, shard, &progress.cancel, &progress))?;
    progress.bar.finish_and_clear();
    let report = report.map_err(lab_err)?;
    let vm_report = if plan.vm.is_empty() || progress.interrupted() {
        None
    } else {
        let opts = vm::sweep::SweepOptions { schedlab_bin: std::env::current_exe()?, verbose: false };
        let quiet = a.quiet;
        let note = |m: &str| {
            if !quiet {
                eprintln!("{m}")
            }
        };
        Some(vm::sweep::sweep(&plan, &store, shard, &opts, &progress.cancel, &note).map_err(crate::vm_cmd::vm_error)?)
    };
    let mut out = std::io::stdout().lock();
    let shard_text = shard.map_or(String::new(), |s| format!(", shard {s}: {} runs", report.in_shard));
    writeln!(
        out,
        "sweep {}: {} runs in the plan{shard_text}; {} already stored, {} stored now in {} ({} runs in the database)",
        plan.origin,
        report.planned,
        report.already,
        report.stored,
        store.path().display(),
        store.count().map_err(lab_err)?
    )?;
    if let Some(v) = &vm_report {
        let shard_text = shard.map_or(String::new(), |s| format!(", shard {s}: {} boots", v.in_shard));
        writeln!(
            out,
            "sweep {}: {} boots of real kernels in the plan{shard_text}; {} already stored, {} stored now",
            plan.origin, v.planned, v.already, v.stored
        )?;
    }
    for (key, e) in &report.failed {
        eprintln!(
            "schedlab: run failed: {} on {}, workload `{}`, seed {}: {e}",
            key.spec,
            key.topology,
            words::join(&key.workload),
            key.seed
        );
    }
    if report.cancelled > 0 || progress.interrupted() {
        out.flush()?;
        eprintln!("schedlab: interrupted: {} runs not started; rerun the same command to finish", report.cancelled);
        std::process::exit(130);
    }
    let incomplete = report.failed.iter().filter(|(_, e)| lab::runner::is_incomplete(e)).count();
    if incomplete > 0 && incomplete == report.failed.len() {
        return Err(Incomplete(format!(
            "{incomplete} runs did not finish their benchmark (not stored); raise duration or max_events in the plan"
        ))
        .into());
    }
    if !report.failed.is_empty() {
        return user(format!("{} runs failed (not stored; a rerun retries them)", report.failed.len()));
    }
    writeln!(out, "compare: schedlab compare --from {}", words::quote(&a.out.display().to_string()))?;
    Ok(())
}

pub fn merge(a: &MergeArgs) -> anyhow::Result<()> {
    let out_db = store::db_path(&a.out);
    let store = Store::create(&a.out).map_err(lab_err)?;
    let out_canon = std::fs::canonicalize(&out_db).ok();
    let mut out = std::io::stdout().lock();
    for input in &a.inputs {
        let db = store::db_path(input);
        if std::fs::canonicalize(&db).ok() == out_canon && out_canon.is_some() {
            writeln!(out, "{}: the output itself, skipped", db.display())?;
            continue;
        }
        let (copied, skipped) = store.merge_from(input).map_err(lab_err)?;
        writeln!(out, "{}: {copied} runs copied, {skipped} already present", db.display())?;
    }
    writeln!(out, "{}: {} runs", store.path().display(), store.count().map_err(lab_err)?)?;
    Ok(())
}
