//! The real benchmark binaries, when they are installed: `perf bench sched pipe|messaging`
//! (Debian `linux-perf`), rt-tests `hackbench`, lmbench `lat_ctx`, `netperf` against a
//! loopback `netserver` started for the run, `stress-ng`, and PostgreSQL's `pgbench` against a
//! throwaway server started for the run ([`crate::postgres`]).
//!
//! A command line in schedlab's syntax (the tools' own flags, parsed by the simulator's
//! parser first, so a bad flag is reported as `run` reports it) becomes the tool's command line
//! ([`choose`]); when the tool is missing, or cannot run what was asked (the installed perf
//! runs the other pipe worker), [`choose`] says why and native mode falls back to its built-in
//! workers, with that note.
//!
//! # Counters of a tool's tasks
//!
//! A tool forks and reaps its own workers, so schedlab cannot hold them as zombies the way it
//! holds its own children. Where the kernel has seccomp user notifications, the exit trap
//! ([`crate::exit_trap`]) reads every task of the tool at its `exit`/`exit_group`, blocked and
//! with all its work done, and the tool itself as a zombie: per-task counters as exact as the
//! built-in workers' (the module says how such a reading differs from a zombie's). Otherwise
//! (said in the run's [`CounterSource`]) two sources, each exact where the other is not:
//!
//! * switches: `getrusage(RUSAGE_CHILDREN)` around the run ([`crate::sys::children_switches`]).
//!   The kernel folds every exited thread's and reaped process's `nvcsw`/`nivcsw` into its
//!   parent, so the difference is the whole tree's voluntary and involuntary switches, nothing
//!   lost when a worker exits;
//! * per task (`/proc/<pid>/task/<tid>/sched` and `schedstat`, for migrations, run time, run
//!   delay): a sampler thread walks the tool's descendants (`task/<tid>/children`) every 2 ms
//!   while it runs and keeps each task's latest reading. A worker's last milliseconds before its
//!   exit can be missed, and the sampler is one more task waking every 2 ms; it runs on a CPU
//!   outside `--pin` when there is one, so it does not disturb a pinned benchmark.
//!
//! ftrace (`--trace`) follows the tool's tree like the built-in workers' (`event-fork`), and the
//! analysis keeps the tool's task name.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::process::{Pid, WaitId, WaitIdOptions};
use workload::bench::hackbench::Transport;
use workload::bench::{BenchParams, BenchWorkload};

use crate::procfs::{self, TaskSample};
use crate::run::NativeError;
use crate::workers::mono_ns;

/// Which pipe worker a perf binary runs (workloads.md §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeWorker {
    /// The classic worker: one 4-byte token circulates (every release up to at least v6.6).
    OneToken,
    /// Both tasks write first, then read: two tokens (the 7.3 tree).
    TwoToken,
}

impl PipeWorker {
    pub fn describe(self) -> &'static str {
        match self {
            PipeWorker::OneToken => "the one-token (classic) worker",
            PipeWorker::TwoToken => "the two-token worker",
        }
    }
}

/// The pipe worker of perf `major.minor`, from its source history: the classic one-token
/// worker up to at least v6.6 and the two-token worker in the 7.3 tree; the first release of
/// the two-token worker is not pinned down, so releases in between are `None` (unknown).
pub fn perf_pipe_worker(major: u32, minor: u32) -> Option<PipeWorker> {
    match (major, minor) {
        (..=5, _) | (6, ..=6) => Some(PipeWorker::OneToken),
        (7, 3..) | (8.., _) => Some(PipeWorker::TwoToken),
        _ => None,
    }
}

/// `perf version` output (`perf version 6.1.187`) to `(major, minor)`.
pub fn parse_perf_version(text: &str) -> Option<(u32, u32)> {
    let v = text.split_whitespace().find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
    let mut it = v.split(['.', '-', '+']);
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The real tools schedlab knows how to drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    PerfPipe,
    PerfMessaging,
    Hackbench,
    LatCtx,
    Schbench,
    Netperf,
    StressNg,
    Pgbench,
}

