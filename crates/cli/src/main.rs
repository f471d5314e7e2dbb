//! The `schedlab` binary: argument parsing and dispatch only. Exit codes: 0 success, 2 bad
//! input (the message names the file, line and field), 3 a run that stopped before its
//! benchmark finished (cut by the time or event limit: no result), 1 internal error.

mod analyze;
mod args;
mod bench;
mod explain_cmd;
mod fidelity;
mod lab_cmd;
mod native_cmd;
mod report;
mod run;
mod setup;
mod tracefile;
mod vm_cmd;

use std::process::ExitCode;

use clap::Parser;
use sim::features::Feature;
use sim::topology::Topology;

use args::{Cli, Command, FeaturesArgs, TopologyCommand};
use setup::{Incomplete, UserError, user};

fn main() -> ExitCode {
    let cli = match args::hoist_options(std::env::args_os().collect()) {
        Ok(argv) => Cli::parse_from(argv),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let result = match &cli.command {
        Command::Run(a) => run::run(a),
        Command::Features(a) => features(a),
        Command::Bench(a) => bench::bench(a),
        Command::Analyze(a) => analyze::analyze(a),
        Command::Topology { command } => topology(command),
        Command::Compare(a) => lab_cmd::compare(a),
        Command::Sweep(a) => lab_cmd::sweep(a),
        Command::Merge(a) => lab_cmd::merge(a),
        Command::Kernels => lab_cmd::kernels(),
        Command::Patches => lab_cmd::patches(),
        Command::Native(a) => native_cmd::native(a),
        Command::Validate(a) => native_cmd::validate(a),
        Command::Vm(a) => vm_cmd::vm(a),
        Command::Calibrate(a) => native_cmd::calibrate(a),
        Command::Explain(a) => explain_cmd::explain(a),
        Command::Report(a) => report::report(a),
        Command::Fidelity(a) => fidelity::fidelity(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<UserError>().is_some() => {
            // One line, whatever the input quoted back contains.
            eprintln!("schedlab: {}", e.to_string().replace('\n', "\\n"));
            ExitCode::from(2)
        }
        Err(e) if e.downcast_ref::<Incomplete>().is_some() => {
            eprintln!("schedlab: {e}");
            ExitCode::from(3)
        }
        Err(e) if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("schedlab: internal error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn features(a: &FeaturesArgs) -> anyhow::Result<()> {
    let mut cfg = setup::kernel_preset(&a.kernel)?;
    if let Some(list) = &a.features
        && let Err(e) = sim::kernel::apply_features(&mut cfg, list)
    {
        return user(format!("--features: {e}"));
    }
    let absent = sim::kernel::absent_features(&cfg.kernel);
    if a.verbose {
        for &f in Feature::ALL.iter().filter(|f| !absent.contains(f)) {
            let name = if cfg.features.has(f) { f.name().to_string() } else { format!("NO_{}", f.name()) };
            println!("{name:<28} {}", f.doc());
        }
    } else {
        println!("{}", sim::kernel::features_line(&cfg.kernel, &cfg.features));
    }
    Ok(())
}

fn topology(c: &TopologyCommand) -> anyhow::Result<()> {
    match c {
        TopologyCommand::List => {
            for t in Topology::presets() {
                println!("{:<16} {:>4} CPUs  {}", t.name, t.nr_cpus(), t.description);
            }
            println!("{:<16} {:>4}       N identical CPUs sharing one cache", "smp:N", "N");
            Ok(())
        }
        TopologyCommand::Show { name } => {
            let args = args::SimArgs {
                topology: name.clone(),
                kernel: "v7.3".into(),
                features: None,
                sysctl: vec![],
                preempt: None,
                hz: None,
                cost: vec![],
                seed: 1,
                cpus: None,
                cost_file: None,
            };
            print!("{}", setup::topology(&args)?.render());
            Ok(())
        }
        TopologyCommand::Host => match machine::host_topology() {
            Ok(t) => {
                print!("{}", t.render());
                let on = if native::host::autogroup_enabled() { "on" } else { "off" };
                println!("autogroup: {on} (/proc/sys/kernel/sched_autogroup_enabled; the --kernel host default)");
                if let Some(note) = native::host::vendor_sysctl_note(&native::host::host_vendor_sched_sysctls()) {
                    println!("{note}");
                }
                Ok(())
            }
            Err(e) => user(format!("topology host: {e}")),
        },
    }
}
