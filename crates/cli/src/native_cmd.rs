//! `schedlab native`, `schedlab validate` and `schedlab calibrate`: the real kernel of this
//! machine, beside the model (crate `native`).

use std::io::Write;

use serde_json::{Value, json};

use native::procfs::TaskSample;
use native::{NativeError, NativeOptions, NativeRun};

use crate::args::{CalibrateArgs, NativeArgs, SimArgs, ValidateArgs};
use crate::setup::{self, UserError, user};

/// Ctrl-C, SIGTERM or SIGHUP during a native run (the `ctrlc` crate's `termination` feature):
/// kill and reap the children and the real tools' process groups, remove the ftrace instance,
/// exit 130.
fn install_interrupt_handler() {
    let _ = ctrlc::set_handler(|| {
        native::interrupt();
        eprintln!("schedlab: interrupted");
        std::process::exit(130);
    });
}

fn native_error(e: NativeError) -> anyhow::Error {
    native::cleanup::exit_if_interrupted();
    match e {
        NativeError::Usage(m) => UserError(m).into(),
        NativeError::System(m) => anyhow::anyhow!(m),
    }
}

/// `--kernel host` for every command that builds a simulated kernel
/// (`native::host::host_kernel_config`), its notes on stderr.
pub fn host_kernel_config() -> anyhow::Result<sim::config::SchedConfig> {
    match native::host::host_kernel_config() {
        Ok((cfg, notes)) => {
            for n in notes {
                eprintln!("schedlab: {n}");
            }
            Ok(cfg)
        }
        Err(e) => user(format!("--kernel host: {e}")),
    }
}

fn parse_pin(pin: &Option<String>) -> anyhow::Result<Option<Vec<u32>>> {
    match pin {
        Some(list) => {
            let n = native::host::nr_cpus() as u32;
            Ok(Some(setup::cpu_list(list, n).map_err(|e| UserError(e.to_string().replace("--cpus", "--pin")))?))
        }
        None => Ok(None),
    }
}

/// The `run --json` counters of a native run; `null` where this kernel does not count.
struct NativeCounters {
    values: Vec<(&'static str, Option<u64>)>,
    unavailable: Vec<String>,
}

fn counters(r: &NativeRun) -> NativeCounters {
    let sum = |f: &dyn Fn(&TaskSample) -> u64| r.tasks.iter().map(f).sum::<u64>();
    let ss = |k: &str| -> Option<u64> {
        r.schedstats.then(|| r.tasks.iter().map(|t| t.schedstats.get(k).copied().unwrap_or(0)).sum())
    };
    let an = r.analysis.as_ref();
    let mut unavailable = Vec::new();
    let via_trace = |k: &'static str, v: Option<u64>, unavailable: &mut Vec<String>| -> Option<u64> {
        ss(k).or(v).or_else(|| {
            unavailable.push(format!("{k}: schedstats are off on this kernel; run with --trace"));
            None
        })
    };
    let (all, vol, inv) = r.switches();
    let mut values = vec![
        ("nr_switches", Some(all)),
        ("nr_voluntary_switches", Some(vol)),
        ("nr_involuntary_switches", Some(inv)),
        ("nr_migrations", Some(sum(&|t| t.nr_migrations))),
    ];
    values.push(("nr_wakeups", via_trace("nr_wakeups", an.map(|a| a.nr_wakeups), &mut unavailable)));
    let sync = ss("nr_wakeups_sync");
    if sync.is_none() {
        unavailable.push("nr_wakeups_sync: needs schedstats (CONFIG_SCHEDSTATS, kernel.sched_schedstats=1)".into());
    }
    values.push(("nr_wakeups_sync", sync));
    values.push(("nr_wakeups_local", via_trace("nr_wakeups_local", an.map(|a| a.nr_wakeups_local), &mut unavailable)));
    values
        .push(("nr_wakeups_remote", via_trace("nr_wakeups_remote", an.map(|a| a.nr_wakeups_remote), &mut unavailable)));
    for k in ["nr_wakeups_affine", "nr_wakeups_affine_attempts"] {
        let v = ss(k);
        if v.is_none() {
            unavailable.push(format!("{k}: needs schedstats (CONFIG_SCHEDSTATS, kernel.sched_schedstats=1)"));
        }
        values.push((k, v));
    }
    values.push((
        "nr_wakeups_migrate",
        via_trace("nr_wakeups_migrate", an.map(|a| a.nr_wakeups_migrate), &mut unavailable),
    ));
    for k in ["nr_wakeup_preemptions", "nr_tick_preemptions"] {
        unavailable.push(format!("{k}: the kernel keeps no such counter (simulator only)"));
        values.push((k, None));
    }
    if r.resched_ipis.is_none() {
        unavailable.push("nr_ipis: no RES line in /proc/interrupts".into());
    }
    values.push(("nr_ipis", r.resched_ipis));
    NativeCounters { values, unavailable }
}