/// A server a tool talks to, started before it and stopped after it.
#[derive(Clone, Debug)]
pub enum Server {
    /// `netserver` on loopback, on the port given to netperf with `-p`.
    Netserver(PathBuf),
    /// A throwaway PostgreSQL cluster initialised at `scale` for `clients` connections.
    Postgres { bins: crate::postgres::PgBins, scale: u32, clients: u32 },
}

/// A resolved real-tool command line.
#[derive(Clone, Debug)]
pub struct ToolCommand {
    pub tool: Tool,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The name the tool's tasks carry (the ftrace analysis keeps these).
    pub comm: &'static str,
    /// What runs, for the output header (`perf 6.1.187 bench sched pipe, the one-token worker`).
    pub describe: String,
    /// The server to start first (netperf's netserver, pgbench's PostgreSQL).
    pub server: Option<Server>,
}

/// What native mode runs for a workload.
#[derive(Clone, Debug)]
pub enum Choice {
    Real(ToolCommand),
    /// The built-in workers, and why the real tool is not used.
    Builtin(String),
}

/// Looks `name` up in `PATH`, then in the extra directories given.
pub fn find_program(name: &str, extra: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend(extra.iter().map(PathBuf::from));
    dirs.into_iter().map(|d| d.join(name)).find(|p| is_executable(p))
}

pub(crate) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// lmbench's binaries live outside `PATH` on Debian (`/usr/lib/lmbench/bin/<triplet>/`).
fn find_lmbench(name: &str) -> Option<PathBuf> {
    if let Some(p) = find_program(name, &[]) {
        return Some(p);
    }
    let entries = std::fs::read_dir("/usr/lib/lmbench/bin").ok()?;
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs.push(PathBuf::from("/usr/lib/lmbench/bin"));
    dirs.into_iter().map(|d| d.join(name)).find(|p| is_executable(p))
}

fn output_of(program: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).stdin(Stdio::null()).output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
}

