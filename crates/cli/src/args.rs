//! The command line (clap derive): every command's arguments, so that the command modules
//! depend on this file and never the other way. Names follow the brief's command-line contract.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

/// A laboratory for the Linux fair scheduler's wakeup path: EEVDF in deterministic virtual
/// time, on any topology, with every feature, sysctl and preemption model by its kernel name.
#[derive(Parser, Debug)]
#[command(name = "schedlab", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one workload on a simulated machine and print what the real tool would print,
    /// then a counters summary (or one JSON object with --json).
    Run(RunArgs),
    /// Print the scheduler feature set like /sys/kernel/debug/sched/features.
    Features(FeaturesArgs),
    /// Measure simulator throughput (scheduler events per second of wall time) on fixed cases.
    Bench(BenchArgs),
    /// Metrics from a real or simulated ftrace text trace: the `run --json` counters and a
    /// `perf sched latency`-style table.
    Analyze(AnalyzeArgs),
    /// List and show machine topologies.
    Topology {
        #[command(subcommand)]
        command: TopologyCommand,
    },
    /// Compare variants on workloads over seeds: medians, % change, (I)/(R) significance marks.
    Compare(CompareArgs),
    /// Run a plan (topologies x variants x workloads x seeds) into a results database.
    Sweep(SweepArgs),
    /// Merge results databases (e.g. shards of a sweep) into one.
    Merge(MergeArgs),
    /// List the kernel presets, one per line: name and summary.
    Kernels,
    /// List the named patches: name, summary, reference.
    Patches,
    /// Run a workload for real on this machine's kernel: the tool's output, /proc counters,
    /// ftrace wakeup latencies (--trace).
    Native(NativeArgs),
    /// Native runs beside simulated seeds on --topology host --kernel host, side by side.
    Validate(ValidateArgs),
    /// Real kernels under qemu: boot a Debian kernel package or a bzImage and run a workload per variant.
    Vm(VmArgs),
    /// Measure this machine's kernel costs and write a --cost-file.
    Calibrate(CalibrateArgs),
    /// Where two variants first decide differently (wakeup preemption, placement, switch), why,
    /// and what followed.
    Explain(ExplainArgs),
    /// Write a self-contained HTML report (table, SVG charts, per-CPU timeline) from a results
    /// database or `run --json` files.
    Report(ReportArgs),
    /// Score the model against real-kernel measurements (a ground-truth directory): effects in
    /// direction and within 2x, default-variant metrics in the real range and within 1.5x.
    Fidelity(FidelityArgs),
}

#[derive(Subcommand, Debug)]
pub enum TopologyCommand {
    /// List the built-in topology presets.
    List,
    /// Show a topology (preset name, smp:N, or a TOML file): hierarchy, sched domains, costs.
    Show { name: String },
    /// Show the topology of this machine, read from /sys/devices/system/cpu.
    Host,
}

/// The simulated kernel and machine: shared by `run` and, later, the lab commands.
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// Machine: a preset name, smp:N (N identical CPUs sharing one cache), or a TOML file.
    #[arg(long, default_value = "smp:2")]
    pub topology: String,
    /// Kernel preset whose feature defaults and behaviour the model follows.
    #[arg(long, default_value = "v7.3")]
    pub kernel: String,
    /// Scheduler features in debugfs syntax, comma-separated: NEXT_BUDDY,NO_DELAY_DEQUEUE.
    #[arg(long, value_name = "LIST")]
    pub features: Option<String>,
    /// A scheduler sysctl, e.g. base_slice_ns=3000000 (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub sysctl: Vec<String>,
    /// Preemption model: none, voluntary, full or lazy (default: the kernel preset's).
    #[arg(long)]
    pub preempt: Option<String>,
    /// Timer interrupt frequency (CONFIG_HZ).
    #[arg(long)]
    pub hz: Option<u32>,
    /// A cost parameter in nanoseconds, e.g. context_switch_ns=1500 (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub cost: Vec<String>,
    /// Master seed; every random stream derives from it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// CPUs every workload task may run on (taskset -c syntax, e.g. 0 or 0-3,8).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// A TOML file with a `[costs]` table of KEY = nanoseconds (e.g. from `schedlab
    /// calibrate`), applied before --cost.
    #[arg(long, value_name = "FILE")]
    pub cost_file: Option<PathBuf>,
}

