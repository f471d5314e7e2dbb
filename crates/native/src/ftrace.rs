//! ftrace capture for `--trace`, in a private tracefs **instance**.
//!
//! A run creates `instances/schedlab-<pid>` under tracefs, with its own ring buffer, clock,
//! event switches and `tracing_on`, records the scheduler events of its own process tree
//! (`set_event_pid` = the schedlab pid, `options/event-fork` on, so every forked child and
//! thread is followed), and removes the instance afterwards. The top-level tracing state —
//! `tracing_on`, the enabled events, the buffer and its size, the clock — is never written, so
//! "restoring it" cannot fail and a concurrent user of ftrace is not disturbed. Cleanup runs on
//! every exit path: `Drop` on normal and error returns, [`crate::interrupt`] on Ctrl-C, and at
//! the start of the next run for an instance whose owner died by SIGKILL.
//!
//! The instance uses the `mono` trace clock (CLOCK_MONOTONIC, the clock the run's start and
//! end times are taken with), a per-CPU buffer of `buffer_kb`, and `overwrite` off, so a buffer
//! that fills up keeps the start of the run and counts what it dropped. The text format prints
//! timestamps in microseconds, so latencies from it have 1 µs resolution.
//!
//! tracefs is looked up in `/proc/mounts` (`/sys/kernel/tracing`, or `tracing/` under a
//! mounted debugfs); if it is not mounted, it is mounted at `/sys/kernel/tracing` (as
//! trace-cmd does) and left mounted.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The scheduler events recorded.
pub const EVENTS: &[&str] = &["sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task"];

/// Tracepoint probes (`dynamic_events` `t:` lines, which read fields through BTF:
/// CONFIG_FPROBE_EVENTS and CONFIG_PROBE_EVENTS_BTF_ARGS, 6.10+) that record the lag an entity
/// carries, `se->vlag`, at the points where the model writes the same records
/// (`schedlab_wakeup_lag`, `schedlab_switch_lag`; `schedlab analyze` reads both). Each record
/// follows its tracepoint's own event: at `sched_wakeup` the wakee is queued and placed from the
/// lag it saved when it last left; at `sched_switch` a task that went to sleep has saved its lag
/// (unless `sched_delayed`: it stayed queued, not eligible).
///
/// A third probe records the `wakee_flips` a task being woken carries into
/// `select_task_rq_fair()` (`schedlab_waking_flips`, at `sched_waking`): the wakee's side of
/// `wake_wide()`, which decides whether `wake_affine()` is tried (docs/vm.md, "The launching
/// shell's wakee_flips"). The model writes the same record.
pub const LAG_PROBES: &[&str] = &[
    "t:schedlab/schedlab_wakeup_lag sched_wakeup pid=p->pid vlag=p->se.vlag",
    "t:schedlab/schedlab_switch_lag sched_switch prev_pid=prev->pid prev_vlag=prev->se.vlag \
     prev_delayed=prev->se.sched_delayed",
    "t:schedlab/schedlab_waking_flips sched_waking pid=p->pid flips=p->wakee_flips",
];

/// Finds (or mounts) tracefs and returns its root directory.
pub fn tracefs_root() -> Result<PathBuf, String> {
    let mounts = std::fs::read_to_string("/proc/mounts").map_err(|e| format!("/proc/mounts: {e}"))?;
    let mut debugfs = None;
    for line in mounts.lines() {
        let mut f = line.split_whitespace();
        let (_, Some(dir), Some(kind)) = (f.next(), f.next(), f.next()) else { continue };
        match kind {
            "tracefs" if Path::new(dir).join("instances").is_dir() => return Ok(PathBuf::from(dir)),
            "debugfs" => debugfs = Some(PathBuf::from(dir)),
            _ => {}
        }
    }
    if let Some(d) = debugfs {
        // Touching debugfs/tracing automounts tracefs there.
        let t = d.join("tracing");
        if t.join("instances").is_dir() {
            return Ok(t);
        }
    }
    let target = Path::new("/sys/kernel/tracing");
    rustix::mount::mount("nodev", target, "tracefs", rustix::mount::MountFlags::empty(), None).map_err(|e| {
        format!(
            "tracefs is not mounted and mounting it at /sys/kernel/tracing failed: {e} (run as root, or mount tracefs)"
        )
    })?;
    if target.join("instances").is_dir() {
        Ok(target.to_path_buf())
    } else {
        Err("tracefs mounted at /sys/kernel/tracing has no instances/ directory".into())
    }
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("{}: {e}", path.display()))
}