fn reproduce_native(a: &NativeArgs) -> String {
    let mut cmd = "schedlab native".to_string();
    if let Some(p) = &a.pin {
        cmd += &format!(" --pin {p}");
    }
    if a.trace || a.trace_out.is_some() {
        cmd += " --trace";
    }
    if a.builtin {
        cmd += " --builtin";
    }
    cmd + " " + &a.workload.join(" ")
}

fn pct(p: Option<f64>) -> String {
    p.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

/// `native --kernel SPEC`: only the running kernel can run natively; the error names the two
/// commands that run another kernel.
fn check_native_kernel(spec: Option<&str>) -> anyhow::Result<()> {
    match spec.map(str::trim) {
        None | Some("host") => Ok(()),
        Some(spec) => user(format!(
            "native --kernel `{spec}`: native runs this machine's kernel ({}), which schedlab cannot change; \
             use `schedlab run --kernel '{spec}' WORKLOAD` for the model, or `schedlab vm run --bzimage PATH|--kernel-pkg PKG` \
             for another real kernel",
            native::host::host_release().unwrap_or_else(|_| "?".into())
        )),
    }
}

pub fn native(a: &NativeArgs) -> anyhow::Result<()> {
    check_native_kernel(a.kernel.as_deref())?;
    install_interrupt_handler();
    let pin = parse_pin(&a.pin)?;
    let traced = a.trace || a.trace_out.is_some();
    let opts =
        NativeOptions { pin: pin.clone(), trace_buffer_kb: traced.then_some(a.trace_buffer_kb), builtin: a.builtin };
    let started = std::time::Instant::now();
    let r = native::run_native(&a.workload, &opts).map_err(native_error)?;
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    if let (Some(path), Some(cap)) = (&a.trace_out, &r.trace) {
        std::fs::write(path, &cap.text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    let c = counters(&r);
    let release = native::host::host_release().unwrap_or_default();
    let preset = native::host_kernel_preset().ok();
    let host = native::host::host_sched();
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = json_report(a, &r, &c, &release, preset.as_ref(), &host, wall_ms);
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    write!(out, "{}", r.output)?;
    if !r.output.ends_with('\n') {
        writeln!(out)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "# schedlab {} native: kernel {release} (nearest preset {}), preempt {}, hz {}, {} CPUs{}",
        env!("CARGO_PKG_VERSION"),
        preset.as_ref().map_or("?", |p| p.preset),
        host.preempt.as_deref().unwrap_or("?"),
        host.hz.map_or("?".into(), |h| h.to_string()),
        native::host::nr_cpus(),
        pin.as_ref().map_or(String::new(), |p| format!(", pinned to {p:?}"))
    )?;
    writeln!(out, "# ran: {}", r.runner)?;
    if let Some(n) = &r.note {
        writeln!(out, "# note: {n}")?;
    }
    if let Some(c) = &r.counters {
        writeln!(out, "# counters: {}", c.describe())?;
    }
    if let Some((v, i)) = r.rusage_switches {
        writeln!(out, "# getrusage(RUSAGE_CHILDREN) switches: {} (voluntary {v}, involuntary {i})", v + i)?;
    }
    writeln!(out, "# reproduce: {}", reproduce_native(a))?;
    if a.tasks {
        writeln!(
            out,
            "{:<16} {:>7} {:>4} {:>12} {:>9} {:>9} {:>9} {:>6} {:>12} {:>9}",
            "comm", "pid", "nice", "runtime_ms", "switches", "voluntary", "involunt", "migr", "run_delay_ms", "slices"
        )?;
        for t in &r.tasks {
            writeln!(
                out,
                "{:<16} {:>7} {:>4} {:>12.3} {:>9} {:>9} {:>9} {:>6} {:>12.3} {:>9}",
                t.comm,
                t.pid,
                t.nice,
                t.sum_exec_runtime_ns as f64 / 1e6,
                t.nr_switches,
                t.nr_voluntary_switches,
                t.nr_involuntary_switches,
                t.nr_migrations,
                t.run_delay_ns as f64 / 1e6,
                t.timeslices
            )?;
        }
    }
    let get = |k: &str| c.values.iter().find(|(n, _)| *n == k).and_then(|(_, v)| *v);
    let show = |k: &str| get(k).map_or("n/a".to_string(), |v| v.to_string());
    let ops = r.ops.unwrap_or(get_switches(&r)).max(1) as f64;
    writeln!(
        out,
        "measured {:.6} s, {} tasks, {}",
        r.elapsed_ns as f64 / 1e9,
        r.tasks.len(),
        r.ops.map_or("the tool sized its own run".into(), |n| format!("{n} {}s", r.op_name))
    )?;
    writeln!(
        out,
        "switches {} (voluntary {}, involuntary {}), wakeups {} (local {}, remote {}, migrate {}), migrations {}, IPIs {} (system-wide)",
        show("nr_switches"),
        show("nr_voluntary_switches"),
        show("nr_involuntary_switches"),
        show("nr_wakeups"),
        show("nr_wakeups_local"),
        show("nr_wakeups_remote"),
        show("nr_wakeups_migrate"),
        show("nr_migrations"),
        show("nr_ipis"),
    )?;
    let run_delay: u64 = r.tasks.iter().map(|t| t.run_delay_ns).sum();
    match r.ops {
        Some(_) => writeln!(
            out,
            "per {}: {:.3} switches, {:.3} migrations; run delay {:.3} ms in total",
            r.op_name,
            get("nr_switches").unwrap_or(0) as f64 / ops,
            get("nr_migrations").unwrap_or(0) as f64 / ops,
            run_delay as f64 / 1e6
        )?,
        None => writeln!(
            out,
            "involuntary share {:.3}; run delay {:.3} ms in total",
            get("nr_involuntary_switches").unwrap_or(0) as f64 / ops,
            run_delay as f64 / 1e6
        )?,
    }
    let idle = r
        .idle_ns_per_cpu
        .as_ref()
        .map_or("n/a".into(), |v| v.iter().map(|n| format!("{:.1}", *n as f64 / 1e6)).collect::<Vec<_>>().join(" "));
    match &r.analysis {
        Some(an) => {
            let p = an.wakeup_latency_ns();
            writeln!(
                out,
                "wakeup latency us: p50 {:.1} p90 {:.1} p99 {:.1} max {:.1} (ftrace, 1 us resolution); wakee on waker CPU {}; idle ms per CPU: {idle}",
                p.p50 as f64 / 1e3,
                p.p90 as f64 / 1e3,
                p.p99 as f64 / 1e3,
                p.max as f64 / 1e3,
                pct(an.wakee_on_waker_cpu())
            )?;
            if let Some(cap) = &r.trace
                && cap.dropped + cap.overrun > 0
            {
                writeln!(
                    out,
                    "ftrace: {} events lost (buffer full): the trace rows cover the start of the run only; raise --trace-buffer-kb",
                    cap.dropped + cap.overrun
                )?;
            }
        }
        None => writeln!(out, "wakeup latency: n/a (run with --trace); idle ms per CPU: {idle}")?,
    }
    if !c.unavailable.is_empty() {
        let names: Vec<&str> = c.unavailable.iter().map(|u| u.split(':').next().unwrap_or("")).collect();
        writeln!(out, "unavailable on this kernel: {}", names.join(", "))?;
    }
    Ok(())
}

fn get_switches(r: &NativeRun) -> u64 {
    r.switches().0
}

fn task_json(t: &TaskSample, an: Option<&schedtrace::Analysis>) -> Value {
    let lat = an.and_then(|a| a.tasks.iter().find(|x| x.pid == t.pid)).map(
        |x| json!({ "nr_wakeups": x.nr_wakeups, "avg_delay_ns": x.avg_delay_ns(), "max_delay_ns": x.max_delay_ns }),
    );
    json!({
        "pid": t.pid, "comm": t.comm, "nice": t.nice,
        "sum_exec_runtime_ns": t.sum_exec_runtime_ns,
        "nr_switches": t.nr_switches,
        "nr_voluntary_switches": t.nr_voluntary_switches,
        "nr_involuntary_switches": t.nr_involuntary_switches,
        "nr_migrations": t.nr_migrations,
        "nr_wakeups": t.schedstats.get("nr_wakeups").copied().or_else(|| lat.as_ref().map(|l| l["nr_wakeups"].as_u64().unwrap_or(0))),
        "run_delay_ns": t.run_delay_ns,
        "timeslices": t.timeslices,
        "trace": lat,
    })
}

#[allow(clippy::too_many_arguments)]
fn json_report(
    a: &NativeArgs,
    r: &NativeRun,
    c: &NativeCounters,
    release: &str,
    preset: Option<&native::KernelMatch>,
    host: &native::host::HostSched,
    wall_ms: f64,
) -> Value {
    let mut counters = serde_json::Map::new();
    for (k, v) in &c.values {
        counters.insert((*k).to_string(), json!(v));
    }
    counters.insert("idle_ns_per_cpu".into(), json!(r.idle_ns_per_cpu));
    counters.insert("run_delay_ns".into(), json!(r.tasks.iter().map(|t| t.run_delay_ns).sum::<u64>()));
    counters.insert("timeslices".into(), json!(r.tasks.iter().map(|t| t.timeslices).sum::<u64>()));
    let lat = match &r.analysis {
        Some(an) => {
            let p = an.wakeup_latency_ns();
            json!({ "p50": p.p50, "p90": p.p90, "p99": p.p99, "max": p.max })
        }
        None => json!({ "p50": null, "p90": null, "p99": null, "max": null }),
    };
    let topology = machine::host_topology().map(|t| t.name).unwrap_or_else(|_| "host".into());
    json!({
        "schedlab_version": env!("CARGO_PKG_VERSION"),
        "mode": "native",
        "seed": null,
        "command": reproduce_native(a),
        "topology": topology,
        "kernel": release,
        "kernel_preset": preset.map(|p| p.preset),
        "preempt": host.preempt,
        "hz": host.hz,
        "features": null,
        "patches": [],
        "sysctl": null,
        "workload": { "name": r.workload.name, "argv": r.workload.argv },
        "metric": { "name": r.workload.metric.name, "value": r.metric, "better": r.workload.metric.better.as_str() },
        "native": {
            "elapsed_ns": r.elapsed_ns,
            "start_mono_ns": r.start_mono_ns,
            "end_mono_ns": r.end_mono_ns,
            "wall_ms": (wall_ms * 1000.0).round() / 1000.0,
            "ops": r.ops,
            "op": r.op_name,
            "runner": r.runner,
            "note": r.note,
            "counters": r.counters.as_ref().map(|c| match c {
                native::tools::CounterSource::ExitTrap { exits } => json!({ "read": "exit-trap", "exits": exits }),
                native::tools::CounterSource::Sampled(why) => json!({ "read": "sampled", "why": why }),
            }),
            "rusage_switches": r.rusage_switches.map(|(v, i)| json!({ "voluntary": v, "involuntary": i })),
            "pin": parse_pin(&a.pin).ok().flatten(),
            "schedstats": r.schedstats,
            "trace": r.trace.as_ref().map(|t| json!({
                "records": r.analysis.as_ref().map(|an| an.records),
                "lost_events": t.dropped + t.overrun,
                "wakee_on_waker_cpu": r.analysis.as_ref().and_then(|an| an.wakee_on_waker_cpu()),
            })),
            "unavailable": c.unavailable,
        },
        "sim": null,
        "counters": counters,
        "wakeup_latency_ns": lat,
        "tasks": r.tasks.iter().map(|t| task_json(t, r.analysis.as_ref())).collect::<Vec<_>>(),
    })
}

pub fn validate(a: &ValidateArgs) -> anyhow::Result<()> {
    if let Some(kernel) = &a.vm {
        return crate::vm_cmd::validate_vm(a, kernel);
    }
    a.vm_opts.refuse_without_vm()?;
    if a.calibrate_scale.is_some() && !a.calibrate {
        return user("--calibrate-scale: only with --calibrate or --vm KERNEL");
    }
    if a.out.is_some() {
        return user("--out: only with --vm KERNEL (the guest's runs are stored; this machine's are not)");
    }
    install_interrupt_handler();
    if a.runs == 0 {
        return user("--runs: must be at least 1");
    }
    let pin = parse_pin(&a.pin)?;
    let sim_args = SimArgs {
        topology: a.topology.clone(),
        kernel: a.kernel.clone(),
        features: a.features.clone(),
        sysctl: vec![],
        preempt: None,
        hz: None,
        cost: a.cost.clone(),
        seed: a.seed,
        cpus: a.pin.clone(),
        cost_file: a.cost_file.clone(),
    };
    let config = setup::sched_config(&sim_args)?;
    let topology =
        if a.calibrate { calibrated_topology(&sim_args, a.calibrate_scale)? } else { setup::topology(&sim_args)? };
    let cpus = match &a.pin {
        Some(list) => Some(setup::cpu_list(list, topology.nr_cpus() as u32)?),
        None => None,
    };
    let req = native::validate::HostRequest {
        workload: a.workload.clone(),
        runs: a.runs,
        pin_text: a.pin.clone(),
        pin,
        trace: if a.trace {
            Some(true)
        } else if a.no_trace {
            Some(false)
        } else {
            None
        },
        trace_buffer_kb: a.trace_buffer_kb,
        builtin: a.builtin,
        kernel: a.kernel.clone(),
        config,
        topology,
        seed: a.seed,
        cpus,
        cost_file: a.cost_file.clone(),
        calibrated: a.calibrate,
    };
    let progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let v = native::validate::validate_host(req, |i| {
        if progress {
            eprint!("\rnative run {}/{}", i + 1, a.runs);
        }
    })
    .map_err(|e| match e {
        native::validate::ValidateError::Model(m) => UserError(m).into(),
        native::validate::ValidateError::Native(e) => native_error(e),
    })?;
    if progress {
        eprintln!();
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&v.to_json())?)?;
    } else {
        write!(out, "{}", v.render())?;
    }
    Ok(())
}

/// This machine's topology, whether it is a VM guest, and the cost keys a calibration sets
/// (the VM's cross-CPU ping-pong measures waking a halted vCPU, bare metal's the IPI).
fn measured_keys(
    cal: &native::calibrate::Calibration,
) -> anyhow::Result<(sim::topology::Topology, Option<machine::VmGuest>, Vec<native::calibrate::KeyValue>)> {
    let topo = machine::host_topology().map_err(|e| UserError(format!("calibrate: topology host: {e}")))?;
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok();
    let vm = machine::vm_guest(std::path::Path::new("/sys"), cpuinfo.as_deref());
    let keys = cal.keys(&topo.costs, vm.is_some());
    Ok((topo, vm, keys))
}

/// `validate --calibrate`: the model's machine with this machine's costs measured now (what
/// `schedlab calibrate` would write), then `--cost` on top, as a cost file is applied.
fn calibrated_topology(sim_args: &SimArgs, scale: Option<f64>) -> anyhow::Result<sim::topology::Topology> {
    let scale = scale.unwrap_or(1.0);
    if !(scale > 0.0 && scale <= 100.0) {
        return user(format!("--calibrate-scale: {scale} is not in (0, 100]"));
    }
    let opts = native::calibrate::CalibrateOptions { repetitions: 5, scale };
    eprintln!("schedlab: validate: measuring this machine's costs (schedlab calibrate)");
    let cal = native::calibrate::calibrate(&opts).map_err(|e| {
        native::cleanup::exit_if_interrupted();
        anyhow::anyhow!(e)
    })?;
    if let Some(w) = cal.load.and_then(|l| l.warning()) {
        eprintln!("schedlab: calibrate: {w}");
    }
    let (_, _, keys) = measured_keys(&cal)?;
    let mut topology = setup::topology(&SimArgs { cost: Vec::new(), ..sim_args.clone() })?;
    for k in keys {
        topology.costs.set(k.key, k.ns).map_err(|e| anyhow::anyhow!("calibrate: {e}"))?;
    }
    setup::apply_costs(&mut topology, &sim_args.cost)?;
    Ok(topology)
}

pub fn calibrate(a: &CalibrateArgs) -> anyhow::Result<()> {
    install_interrupt_handler();
    if a.repetitions == 0 || !(a.scale > 0.0 && a.scale <= 100.0) {
        return user("calibrate: --repetitions must be at least 1 and --scale in (0, 100]");
    }
    let opts = native::calibrate::CalibrateOptions { repetitions: a.repetitions, scale: a.scale };
    let cal = native::calibrate::calibrate(&opts).map_err(|e| {
        native::cleanup::exit_if_interrupted();
        anyhow::anyhow!(e)
    })?;
    let (topo, vm, keys) = measured_keys(&cal)?;
    let release = native::host::host_release().unwrap_or_default();
    let mut notes = Vec::new();
    // Check: the model's process ping-pong with these costs, pinned (rt_pinned_processes) and
    // across the two CPUs (rt_cross_processes: the halted-vCPU or IPI path).
    let mut t = topo.clone();
    for k in &keys {
        let _ = t.costs.set(k.key, k.ns);
    }
    let checks =
        [("rt_pinned_processes", "20000", Some(vec![0]), " --cpus 0"), ("rt_cross_processes", "5000", None, "")];
    for (name, loops, cpus, flag) in checks {
        let Some(rt) = cal.get(name) else { continue };
        match host_kernel_config() {
            Ok(cfg) => {
                let req = lab::runner::RunRequest {
                    variant: sim::kernel::Variant { spec: "host".into(), config: cfg, patches: vec![] },
                    topology: t.clone(),
                    workload: ["pipe", "--classic", "-l", loops].map(String::from).to_vec(),
                    seed: 1,
                    default_duration_ns: 10_000_000_000,
                    max_events: 200_000_000,
                    cpus,
                };
                if let Ok(rec) = lab::runner::run_one(&req) {
                    notes.push(format!(
                        "check: the model's `pipe --classic -l {loops}{flag}` with these costs: {:.0} ns per round trip (native {name} {:.0} ns)",
                        rec.metric * 1e3,
                        rt.ns
                    ));
                }
            }
            Err(e) => notes.push(format!("check skipped: {e}")),
        }
    }
    let h = native::host::host_sched();
    let context = format!(
        "host: {} CPUs, kernel {release}, preempt {}, hz {}; topology {}\n{}\n\
         base values for the formulas (not measured): {}wakeup_remote_ipi_ns {}, {}",
        cal.nr_cpus,
        h.preempt.as_deref().unwrap_or("?"),
        h.hz.map_or("?".into(), |x| x.to_string()),
        topo.name,
        match &vm {
            Some(v) => format!(
                "VM guest ({}{}): the cross-CPU ping-pong measures waking a halted vCPU (idle_exit_ns_*)",
                v.signals.join(", "),
                v.halt_poll_ns.map_or(String::new(), |n| format!(", guest_halt_poll_ns {n}"))
            ),
            None => "bare metal: the cross-CPU ping-pong measures the IPI's receipt (ipi_receive_ns)".to_string(),
        },
        match cal.get("wake_pinned") {
            Some(_) => String::new(),
            None => format!("wakeup_local_ns {}, ", topo.costs.wakeup_local_ns),
        },
        topo.costs.wakeup_remote_ipi_ns,
        if vm.is_some() {
            format!("ipi_receive_ns {}", topo.costs.ipi_receive_ns)
        } else {
            format!("idle_exit_ns_c1 {}", topo.costs.idle_exit_ns_c1)
        }
    );
    if let Some(w) = cal.load.and_then(|l| l.warning()) {
        eprintln!("schedlab: calibrate: {w}");
    }
    let text = cal.to_toml(&keys, &context, &notes);
    match &a.output {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            eprint!(
                "{}",
                text.lines()
                    .filter(|l| l.starts_with("#   ") || l.starts_with("# check") || l.starts_with("# load"))
                    .map(|l| format!("{l}\n"))
                    .collect::<String>()
            );
            eprintln!("wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}
