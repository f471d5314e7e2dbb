//! The command line (clap derive). Names follow the brief's command-line contract.

use clap::{Args, Parser, Subcommand};

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
    /// Measure this machine's kernel costs and write a --cost-file.
    Calibrate(crate::native_cmd::CalibrateArgs),
    /// Where two variants first decide differently (wakeup preemption, placement, switch), why,
    /// and what followed.
    Explain(crate::explain::ExplainArgs),
    /// Write a self-contained HTML report (table, SVG charts, per-CPU timeline) from a results
    /// database or `run --json` files.
    Report(crate::report::ReportArgs),
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

#[derive(Args, Debug)]
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
    /// Only run cases whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
}
