//! One boot: `qemu-system-x86_64` with the kernel and initramfs, the serial console captured
//! from its stdout, killed by its own pid on timeout (and by [`crate::cleanup::interrupt`] on
//! Ctrl-C/SIGTERM).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::VmError;
use crate::guest::MARK;

/// How the guest's CPUs are executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// KVM when `/dev/kvm` answers, TCG otherwise.
    Auto,
    Kvm,
    /// qemu's emulator, one host thread per vCPU (`-accel tcg,thread=multi`).
    Tcg,
}

impl Accel {
    /// [`Accel::Auto`] decided: KVM when `/dev/kvm` opens read-write and answers
    /// `KVM_GET_API_VERSION` with 12 (the stable API).
    pub fn resolve(self) -> Accel {
        match self {
            Accel::Auto if kvm_works() => Accel::Kvm,
            Accel::Auto => Accel::Tcg,
            a => a,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Accel::Auto => "auto",
            Accel::Kvm => "KVM",
            Accel::Tcg => "TCG (emulation, no KVM: CPU work runs 20-50x slower than native)",
        }
    }
}

fn kvm_works() -> bool {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm") else {
        return false;
    };
    // KVM_GET_API_VERSION = _IO(0xAE, 0x00)
    // SAFETY: an argument-less ioctl on a file descriptor we own.
    let v = unsafe { libc::ioctl(f.as_raw_fd(), 0xAE00 as _, 0) };
    v == 12
}

/// What one boot left on the console and the agent's port.
#[derive(Debug)]
pub struct Boot {
    /// The kernel console (ttyS0), with qemu's own stderr lines prefixed `qemu: `.
    pub lines: Vec<String>,
    /// The agent's port (ttyS1).
    pub agent: Vec<String>,
    /// Host seconds from qemu's start to the guest agent's first line (kernel boot and
    /// initramfs unpacking).
    pub boot_secs: Option<f64>,
    pub total_secs: f64,
    pub timed_out: bool,
    /// qemu's report that KVM could not run the guest ("emulation failure", "KVM internal
    /// error"): qemu then pauses the VM forever, so it was killed at once.
    pub kvm_failed: Option<String>,
}

/// qemu's stderr lines that mean KVM stopped the guest for good: a nested or partial KVM that
/// answers `/dev/kvm` but cannot emulate an instruction the guest uses, or refuses the vCPU's
/// MSRs at start (`kvm_buf_set_msrs` aborts qemu: seen in a KVM guest whose host hides
/// `IA32_ARCH_CAPABILITIES`, MSR 0x10a).
fn is_kvm_failure(line: &str) -> bool {
    line.contains("emulation failure")
        || line.contains("KVM internal error")
        || line.contains("failed to set MSR")
        || line.contains("kvm_buf_set_msrs")
}

pub fn qemu_binary() -> Result<&'static str, VmError> {
    let bin = "qemu-system-x86_64";
    let found =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join(bin).is_file())).unwrap_or(false);
    if found {
        Ok(bin)
    } else {
        Err(VmError::Usage(format!("{bin} is not installed: install it with `apt-get install qemu-system-x86`")))
    }
}

/// Guest memory, MiB, of a guest without NUMA nodes.
pub const GUEST_MIB: u32 = 512;

/// The qemu command line for one boot: ttyS0 on qemu's stdout, ttyS1 into `agent_out`; the
/// CPUs, sockets, threads and nodes of `topology`.
pub fn command(
    accel: Accel,
    topology: &crate::topology::GuestTopology,
    kernel: &Path,
    initrd: &Path,
    append: &str,
    agent_out: &Path,
) -> Result<Command, VmError> {
    let mut c = Command::new(qemu_binary()?);
    match accel {
        Accel::Kvm => c.args(["-accel", "kvm", "-cpu", "host"]),
        _ => c.args(["-accel", "tcg,thread=multi"]),
    };
    c.args(topology.qemu_args())
        .arg("-m")
        .arg(format!("{}M", topology.memory_mib()))
        .args(["-display", "none", "-vga", "none", "-monitor", "none", "-serial", "stdio"])
        .arg("-serial")
        .arg(format!("file:{}", agent_out.display()))
        .args(["-nic", "none", "-no-reboot", "-kernel"])
        .arg(kernel)
        .arg("-initrd")
        .arg(initrd)
        .arg("-append")
        .arg(append);
    Ok(c)
}

/// Runs `cmd` (from [`command`], whose agent file is `agent_out`) to its end or `timeout`;
/// every console line is also passed to `echo` (progress).
pub fn boot(
    mut cmd: Command,
    timeout: Duration,
    echo: &(dyn Fn(&str) + Sync),
    agent_out: &Path,
) -> Result<Boot, VmError> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| VmError::System(format!("starting qemu: {e}")))?;
    let pid = child.id();
    crate::cleanup::register_pid(pid);
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let first_mark = Arc::new(Mutex::new(None::<f64>));
    let kvm_failed = Arc::new(Mutex::new(None::<String>));
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        crate::cleanup::unregister_pid(pid);
        return Err(VmError::System("qemu started without its piped output".into()));
    };
    let result = std::thread::scope(|s| {
        let (l, fm) = (lines.clone(), first_mark.clone());
        s.spawn(move || {
            let mut r = BufReader::new(stdout);
            let mut buf = Vec::new();
            while r.read_until(b'\n', &mut buf).map(|n| n > 0).unwrap_or(false) {
                let line = String::from_utf8_lossy(&buf).trim_end_matches(['\r', '\n']).to_string();
                buf.clear();
                if line.starts_with(MARK) {
                    fm.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .get_or_insert(start.elapsed().as_secs_f64());
                }
                echo(&line);
                l.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(line);
            }
        });
        let (l, kf) = (lines.clone(), kvm_failed.clone());
        s.spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if is_kvm_failure(&line) {
                    kf.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(line.clone());
                }
                l.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(format!("qemu: {line}"));
            }
        });
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break Ok(false),
                Ok(None) if kvm_failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).is_some() => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Ok(false);
                }
                Ok(None) if start.elapsed() >= timeout => {
                    // By pid: the Child still owns it (not reaped), so it is our qemu.
                    let _ = child.kill();
                    let _ = child.wait();
                    break Ok(true);
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(VmError::System(format!("waiting for qemu: {e}")));
                }
            }
        }
    });
    crate::cleanup::unregister_pid(pid);
    let timed_out = result?;
    let lines = std::mem::take(&mut *lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    let boot_secs = *first_mark.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // The serial port's bytes as the guest wrote them: "\r\n" line ends (the tty's ONLCR).
    let agent = std::fs::read(agent_out)
        .map(|b| String::from_utf8_lossy(&b).lines().map(|l| l.trim_end_matches('\r').to_string()).collect())
        .unwrap_or_default();
    let kvm_failed = kvm_failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    Ok(Boot { lines, agent, boot_secs, total_secs: start.elapsed().as_secs_f64(), timed_out, kvm_failed })
}

#[cfg(test)]
mod kvm_failure_tests {
    use super::is_kvm_failure;

    #[test]
    fn known_kvm_failures_are_recognised() {
        assert!(is_kvm_failure("qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69"));
        assert!(is_kvm_failure(
            "qemu-system-x86_64: ../../target/i386/kvm/kvm.c:3183: kvm_buf_set_msrs: Assertion `ret == cpu->kvm_msr_buf->nmsrs' failed."
        ));
        assert!(is_kvm_failure("KVM internal error. Suberror: 1"));
        assert!(!is_kvm_failure("qemu-system-x86_64: terminating on signal 15"));
    }
}
