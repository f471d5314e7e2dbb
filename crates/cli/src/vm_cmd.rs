//! `schedlab vm run`, `compare --vm` and `validate --vm`: real kernels under qemu (the logic is
//! in the `vm` crate; this file maps flags to requests and errors to exit codes).

use std::path::PathBuf;
use std::time::Duration;

use lab::compare::CompareOptions;
use lab::report::{self, Format};

use crate::args::{AccelArg, CompareArgs, ValidateArgs, VmArgs, VmBootArgs, VmCommand, VmRunArgs};
use crate::setup::{UserError, user};

pub fn vm(a: &VmArgs) -> anyhow::Result<()> {
    match &a.command {
        VmCommand::Run(r) => vm_run(r),
    }
}

impl VmBootArgs {
    /// These options mean nothing without --vm: say so rather than ignore them.
    pub fn refuse_without_vm(&self) -> anyhow::Result<()> {
        for (flag, given) in [
            ("--warmup", self.warmup.is_some()),
            ("--accel", self.accel.is_some()),
            ("--timeout", self.timeout.is_some()),
            ("--verbose-vm", self.verbose_vm),
            ("--no-replug", self.no_replug),
            ("--trace-out", self.trace_out.is_some()),
        ] {
            if given {
                return user(format!("{flag}: only with --vm KERNEL"));
            }
        }
        Ok(())
    }

    fn session(
        &self,
        kernel: vm::KernelSource,
        topology: vm::topology::GuestTopology,
        trace: bool,
        trace_kb: u32,
        builtin: bool,
    ) -> anyhow::Result<vm::SessionOptions> {
        if self.trace_out.is_some() && !trace {
            return user("--trace-out: only with --trace");
        }
        Ok(vm::SessionOptions {
            kernel,
            topology,
            accel: accel(self.accel.unwrap_or(AccelArg::Auto)),
            timeout: Duration::from_secs(self.timeout.unwrap_or(900)),
            schedlab_bin: std::env::current_exe()?,
            verbose: self.verbose_vm,
            replug: !self.no_replug,
            builtin,
            trace_kb: trace.then_some(trace_kb),
        })
    }
}

fn accel(a: AccelArg) -> vm::Accel {
    match a {
        AccelArg::Auto => vm::Accel::Auto,
        AccelArg::Kvm => vm::Accel::Kvm,
        AccelArg::Tcg => vm::Accel::Tcg,
    }
}

fn kernel_source(arg: &str) -> vm::KernelSource {
    vm::KernelSource::from_arg(arg)
}

/// `--out DIR` with --vm: the results store the runs go to.
fn store(out: &Option<PathBuf>) -> anyhow::Result<Option<lab::store::Store>> {
    out.as_deref().map(lab::store::Store::create).transpose().map_err(crate::setup::lab_err)
}

/// Ctrl-C, SIGTERM or SIGHUP: kill the qemu by its pid, remove the temporary files, exit 130.
fn on_interrupt() {
    let _ = ctrlc::set_handler(|| {
        vm::interrupt();
        eprintln!("schedlab: interrupted");
        std::process::exit(130);
    });
}

fn vm_run(a: &VmRunArgs) -> anyhow::Result<()> {
    let kernel = match (&a.kernel_pkg, &a.bzimage) {
        (Some(p), _) => vm::KernelSource::DebianPackage(p.clone()),
        (None, Some(p)) => vm::KernelSource::Image(p.clone()),
        (None, None) => return user("vm run: give --kernel-pkg PACKAGE or --bzimage PATH"),
    };
    let variants = a.variants.iter().map(|v| vm::Variant::parse(v)).collect::<Result<Vec<_>, _>>().map_err(vm_error)?;
    let opts = vm::VmOptions {
        session: vm::SessionOptions {
            kernel,
            topology: vm::parse_topology(&a.topology).map_err(vm_error)?,
            accel: accel(a.accel),
            timeout: Duration::from_secs(a.timeout),
            schedlab_bin: std::env::current_exe()?,
            verbose: a.verbose,
            replug: !a.no_replug,
            builtin: false,
            trace_kb: None,
        },
        variants,
        runs: a.runs,
        warmup: a.warmup,
        workload: a.workload.clone(),
        own_session: a.session,
    };
    on_interrupt();
    let report = vm::run(&opts, &|m| eprintln!("{m}")).map_err(vm_error)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print!("{}", report.render());
    }
    Ok(())
}

