//! A throwaway PostgreSQL server for `native pgbench`: `initdb` into a fresh temporary
//! directory, a postmaster listening only on a Unix socket in that directory (no TCP), the
//! pgbench tables created with `pgbench -i -s SCALE`, and everything stopped and removed on
//! every exit path: [`Cluster`]'s `Drop` (normal and error returns), [`crate::interrupt`]
//! (Ctrl-C, SIGTERM, SIGHUP), and, for a schedlab killed by SIGKILL, the postmaster's
//! `PR_SET_PDEATHSIG` plus [`remove_stale_clusters`] at the next start (the directory names
//! the schedlab pid that made it, as the tool markers of [`crate::cleanup`] do).
//!
//! PostgreSQL refuses to run as root: as root, the server (initdb and postgres) runs as the
//! `postgres` system user of Debian's package, which owns the directory; the pgbench client
//! runs as the caller and connects as the database superuser `postgres` (trust
//! authentication, which is safe on a socket in a directory only its owner can enter).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rustix::process::{Pid, Signal};

use crate::run::NativeError;
use crate::workers::mono_ns;

/// The port number in the socket's name (`.s.PGSQL.5432`); the directory is private, so the
/// default cannot collide.
pub const PORT: u16 = 5432;
/// The database superuser and database pgbench connects to.
const DB_USER: &str = "postgres";
const DIR_PREFIX: &str = "schedlab-pg-";

/// The PostgreSQL programs of one installation.
#[derive(Clone, Debug)]
pub struct PgBins {
    pub bindir: PathBuf,
    /// `postgres --version` (`postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`).
    pub version: String,
}

impl PgBins {
    pub fn program(&self, name: &str) -> PathBuf {
        self.bindir.join(name)
    }

    /// `15.18` of the version line (the whole line when it has another shape).
    pub fn release(&self) -> &str {
        self.version.split("(PostgreSQL) ").nth(1).and_then(|r| r.split_whitespace().next()).unwrap_or(&self.version)
    }
}

fn has_all(dir: &Path) -> bool {
    ["postgres", "initdb", "pgbench"].iter().all(|p| crate::tools::is_executable(&dir.join(p)))
}

/// The newest PostgreSQL under `/usr/lib/postgresql/<major>/bin` (Debian), else the directory
/// of a `postgres` on `PATH` holding `initdb` and `pgbench` too. (Debian's `/usr/bin/pgbench`
/// is a wrapper that picks a version by the clusters it knows, so it is not used.)
pub fn find_postgres() -> Result<PgBins, String> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((major, e.path().join("bin")))
        })
        .collect();
    dirs.sort();
    let found = dirs.into_iter().rev().map(|(_, d)| d).find(|d| has_all(d)).or_else(|| {
        crate::tools::find_program("postgres", &[])
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .filter(|d| has_all(d))
    });
    let Some(bindir) = found else {
        return Err("PostgreSQL (postgres, initdb, pgbench) is not installed (Debian package postgresql)".into());
    };
    let out = Command::new(bindir.join("postgres")).arg("--version").stdin(Stdio::null()).output();
    let version = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => return Err(format!("{}/postgres --version failed", bindir.display())),
    };
    Ok(PgBins { bindir, version })
}

/// The uid and gid the server runs as: the `postgres` user when schedlab is root (from
/// `/etc/passwd`), else none (the caller's own).
fn server_user() -> Result<Option<(u32, u32)>, String> {
    if !rustix::process::geteuid().is_root() {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| format!("/etc/passwd: {e}"))?;
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() > 3 && f[0] == "postgres").then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
        })
        .map(Some)
        .ok_or_else(|| {
            "PostgreSQL refuses to run as root and there is no `postgres` user (Debian's postgresql package creates it)"
                .into()
        })
}

/// Clusters of this process, for [`interrupt`]: (directory, postmaster pid).
static CLUSTERS: Mutex<Vec<(PathBuf, Pid)>> = Mutex::new(Vec::new());
static SEQ: AtomicU32 = AtomicU32::new(0);

/// A running throwaway server.
pub struct Cluster {
    dir: PathBuf,
    postmaster: Option<Child>,
    /// The server's log (postgres' stderr), for error messages.
    log: PathBuf,
}

impl Cluster {
    /// Creates, starts and initialises (`pgbench -i -s scale`) a cluster with room for
    /// `clients` connections.
    pub fn start(bins: &PgBins, scale: u32, clients: u32) -> Result<Cluster, NativeError> {
        let user = server_user().map_err(NativeError::System)?;
        let dir = std::env::temp_dir().join(format!(
            "{DIR_PREFIX}{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .map_err(|e| NativeError::System(format!("{}: {e}", dir.display())))?;
        }
        let log = dir.join("postgres.log");
        // From here on `Drop` removes the directory, whatever fails.
        let mut c = Cluster { dir, postmaster: None, log };
        if let Some((uid, gid)) = user {
            let (u, g) = (rustix::fs::Uid::from_raw(uid), rustix::fs::Gid::from_raw(gid));
            rustix::fs::chown(&c.dir, Some(u), Some(g))
                .map_err(|e| NativeError::System(format!("chown {}: {e}", c.dir.display())))?;
        }
        let data = c.dir.join("data");
        let mut initdb = c.server_command(&bins.program("initdb"), user);
        initdb.arg("-D").arg(&data).args([
            "-U",
            DB_USER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        ]);
        run_quiet(initdb, "initdb")?;

        let log_file =
            std::fs::File::create(&c.log).map_err(|e| NativeError::System(format!("{}: {e}", c.log.display())))?;
        let mut pm = c.server_command(&bins.program("postgres"), user);
        pm.arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&c.dir)
            .args(["-p", &PORT.to_string()])
            // No TCP at all; fsync is pointless for a cluster removed at the end.
            .args(["-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", &format!("max_connections={}", clients.saturating_add(10).max(20))])
            .stdout(Stdio::null())
            .stderr(log_file);
        crate::sys::die_with_parent(&mut pm);
        let child =
            pm.spawn().map_err(|e| NativeError::System(format!("{}: {e}", bins.program("postgres").display())))?;
        let pid = Pid::from_raw(child.id() as i32).ok_or_else(|| NativeError::System("postgres: pid 0".into()))?;
        crate::cleanup::register_group(pid, "postgres");
        CLUSTERS.lock().unwrap_or_else(|e| e.into_inner()).push((c.dir.clone(), pid));
        c.postmaster = Some(child);
        c.wait_ready(&data)?;

        let mut init = Command::new(bins.program("pgbench"));
        init.args(["-i", "-s", &scale.to_string()]).args(c.connection_args());
        run_quiet(init, "pgbench -i")?;
        Ok(c)
    }