/// Printed after `schedlab run --help`'s options: every workload.
fn workloads_help() -> String {
    let mut text = String::from(
        "Workloads (each takes the real tool's flags; a flag the model cannot reproduce is named\nin the error):\n",
    );
    for (name, what) in lab::runner::WORKLOAD_HELP {
        text += &format!("  {name:<16} {what}\n");
    }
    text += "\nOptions of schedlab go before the workload; one given after it (`pipe -l 100000 --seed 3`)\n\
             is taken as schedlab's when the workload has no option of that name.\n";
    text
}

#[derive(Args, Debug)]
#[command(after_help = workloads_help())]
pub struct RunArgs {
    #[command(flatten)]
    pub sim: SimArgs,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Simulated seconds to run when the workload sets no duration. Default: none for a
    /// benchmark that ends by itself (a loop count), 10 s for one that runs forever or with
    /// --background. A run cut before its benchmark finished exits with code 3.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Stop after this many events (a safety bound; a run cut by it exits with code 3).
    #[arg(long, default_value_t = 2_000_000_000)]
    pub max_events: u64,
    /// Check the scheduler invariants: of the runqueues each event touched after every event,
    /// of everything every max(64, tasks + CPUs) events and at the end (about 1.3-2x the time).
    #[arg(long)]
    pub check: bool,
    /// Also print the per-task table for benchmarks (always printed for rt-app files).
    #[arg(long)]
    pub tasks: bool,
    /// A benchmark to run beside the workload in the same simulation, with its own flags,
    /// e.g. --background 'stress-ng --cpu 4' (repeatable).
    #[arg(long, value_name = "COMMAND")]
    pub background: Vec<String>,
    #[command(flatten)]
    pub groups: GroupArgs,
    /// Write the scheduler trace to FILE.txt (ftrace text) or FILE.pftrace (Perfetto).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Turn progress reports on stderr off.
    #[arg(long, short)]
    pub quiet: bool,
    /// The workload and its own flags: `rtapp FILE.json`.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
}

/// Task groups of the workload: shared by `run`, `compare` and `explain` (plans take the same
/// as `autogroup`, `cgroup` and `cgroup_weight`).
#[derive(Args, Debug, Clone, Default)]
pub struct GroupArgs {
    /// Autogroup (a task group per session: the workload and each --background its own):
    /// on or off. Default: the kernel's sched_autogroup_enabled (on for every preset; the
    /// host's /proc/sys/kernel/sched_autogroup_enabled for --kernel host).
    #[arg(long, value_name = "on|off")]
    pub autogroup: Option<String>,
    /// Put the foreground workload in this cgroup (cgroup v2 cpu controller), e.g. /bench.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<String>,
    /// A cgroup's cpu.weight (1..10000, default 100) or `idle` (cpu.idle = 1), e.g.
    /// --cgroup-weight /bench=200 (repeatable).
    #[arg(long, value_name = "PATH=W")]
    pub cgroup_weight: Vec<String>,
}

#[derive(Args, Debug)]
pub struct FeaturesArgs {
    /// Kernel preset.
    #[arg(long, default_value = "v7.3")]
    pub kernel: String,
    /// Changes to apply first, in debugfs syntax.
    #[arg(long, value_name = "LIST")]
    pub features: Option<String>,
    /// Also describe each feature, one per line.
    #[arg(long, short)]
    pub verbose: bool,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Simulated seconds per case.
    #[arg(long, default_value_t = 5)]
    pub seconds: u64,
    /// Only run cases whose name (for the scaling series: "scaling SERIES SIZE") contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Also run the scaling series (tasks 10..10,000 on smp:4, 10 simulated s each; 2..512
    /// CPUs with 1000 tasks; 1..100 simulated s) and print each case's CPU time per event as a
    /// ratio to the smallest of its series, with the process's peak RSS per case.
    #[arg(long)]
    pub scaling: bool,
    /// Also run an installed scxsim (sched-ext/scx `simulator.v3`, `rust/scx_simulator`) and
    /// schedlab on the same rt-app files in interleaved pairs and print the CPU-time ratio.
    #[arg(long, value_name = "PATH")]
    pub compare_scxsim: Option<std::path::PathBuf>,
    /// Pairs per input for `--compare-scxsim` (the median is printed).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub pairs: u32,
    /// Runs of each case (rows and scaling series): the run of median CPU time is printed,
    /// with the largest peak RSS. On a shared machine one run of a case can be tens of percent
    /// off; three or five make the per-event ratios comparable between invocations.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub repeat: u32,
    /// Internal: run case N of the list in this process and print its figures.
    #[arg(long, hide = true)]
    pub child_case: Option<usize>,
}

