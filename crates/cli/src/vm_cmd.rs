//! `schedlab vm`: real kernels under qemu (the logic is in the `vm` crate).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use crate::setup::{UserError, user};

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

#[derive(Clone, Copy, Debug, ValueEnum)]
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
    /// The workload and its own flags, as for `schedlab native`: `hackbench -p -g 1 -l 200`.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
}

pub fn vm(a: &VmArgs) -> anyhow::Result<()> {
    match &a.command {
        VmCommand::Run(r) => vm_run(r),
    }
}

fn vm_run(a: &VmRunArgs) -> anyhow::Result<()> {
    let kernel = match (&a.kernel_pkg, &a.bzimage) {
        (Some(p), _) => vm::KernelSource::DebianPackage(p.clone()),
        (None, Some(p)) => vm::KernelSource::Image(p.clone()),
        (None, None) => return user("vm run: give --kernel-pkg PACKAGE or --bzimage PATH"),
    };
    let variants = a.variants.iter().map(|v| vm::Variant::parse(v)).collect::<Result<Vec<_>, _>>().map_err(vm_error)?;
    let opts = vm::VmOptions {
        kernel,
        nr_cpus: vm::parse_topology(&a.topology).map_err(vm_error)?,
        variants,
        runs: a.runs,
        workload: a.workload.clone(),
        accel: match a.accel {
            AccelArg::Auto => vm::Accel::Auto,
            AccelArg::Kvm => vm::Accel::Kvm,
            AccelArg::Tcg => vm::Accel::Tcg,
        },
        timeout: Duration::from_secs(a.timeout),
        schedlab_bin: std::env::current_exe()?,
        verbose: a.verbose,
    };
    // Ctrl-C, SIGTERM or SIGHUP: kill the qemu by its pid, remove the temporary files, exit 130.
    let _ = ctrlc::set_handler(|| {
        vm::interrupt();
        eprintln!("schedlab: interrupted");
        std::process::exit(130);
    });
    let report = vm::run(&opts, &|m| eprintln!("{m}")).map_err(vm_error)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print!("{}", report.render());
    }
    Ok(())
}

fn vm_error(e: vm::VmError) -> anyhow::Error {
    match e {
        vm::VmError::Usage(m) => UserError(m).into(),
        e => anyhow::anyhow!(e.to_string()),
    }
}