/// The real tool for a parsed workload, or why the built-in workers run instead. `argv` is
/// the command line as given (benchmark name first); the tools take the same flags.
pub fn choose(wl: &BenchWorkload, argv: &[String]) -> Choice {
    let flags: Vec<String> = argv.iter().skip(1).cloned().collect();
    match &wl.params {
        BenchParams::Pipe(p) => {
            let Some(perf) = find_program("perf", &[]) else {
                return Choice::Builtin("perf is not installed (Debian package linux-perf)".into());
            };
            let version_text = output_of(&perf, &["version"]).unwrap_or_default();
            let Some((major, minor)) = parse_perf_version(&version_text) else {
                return Choice::Builtin(format!("`{} version` printed no version", perf.display()));
            };
            let wanted = if p.classic { PipeWorker::OneToken } else { PipeWorker::TwoToken };
            match perf_pipe_worker(major, minor) {
                Some(w) if w == wanted => {}
                Some(w) => {
                    return Choice::Builtin(format!(
                        "the installed perf {major}.{minor} runs {}; `pipe`{} asks for {}",
                        w.describe(),
                        if p.classic { " --classic" } else { " without --classic" },
                        wanted.describe()
                    ));
                }
                None => {
                    return Choice::Builtin(format!(
                        "which pipe worker perf {major}.{minor} runs is not known (one-token up to 6.6, two-token in 7.3)"
                    ));
                }
            }
            let args = ["bench", "sched", "pipe"]
                .iter()
                .map(|s| s.to_string())
                .chain(flags.into_iter().filter(|f| f != "--classic"))
                .collect();
            Choice::Real(ToolCommand {
                tool: Tool::PerfPipe,
                program: perf,
                args,
                // perf bench names itself `<collection>-<bench>` (prctl PR_SET_NAME).
                comm: "sched-pipe",
                describe: format!("perf {major}.{minor} bench sched pipe, {}", wanted.describe()),
                server: None,
            })
        }
        BenchParams::Messaging(_) => match find_program("perf", &[]) {
            Some(perf) => {
                let v = output_of(&perf, &["version"]).and_then(|t| parse_perf_version(&t));
                Choice::Real(ToolCommand {
                    tool: Tool::PerfMessaging,
                    program: perf,
                    args: ["bench", "sched", "messaging"].iter().map(|s| s.to_string()).chain(flags).collect(),
                    comm: "sched-messaging",
                    describe: format!(
                        "perf {} bench sched messaging",
                        v.map_or("?".into(), |(a, b)| format!("{a}.{b}"))
                    ),
                    server: None,
                })
            }
            None => Choice::Builtin("perf is not installed (Debian package linux-perf)".into()),
        },
        BenchParams::Hackbench(h) => {
            if h.transport == Transport::TcpLoopback {
                return Choice::Builtin("hackbench over TCP runs built-in only".into());
            }
            match find_program("hackbench", &["/usr/sbin"]) {
                Some(p) => {
                    let v = output_of(&p, &["--help"])
                        .and_then(|t| t.lines().next().map(|l| l.trim().to_string()))
                        .unwrap_or_else(|| "hackbench".into());
                    Choice::Real(ToolCommand {
                        tool: Tool::Hackbench,
                        program: p,
                        args: flags,
                        comm: "hackbench",
                        describe: format!("rt-tests {v}"),
                        server: None,
                    })
                }
                None => Choice::Builtin("hackbench is not installed (Debian package rt-tests)".into()),
            }
        }
        BenchParams::LatCtx(_) => match find_lmbench("lat_ctx") {
            Some(p) => plain(Tool::LatCtx, format!("lmbench lat_ctx ({})", p.display()), p, flags, "lat_ctx"),
            None => Choice::Builtin("lat_ctx is not installed (Debian package lmbench, non-free)".into()),
        },
        BenchParams::Netperf(_) => {
            let (Some(client), Some(server)) =
                (find_program("netperf", &[]), find_program("netserver", &["/usr/sbin"]))
            else {
                return Choice::Builtin("netperf/netserver are not installed (Debian package netperf)".into());
            };
            // Loopback only, on a port of our own: `-H 127.0.0.1 -p PORT` before the test's flags.
            if output_of(&client, &["-V"]).is_none_or(|t| !t.contains("Netperf version")) {
                return Choice::Builtin(format!("{} does not run on this machine", client.display()));
            }
            let port = netperf_port().to_string();
            let mut args = vec!["-H".to_string(), "127.0.0.1".into(), "-p".into(), port];
            args.extend(flags);
            Choice::Real(ToolCommand {
                tool: Tool::Netperf,
                program: client,
                args,
                comm: "netperf",
                describe: "netperf against a loopback netserver".into(),
                server: Some(Server::Netserver(server)),
            })
        }
        BenchParams::StressNg(s) => match find_program("stress-ng", &[]) {
            Some(p) => {
                if s.timeout_s.is_none_or(|t| t == 0) {
                    return Choice::Builtin(
                        "stress-ng without --timeout runs for a day; the built-in hogs run for the simulator's default \
                         --duration, 10 s (give -t/--timeout to run the real tool)"
                            .into(),
                    );
                }
                let mut args = flags;
                if !s.metrics {
                    // The per-stressor bogo-ops line the metric is read from.
                    args.push("--metrics-brief".into());
                }
                let v = output_of(&p, &["--version"]).unwrap_or_default();
                Choice::Real(ToolCommand {
                    tool: Tool::StressNg,
                    program: p,
                    args,
                    comm: "stress-ng-cpu",
                    describe: v.lines().next().unwrap_or("stress-ng").trim().to_string(),
                    server: None,
                })
            }
            None => Choice::Builtin("stress-ng is not installed (Debian package stress-ng)".into()),
        },
        BenchParams::Schbench(_) => match find_program("schbench", &[]) {
            // Whichever schbench is on PATH takes the same flags (masoncl/schbench main).
            Some(p) => plain(Tool::Schbench, format!("schbench ({})", p.display()), p, flags, "schbench"),
            None => Choice::Builtin(
                "schbench is not packaged by Debian and not on PATH; the built-in worker runs schbench's \
                 message/worker threads and prints its percentile table"
                    .into(),
            ),
        },
        BenchParams::Pgbench(p) => match crate::postgres::find_postgres() {
            Ok(bins) => Choice::Real(ToolCommand {
                tool: Tool::Pgbench,
                program: bins.program("pgbench"),
                args: pgbench_args(p),
                comm: "pgbench",
                describe: format!("pgbench against a throwaway PostgreSQL {} server on a Unix socket", bins.release()),
                server: Some(Server::Postgres { bins, scale: p.scale, clients: p.clients }),
            }),
            Err(why) => Choice::Builtin(why),
        },
    }
}