/// `schedlab compare --vm KERNEL`.
pub fn compare_vm(a: &CompareArgs, kernel: &str, opts: CompareOptions, format: Format) -> anyhow::Result<()> {
    for (flag, given) in [
        ("--plan", a.plan.is_some()),
        ("--from", a.from.is_some()),
        ("--seeds", a.seeds.is_some()),
        ("--duration", a.duration.is_some()),
        ("--max-events", a.max_events.is_some()),
        ("--cpus", a.cpus.is_some()),
        ("--background", !a.background.is_empty()),
        ("--autogroup", a.groups.autogroup.is_some()),
        ("--cgroup", a.groups.cgroup.is_some()),
        ("--cgroup-weight", !a.groups.cgroup_weight.is_empty()),
        ("--jobs", a.jobs.is_some()),
    ] {
        if given {
            return user(format!("{flag}: not with --vm (a guest runs one workload, boot by boot)"));
        }
    }
    let Some(base) = &a.base else { return user("--base: give the base SPEC (e.g. --base default)") };
    let topology = match a.topology.as_slice() {
        [] => "smp:2",
        [t] => t.as_str(),
        _ => return user("--topology: one machine with --vm"),
    };
    let mut workload = a.workload.clone();
    match (a.workloads.as_slice(), workload.is_empty()) {
        ([], false) => {}
        ([w], true) => workload = lab::words::split(w).map_err(|e| UserError(format!("--workload: {e}")))?,
        ([], true) => return user("no workload given (e.g. `hackbench -p -g 1 -l 200` after the options)"),
        _ => return user("--workload: one workload with --vm"),
    }
    let req = vm::compare::CompareRequest {
        session: a.vm_opts.session(
            kernel_source(kernel),
            vm::parse_topology(topology).map_err(vm_error)?,
            a.trace,
            vm::guest::TRACE_KB,
            a.builtin,
        )?,
        vm_arg: kernel.to_string(),
        base: base.clone(),
        variants: a.variant.clone(),
        runs: a.runs.unwrap_or(3) as u32,
        warmup: a.vm_opts.warmup.unwrap_or(1),
        seed: a.seed.unwrap_or(1),
        workload,
        options: opts,
        trace_out: a.vm_opts.trace_out.clone(),
    };
    let store = store(&a.out)?;
    on_interrupt();
    let quiet = a.quiet;
    let r = vm::compare::compare(&req, store.as_ref(), &|m| {
        if !quiet {
            eprintln!("{m}")
        }
    })
    .map_err(vm_error)?;
    let mut text = report::render(&r.comparison, format);
    if matches!(format, Format::Table | Format::Box | Format::Markdown) {
        text += &r.render_schedstat(format == Format::Markdown);
    }
    print!("{text}");
    Ok(())
}

/// `schedlab validate --vm KERNEL`.
pub fn validate_vm(a: &ValidateArgs, kernel: &str) -> anyhow::Result<()> {
    for (flag, given) in [("--pin", a.pin.is_some()), ("--kernel", a.kernel != "host")] {
        if given {
            return user(format!(
                "{flag}: not with --vm (the guest runs schedlab's own workers on all its vCPUs; the model runs the guest's kernel)"
            ));
        }
    }
    let topology = if a.topology == "host" { "smp:2" } else { a.topology.as_str() };
    let mut costs = Vec::new();
    if let Some(file) = &a.cost_file {
        costs = machine::load_cost_file(file).map_err(|e| UserError(format!("--cost-file: {e}")))?;
    }
    for kv in &a.cost {
        let parsed = kv.split_once('=').and_then(|(k, v)| Some((k.trim().to_string(), v.trim().parse::<u64>().ok()?)));
        match parsed {
            Some(c) => costs.push(c),
            None => return user(format!("--cost: `{kv}` is not KEY=NANOSECONDS")),
        }
    }
    let req = vm::validate::ValidateRequest {
        session: a.vm_opts.session(
            kernel_source(kernel),
            vm::parse_topology(topology).map_err(vm_error)?,
            a.trace,
            a.trace_buffer_kb,
            a.builtin,
        )?,
        runs: a.runs,
        warmup: a.vm_opts.warmup.unwrap_or(1),
        workload: a.workload.clone(),
        variant: a.features.clone().unwrap_or_else(|| "default".into()),
        calibrate: a.cost_file.is_none(),
        calibrate_scale: match a.calibrate_scale {
            Some(f) if f > 0.0 && f <= 100.0 => f,
            Some(f) => return user(format!("--calibrate-scale: {f} is not in (0, 100]")),
            None => 0.2,
        },
        costs,
        seed: a.seed,
        trace_out: a.vm_opts.trace_out.clone(),
    };
    on_interrupt();
    let store = store(&a.out)?;
    let v = vm::validate::validate(&req, store.as_ref(), &|m| eprintln!("{m}")).map_err(vm_error)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&v.to_json())?);
    } else {
        print!("{}", v.render_report(&a.workload));
    }
    Ok(())
}

pub fn vm_error(e: vm::VmError) -> anyhow::Error {
    match e {
        vm::VmError::Usage(m) => UserError(m).into(),
        e => anyhow::anyhow!(e.to_string()),
    }
}