/// The commands whose last positional argument is a workload with its own flags.
const WORKLOAD_COMMANDS: &[&str] = &["run", "compare", "explain", "native", "validate"];

/// Prepares the command line for clap: schedlab's own long options found after the workload
/// (`validate pipe -l 100000 -T --runs 3`) move before it when the workload has no option of
/// that name; an unknown option before the workload is an error naming it (clap would take it
/// for the workload, since workloads start with any word). Words after a `--` stay where they
/// are. Non-UTF-8 arguments are left to clap.
pub fn hoist_options(args: Vec<std::ffi::OsString>) -> Result<Vec<std::ffi::OsString>, String> {
    let Some(words) = args.iter().map(|a| a.to_str().map(String::from)).collect::<Option<Vec<String>>>() else {
        return Ok(args);
    };
    let Some(sub_at) = words.iter().skip(1).position(|w| !w.starts_with('-')).map(|i| i + 1) else {
        return Ok(args);
    };
    let sub = words[sub_at].as_str();
    if !WORKLOAD_COMMANDS.contains(&sub) {
        return Ok(args);
    }
    let mut cli = Cli::command();
    // Building fills in defaults such as each option's number of values.
    cli.build();
    let Some(cmd) = cli.find_subcommand(sub) else { return Ok(args) };
    // Long and short names of the command's options, and whether each takes a value.
    let takes_value = |a: &clap::Arg| a.get_num_args().is_some_and(|n| n.takes_values());
    let long = |name: &str| {
        cmd.get_arguments()
            .find(|a| a.get_long() == Some(name) || a.get_all_aliases().is_some_and(|al| al.contains(&name)))
    };
    let short = |c: char| cmd.get_arguments().find(|a| a.get_short() == Some(c));
    let mut i = sub_at + 1;
    let workload_at = loop {
        let Some(w) = words.get(i) else { return Ok(args) };
        if w == "--" {
            return Ok(args);
        }
        if let Some(body) = w.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((n, _)) => (n, true),
                None => (body, false),
            };
            match long(name) {
                Some(a) => i += if takes_value(a) && !attached { 2 } else { 1 },
                None if name == "help" || name == "version" => return Ok(args),
                None => {
                    return Err(format!(
                        "schedlab {sub}: unknown option `--{name}`; `schedlab {sub} --help` lists the options, \
                         which go before the workload"
                    ));
                }
            }
        } else if let Some(c) = w.strip_prefix('-').and_then(|s| s.chars().next()) {
            match short(c) {
                Some(a) => i += if takes_value(a) && w.chars().count() == 2 { 2 } else { 1 },
                None if c == 'h' => return Ok(args),
                None => {
                    return Err(format!(
                        "schedlab {sub}: unknown option `{w}`; `schedlab {sub} --help` lists the options, \
                         which go before the workload"
                    ));
                }
            }
        } else {
            break i;
        }
    };
    // The workload's own words start after its name; a workload line may start with `--cpus`
    // or `--background` only through --workload strings, not here.
    let name = words[workload_at].clone();
    let mut moved: Vec<String> = Vec::new();
    let mut rest: Vec<String> = Vec::new();
    let mut j = workload_at + 1;
    while j < words.len() {
        let w = &words[j];
        if w == "--" {
            rest.extend(words[j..].iter().cloned());
            break;
        }
        let hoisted = w.strip_prefix("--").and_then(|body| {
            let (n, attached) = match body.split_once('=') {
                Some((n, _)) => (n, true),
                None => (body, false),
            };
            let arg = long(n)?;
            (!lab::runner::workload_has_option(&name, n)).then_some(takes_value(arg) && !attached)
        });
        match hoisted {
            Some(with_value) => {
                moved.push(w.clone());
                if with_value && let Some(v) = words.get(j + 1) {
                    moved.push(v.clone());
                    j += 1;
                }
            }
            None => rest.push(w.clone()),
        }
        j += 1;
    }
    if moved.is_empty() {
        return Ok(args);
    }
    let mut out: Vec<String> = words[..workload_at].to_vec();
    out.extend(moved);
    out.push(name);
    out.extend(rest);
    Ok(out.into_iter().map(Into::into).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hoist(line: &str) -> Result<String, String> {
        let args: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
        hoist_options(args).map(|v| v.iter().map(|a| a.to_str().unwrap()).collect::<Vec<_>>().join(" "))
    }

    #[test]
    fn options_after_the_workload_move_before_it() {
        assert_eq!(
            hoist("schedlab validate pipe -l 100000 -T --runs 3").unwrap(),
            "schedlab validate --runs 3 pipe -l 100000 -T"
        );
        assert_eq!(
            hoist("schedlab run pipe -l 10 --seed=4 --json").unwrap(),
            "schedlab run --seed=4 --json pipe -l 10"
        );
        assert_eq!(
            hoist("schedlab compare --base v7.3 --variant NEXT_BUDDY pipe -l 10 --runs 3").unwrap(),
            "schedlab compare --base v7.3 --variant NEXT_BUDDY --runs 3 pipe -l 10"
        );
        // The workload's own option of the same name stays: stress-ng has --timeout, not schedlab.
        assert_eq!(
            hoist("schedlab run stress-ng --cpu 2 --timeout 1").unwrap(),
            "schedlab run stress-ng --cpu 2 --timeout 1"
        );
        // Words after `--` belong to the tool (netperf's test options).
        assert_eq!(
            hoist("schedlab run netperf -t TCP_RR -- -r 1,1 --seed 2").unwrap(),
            "schedlab run netperf -t TCP_RR -- -r 1,1 --seed 2"
        );
        assert_eq!(hoist("schedlab kernels").unwrap(), "schedlab kernels");
    }

    #[test]
    fn unknown_options_before_the_workload_are_named() {
        let e = hoist("schedlab run --foo pipe").unwrap_err();
        assert!(e.contains("unknown option `--foo`") && e.contains("before the workload"), "{e}");
        assert!(hoist("schedlab run -x pipe").unwrap_err().contains("`-x`"));
        assert!(hoist("schedlab run --help").is_ok());
    }

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}