/// A tool run with the user's flags as they are, without a server.
fn plain(tool: Tool, describe: String, program: PathBuf, args: Vec<String>, comm: &'static str) -> Choice {
    Choice::Real(ToolCommand { tool, program, args, comm, describe, server: None })
}

/// What native mode refuses outright for a workload (a one-line reason), before choosing
/// between the real tool and the built-in workers.
pub fn refusal(wl: &BenchWorkload) -> Option<String> {
    match &wl.params {
        BenchParams::Pgbench(p) if p.tcp => {
            Some("pgbench: -h localhost: native mode's throwaway server listens on a Unix socket only (drop -h)".into())
        }
        _ => None,
    }
}

/// pgbench's run options, rebuilt from the parsed flags (the connection options are the
/// cluster's, added when it runs; `-s` went to `pgbench -i`, where it applies).
fn pgbench_args(p: &workload::bench::pgbench::Pgbench) -> Vec<String> {
    use workload::bench::pgbench::QueryMode;
    let mut a: Vec<String> = vec!["-S".into(), "-c".into(), p.clients.to_string(), "-j".into(), p.threads.to_string()];
    match (p.duration_s, p.transactions) {
        (Some(d), _) => a.extend(["-T".into(), d.to_string()]),
        (None, t) => a.extend(["-t".into(), t.unwrap_or(10).to_string()]),
    }
    let mode = match p.mode {
        QueryMode::Simple => "simple",
        QueryMode::Extended => "extended",
        QueryMode::Prepared => "prepared",
    };
    a.extend(["-M".into(), mode.into()]);
    if p.no_vacuum {
        a.push("-n".into());
    }
    a
}

/// A port for this run's netserver: above the ephemeral range's usual start, per process.
fn netperf_port() -> u16 {
    20_000 + (std::process::id() % 20_000) as u16
}

/// The tool's metric from its own output, in the unit of the workload's metric; `None` when the
/// output does not carry it.
pub fn parse_metric(tool: Tool, wl: &BenchWorkload, out: &str) -> Option<f64> {
    let number_before = |marker: &str| -> Option<f64> {
        out.lines().find(|l| l.contains(marker))?.split_whitespace().next()?.parse().ok()
    };
    match tool {
        Tool::PerfPipe => number_before("usecs/op"),
        Tool::PerfMessaging => {
            let l = out.lines().find(|l| l.contains("Total time:"))?;
            l.split_whitespace().nth(2)?.parse().ok()
        }
        Tool::Hackbench => out.lines().find_map(|l| l.strip_prefix("Time:")).and_then(|v| v.trim().parse().ok()),
        Tool::LatCtx => {
            let BenchParams::LatCtx(p) = &wl.params else { return None };
            let first = p.procs.first()?.to_string();
            out.lines().find_map(|l| {
                let mut it = l.split_whitespace();
                (it.next()? == first).then(|| it.next()?.parse().ok()).flatten()
            })
        }
        Tool::Netperf => {
            // The last line of the result block: `... <elapsed> <trans/s>`.
            let l = out.lines().rev().find(|l| l.split_whitespace().count() >= 6)?;
            l.split_whitespace().last()?.parse().ok()
        }
        Tool::Schbench => {
            // The starred p99 line of the block the metric is taken from:
            // `Wakeup Latencies percentiles (usec) ...` then `\t  * 99.0th: 17 (...)`.
            let block =
                if wl.metric.name == "request_latency_us_p99" { "Request Latencies" } else { "Wakeup Latencies" };
            let mut lines = out.lines().skip_while(|l| !l.starts_with(block));
            lines.find_map(|l| l.trim().strip_prefix("* 99.0th:")?.split_whitespace().next()?.parse().ok())
        }
        Tool::Pgbench => out.lines().find_map(|l| l.strip_prefix("tps = ")?.split_whitespace().next()?.parse().ok()),
        Tool::StressNg => {
            // `stress-ng: info:  [pid] cpu  <bogo ops> <real> <usr> <sys> <ops/s real> <ops/s cpu>`
            out.lines().find_map(|l| {
                let rest = l.split_once("] ")?.1;
                let w: Vec<&str> = rest.split_whitespace().collect();
                if w.first() != Some(&"cpu") || w.len() < 6 {
                    return None;
                }
                w[5].parse().ok()
            })
        }
    }
}

