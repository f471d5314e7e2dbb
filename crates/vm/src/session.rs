//! A guest kernel ready to boot any number of times: the kernel resolved, the accelerator
//! decided and the initramfs base built once; then [`Session::boot`] runs one [`GuestPlan`]
//! in a fresh qemu (retried once in another fresh boot when the guest oopses) and checks that
//! the agent reported everything it was asked for.

use std::path::PathBuf;
use std::time::Duration;

use crate::VmError;
use crate::cleanup::TempDir;
use crate::console::{self, Console, GuestRun};
use crate::guest::{self, GuestPlan};
use crate::initramfs::{self, Built};
use crate::kernel::{self, Kernel, KernelSource};
use crate::qemu::{self, Accel};
use crate::topology::GuestTopology;

/// The kernel command line: the serial console; warnings and worse only; an oops panics and a
/// panic exits qemu at once (`-no-reboot`); schedstats on, so `/proc/<tid>/sched` has the
/// wakeup counters and `/proc/schedstat` its per-CPU and per-domain ones; the TSC trusted as
/// the clocksource, as in the ground truth's guests.
pub const APPEND: &str = "console=ttyS0 loglevel=4 panic=-1 oops=panic schedstats=enable tsc=reliable";

/// The workload as `schedlab native` parses it in the guest, checked on the host first: a bad
/// flag is a one-line usage error before anything boots, not the guest agent's exit 2 after a
/// boot of seconds to minutes.
pub fn check_workload(workload: &[String], topology: &GuestTopology) -> Result<(), VmError> {
    workload::bench::parse_benchmark_on(workload, topology.nr_cpus())
        .map(|_| ())
        .map_err(|e| VmError::Usage(e.to_string()))
}

/// What a session boots and how.
pub struct SessionOptions {
    pub kernel: KernelSource,
    /// The guest's CPUs (`smp:N`, a preset or a topology file).
    pub topology: GuestTopology,
    pub accel: Accel,
    /// Per boot.
    pub timeout: Duration,
    /// The schedlab binary to put in the guest (the running one, for the cli).
    pub schedlab_bin: PathBuf,
    /// Echo every console line through `note`.
    pub verbose: bool,
    /// Replug vCPUs 1..N-1 right before every run, as the ground truth's harness did
    /// ([`GuestPlan::replug`]); `false` (`--no-replug`) starts the benchmark from a shell that
    /// made no wakeups since boot.
    pub replug: bool,
    /// Run schedlab's built-in workers even where the real tool is in the initramfs
    /// (`--builtin`; [`GuestPlan::builtin`]). Otherwise the guest runs the real tool with the
    /// workload's own command line, its tasks read at their exits by the seccomp exit trap.
    pub builtin: bool,
    /// Record every measured run with ftrace in the guest, this many KiB of buffer per vCPU
    /// ([`GuestPlan::trace_kb`]).
    pub trace_kb: Option<u32>,
}

pub struct Session {
    pub kernel: Kernel,
    pub accel: Accel,
    /// The accelerator was chosen (`--accel auto`): a KVM that fails falls back to TCG.
    auto: bool,
    pub nr_cpus: u32,
    pub topology: GuestTopology,
    /// The check of the guest's sched domains against the topology's, from the first boot that
    /// reported them: (agree, report lines).
    pub domains_check: Option<(bool, Vec<String>)>,
    timeout: Duration,
    verbose: bool,
    dir: TempDir,
    base: Built,
    boots: u32,
}

/// One successful boot.
#[derive(Debug)]
pub struct BootResult {
    pub console: Console,
    /// The measured runs (all of them reported, in order).
    pub runs: Vec<GuestRun>,
    pub boot_secs: Option<f64>,
    pub total_secs: f64,
    /// Console tails of oopsed boots that were retried.
    pub retried: Vec<String>,
}

impl Session {
    pub fn new(opts: &SessionOptions, note: &(dyn Fn(&str) + Sync)) -> Result<Session, VmError> {
        qemu::qemu_binary()?;
        let kernel = kernel::resolve(&opts.kernel)?;
        let accel = opts.accel.resolve();
        let t = &opts.topology;
        note(&format!(
            "vm: kernel {}, {} ({} vCPUs: {} socket(s) x {} die(s) x {} core(s) x {} thread(s), {} node(s)), accelerator {}",
            kernel.label,
            t.name,
            t.nr_cpus(),
            t.sockets,
            t.dies,
            t.cores,
            t.threads,
            t.nodes,
            accel.name()
        ));
        let dir = TempDir::new("initramfs")?;
        let base = initramfs::build(dir.path(), &opts.schedlab_bin)?;
        Ok(Session {
            kernel,
            accel,
            auto: opts.accel == Accel::Auto,
            nr_cpus: opts.topology.nr_cpus(),
            topology: opts.topology.clone(),
            domains_check: None,
            timeout: opts.timeout,
            verbose: opts.verbose,
            dir,
            base,
            boots: 0,
        })
    }