// ---- analyze -------------------------------------------------------------------------

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// An ftrace text trace with sched_switch, sched_waking/sched_wakeup and
    /// sched_migrate_task events (plain or gzip-compressed).
    #[arg(value_name = "TRACE.txt")]
    pub trace: PathBuf,
    /// Count only tasks with this name (as the trace shows it, at most 15 bytes).
    #[arg(long)]
    pub comm: Option<String>,
    /// Count only this pid.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    pub json: bool,
}

// ---- compare, sweep, merge -----------------------------------------------------------

/// Printed after `schedlab compare --help`'s options.
const COMPARE_HELP: &str = "\
Sources of runs:
  schedlab compare --base SPEC --variant SPEC... [--runs N] <WORKLOAD [FLAGS...]>
  schedlab compare --plan PLAN.toml     the plan's topologies, variants, workloads and seeds
  schedlab compare --from results/      runs stored by `schedlab sweep` (variants by name or SPEC)

One workload goes last, with its own flags (`rtapp examples/rtapp/mixed.json`); give several as
repeated --workload \"hackbench -g 4\" strings (split like a shell does).

SPEC: a kernel preset plus +patch, -patch, FEATURE, NO_FEATURE and key=value tokens, separated by
spaces or commas; the glued form v7.3+next-buddy-eevdf works too. A variant without a preset
applies on top of the base. Every variant runs on the same seeds as the base (common random
numbers): run i uses seed S+i (S from --seed, default 1), or the seeds of --seeds.

%change: positive = better, on the medians over seeds (lower-is-better metrics
100*(base-variant)/base, higher-is-better 100*(variant-base)/base).

(I)/(R) significant improvement/regression: paired t-test on the per-seed differences (Welch's
t-test when base and variant share fewer than 3 seeds), two-sided p < --alpha, |%change| >=
--min-effect, at least 3 runs, and the mean difference points the same way as the median change.
Fewer than 3 runs are never marked.";