/// How a real tool's per-task counters were read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CounterSource {
    /// Every task read at its `exit`/`exit_group` by the seccomp trap ([`crate::exit_trap`]),
    /// the leader as a zombie: `exits` readings.
    ExitTrap { exits: usize },
    /// A thread walking the tool's tasks every 2 ms (the trap is not available: why).
    Sampled(String),
}

impl CounterSource {
    pub fn describe(&self) -> String {
        match self {
            CounterSource::ExitTrap { exits } => {
                format!(
                    "exact: every task read at its exit by a seccomp exit trap ({exits} exits), the tool as a zombie"
                )
            }
            CounterSource::Sampled(why) => {
                format!(
                    "sampled every 2 ms (a worker's last milliseconds can be missed; switches from getrusage): {why}"
                )
            }
        }
    }
}

/// A finished real-tool run.
pub struct ToolRun {
    pub start_ns: u64,
    pub end_ns: u64,
    pub output: String,
    pub metric: f64,
    /// Every task: read at its exit (trap) or its latest sample, the tool itself as a zombie
    /// first.
    pub tasks: Vec<TaskSample>,
    /// The whole tree's (voluntary, involuntary) switches, from `getrusage(RUSAGE_CHILDREN)`
    /// (with a PostgreSQL server's backends' sampled switches added).
    pub rusage_switches: (u64, u64),
    pub counters: CounterSource,
}

/// The tasks under `root`: its threads and, recursively, its children's.
fn walk(root: u32, seen: &mut BTreeMap<u32, TaskSample>) {
    walk_from(vec![root], seen);
}

fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .collect()
}

fn walk_from(mut stack: Vec<u32>, seen: &mut BTreeMap<u32, TaskSample>) {
    while let Some(pid) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for e in entries.flatten() {
            let Some(tid) = e.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else { continue };
            let dir = e.path();
            if let Ok(s) = procfs::read_task(&dir) {
                seen.insert(tid, s);
            }
            if let Ok(children) = std::fs::read_to_string(dir.join("children")) {
                stack.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
            }
        }
    }
}

/// Starts a tool in its own process group. With `output`, its stdout and stderr go to one
/// memfd (one open file, so what it prints keeps the order it was written in: pgbench's vacuum
/// line on stderr before its results on stdout, as on a terminal), which is returned to be read
/// after the run: writing to a file wakes nobody, where a pipe would wake a reader thread at
/// each flush (rt-tests hackbench flushes its two header lines before it forks, and that
/// wakeup would be one more `record_wakee()` flip of its main, inherited by every worker).
/// With `trap`, the exit trap's filter is installed last before the exec.
fn spawn(
    program: &Path,
    args: &[String],
    comm: &str,
    output: bool,
    trap: Option<&crate::exit_trap::Trap>,
) -> Result<(std::process::Child, Option<std::fs::File>), NativeError> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null()).process_group(0);
    let out = if output {
        let f = rustix::fs::memfd_create("schedlab-tool-output", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| NativeError::System(format!("memfd_create: {e}")))?;
        let (w1, w2) = (
            f.try_clone().map_err(|e| NativeError::System(format!("dup: {e}")))?,
            f.try_clone().map_err(|e| NativeError::System(format!("dup: {e}")))?,
        );
        cmd.stdout(Stdio::from(w1)).stderr(Stdio::from(w2));
        Some(std::fs::File::from(f))
    } else {
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        None
    };
    crate::sys::die_with_parent(&mut cmd);
    if let Some(t) = trap {
        t.install(&mut cmd);
    }
    let child = cmd.spawn().map_err(|e| NativeError::System(format!("{}: {e}", program.display())))?;
    if let Some(pid) = Pid::from_raw(child.id() as i32) {
        crate::cleanup::register_group(pid, comm);
    }
    Ok((child, out))
}