    /// The benchmark binaries the initramfs holds.
    pub fn tools(&self) -> &[String] {
        &self.base.tools
    }

    /// Boots once for `plan` (`label` names it in messages). An oops is retried once in a fresh
    /// boot; a second oops, a timeout, an agent error or a missing report is an error carrying
    /// the console's tail. A guest-side "unknown feature/sysctl/preemption model" is a usage
    /// error (exit 2).
    pub fn boot(&mut self, plan: &GuestPlan, label: &str, note: &(dyn Fn(&str) + Sync)) -> Result<BootResult, VmError> {
        let init = guest::init_script(plan);
        let mut retried = vec![];
        loop {
            self.boots += 1;
            let initrd = self.dir.path().join(format!("boot{}.cpio.gz", self.boots));
            let agent_out = self.dir.path().join(format!("boot{}.agent", self.boots));
            initramfs::with_init(&self.base, &init, &initrd)?;
            let cmd = qemu::command(self.accel, &self.topology, &self.kernel.image, &initrd, APPEND, &agent_out)?;
            let verbose = self.verbose;
            let echo = |l: &str| {
                if verbose {
                    note(l)
                }
            };
            let boot = qemu::boot(cmd, self.timeout, &echo, &agent_out);
            let _ = std::fs::remove_file(&initrd);
            let _ = std::fs::remove_file(&agent_out);
            let boot = boot?;
            if crate::cleanup::interrupted() {
                return Err(VmError::System("interrupted".into()));
            }
            if verbose {
                boot.agent.iter().for_each(|l| note(l));
            }
            if let Some(why) = &boot.kvm_failed {
                if self.auto && self.accel == Accel::Kvm {
                    note(&format!(
                        "vm: KVM cannot run this guest here (qemu: {why}); falling back to TCG (emulation) for this and every later boot"
                    ));
                    self.accel = Accel::Tcg;
                    continue;
                }
                return Err(VmError::System(format!(
                    "KVM cannot run this guest here (qemu: {why}; qemu was killed); use --accel tcg"
                )));
            }
            let c = console::parse(&boot.lines, &boot.agent);
            if let Some(at) = c.oops_at {
                let tail = console::tail(&boot.lines[..(at + 40).min(boot.lines.len())], 60);
                if retried.is_empty() {
                    note(&format!("vm: the guest oopsed ({label}); retrying in a fresh boot. Console:\n{tail}"));
                    retried.push(tail);
                    continue;
                }
                return Err(VmError::Guest(format!("the guest oopsed twice ({label}); console:\n{tail}")));
            }
            if boot.timed_out {
                return Err(VmError::Guest(format!(
                    "the guest did not finish within {} s ({label}); qemu was killed; console tail:\n{}",
                    self.timeout.as_secs(),
                    console::tail(&boot.lines, 30)
                )));
            }
            // A feature, sysctl or model the kernel does not have is the user's to fix.
            if let Some(e) = c.refused.first() {
                return Err(VmError::Usage(format!("{label}: {e}")));
            }
            if let Some(e) = c.errors.first() {
                return Err(VmError::Guest(format!("guest agent: {label}: {e}")));
            }
            for n in &c.notes {
                note(&format!("vm: {label}: {n}"));
            }
            if !c.ended {
                return Err(VmError::Guest(format!(
                    "the guest stopped before its agent finished ({label}); console tail:\n{}",
                    console::tail(&boot.lines, 30)
                )));
            }
            if self.domains_check.is_none()
                && let Some(g) = crate::topology::guest_domains(&c)
            {
                let (ok, lines) = crate::topology::check(&self.topology, &g);
                for l in &lines {
                    note(&format!("vm: {l}"));
                }
                self.domains_check = Some((ok, lines));
            }
            let mut runs = vec![];
            for r in &c.runs {
                runs.push(r.clone().map_err(|e| VmError::Guest(format!("{label}: {e}")))?);
            }
            if runs.len() != plan.runs as usize || c.warmups_ok != plan.warmup {
                return Err(VmError::Guest(format!(
                    "{label}: {} of {} runs and {} of {} warm-up runs reported",
                    runs.len(),
                    plan.runs,
                    c.warmups_ok,
                    plan.warmup
                )));
            }
            if plan.calibrate.is_some() && c.cost_lines.is_empty() {
                return Err(VmError::Guest(format!("{label}: the guest's calibration wrote no cost file")));
            }
            return Ok(BootResult {
                console: c,
                runs,
                boot_secs: boot.boot_secs,
                total_secs: boot.total_secs,
                retried,
            });
        }
    }
}