/// Printed after `schedlab sweep --help`'s options.
const SWEEP_HELP: &str = "\
Results go to DIR/results.db (SQLite, WAL), one row per run, each committed as it finishes: an
interrupted sweep keeps every finished run and a rerun does only what is missing (runs are keyed
on schedlab version, full SPEC, topology, workload argv, seed, duration and event bound).

--shard I/N (0 <= I < N) runs the runs whose number in the plan is I modulo N; runs are numbered
topology, variant, workload, seed, the seed varying fastest. Give each shard its own --out
directory, then `schedlab merge DIR... --out merged` and `schedlab compare --from merged`.
See examples/sweeps/ for a plan, a Slurm job array and a Kubernetes Indexed Job.";

/// `schedlab compare` flags.
#[derive(Args, Debug)]
#[command(after_long_help = COMPARE_HELP)]
pub struct CompareArgs {
    /// Machine: a preset, smp:N or a topology TOML file (repeatable; default smp:2).
    #[arg(long, value_name = "NAME|FILE")]
    pub topology: Vec<String>,
    /// Runs (seeds) per variant [default: 5].
    #[arg(long)]
    pub runs: Option<usize>,
    /// First seed: run i uses seed S+i [default: 1].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Explicit seeds instead of --seed/--runs, e.g. 1,7,42.
    #[arg(long, value_name = "LIST")]
    pub seeds: Option<String>,
    /// Simulated seconds per run when the workload sets no duration [default: 10].
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Stop each run after this many events [default: 2000000000].
    #[arg(long)]
    pub max_events: Option<u64>,
    /// CPUs every task of every workload may run on (taskset -c syntax, e.g. 78,79).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// A benchmark to run beside every workload, e.g. 'stress-ng --cpu 4' (repeatable); its
    /// metric is compared too.
    #[arg(long, value_name = "COMMAND")]
    pub background: Vec<String>,
    #[command(flatten)]
    pub groups: GroupArgs,
    /// Output: table (plain text columns that paste into an email), box (the same with box
    /// drawing), markdown, csv or json.
    #[arg(long, default_value = "table", value_parser = ["table", "box", "markdown", "csv", "json"])]
    pub format: String,
    /// Significance level of the t-test.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Smallest |% change| (percent) that can be marked significant.
    #[arg(long, default_value_t = 1.0, value_name = "PERCENT")]
    pub min_effect: f64,
    /// The base SPEC (with --plan/--from: a variant name or SPEC; default: the plan's base).
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub base: Option<String>,
    /// A variant SPEC to compare with the base (repeatable; with --plan/--from a name or SPEC).
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub variant: Vec<String>,
    /// A workload command line as one string, e.g. "rtapp examples/rtapp/mixed.json" (repeatable).
    #[arg(long = "workload", value_name = "\"WORKLOAD FLAGS\"")]
    pub workloads: Vec<String>,
    /// Run the plan file's experiment instead of flags.
    #[arg(long, value_name = "PLAN.toml")]
    pub plan: Option<PathBuf>,
    /// Render stored results (a results directory or database) instead of running.
    #[arg(long, value_name = "RESULTS")]
    pub from: Option<PathBuf>,
    /// Worker threads [default: one per CPU]; results do not depend on it.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// No progress on stderr (a bar on a terminal, else a line at most every 10 s).
    #[arg(long, short)]
    pub quiet: bool,
    /// Measure on a real kernel under qemu instead of the model: a Debian kernel package
    /// (linux-image-6.12.117+deb13-amd64, fetched and cached) or a kernel image path (your
    /// bzImage). SPECs are then `default`, FEATURE/NO_FEATURE, preempt=MODEL and sysctls.
    #[arg(long, value_name = "KERNEL")]
    pub vm: Option<String>,
    #[command(flatten)]
    pub vm_opts: VmBootArgs,
    /// With --vm: run schedlab's built-in workers in the guest even where the real tool (rt-tests
    /// hackbench) is in its initramfs. Without it the guest runs the real binary with the
    /// workload's own command line (the ground truth's), every task read at its exit by a
    /// seccomp exit trap.
    #[arg(long)]
    pub builtin: bool,
    /// With --vm: record every measured run with ftrace in the guest (events enabled with vCPUs
    /// 1..N-1 offline; the text comes back over the serial port): the wakeup latency rows.
    #[arg(long)]
    pub trace: bool,
    /// With --vm: also store every boot's run in this results directory (DIR/results.db, as
    /// `schedlab sweep --out`); boots whose run is stored there already are not booted again.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The workload and its own flags: `rtapp FILE.json` (put options before it).
    #[arg(num_args = 0.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
}