/// The tool's output, read back from its memfd.
fn read_output(f: Option<std::fs::File>) -> String {
    use std::io::Seek;
    let mut s = String::new();
    if let Some(mut f) = f
        && f.rewind().is_ok()
    {
        let mut bytes = Vec::new();
        let _ = f.read_to_end(&mut bytes);
        s = String::from_utf8_lossy(&bytes).into_owned();
    }
    s
}

fn kill_and_reap(mut child: std::process::Child) {
    if let Some(pid) = Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
        let deadline = mono_ns() + 2_000_000_000;
        while mono_ns() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                crate::cleanup::forget_group(pid);
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        let _ = child.wait();
        crate::cleanup::forget_group(pid);
    }
}

/// Starts a loopback netserver on `port` and waits until it accepts connections.
fn start_netserver(server: &Path, port: &str) -> Result<std::process::Child, NativeError> {
    let args: Vec<String> = ["-D", "-L", "127.0.0.1", "-p", port].iter().map(|s| s.to_string()).collect();
    let (child, _) = spawn(server, &args, "netserver", false, None)?;
    let addr = format!("127.0.0.1:{port}");
    for _ in 0..200 {
        if std::net::TcpStream::connect(&addr).is_ok() {
            return Ok(child);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    kill_and_reap(child);
    Err(NativeError::System(format!("netserver did not listen on {addr}")))
}

/// A started server: stopped when dropped.
enum Running {
    Netserver(Option<std::process::Child>),
    Postgres(crate::postgres::Cluster),
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Running::Netserver(c) = self
            && let Some(c) = c.take()
        {
            kill_and_reap(c);
        }
    }
}

/// Runs a real tool to completion (the caller has set affinity and tracing up). `avoid` are
/// the CPUs the benchmark is pinned to, which schedlab's own threads (the exit trap's
/// supervisor, the sampler) stay off when they can.
///
/// Counters: the exit trap ([`crate::exit_trap`]) reads every task of the tool at its exit
/// when this kernel has seccomp user notifications; otherwise the sampler thread walks the
/// tool's tasks every 2 ms (said in the run's [`CounterSource`]). The tool itself is held as a
/// zombie (`waitid(WEXITED | WNOWAIT)`), waited off its CPU (its final switch counted) and read
/// before it is reaped.
///
/// A PostgreSQL server's backends are its postmaster's children, not pgbench's, so the trap
/// does not cover them: the sampler walks the postmaster's children that were not there before
/// the run (its background processes were), and their switches are added to the totals (a
/// backend's last reading is up to 2 ms old when it exits).
pub fn run_tool(cmd: &ToolCommand, wl: &BenchWorkload, avoid: Option<&[u32]>) -> Result<ToolRun, NativeError> {
    let mut args = cmd.args.clone();
    let server = match &cmd.server {
        Some(Server::Netserver(s)) => {
            let port = cmd.args.iter().skip_while(|a| *a != "-p").nth(1).cloned().unwrap_or_default();
            Some(Running::Netserver(Some(start_netserver(s, &port)?)))
        }
        Some(Server::Postgres { bins, scale, clients }) => {
            let c = crate::postgres::Cluster::start(bins, *scale, *clients)?;
            args.extend(c.connection_args());
            Some(Running::Postgres(c))
        }
        None => None,
    };
    // The server's own processes, which are not the benchmark's.
    let (server_root, server_old) = match &server {
        Some(Running::Postgres(c)) => {
            let pm = c.postmaster_pid().unwrap_or(0);
            (Some(pm), children_of(pm))
        }
        _ => (None, Vec::new()),
    };
    let nr_cpus = crate::host::nr_cpus();
    let off_pin: Option<Vec<usize>> = avoid.map(|pin| (0..nr_cpus).filter(|c| !pin.contains(&(*c as u32))).collect());
    let trap = match crate::exit_trap::unavailable() {
        None => crate::exit_trap::Trap::new(),
        Some(why) => Err(why),
    };
    let mut before = crate::sys::children_switches();
    let mut start_ns = mono_ns();
    let (spawned, supervisor, sampled_why) = match trap {
        Ok(t) => match spawn(&cmd.program, &args, cmd.comm, true, Some(&t)) {
            Ok(sp) => match t.start(off_pin.clone()) {
                Ok(sup) => (sp, Some(sup), None),
                Err(e) => {
                    kill_and_reap(sp.0);
                    return Err(NativeError::System(e));
                }
            },
            // The filter was refused (a container's own seccomp policy, a kernel without
            // SECCOMP_FILTER_FLAG_NEW_LISTENER): run sampled.
            Err(e) => {
                before = crate::sys::children_switches();
                start_ns = mono_ns();
                let sp = spawn(&cmd.program, &args, cmd.comm, true, None)?;
                (sp, None, Some(format!("installing the seccomp exit trap failed ({e})")))
            }
        },
        Err(why) => (spawn(&cmd.program, &args, cmd.comm, true, None)?, None, Some(why)),
    };
    finish_run(cmd, wl, server, server_root, server_old, off_pin, (spawned, before, start_ns), supervisor, sampled_why)
}

type Spawned = ((std::process::Child, Option<std::fs::File>), (u64, u64), u64);

/// Waits for a spawned tool (its exits answered by `supervisor`, or sampled when there is
/// none), reads it as a zombie, reaps it and collects the run.
#[allow(clippy::too_many_arguments)]
fn finish_run(
    cmd: &ToolCommand,
    wl: &BenchWorkload,
    server: Option<Running>,
    server_root: Option<u32>,
    server_old: Vec<u32>,
    off_pin: Option<Vec<usize>>,
    ((mut child, output), before, start_ns): Spawned,
    supervisor: Option<crate::exit_trap::Supervisor>,
    sampled_why: Option<String>,
) -> Result<ToolRun, NativeError> {
    let pid = child.id();
    let stop = Arc::new(AtomicBool::new(false));
    // The sampler: the tool's tasks without the trap, a PostgreSQL server's new backends.
    let walk_tool = supervisor.is_none();
    let sampler = (walk_tool || server_root.is_some()).then(|| {
        let stop = stop.clone();
        std::thread::spawn(move || {
            if let Some(cpus) = off_pin.filter(|c| !c.is_empty()) {
                let mut set = rustix::thread::CpuSet::new();
                for c in cpus {
                    set.set(c);
                }
                let _ = rustix::thread::sched_setaffinity(None, &set);
            }
            let (mut seen, mut served) = (BTreeMap::new(), BTreeMap::new());
            while !stop.load(Ordering::SeqCst) {
                if walk_tool {
                    walk(pid, &mut seen);
                }
                if let Some(pm) = server_root {
                    let new: Vec<u32> = children_of(pm).into_iter().filter(|c| !server_old.contains(c)).collect();
                    walk_from(new, &mut served);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            (seen, served)
        })
    });
    let leader = Pid::from_raw(pid as i32).ok_or_else(|| NativeError::System("tool pid 0".into()))?;
    let status = loop {
        match rustix::process::waitid(WaitId::Pid(leader), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT) {
            Ok(Some(st)) => break st,
            Ok(None) | Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(NativeError::System(format!("waitid: {e}"))),
        }
    };
    let end_ns = mono_ns();
    stop.store(true, Ordering::SeqCst);
    let (mut seen, served) = match sampler {
        Some(h) => h.join().map_err(|_| NativeError::System("sampler thread panicked".into()))?,
        None => (BTreeMap::new(), BTreeMap::new()),
    };
    // The leader, a zombie now: its final counters, once its last switch is done.
    let leader_dir = procfs::task_dir(pid, false);
    let _ = crate::exit_trap::wait_off_cpu(&leader_dir);
    let leader_sample = procfs::read_task(&leader_dir).ok();
    let _ = child.wait();
    crate::cleanup::forget_group(leader);
    let after = crate::sys::children_switches();
    drop(server);
    let (mut tasks, counters) = match supervisor {
        Some(s) => {
            let exits = s.finish().map_err(NativeError::System)?;
            let n = exits.len();
            let mut rest: Vec<TaskSample> = exits.into_iter().filter(|e| e.tid != pid).map(|e| e.sample).collect();
            rest.sort_by_key(|t| t.pid);
            (rest, CounterSource::ExitTrap { exits: n })
        }
        None => {
            seen.remove(&pid);
            (seen.into_values().collect(), CounterSource::Sampled(sampled_why.unwrap_or_default()))
        }
    };
    if let Some(l) = leader_sample {
        tasks.insert(0, l);
    }
    let served_switches =
        served.values().fold((0, 0), |(v, i), t| (v + t.nr_voluntary_switches, i + t.nr_involuntary_switches));
    tasks.extend(served.into_values());
    let output = read_output(output);
    if status.exit_status() != Some(0) {
        let why = match status.terminating_signal() {
            Some(s) => format!("was killed by signal {s}"),
            None => format!("exited with status {}", status.exit_status().unwrap_or(-1)),
        };
        let tail: Vec<&str> = output.lines().rev().take(3).collect();
        return Err(NativeError::System(format!(
            "{} {why}: {}",
            cmd.describe,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        )));
    }
    let metric = parse_metric(cmd.tool, wl, &output)
        .ok_or_else(|| NativeError::System(format!("{}: no result in its output:\n{output}", cmd.describe)))?;
    Ok(ToolRun {
        start_ns,
        end_ns,
        output,
        metric,
        tasks,
        rusage_switches: (
            after.0.saturating_sub(before.0) + served_switches.0,
            after.1.saturating_sub(before.1) + served_switches.1,
        ),
        counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wl(s: &str) -> BenchWorkload {
        let argv: Vec<String> = s.split_whitespace().map(String::from).collect();
        workload::bench::parse_benchmark(&argv).unwrap()
    }

    #[test]
    fn perf_versions_and_workers() {
        assert_eq!(parse_perf_version("perf version 6.1.187\n"), Some((6, 1)));
        assert_eq!(parse_perf_version("perf version 7.3.4-1+b1"), Some((7, 3)));
        assert_eq!(parse_perf_version("no version"), None);
        assert_eq!(perf_pipe_worker(6, 1), Some(PipeWorker::OneToken));
        assert_eq!(perf_pipe_worker(6, 6), Some(PipeWorker::OneToken));
        assert_eq!(perf_pipe_worker(6, 12), None);
        assert_eq!(perf_pipe_worker(7, 3), Some(PipeWorker::TwoToken));
    }

    #[test]
    fn parses_the_tools_outputs() {
        let perf = "# Running 'sched/pipe' benchmark:\n# Executed 50000 pipe operations between two processes\n\n     Total time: 2.139 [sec]\n\n      42.786380 usecs/op\n          23371 ops/sec\n";
        assert_eq!(parse_metric(Tool::PerfPipe, &wl("pipe -l 50000"), perf), Some(42.78638));
        let msg = "# 20 sender and receiver processes per group\n# 1 groups == 40 processes run\n\n     Total time: 0.034 [sec]\n";
        assert_eq!(parse_metric(Tool::PerfMessaging, &wl("messaging -g 1"), msg), Some(0.034));
        let hb = "Running in process mode with 1 groups using 40 file descriptors each (== 40 tasks)\nEach sender will pass 100 messages of 100 bytes\nTime: 0.052\n";
        assert_eq!(parse_metric(Tool::Hackbench, &wl("hackbench -g 1"), hb), Some(0.052));
        let lat = "\n\"size=0k ovr=0.30\n2 5.65\n8 7.10\n";
        assert_eq!(parse_metric(Tool::LatCtx, &wl("lat_ctx -s 0 8 2"), lat), Some(7.10));
        assert_eq!(parse_metric(Tool::LatCtx, &wl("lat_ctx -s 0 2"), lat), Some(5.65));
        let sng = "stress-ng: info:  [123] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s\nstress-ng: info:  [123] cpu                2008      2.00      3.98      0.00      1003.95         504.52\n";
        assert_eq!(parse_metric(Tool::StressNg, &wl("stress-ng --cpu 2 -t 2"), sng), Some(1003.95));
        assert_eq!(parse_metric(Tool::Hackbench, &wl("hackbench"), "garbage"), None);
    }

    #[test]
    fn stress_ng_without_timeout_falls_back() {
        if let Choice::Real(c) = choose(&wl("stress-ng --cpu 1"), &["stress-ng".into(), "--cpu".into(), "1".into()]) {
            panic!("ran {c:?} without a timeout");
        }
    }
}