    /// A command that runs as the server's user, in the cluster's directory (the caller's
    /// may not be readable by that user).
    fn server_command(&self, program: &Path, user: Option<(u32, u32)>) -> Command {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.dir).stdin(Stdio::null()).env("LC_ALL", "C").process_group(0);
        if let Some((uid, gid)) = user {
            // std drops the supplementary groups (setgroups(0)) before setuid when root.
            cmd.uid(uid).gid(gid);
        }
        cmd
    }

    /// `postmaster.pid`'s status line says `ready` once the server accepts connections.
    fn wait_ready(&mut self, data: &Path) -> Result<(), NativeError> {
        let deadline = mono_ns() + 60_000_000_000;
        while mono_ns() < deadline {
            if let Some(Ok(Some(st))) = self.postmaster.as_mut().map(|c| c.try_wait()) {
                return Err(NativeError::System(format!("postgres exited ({st}): {}", self.log_tail())));
            }
            let pidfile = std::fs::read_to_string(data.join("postmaster.pid")).unwrap_or_default();
            if pidfile.lines().nth(7).is_some_and(|l| l.trim() == "ready") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(NativeError::System(format!("postgres did not become ready in 60 s: {}", self.log_tail())))
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }

    /// pgbench's connection options: the socket directory, port, user and database.
    pub fn connection_args(&self) -> Vec<String> {
        vec![
            "-h".into(),
            self.dir.display().to_string(),
            "-p".into(),
            PORT.to_string(),
            "-U".into(),
            DB_USER.into(),
            DB_USER.into(),
        ]
    }

    /// The postmaster's pid (its backends are its children).
    pub fn postmaster_pid(&self) -> Option<u32> {
        self.postmaster.as_ref().map(Child::id)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the server (immediate shutdown, SIGQUIT; SIGKILL to its process group after 5 s)
    /// and removes the directory.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.postmaster.take()
            && let Some(pid) = Pid::from_raw(child.id() as i32)
        {
            stop_postmaster(pid, || !matches!(child.try_wait(), Ok(None)));
            let _ = child.wait();
            crate::cleanup::forget_group(pid);
            CLUSTERS.lock().unwrap_or_else(|e| e.into_inner()).retain(|(_, p)| *p != pid);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// SIGQUIT (PostgreSQL's immediate shutdown: the postmaster stops its children, waits for
/// them and exits), then, if `exited` is not true within 5 s, SIGKILL to the whole process
/// group (the postmaster leads it; its backends are in it).
fn stop_postmaster(pid: Pid, mut exited: impl FnMut() -> bool) {
    let _ = rustix::process::kill_process(pid, Signal::QUIT);
    let deadline = mono_ns() + 5_000_000_000;
    while mono_ns() < deadline {
        if exited() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    while !exited() {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs a setup command to completion, its output kept for the error message only.
fn run_quiet(mut cmd: Command, what: &str) -> Result<(), NativeError> {
    // Gone with schedlab if it is interrupted or killed meanwhile.
    crate::sys::die_with_parent(&mut cmd);
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| NativeError::System(format!("{what}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).rev().take(3).collect();
    Err(NativeError::System(format!(
        "{what} failed ({}): {}",
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    )))
}

/// For [`crate::interrupt`]: stops every cluster of this process and removes its directory.
pub(crate) fn interrupt() {
    let clusters = std::mem::take(&mut *CLUSTERS.lock().unwrap_or_else(|e| e.into_inner()));
    for (dir, pid) in clusters {
        stop_postmaster(pid, || {
            matches!(rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG), Ok(Some(_)) | Err(_))
        });
        crate::cleanup::forget_group(pid);
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Removes the clusters that schedlab runs killed by SIGKILL left (the directory names a
/// schedlab pid that no longer exists): their postmaster, if one still runs from that
/// directory, is killed with its process group first. Returns how many were removed.
pub fn remove_stale_clusters() -> usize {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return 0 };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(owner) = name.strip_prefix(DIR_PREFIX).and_then(|r| r.split('-').next()) else { continue };
        let Ok(owner) = owner.parse::<u32>() else { continue };
        if Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        let dir = e.path();
        let pm = std::fs::read_to_string(dir.join("data/postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<i32>().ok()));
        if let Some(pid) = pm.and_then(Pid::from_raw) {
            // Only the postmaster of this directory (a reused pid is someone else's).
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid.as_raw_nonzero())).unwrap_or_default();
            let dir_bytes = dir.as_os_str().as_encoded_bytes();
            if cmdline.windows(dir_bytes.len().max(1)).any(|w| w == dir_bytes) {
                let _ = rustix::process::kill_process_group(pid, Signal::KILL);
            }
        }
        if std::fs::remove_dir_all(&dir).is_ok() {
            removed += 1;
        }
    }
    removed
}