/// `schedlab sweep` flags.
#[derive(Args, Debug)]
#[command(after_long_help = SWEEP_HELP)]
pub struct SweepArgs {
    /// The plan file (see examples/sweeps/plan.toml).
    #[arg(value_name = "PLAN.toml")]
    pub plan: PathBuf,
    /// Run only shard I of N (0-based), e.g. --shard $SLURM_ARRAY_TASK_ID/$N.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Results directory (the database is DIR/results.db).
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub out: PathBuf,
    /// Worker threads [default: one per CPU]; results do not depend on it.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// No progress on stderr (a bar on a terminal, else a line at most every 10 s).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Merge results databases (shards) into one, skipping runs already present.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Results directories (or results.db files) to merge.
    #[arg(required = true, value_name = "DIR")]
    pub inputs: Vec<PathBuf>,
    /// The merged results directory (created if needed; runs already there are kept).
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub out: PathBuf,
}

// ---- native, validate, calibrate -----------------------------------------------------

/// `schedlab native`.
#[derive(Args, Debug)]
pub struct NativeArgs {
    /// CPUs every task of the workload may run on (taskset -c syntax, e.g. 0 or 0-1).
    #[arg(long, visible_alias = "cpus", value_name = "LIST")]
    pub pin: Option<String>,
    /// Print one JSON object (the `run --json` schema, `"mode": "native"`).
    #[arg(long)]
    pub json: bool,
    /// Record the scheduler events with ftrace (root; a private tracefs instance) for wakeup
    /// latencies and wakeup placement.
    #[arg(long)]
    pub trace: bool,
    /// Also save the recorded ftrace text to FILE (implies --trace).
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// Per-CPU ftrace buffer in KiB.
    #[arg(long, default_value_t = 32768, value_name = "KIB")]
    pub trace_buffer_kb: u32,
    /// Also print the per-task table.
    #[arg(long)]
    pub tasks: bool,
    /// Run the built-in workers even when the real tool (perf, hackbench, lat_ctx, netperf,
    /// stress-ng) is installed.
    #[arg(long)]
    pub builtin: bool,
    /// Only `host`: native runs this machine's kernel (use `run --kernel SPEC` for the model,
    /// `vm run` for another real kernel).
    #[arg(long, value_name = "SPEC")]
    pub kernel: Option<String>,
    /// The workload and its own flags: `pipe -l 100000`, `hackbench -g 4 -l 100`.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
}

