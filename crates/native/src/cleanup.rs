//! What a native run must undo on every exit path: its forked children, the real tools it
//! started (process groups), its PostgreSQL clusters ([`crate::postgres`]) and its ftrace
//! instance.
//!
//! Every child is registered here the moment it is forked (the registry lock is held across the
//! `fork()`, so an interrupt cannot slip between the fork and the registration) and
//! unregistered when it has been reaped. [`interrupt`] — called by the CLI's Ctrl-C handler —
//! kills and reaps every registered child and removes the ftrace instance, after which the
//! process may exit. Normal paths clean up through [`ChildGuard`] and the ftrace session's
//! `Drop`. Children also carry `PR_SET_PDEATHSIG = SIGKILL`, so even a SIGKILLed schedlab does
//! not leave them running.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::process::{Pid, Signal, WaitOptions};

static CHILDREN: Mutex<Vec<Pid>> = Mutex::new(Vec::new());
static TRACE_INSTANCES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Real tools (perf, hackbench, lat_ctx, netserver...), each the leader of its own process
/// group, so one signal reaches the workers it forked.
static TOOL_GROUPS: Mutex<Vec<Pid>> = Mutex::new(Vec::new());
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Held for the whole of [`interrupt`], so another thread can wait for it to finish.
static CLEANING: Mutex<()> = Mutex::new(());

/// Forks a child (see [`crate::sys::fork_child`]) and registers it, atomically with respect to
/// [`interrupt`].
pub(crate) fn spawn_child<F: FnOnce() -> i32>(child: F) -> std::io::Result<Pid> {
    let mut reg = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    let pid = crate::sys::fork_child(child)?;
    reg.push(pid);
    Ok(pid)
}

/// Forgets a child that has been reaped.
pub(crate) fn forget_child(pid: Pid) {
    let mut reg = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    reg.retain(|&p| p != pid);
}

/// Registers a real tool's process group (its leader's pid) to kill on interrupt, and leaves a
/// marker file (`<tmp>/schedlab-tools/<schedlab pid>-<group>`) so that a later run can kill the
/// group if this process dies by SIGKILL (the leader dies with it, `PR_SET_PDEATHSIG`, but the
/// workers it forked would run on).
/// The marker holds the tool's task name, so that a reused group id is never killed.
pub(crate) fn register_group(pid: Pid, comm: &str) {
    TOOL_GROUPS.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
    let dir = tool_marker_dir();
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(marker_name(pid)), comm);
    }
}

/// Forgets a tool group once its leader has been reaped.
pub(crate) fn forget_group(pid: Pid) {
    TOOL_GROUPS.lock().unwrap_or_else(|e| e.into_inner()).retain(|&p| p != pid);
    let _ = std::fs::remove_file(tool_marker_dir().join(marker_name(pid)));
}

/// Whether some process of process group `group` is named `comm` (`/proc/<pid>/stat`: pid,
/// `(comm)`, state, ppid, pgrp).
fn group_has_comm(group: i32, comm: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { return false };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { return false };
        let pgrp = stat[close + 1..].split_whitespace().nth(2).and_then(|p| p.parse::<i32>().ok());
        pgrp == Some(group) && &stat[open + 1..close] == comm
    })
}

fn tool_marker_dir() -> PathBuf {
    std::env::temp_dir().join("schedlab-tools")
}

fn marker_name(group: Pid) -> String {
    format!("{}-{}", std::process::id(), group.as_raw_nonzero())
}

/// Kills the tool process groups that runs killed by SIGKILL left behind (their marker names a
/// schedlab process that no longer exists). Returns how many groups were signalled.
pub fn kill_stale_tool_groups() -> usize {
    let Ok(entries) = std::fs::read_dir(tool_marker_dir()) else { return 0 };
    let mut killed = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some((owner, group)) = name.split_once('-') else { continue };
        let (Ok(owner), Ok(group)) = (owner.parse::<i32>(), group.parse::<i32>()) else { continue };
        if Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        let comm = std::fs::read_to_string(e.path()).unwrap_or_default();
        if let Some(g) = Pid::from_raw(group)
            && group_has_comm(group, comm.trim())
            && rustix::process::kill_process_group(g, Signal::KILL).is_ok()
        {
            killed += 1;
        }
        let _ = std::fs::remove_file(e.path());
    }
    killed
}

/// Kills (SIGKILL) every registered tool group and reaps the leaders.
pub(crate) fn kill_groups() {
    let mut reg = TOOL_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    for &pid in reg.iter() {
        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    }
    for &pid in reg.iter() {
        let _ = rustix::process::waitpid(Some(pid), WaitOptions::empty());
    }
    reg.clear();
}

/// Registers an ftrace instance directory to remove on interrupt.
pub(crate) fn register_instance(dir: PathBuf) {
    TRACE_INSTANCES.lock().unwrap_or_else(|e| e.into_inner()).push(dir);
}

pub(crate) fn forget_instance(dir: &std::path::Path) {
    TRACE_INSTANCES.lock().unwrap_or_else(|e| e.into_inner()).retain(|d| d != dir);
}

/// Kills (SIGKILL) and reaps every child still registered.
pub(crate) fn kill_children() {
    let mut reg = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    for &pid in reg.iter() {
        let _ = rustix::process::kill_process(pid, Signal::KILL);
    }
    for &pid in reg.iter() {
        // ECHILD when the main thread reaped it first: fine.
        let _ = rustix::process::waitpid(Some(pid), WaitOptions::empty());
    }
    reg.clear();
}

/// Undoes everything a native run in progress has set up: kills and reaps its children and
/// removes its ftrace instances. Safe to call from a signal-handling thread (the `ctrlc`
/// handler) while the run is in progress; the caller should exit afterwards.
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let _cleaning = CLEANING.lock().unwrap_or_else(|e| e.into_inner());
    // A PostgreSQL server first, gently (SIGQUIT), so it does not leave shared memory behind.
    crate::postgres::interrupt();
    kill_children();
    kill_groups();
    let dirs: Vec<PathBuf> = std::mem::take(&mut *TRACE_INSTANCES.lock().unwrap_or_else(|e| e.into_inner()));
    for dir in dirs {
        crate::ftrace::remove_instance(&dir);
    }
}

/// Whether [`interrupt`] has been called.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// For the main thread when a run fails: if the failure comes from an interrupt in progress
/// (its children were killed under it), waits for [`interrupt`] to finish and exits with
/// status 130 instead of reporting an error.
pub fn exit_if_interrupted() {
    if interrupted() {
        let _cleaning = CLEANING.lock().unwrap_or_else(|e| e.into_inner());
        eprintln!("schedlab: interrupted");
        std::process::exit(130);
    }
}

/// Kills and reaps a set of children when dropped (error paths); [`ChildGuard::disarm`] after
/// they have been reaped normally.
pub(crate) struct ChildGuard {
    pub(crate) pids: Vec<Pid>,
}

impl ChildGuard {
    pub(crate) fn new() -> ChildGuard {
        ChildGuard { pids: Vec::new() }
    }

    pub(crate) fn disarm(&mut self) {
        self.pids.clear();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        for &pid in &self.pids {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        for &pid in &self.pids {
            let _ = rustix::process::waitpid(Some(pid), WaitOptions::empty());
            forget_child(pid);
        }
    }
}
