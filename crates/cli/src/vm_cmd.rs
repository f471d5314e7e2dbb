//! `schedlab vm`: real kernels under qemu (the logic is in the `vm` crate).

use std::time::Duration;

use crate::args::{AccelArg, VmArgs, VmCommand, VmRunArgs};
use crate::setup::{UserError, user};

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