/// `schedlab validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Native runs, and simulated seeds.
    #[arg(long, default_value_t = 5)]
    pub runs: u32,
    /// CPUs every task may run on, natively and in the model (taskset -c syntax).
    #[arg(long, visible_alias = "cpus", value_name = "LIST")]
    pub pin: Option<String>,
    /// Record native runs with ftrace: the wakeup, wakeup latency and wakee placement rows
    /// (the default when running as root).
    #[arg(long)]
    pub trace: bool,
    /// Do not record native runs with ftrace, even as root.
    #[arg(long, conflicts_with = "trace")]
    pub no_trace: bool,
    /// Per-CPU ftrace buffer in KiB.
    #[arg(long, default_value_t = 32768, value_name = "KIB")]
    pub trace_buffer_kb: u32,
    /// The simulated machine.
    #[arg(long, default_value = "host")]
    pub topology: String,
    /// The simulated kernel (`host`: the preset nearest to this kernel, with its HZ and
    /// preemption model).
    #[arg(long, default_value = "host")]
    pub kernel: String,
    /// Scheduler features for the model, debugfs syntax.
    #[arg(long, value_name = "LIST")]
    pub features: Option<String>,
    /// A cost parameter for the model, e.g. context_switch_ns=1500 (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub cost: Vec<String>,
    /// A cost file for the model (e.g. from `schedlab calibrate`).
    #[arg(long, value_name = "FILE")]
    pub cost_file: Option<PathBuf>,
    /// Measure this machine's costs first (`schedlab calibrate`, about 10 s; --calibrate-scale
    /// shortens it) and give them to the model, as --vm does in its guest.
    #[arg(long, conflicts_with = "cost_file")]
    pub calibrate: bool,
    /// First seed of the simulated runs (seeds SEED..SEED+runs).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run the built-in workers natively (with --vm: in the guest) even when the real tool is
    /// installed (in the guest's initramfs).
    #[arg(long)]
    pub builtin: bool,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Validate against a real kernel under qemu instead of this machine's: a Debian kernel
    /// package or a kernel image path. The model then runs the guest's kernel with the costs
    /// `schedlab calibrate` measures in the guest (or --cost-file's).
    #[arg(long, value_name = "KERNEL")]
    pub vm: Option<String>,
    #[command(flatten)]
    pub vm_opts: VmBootArgs,
    /// With --vm or --calibrate: `schedlab calibrate --scale` (its microbenchmarks' iterations;
    /// 0.2 keeps a TCG guest's calibration under a minute on an idle host).
    #[arg(long, value_name = "F")]
    pub calibrate_scale: Option<f64>,
    /// With --vm: also store the guest's runs in this results directory (DIR/results.db), keyed
    /// as `compare --vm` stores them.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The workload and its own flags.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
}

/// `schedlab calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Write the cost file here (default: stdout).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Repetitions of each microbenchmark (the median is used).
    #[arg(long, default_value_t = 5)]
    pub repetitions: usize,
    /// Scales every microbenchmark's iteration count (0.1 for a quick run).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
}

// ---- vm ------------------------------------------------------------------------------

