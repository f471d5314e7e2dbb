//! `schedlab native`, `validate` and `calibrate` on the real kernel of the machine the tests run
//! on (a 2-CPU VM in CI). Short runs: they check structure and consistency, not speed.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_schedlab")
}

fn schedlab(args: &[&str]) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(bin()).args(args).current_dir(root).output().expect("run schedlab")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(args: &[&str]) -> Value {
    let o = schedlab(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&o.stdout)))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

/// perf's output lines, then the counters summary.
#[test]
fn native_pipe_prints_the_tool_output_and_counters() {
    let o = schedlab(&["native", "pipe", "-l", "20000"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.starts_with(
            "# Running 'sched/pipe' benchmark:\n# Executed 20000 pipe operations between two processes\n\n"
        )
    );
    assert!(out.contains("     Total time: "), "{out}");
    assert!(out.contains(" usecs/op\n") && out.contains(" ops/sec\n"), "{out}");
    assert!(out.contains("switches ") && out.contains("per loop: "), "{out}");
    assert!(out.contains("unavailable on this kernel: ") || out.contains("wakeups "), "{out}");
}

/// The JSON object has the `run --json` fields and per-task counters that add up. The 2-token
/// pipe's switch count depends on placement (on one CPU about one per loop, workloads.md §3.1;
/// on two CPUs that poll in idle it may hardly block at all), so only bounds are checked here.
#[test]
/// `--builtin`: the built-in workers report every task at exit, so the rows add up exactly (a real
/// tool's rows are sampled from /proc and its totals come from getrusage).
fn native_pipe_json_schema_and_counters() {
    let v = json(&["native", "--json", "--builtin", "pipe", "-l", "20000"]);
    assert_eq!(v["mode"], "native");
    for key in [
        "schedlab_version",
        "seed",
        "topology",
        "kernel",
        "features",
        "patches",
        "sysctl",
        "workload",
        "metric",
        "counters",
        "wakeup_latency_ns",
        "tasks",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["metric"]["name"], "usecs_per_op");
    assert!(v["metric"]["value"].as_f64().unwrap() > 0.0);
    let c = &v["counters"];
    for key in [
        "nr_switches",
        "nr_voluntary_switches",
        "nr_involuntary_switches",
        "nr_migrations",
        "nr_wakeups",
        "nr_wakeups_sync",
        "nr_wakeups_local",
        "nr_wakeups_remote",
        "nr_wakeups_affine",
        "nr_wakeups_affine_attempts",
        "nr_wakeups_migrate",
        "nr_wakeup_preemptions",
        "nr_tick_preemptions",
        "nr_ipis",
        "idle_ns_per_cpu",
    ] {
        assert!(c.get(key).is_some(), "missing counters.{key}");
    }
    // The kernel keeps no preemption counters: null, and said so.
    assert!(c["nr_wakeup_preemptions"].is_null());
    assert!(
        v["native"]["unavailable"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s.as_str().unwrap().starts_with("nr_tick_preemptions"))
    );
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    let sum = |k: &str| tasks.iter().map(|t| u(&t[k])).sum::<u64>();
    assert_eq!(sum("nr_switches"), u(&c["nr_switches"]));
    assert_eq!(u(&c["nr_switches"]), u(&c["nr_voluntary_switches"]) + u(&c["nr_involuntary_switches"]));
    assert!(u(&c["nr_switches"]) <= 3 * 20_000 + 1_000, "{c}");
    for t in tasks {
        assert!(u(&t["nr_switches"]) >= 1, "{t}");
        assert_eq!(t["comm"], "sched-pipe");
        assert!(u(&t["sum_exec_runtime_ns"]) > 0);
    }
}

/// The classic 1-token ping-pong switches at least once per round trip on each side, and at
/// least one of the two blocks in `read` per round trip. (Whether voluntary switches outnumber
/// involuntary ones depends on placement: on a shared CPU the wakee preempts the waker, which
/// then never blocks, so both kinds approach one per loop.)
#[test]
fn native_classic_pipe_switches_once_per_op_per_side() {
    let loops = 20_000u64;
    let v = json(&["native", "--json", "pipe", "--classic", "-l", "20000"]);
    let tasks = v["tasks"].as_array().unwrap();
    for t in tasks {
        assert!(u(&t["nr_switches"]) >= loops * 9 / 10, "{t}");
    }
    let c = &v["counters"];
    assert!(u(&c["nr_voluntary_switches"]) >= loops * 9 / 10, "{c}");
}

/// rt-tests' three lines; 41 tasks; every worker switched (at least at its exit) and blocking
/// dominates. The built-in workers: every task is read as a zombie, so the counts are exact.
#[test]
fn native_hackbench_runs_and_counts() {
    let o = schedlab(&["native", "--builtin", "hackbench", "-g", "1", "-l", "200"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.starts_with(
        "Running in process mode with 1 groups using 40 file descriptors each (== 40 tasks)\nEach sender will pass 200 messages of 100 bytes\nTime: "
    ));
    assert!(out.contains("80000 messages"), "{out}");
    let v = json(&["native", "--json", "--builtin", "hackbench", "-g", "1", "-l", "200"]);
    assert_eq!(v["metric"]["name"], "seconds");
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 41);
    assert!(tasks[1..].iter().all(|t| u(&t["nr_switches"]) >= 1));
    let c = &v["counters"];
    assert!(u(&c["nr_voluntary_switches"]) > u(&c["nr_involuntary_switches"]), "{c}");
    // Threads, pipes, pinned to one CPU: no migration once a task has started there.
    let v = json(&[
        "native",
        "--json",
        "--builtin",
        "--pin",
        "0",
        "hackbench",
        "-T",
        "-p",
        "-g",
        "1",
        "-f",
        "5",
        "-l",
        "50",
    ]);
    assert_eq!(v["tasks"].as_array().unwrap().len(), 11);
    assert!(u(&v["counters"]["nr_migrations"]) <= 11, "{}", v["counters"]);
}

#[test]
fn native_rejects_bad_input() {
    let o = schedlab(&["native", "pipe", "-x"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    // The server native pgbench starts listens on a Unix socket only.
    let o = schedlab(&["native", "pgbench", "-S", "-h", "localhost", "-T", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("Unix socket only"), "{}", text(&o.stderr));
    // What the built-in schbench cannot do is named.
    let o = schedlab(&["native", "--builtin", "schbench", "-R", "100", "-r", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("-R (requests per second mode)"), "{}", text(&o.stderr));
    let o = schedlab(&["native", "--pin", "7", "pipe", "-l", "10"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

/// `--trace`: latencies and placement from ftrace; the global tracing state is untouched and
/// the private instance is gone afterwards.
#[test]
fn native_trace_fills_latency_and_leaves_tracing_alone() {
    if !is_root() {
        eprintln!("skipped: ftrace needs root");
        return;
    }
    let before = tracing_state();
    let v = json(&["native", "--json", "--trace", "pipe", "-l", "5000"]);
    assert!(u(&v["wakeup_latency_ns"]["p50"]) > 0, "{}", v["wakeup_latency_ns"]);
    assert!(u(&v["counters"]["nr_wakeups"]) > 0);
    let c = &v["counters"];
    assert!(u(&c["nr_wakeups_local"]) + u(&c["nr_wakeups_remote"]) <= u(&c["nr_wakeups"]));
    assert_eq!(tracing_state(), before);
}

/// What a native run must leave as it found: the top-level `tracing_on`, and no
/// `schedlab-*` instance of a dead process.
fn tracing_state() -> Option<String> {
    let root = tracefs()?;
    std::fs::read_to_string(root.join("tracing_on")).ok().map(|s| s.trim().to_string())
}

/// The mounted tracefs; mounted at /sys/kernel/tracing first if it is not (as the run itself
/// would), so that "before" and "after" read the same files.
fn tracefs() -> Option<PathBuf> {
    let find = || {
        let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
        mounts.lines().find_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.len() > 2 && f[2] == "tracefs").then(|| PathBuf::from(f[1]))
        })
    };
    find().or_else(|| {
        let target = Path::new("/sys/kernel/tracing");
        rustix::mount::mount("nodev", target, "tracefs", rustix::mount::MountFlags::empty(), None).ok()?;
        find()
    })
}

fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
            }
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    // Gone, or at most a zombie of someone else would show as Z; a reaped child has no entry.
    Path::new(&format!("/proc/{pid}")).exists()
}

/// SIGINT in the middle of a run: exit status 130, every child killed and reaped, the ftrace
/// instance removed and the global tracing state as before.
fn interrupt_mid_run(args: &[&str], want_children: usize) {
    let traced = args.contains(&"--trace");
    let before = tracing_state();
    let mut child = Command::new(bin()).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut kids = Vec::new();
    // (Before its workers, a run may start short-lived helpers such as `perf version`: wait
    // for the instance too.)
    let instance = || tracefs().is_some_and(|root| root.join(format!("instances/schedlab-{pid}")).is_dir());
    while Instant::now() < deadline {
        kids = children_of(pid);
        if kids.len() >= want_children && (!traced || instance()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(kids.len() >= want_children, "{args:?}: only {} children appeared", kids.len());
    std::thread::sleep(Duration::from_millis(100));
    kids = children_of(pid);
    if traced {
        let root = tracefs().expect("tracefs mounted by the run");
        assert!(root.join(format!("instances/schedlab-{pid}")).is_dir(), "the run's ftrace instance exists");
    }
    std::thread::sleep(Duration::from_millis(300));
    rustix::process::kill_process(rustix::process::Pid::from_raw(pid as i32).unwrap(), rustix::process::Signal::INT)
        .unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{args:?}: {err}");
    assert!(err.contains("interrupted"), "{err}");
    for k in &kids {
        assert!(!alive(*k), "{args:?}: child {k} is still there");
    }
    if traced {
        let root = tracefs().unwrap();
        assert!(!root.join(format!("instances/schedlab-{pid}")).exists(), "instance left behind");
        assert_eq!(tracing_state(), before, "top-level tracing_on changed");
    }
}

#[test]
fn interrupt_leaves_no_child_and_tracing_as_it_was() {
    if is_root() {
        interrupt_mid_run(&["native", "--trace", "--trace-buffer-kb", "1024", "pipe", "-l", "100000000"], 1);
    } else {
        eprintln!("not root: checking children only");
        interrupt_mid_run(&["native", "pipe", "-l", "100000000"], 1);
    }
    // Many processes, blocked and running.
    interrupt_mid_run(&["native", "--builtin", "hackbench", "-g", "2", "-l", "1000000"], 80);
}

/// Every process under `pid`, recursively.
fn descendants_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        for c in children_of(p) {
            out.push(c);
            stack.push(c);
        }
    }
    out
}

fn signal(pid: u32, sig: rustix::process::Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_raw(pid as i32).unwrap(), sig).unwrap();
}

/// Starts `schedlab native ARGS`, waits until it has at least `want` descendants (the real tool
/// and its workers) and returns it with them.
fn start_with_descendants(args: &[&str], want: usize) -> (std::process::Child, Vec<u32>) {
    let child = Command::new(bin()).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut kids = Vec::new();
    while Instant::now() < deadline {
        kids = descendants_of(child.id());
        if kids.len() >= want {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(kids.len() >= want, "{args:?}: only {} descendants appeared", kids.len());
    std::thread::sleep(Duration::from_millis(300));
    let tree = descendants_of(child.id());
    (child, tree)
}

fn wait_gone(pids: &[u32], what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && pids.iter().any(|p| alive(*p)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "{what}: {left:?} still there");
}

fn hackbench_installed() -> bool {
    native::tools::find_program("hackbench", &["/usr/sbin"]).is_some()
}

/// SIGTERM ends a run of the real hackbench cleanly: exit 130, the tool and every worker it
/// forked gone, the ftrace instance removed.
#[test]
fn sigterm_ends_a_real_tool_run_cleanly() {
    if !hackbench_installed() {
        eprintln!("skipped: rt-tests hackbench is not installed");
        return;
    }
    let mut args = vec!["native", "hackbench", "-g", "2", "-l", "1000000"];
    if is_root() {
        args.splice(1..1, ["--trace", "--trace-buffer-kb", "1024"]);
    }
    let (mut child, tree) = start_with_descendants(&args, 81);
    let pid = child.id();
    signal(pid, rustix::process::Signal::TERM);
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    wait_gone(&tree, "after SIGTERM");
    if is_root() {
        assert!(!tracefs().unwrap().join(format!("instances/schedlab-{pid}")).exists(), "instance left behind");
    }
}

/// A traced run killed by SIGKILL cannot clean up: its tracefs instance stays (recording) and
/// the real tool's workers are orphaned. The next run, traced or not, removes the instance and
/// kills the workers before it starts.
#[test]
fn the_run_after_a_sigkill_cleans_up() {
    if !is_root() {
        eprintln!("skipped: ftrace needs root");
        return;
    }
    let tool = hackbench_installed();
    let args: &[&str] = if tool {
        &["native", "--trace", "--trace-buffer-kb", "1024", "hackbench", "-g", "1", "-l", "10000000"]
    } else {
        &["native", "--trace", "--trace-buffer-kb", "1024", "pipe", "-l", "100000000"]
    };
    let (mut child, tree) = start_with_descendants(args, if tool { 41 } else { 1 });
    let pid = child.id();
    let instance = tracefs().unwrap().join(format!("instances/schedlab-{pid}"));
    assert!(instance.is_dir());
    signal(pid, rustix::process::Signal::KILL);
    child.wait().unwrap();
    assert!(instance.is_dir(), "nothing can remove the instance of a SIGKILLed run");
    let o = schedlab(&["native", "--builtin", "pipe", "-l", "1000"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!instance.exists(), "the next run removed the stale instance");
    wait_gone(&tree, "after the next run");
}

/// With the real tool installed, `native` says what ran and how its tasks were read;
/// `--builtin` runs the built-in workers and says why; every task the tool forked is counted.
#[test]
fn native_runs_the_real_tool_when_installed() {
    if !hackbench_installed() {
        eprintln!("skipped: rt-tests hackbench is not installed");
        return;
    }
    let v = json(&["native", "--json", "hackbench", "-g", "1", "-l", "100"]);
    assert!(v["native"]["runner"].as_str().unwrap().starts_with("rt-tests hackbench"), "{}", v["native"]);
    assert!(v["native"]["note"].is_null());
    let tasks = v["tasks"].as_array().unwrap();
    if native::exit_trap::unavailable().is_none() {
        // Every task read at its exit: the parent and its 40 workers.
        assert_eq!(v["native"]["counters"], serde_json::json!({ "read": "exit-trap", "exits": 41 }));
        assert_eq!(tasks.len(), 41, "{}", v["tasks"]);
    } else {
        // The parent and the workers the sampler saw (a short-lived one can be missed).
        assert_eq!(v["native"]["counters"]["read"], "sampled");
        assert!(tasks.len() > 1 && tasks.len() <= 41, "{}", v["tasks"]);
    }
    assert!(tasks.iter().all(|t| t["comm"] == "hackbench"), "{}", v["tasks"]);
    let c = &v["counters"];
    assert!(u(&c["nr_switches"]) >= 40, "{c}");
    assert_eq!(u(&c["nr_switches"]), u(&c["nr_voluntary_switches"]) + u(&c["nr_involuntary_switches"]));
    assert!(v["metric"]["value"].as_f64().unwrap() > 0.0);
    let v = json(&["native", "--json", "--builtin", "hackbench", "-g", "1", "-l", "100"]);
    assert_eq!(v["native"]["runner"], "built-in workers");
    assert!(v["native"]["note"].as_str().unwrap().contains("--builtin"));
}

/// `--kernel host` maps this kernel onto a preset, for any command that builds a model.
#[test]
fn kernel_host_maps_to_a_preset() {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let names: Vec<&'static str> = sim::kernel::KERNELS.iter().map(|k| k.name).collect();
    let m = native::preset_for_release(release.trim(), &names).unwrap();
    let v = json(&["run", "--json", "--topology", "host", "--kernel", "host", "pipe", "-l", "2000"]);
    assert_eq!(v["kernel"], m.preset);
    let o = schedlab(&["features", "--kernel", "host"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// `calibrate` writes a cost file that `--cost-file` and `machine::load_cost_file` accept.
#[test]
fn calibrate_writes_a_loadable_cost_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host-costs.toml");
    let p = path.to_str().unwrap();
    let o = schedlab(&["calibrate", "--repetitions", "1", "--scale", "0.05", "-o", p]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let body = std::fs::read_to_string(&path).unwrap();
    assert!(body.starts_with("# schedlab cost file"), "{body}");
    assert!(body.contains("#   syscall_ns ") && body.contains("null_syscall"), "{body}");
    let costs = machine::load_cost_file(&path).unwrap();
    let keys: Vec<&str> = costs.iter().map(|(k, _)| k.as_str()).collect();
    for k in ["syscall_ns", "copy_ns_per_kib", "context_switch_ns", "context_switch_mm_ns"] {
        assert!(keys.contains(&k), "{k} missing from {keys:?}");
    }
    let o = schedlab(&["run", "--topology", "host", "--cost-file", p, "pipe", "-l", "1000"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = schedlab(&["run", "--cost-file", "/nonexistent.toml", "pipe", "-l", "10"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `validate` prints one row per quantity with both sides.
#[test]
fn validate_side_by_side() {
    let v = json(&["validate", "--json", "--runs", "2", "pipe", "-l", "5000"]);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows[0]["quantity"], "usecs_per_op");
    assert!(rows[0]["native_median"].as_f64().unwrap() > 0.0);
    assert!(rows[0]["sim_median"].as_f64().unwrap() > 0.0);
    assert!(rows.iter().any(|r| r["quantity"] == "switches/loop"));
    let o = schedlab(&["validate", "--runs", "2", "hackbench", "-g", "1", "-f", "5", "-l", "50"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("switches/message") && out.contains("wakee on waker CPU"), "{out}");
    let ran = if hackbench_installed() { "ran rt-tests hackbench" } else { "ran built-in workers" };
    assert!(out.contains(ran), "{out}");
    // Every judged row says ok or OFF; the metric row is judged.
    let metric = out.lines().find(|l| l.starts_with("seconds ")).unwrap();
    assert!(metric.ends_with(" ok") || metric.ends_with(" OFF"), "{metric}");
    assert!(rows.iter().any(|r| r["ok"].is_boolean()), "{rows:?}");
}

/// `validate --calibrate` measures this machine first and gives the model those costs: the
/// header says so and the model's time per operation moves off the preset's; without
/// --calibrate (or --vm) --calibrate-scale is refused, and it cannot be combined with a cost file.
#[test]
fn validate_calibrate_gives_the_model_this_machines_costs() {
    let args = |calibrate: bool| {
        let mut a = vec!["validate", "--json", "--runs", "1", "--no-trace", "--builtin", "--cpus", "0"];
        if calibrate {
            a.extend(["--calibrate", "--calibrate-scale", "0.05"]);
        }
        a.extend(["pipe", "-l", "2000"]);
        a
    };
    let model_usecs = |v: &serde_json::Value| {
        let rows = v["rows"].as_array().unwrap();
        rows.iter().find(|r| r["quantity"] == "usecs_per_op").unwrap()["sim_median"].as_f64().unwrap()
    };
    let preset = json(&args(false));
    let calibrated = json(&args(true));
    assert_eq!(preset["sim"]["calibrated"], false);
    assert_eq!(calibrated["sim"]["calibrated"], true);
    let (a, b) = (model_usecs(&preset), model_usecs(&calibrated));
    assert!(a > 0.0 && b > 0.0 && a != b, "the model's µs/op with the preset's costs {a}, calibrated {b}");
    let o = schedlab(&["validate", "--calibrate-scale", "0.1", "pipe", "-l", "10"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr).trim_end().lines().count(), 1, "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("only with --calibrate or --vm"), "{}", text(&o.stderr));
    let o = schedlab(&["validate", "--calibrate", "--cost-file", "x.toml", "pipe", "-l", "10"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

/// `native --kernel SPEC`: one line, exit 2, saying native runs the host kernel and naming
/// the commands that run another one; `--kernel host` is the host kernel and runs.
#[test]
fn native_kernel_spec_says_why_not() {
    let o = schedlab(&["native", "--kernel", "v7.3 +preempt-sync-runtime-fix", "pipe", "-l", "10"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("native runs this machine's kernel"), "{err}");
    assert!(
        err.contains("schedlab run --kernel 'v7.3 +preempt-sync-runtime-fix'") && err.contains("schedlab vm run"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    let o = schedlab(&["native", "--kernel", "host", "--builtin", "pipe", "-l", "100"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// The five benchmarks whose real tool may be missing run natively with the built-in workers
/// (`--builtin`, so whatever is installed) and print the tool's output.
#[test]
fn native_builtin_runs_every_benchmark() {
    let cases: &[(&[&str], &str)] = &[
        (&["lat_ctx", "-N", "3", "2"], "\"size=0k ovr="),
        (&["netperf", "-t", "TCP_RR", "-l", "-2000"], "MIGRATED TCP REQUEST/RESPONSE TEST"),
        (&["stress-ng", "--cpu", "1", "--timeout", "1", "--metrics-brief"], "successful run completed"),
        (&["schbench", "-m", "1", "-t", "2", "-r", "1"], "Wakeup Latencies percentiles (usec) runtime 1 (s)"),
    ];
    for (wl, marker) in cases {
        let mut args = vec!["native", "--builtin"];
        args.extend_from_slice(wl);
        let o = schedlab(&args);
        assert!(o.status.success(), "{wl:?}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        assert!(out.contains(marker), "{wl:?}: {out}");
        assert!(out.contains("# ran: built-in workers") && out.contains("switches "), "{wl:?}: {out}");
    }
}

fn postgres_installed() -> bool {
    native::postgres::find_postgres().is_ok()
}

/// PostgreSQL is needed for the pgbench tests; CI (root) installs it, so only a non-root run
/// without it may skip.
fn need_postgres() -> bool {
    if postgres_installed() {
        return true;
    }
    assert!(!is_root(), "PostgreSQL is not installed: apt-get install postgresql (.ci/run does)");
    eprintln!("skipped: PostgreSQL is not installed (Debian package postgresql) and not root");
    false
}

/// This run's throwaway clusters (`<tmp>/schedlab-pg-<pid>-<n>`).
fn clusters_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("schedlab-pg-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// Every process whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
        })
        .collect()
}

/// `native pgbench`: the real pgbench against a PostgreSQL server it started (initdb, a Unix
/// socket, `pgbench -i`), its tps and latency, the backends' counters beside pgbench's, and
/// no server or directory left afterwards. About 3 s.
#[test]
fn native_pgbench_runs_against_a_throwaway_server() {
    if !need_postgres() {
        return;
    }
    let child = Command::new(bin())
        .args(["native", "--json", "pgbench", "-S", "-c", "2", "-j", "1", "-T", "1", "-n"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let runner = v["native"]["runner"].as_str().unwrap();
    assert!(runner.starts_with("pgbench against a throwaway PostgreSQL"), "{runner}");
    assert!(v["metric"]["value"].as_f64().unwrap() > 0.0, "{}", v["metric"]);
    let tasks = v["tasks"].as_array().unwrap();
    let named = |c: &str| tasks.iter().filter(|t| t["comm"] == c).count();
    assert!(named("pgbench") >= 1, "{}", v["tasks"]);
    // One backend per client, and the one of the connection pgbench opens first to read the
    // scale (short-lived, so the 2 ms sampler may miss it); the server's own processes are not
    // the benchmark's. (-n: no vacuum, whose connection would be one more.)
    assert!((2..=3).contains(&named("postgres")), "{}", v["tasks"]);
    let c = &v["counters"];
    assert!(u(&c["nr_switches"]) > 0, "{c}");
    assert_eq!(u(&c["nr_switches"]), u(&c["nr_voluntary_switches"]) + u(&c["nr_involuntary_switches"]));
    assert!(clusters_of(pid).is_empty(), "cluster directory left: {:?}", clusters_of(pid));
    assert!(processes_mentioning(&format!("schedlab-pg-{pid}-")).is_empty(), "server left running");
    // The text output is pgbench's own.
    let o = schedlab(&["native", "pgbench", "-S", "-c", "1", "-t", "200", "-n"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for line in [
        "transaction type: <builtin: select only>",
        "number of transactions actually processed: 200/200",
        "latency average = ",
        "tps = ",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
}

/// SIGTERM during `native pgbench` (server up, benchmark running): exit 130, pgbench, the
/// postmaster and its backends gone, the cluster directory removed. A SIGKILLed run leaves
/// its directory (the postmaster dies with it, PR_SET_PDEATHSIG); the next run removes it.
#[test]
fn pgbench_interrupted_or_killed_leaves_no_server() {
    if !need_postgres() {
        return;
    }
    for sig in [rustix::process::Signal::TERM, rustix::process::Signal::KILL] {
        let (mut child, _) = start_with_descendants(&["native", "pgbench", "-S", "-c", "2", "-T", "60"], 1);
        let pid = child.id();
        // Wait for the benchmark itself: pgbench is running once the cluster is set up.
        let deadline = Instant::now() + Duration::from_secs(60);
        let running = || {
            descendants_of(pid).iter().any(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "pgbench")
                    && std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| !c.windows(3).any(|w| w == b"-i\0"))
            })
        };
        while Instant::now() < deadline && !running() {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(running(), "pgbench did not start");
        let tree = descendants_of(pid);
        let dirs = clusters_of(pid);
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        signal(pid, sig);
        let status = child.wait().unwrap();
        if sig == rustix::process::Signal::TERM {
            assert_eq!(status.code(), Some(130));
            assert!(clusters_of(pid).is_empty(), "directory left after SIGTERM");
        } else {
            assert!(dirs[0].exists(), "nothing removes the directory of a SIGKILLed run");
        }
        wait_gone(&tree, &format!("after {sig:?}"));
        if sig == rustix::process::Signal::KILL {
            let o = schedlab(&["native", "--builtin", "pipe", "-l", "1000"]);
            assert!(o.status.success(), "{}", text(&o.stderr));
            assert!(!dirs[0].exists(), "the next run removed the stale cluster");
        }
    }
}

/// `validate` runs the model and the host side by side for the benchmarks added to native
/// mode (pgbench only with PostgreSQL).
#[test]
fn validate_every_benchmark() {
    let mut cases: Vec<&[&str]> = vec![
        &["lat_ctx", "-N", "3", "2"],
        &["netperf", "-t", "TCP_RR", "-l", "-2000"],
        &["stress-ng", "--cpu", "1", "--timeout", "1"],
        &["schbench", "-m", "1", "-t", "2", "-r", "1"],
    ];
    if need_postgres() {
        cases.push(&["pgbench", "-S", "-c", "2", "-T", "1"]);
    }
    for wl in cases {
        let mut args = vec!["validate", "--json", "--runs", "1"];
        args.extend_from_slice(wl);
        let v = json(&args);
        let row = &v["rows"][0];
        assert!(row["native_median"].as_f64().is_some_and(|x| x > 0.0), "{wl:?}: {row}");
        assert!(row["sim_median"].as_f64().is_some_and(|x| x > 0.0), "{wl:?}: {row}");
        assert!(row["ok"].is_boolean(), "{wl:?}: {row}");
        assert!(v["rows"].as_array().unwrap().iter().any(|r| r["quantity"] == "involuntary share"), "{wl:?}");
    }
}
