//! The command line (clap derive). Names follow the brief's command-line contract.

use clap::{Args, CommandFactory, Parser, Subcommand};

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
    Analyze(crate::analyze::AnalyzeArgs),
    /// List and show machine topologies.
    Topology {
        #[command(subcommand)]
        command: TopologyCommand,
    },
    /// Compare variants on workloads over seeds: medians, % change, (I)/(R) significance marks.
    Compare(crate::lab_cmd::CompareArgs),
    /// Run a plan (topologies x variants x workloads x seeds) into a results database.
    Sweep(crate::lab_cmd::SweepArgs),
    /// Merge results databases (e.g. shards of a sweep) into one.
    Merge(crate::lab_cmd::MergeArgs),
    /// List the kernel presets, one per line: name and summary.
    Kernels,
    /// List the named patches: name, summary, reference.
    Patches,
    /// Run a workload for real on this machine's kernel: the tool's output, /proc counters,
    /// ftrace wakeup latencies (--trace).
    Native(crate::native_cmd::NativeArgs),
    /// Native runs beside simulated seeds on --topology host --kernel host, side by side.
    Validate(crate::native_cmd::ValidateArgs),
    /// Real kernels under qemu: boot a Debian kernel package or a bzImage and run a workload per variant.
    Vm(crate::vm_cmd::VmArgs),
    /// Measure this machine's kernel costs and write a --cost-file.
    Calibrate(crate::native_cmd::CalibrateArgs),
    /// Where two variants first decide differently (wakeup preemption, placement, switch), why,
    /// and what followed.
    Explain(crate::explain::ExplainArgs),
    /// Write a self-contained HTML report (table, SVG charts, per-CPU timeline) from a results
    /// database or `run --json` files.
    Report(crate::report::ReportArgs),
    /// Score the model against real-kernel measurements (a ground-truth directory): effects in
    /// direction and within 2x, default-variant metrics in the real range and within 1.5x.
    Fidelity(crate::fidelity::FidelityArgs),
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
    pub cost_file: Option<std::path::PathBuf>,
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
    /// Check every scheduler invariant after every event (slow).
    #[arg(long)]
    pub check: bool,
    /// Also print the per-task table for benchmarks (always printed for rt-app files).
    #[arg(long)]
    pub tasks: bool,
    /// A benchmark to run beside the workload in the same simulation, with its own flags,
    /// e.g. --background 'stress-ng --cpu 4' (repeatable).
    #[arg(long, value_name = "COMMAND")]
    pub background: Vec<String>,
    /// Write the scheduler trace to FILE.txt (ftrace text) or FILE.pftrace (Perfetto).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// Turn progress reports on stderr off.
    #[arg(long, short)]
    pub quiet: bool,
    /// The workload and its own flags: `rtapp FILE.json`.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
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
    /// Also run the scaling series (tasks 10..10,000 on smp:4; 2..512 CPUs with 1000 tasks;
    /// 1..100 simulated s) and print each case's CPU time per event as a ratio to the smallest
    /// of its series, with the process's peak RSS per case.
    #[arg(long)]
    pub scaling: bool,
    /// Also run an installed scxsim (sched-ext/scx `simulator.v3`, `rust/scx_simulator`) and
    /// schedlab on the same rt-app files in interleaved pairs and print the CPU-time ratio.
    #[arg(long, value_name = "PATH")]
    pub compare_scxsim: Option<std::path::PathBuf>,
    /// Pairs per input for `--compare-scxsim` (the median is printed).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub pairs: u32,
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