/// The guest-boot options `compare --vm` and `validate --vm` share.
#[derive(Args, Debug, Default)]
pub struct VmBootArgs {
    /// With --vm: repetitions run first in every boot and discarded [default: 1].
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,
    /// With --vm: KVM when /dev/kvm works (auto), or force kvm or tcg (emulation) [default: auto].
    #[arg(long, value_enum)]
    pub accel: Option<AccelArg>,
    /// With --vm: seconds one boot may take before qemu is killed [default: 900].
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// With --vm: echo the guests' consoles on stderr.
    #[arg(long)]
    pub verbose_vm: bool,
    /// With --vm: do not quiet the launching shell's wakee_flips and take vCPUs 1..N-1 offline
    /// and back online right before each run (about 8 s a run). Both are the default because
    /// the ground truth's harness replugged from a quiet shell: the benchmark inherits the
    /// shell's wakee_flips, which decide how often hackbench tries wake_affine.
    #[arg(long)]
    pub no_replug: bool,
    /// With --vm and --trace: write each measured run's ftrace text to DIR/SPEC-seedN.txt (as
    /// `schedlab analyze` reads it).
    #[arg(long, value_name = "DIR")]
    pub trace_out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct VmArgs {
    #[command(subcommand)]
    pub command: VmCommand,
}

#[derive(Subcommand, Debug)]
pub enum VmCommand {
    /// Boot a kernel once per variant and run a workload in it with `schedlab native`, printing
    /// the guest's counters per variant. Options go before the workload.
    Run(VmRunArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum AccelArg {
    /// KVM when /dev/kvm works, TCG otherwise.
    Auto,
    Kvm,
    /// Emulation (multi-threaded TCG), as the ground truth in shared/ground-truth was measured.
    Tcg,
}

#[derive(Args, Debug)]
pub struct VmRunArgs {
    /// A Debian kernel package, fetched with `apt-get download` and cached (only vmlinuz and
    /// its config are kept), e.g. linux-image-6.12.117+deb13-amd64.
    #[arg(long, value_name = "PACKAGE", conflicts_with = "bzimage", required_unless_present = "bzimage")]
    pub kernel_pkg: Option<String>,
    /// A bootable x86-64 kernel image (bzImage, or a distribution's vmlinuz).
    #[arg(long, value_name = "PATH")]
    pub bzimage: Option<PathBuf>,
    /// The guest's CPUs: smp:N.
    #[arg(long, default_value = "smp:2")]
    pub topology: String,
    /// A variant to measure: `default` or feature tokens (NO_WAKEUP_PREEMPTION,PLACE_LAG);
    /// repeat for several. Each variant is a separate boot.
    #[arg(long = "variant", value_name = "SPEC", default_value = "default")]
    pub variants: Vec<String>,
    /// Repetitions of the workload in each boot.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Repetitions run first in each boot and discarded.
    #[arg(long, default_value_t = 0)]
    pub warmup: u32,
    #[arg(long, value_enum, default_value_t = AccelArg::Auto)]
    pub accel: AccelArg,
    /// Seconds one boot may take before qemu is killed.
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub timeout: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Echo the guest's console on stderr.
    #[arg(short, long)]
    pub verbose: bool,
    /// Do not quiet the shell's wakee_flips and replug vCPUs 1..N-1 right before each run (as
    /// compare --vm's --no-replug).
    #[arg(long)]
    pub no_replug: bool,
    /// Start the workload in a session of its own (setsid), as a login shell does: with the
    /// guest's autogroup on, its own task group (the model's `--autogroup on`); by default it
    /// runs in init's session, the root task group, as the ground truth did.
    #[arg(long)]
    pub session: bool,
    /// The workload and its own flags, as for `schedlab native`: `hackbench -p -g 1 -l 200`.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The base: a SPEC (kernel preset plus +patch, -patch, FEATURE, NO_FEATURE, key=value).
    #[arg(long, value_name = "SPEC")]
    pub base: String,
    /// The variant; without a preset its tokens apply on top of the base.
    #[arg(long, value_name = "SPEC")]
    pub variant: String,
    /// Machine: a preset name, smp:N, or a TOML file.
    #[arg(long, default_value = "smp:2")]
    pub topology: String,
    /// Seed of both runs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated seconds when the workload sets no bound.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Stop each run after this many events (a safety bound).
    #[arg(long, default_value_t = 2_000_000_000)]
    pub max_events: u64,
    /// CPUs every workload task may run on (taskset -c syntax).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// A benchmark to run beside the workload, e.g. 'stress-ng --cpu 4' (repeatable).
    #[arg(long, value_name = "COMMAND")]
    pub background: Vec<String>,
    #[command(flatten)]
    pub groups: GroupArgs,
    /// Decisions of context shown before the divergence.
    #[arg(long, default_value_t = 8)]
    pub context: usize,
    /// Decisions of each run shown after the divergence.
    #[arg(long, default_value_t = 6)]
    pub after: usize,
    /// The workload and its own flags (as for `run`).
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
}

// ---- report --------------------------------------------------------------------------

/// `schedlab report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A results database (`results.db`, or the directory holding it) or one or more
    /// `schedlab run --json` files (the first file's variant is the base).
    #[arg(required = true, num_args = 1.., value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,
    /// Length of the per-CPU timeline excerpt in milliseconds of simulated time (0: none).
    #[arg(long, default_value_t = 5.0, value_name = "MS")]
    pub timeline_ms: f64,
    /// Where the excerpt starts, in milliseconds of simulated time (default: 10 ms in, or a
    /// quarter into shorter runs).
    #[arg(long, value_name = "MS")]
    pub timeline_at: Option<f64>,
}

// ---- fidelity ------------------------------------------------------------------------

#[derive(Args, Debug)]
pub struct FidelityArgs {
    /// A ground-truth directory (summary.csv, effects.txt); default: the repository's
    /// data/ground-truth/qemu-2vcpu.
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Seeds per case.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Only these workloads, comma-separated (e.g. pp,hb_pipe).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Only these kernels by release, comma-separated (e.g. 7.3.4).
    #[arg(long, value_delimiter = ',')]
    pub kernels: Option<Vec<String>>,
    /// Print one JSON object instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Write each scored model run's ftrace text into this directory (created if missing), one
    /// file per case and seed, e.g. 7.3.4-default-2cpu-default-pp-n-seed1.txt; read them with
    /// `schedlab analyze` beside the real traces. Use with --workloads/--kernels: a full pass
    /// writes about a thousand files.
    #[arg(long, value_name = "DIR")]
    pub trace: Option<PathBuf>,
}
