//! What a vm run must undo on every exit path, including Ctrl-C/SIGTERM (the cli's `ctrlc`
//! handler calls [`interrupt`], then exits without running destructors): the qemu processes,
//! killed by their own pid, and the temporary directories (initramfs staging, package
//! extraction), removed.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::VmError;

static QEMU_PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static TEMP_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Kills every registered qemu (SIGKILL, by pid) and removes every registered temporary
/// directory. Safe from the signal-handling thread; the caller exits afterwards.
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
    for &pid in QEMU_PIDS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        // SAFETY: kill(2) with a pid this process spawned and has not reaped (reaping
        // unregisters it first), so the pid cannot have been reused.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
    for d in TEMP_DIRS.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
        let _ = std::fs::remove_dir_all(d);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

pub(crate) fn register_pid(pid: u32) {
    QEMU_PIDS.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
}

pub(crate) fn unregister_pid(pid: u32) {
    QEMU_PIDS.lock().unwrap_or_else(|e| e.into_inner()).retain(|&p| p != pid);
}

/// A temporary directory under `$TMPDIR`, removed on drop and by [`interrupt`].
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(what: &str) -> Result<TempDir, VmError> {
        let path = tempfile::Builder::new()
            .prefix(&format!("schedlab-vm-{what}-"))
            .tempdir()
            .map_err(|e| VmError::System(format!("temporary directory: {e}")))?
            .keep();
        TEMP_DIRS.lock().unwrap_or_else(|e| e.into_inner()).push(path.clone());
        Ok(TempDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        TEMP_DIRS.lock().unwrap_or_else(|e| e.into_inner()).retain(|d| d != &self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_dir_is_removed_on_drop() {
        let d = TempDir::new("test").unwrap();
        let p = d.path().to_path_buf();
        std::fs::write(p.join("f"), b"x").unwrap();
        assert!(p.is_dir());
        drop(d);
        assert!(!p.exists());
        assert!(!TEMP_DIRS.lock().unwrap().contains(&p));
    }
}