/// The top-level `tracing_on` value (to check that a run leaves it alone).
pub fn global_tracing_on() -> Option<String> {
    let root = tracefs_root().ok()?;
    crate::host::read_trimmed(&root.join("tracing_on"))
}

/// Disables and removes an instance; retries while it is busy (a file of it still open).
pub(crate) fn remove_instance(dir: &Path) {
    let _ = std::fs::write(dir.join("tracing_on"), "0");
    let _ = std::fs::write(dir.join("events/enable"), "0");
    for _ in 0..50 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Removes `schedlab-<pid>` instances whose process no longer exists (left by a SIGKILLed run).
fn remove_stale_instances(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root.join("instances")) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(pid) = name.strip_prefix("schedlab-").and_then(|p| p.parse::<u32>().ok())
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            remove_instance(&e.path());
        }
    }
}

/// Whether this process may record with ftrace (tracefs instances need root).
pub fn can_trace() -> bool {
    rustix::process::geteuid().is_root()
}

/// Removes instances left by killed runs when tracefs is mounted (never mounts it): every
/// native run calls it at its start, traced or not.
pub fn remove_stale_instances_if_mounted() {
    let Ok(mounts) = std::fs::read_to_string("/proc/mounts") else { return };
    for line in mounts.lines() {
        let mut f = line.split_whitespace();
        if let (_, Some(dir), Some("tracefs")) = (f.next(), f.next(), f.next()) {
            remove_stale_instances(Path::new(dir));
        }
    }
}

/// A trace capture in progress.
pub struct TraceSession {
    dir: PathBuf,
}

/// What a capture recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// The instance's `trace` file: ftrace text.
    pub text: String,
    /// Events lost because the buffer was full, summed over CPUs.
    pub dropped: u64,
    /// Events overwritten (0 with `overwrite` off).
    pub overrun: u64,
}

impl TraceSession {
    /// Creates and configures the instance; recording is off until [`TraceSession::on`].
    pub fn new(buffer_kb: u32) -> Result<TraceSession, String> {
        let root = tracefs_root()?;
        remove_stale_instances(&root);
        let dir = root.join("instances").join(format!("schedlab-{}", std::process::id()));
        if dir.exists() {
            remove_instance(&dir);
        }
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e} (ftrace needs root)", dir.display()))?;
        crate::cleanup::register_instance(dir.clone());
        let session = TraceSession { dir };
        let d = &session.dir;
        write(&d.join("tracing_on"), "0")?;
        write(&d.join("buffer_size_kb"), &buffer_kb.to_string())?;
        write(&d.join("trace_clock"), "mono")?;
        write(&d.join("options/overwrite"), "0")?;
        write(&d.join("options/event-fork"), "1")?;
        write(&d.join("set_event_pid"), &std::process::id().to_string())?;
        for ev in EVENTS {
            let p = d.join("events/sched").join(ev).join("enable");
            if p.exists() {
                write(&p, "1")?;
            }
        }
        write(&d.join("trace"), "")?;
        Ok(session)
    }

    /// The instance directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Starts recording.
    pub fn on(&self) -> Result<(), String> {
        write(&self.dir.join("tracing_on"), "1")
    }

    /// Stops recording and reads what was recorded.
    pub fn stop_and_read(&self) -> Result<Captured, String> {
        write(&self.dir.join("tracing_on"), "0")?;
        let path = self.dir.join("trace");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (mut dropped, mut overrun) = (0, 0);
        if let Ok(cpus) = std::fs::read_dir(self.dir.join("per_cpu")) {
            for c in cpus.flatten() {
                let stats = std::fs::read_to_string(c.path().join("stats")).unwrap_or_default();
                for line in stats.lines() {
                    let (k, v) = line.split_once(':').unwrap_or((line, ""));
                    let v: u64 = v.trim().parse().unwrap_or(0);
                    match k.trim() {
                        "dropped events" => dropped += v,
                        "overrun" => overrun += v,
                        _ => {}
                    }
                }
            }
        }
        Ok(Captured { text, dropped, overrun })
    }
}

impl Drop for TraceSession {
    fn drop(&mut self) {
        remove_instance(&self.dir);
        crate::cleanup::forget_instance(&self.dir);
    }
}
