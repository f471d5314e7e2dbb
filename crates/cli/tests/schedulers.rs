//! The sweep examples of `examples/sweeps/` on real batch schedulers' terms.
//!
//! Slurm: a real single-node cluster (Debian's `slurm-wlm` and `munge`) configured for
//! localhost in a temporary directory, the example array job submitted over 4 shards, the
//! shards merged, and the merged rows checked equal to an unsharded sweep.
//!
//! Kubernetes: no cluster (kind needs a container runtime and images from outside); the Job is
//! validated against the Kubernetes API's OpenAPI schema by PyPI's `kubernetes-validate`
//! (strict: an unknown field is an error), and each pod's command is run as the Indexed Job
//! would run it, with its environment, working directory and volume mount, then merged as above.
//!
//! The daemons run as root in the foreground with their key, sockets, state, spool, logs and
//! pid files in the temporary directory; [`Cluster`]'s `Drop` cancels the job, kills them by
//! pid and removes the directory, so a failing assertion (a panic unwinds through it) leaves
//! nothing behind. Ports are free ones chosen at start, so several runs on one machine do not
//! meet. Without root or the packages the test says why and returns; under CI (`CI` set) it
//! fails instead, so CI cannot pass without having run it.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::types::Value;

/// The states of a job not yet over.
const ACTIVE: &str = "--states=PENDING,CONFIGURING,RUNNING,COMPLETING,SUSPENDED";

const TOOLS: [&str; 8] = ["munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel"];

/// Where a tool is: `PATH`, then the sbin directories (a non-login root shell may lack them).
fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Why this machine cannot start a Slurm, if it cannot.
fn missing() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root (slurmd starts job steps as their user, so it runs as root)".into());
    }
    let absent: Vec<&str> = TOOLS.into_iter().filter(|t| tool(t).is_none()).collect();
    if !absent.is_empty() {
        return Some(format!("{} not installed (apt-get install slurm-wlm munge)", absent.join(", ")));
    }
    None
}

/// A port nobody listens on now (the daemons bind it a moment later).
fn free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let b = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    (a.local_addr().unwrap().port(), b.local_addr().unwrap().port())
}

/// A single-node Slurm whose every file is in `dir`.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    /// munged, slurmctld, slurmd: killed in reverse order.
    daemons: Vec<(&'static str, Child)>,
    jobs: Vec<String>,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::Builder::new().prefix("schedlab-slurm-").tempdir().expect("temp dir");
        let p = dir.path();
        // munged insists that every directory above its socket is searchable by all, and that
        // its key is private.
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        for d in ["run", "munge", "state", "spool", "log", "work"] {
            std::fs::create_dir(p.join(d)).unwrap();
        }
        std::fs::set_permissions(p.join("munge"), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let mut cluster = Cluster { conf: p.join("slurm.conf"), dir, daemons: Vec::new(), jobs: Vec::new() };
        let p = cluster.dir.path().to_path_buf();
        let key = p.join("munge/munge.key");
        let st = Command::new(tool("mungekey").unwrap()).arg("-c").arg("-k").arg(&key).status().expect("mungekey");
        assert!(st.success(), "mungekey -c failed");
        let socket = p.join("run/munge.sock");
        let munged = Command::new(tool("munged").unwrap())
            .arg("-F")
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--log-file={}", p.join("log/munged.log").display()))
            .arg(format!("--pid-file={}", p.join("run/munged.pid").display()))
            .arg(format!("--seed-file={}", p.join("munge/munged.seed").display()))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(p.join("log/munged.out")).unwrap())
            .spawn()
            .expect("start munged");
        cluster.daemons.push(("munged", munged));
        cluster.wait_for("munged's socket", |_| socket.exists());

        let (ctld_port, slurmd_port) = free_ports();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let conf = format!(
            "# A one-node cluster for schedlab's Slurm test; every path is in this directory.\n\
             ClusterName=schedlab\n\
             SlurmctldHost=localhost\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={slurmd_port}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             StateSaveLocation={p}/state\n\
             SlurmdSpoolDir={p}/spool\n\
             SlurmctldPidFile={p}/run/slurmctld.pid\n\
             SlurmdPidFile={p}/run/slurmd.pid\n\
             SlurmctldLogFile={p}/log/slurmctld.log\n\
             SlurmdLogFile={p}/log/slurmd.log\n\
             MailProg=/bin/true\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             MpiDefault=none\n\
             SchedulerType=sched/builtin\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU\n\
             ReturnToService=2\n\
             SlurmdParameters=config_overrides\n\
             NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
            socket = socket.display(),
            p = p.display(),
        );
        std::fs::write(&cluster.conf, conf).unwrap();
        for (name, args) in [("slurmctld", vec!["-D"]), ("slurmd", vec!["-D", "-N", "localhost"])] {
            let child = Command::new(tool(name).unwrap())
                .args(args)
                .arg("-f")
                .arg(&cluster.conf)
                .env("SLURM_CONF", &cluster.conf)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(p.join(format!("log/{name}.out"))).unwrap())
                .spawn()
                .unwrap_or_else(|e| panic!("start {name}: {e}"));
            cluster.daemons.push((name, child));
        }
        cluster.wait_for("the node to be idle", |c| {
            c.slurm("sinfo", &["-h", "-o", "%T"]).is_some_and(|s| s.trim() == "idle")
        });
        cluster
    }

    /// A Slurm client command's stdout, or None when it failed.
    fn slurm(&self, name: &str, args: &[&str]) -> Option<String> {
        let out = Command::new(tool(name)?).args(args).env("SLURM_CONF", &self.conf).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Waits up to 30 s for `ready`, failing with the daemons' logs (and exits) if it never is.
    fn wait_for(&mut self, what: &str, mut ready: impl FnMut(&Cluster) -> bool) {
        let start = Instant::now();
        while !ready(self) {
            let exited = self.daemons.iter_mut().find_map(|(name, c)| Some((*name, c.try_wait().ok()??)));
            if let Some((name, status)) = exited {
                panic!("{name} exited ({status}) while waiting for {what}:\n{}", self.logs());
            }
            if start.elapsed() > Duration::from_secs(30) {
                panic!("no {what} after 30 s:\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn logs(&self) -> String {
        let mut text = String::new();
        for f in ["munged.out", "slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"] {
            let body = std::fs::read_to_string(self.dir.path().join("log").join(f)).unwrap_or_default();
            let tail: Vec<&str> = body.lines().rev().take(15).collect();
            text += &format!("--- {f} (last lines)\n");
            for l in tail.into_iter().rev() {
                text += l;
                text += "\n";
            }
        }
        text
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // A job still running (an assertion failed while waiting) is cancelled first, so its
        // steps do not outlive the cluster.
        for job in &self.jobs {
            let _ = self.slurm("scancel", &[job]);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.jobs.is_empty()
            && Instant::now() < deadline
            && self.slurm("squeue", &["-h", ACTIVE]).is_some_and(|q| !q.trim().is_empty())
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            let pid = rustix::process::Pid::from_child(child);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        // The TempDir removes the directory when it drops, after this.
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Copies a directory tree (the examples the job reads).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// The examples a sweep job reads, copied into a job's working directory.
fn copy_examples(work: &Path) {
    for d in ["examples/sweeps", "examples/rtapp"] {
        copy_tree(&root().join(d), &work.join(d));
    }
}

/// `PATH` with the schedlab under test first, as a job's environment has it.
fn path_with_schedlab() -> std::ffi::OsString {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_schedlab"));
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin.parent().unwrap().to_path_buf()).chain(std::env::split_paths(&rest)))
        .unwrap()
}

/// Every column of every stored run but the row id and the wall time, in key order.
fn rows(dir: &Path) -> Vec<Vec<Value>> {
    let conn = rusqlite::Connection::open(dir.join("results.db")).unwrap();
    let mut stmt = conn.prepare("SELECT * FROM runs ORDER BY spec, topology, workload, seed").unwrap();
    let keep: Vec<usize> =
        (0..stmt.column_count()).filter(|&i| !matches!(stmt.column_name(i).unwrap(), "id" | "wall_ms")).collect();
    assert!(keep.len() > 20, "the runs table has its metric and counter columns");
    let rows = stmt.query_map([], |r| keep.iter().map(|&i| r.get::<_, Value>(i)).collect()).unwrap();
    rows.map(Result::unwrap).collect()
}

/// The runs of one shard database and their summed wall time (ms).
fn shard_runs(dir: &Path) -> (i64, f64) {
    let conn = rusqlite::Connection::open(dir.join("results.db")).unwrap();
    conn.query_row("SELECT count(*), coalesce(sum(wall_ms), 0) FROM runs", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap()
}

/// `key=value` of one `scontrol show job -o` line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace().find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('='))).unwrap_or("")
}

#[test]
fn slurm_array_job_shards_merge_to_the_unsharded_sweep() {
    if let Some(why) = missing() {
        assert!(std::env::var_os("CI").is_none(), "CI must run the Slurm test, but: {why}");
        eprintln!("skipped: a real Slurm needs {why}");
        return;
    }
    let script = std::fs::read_to_string(root().join("examples/sweeps/slurm.sh")).unwrap();
    // The commands the example tells its reader to run are the ones run here.
    let submit = "sbatch --array=0-3 examples/sweeps/slurm.sh examples/sweeps/plan.toml";
    let merge = "schedlab merge results/shard-* --out results/merged";
    for line in ["mkdir -p results", submit, merge] {
        assert!(script.lines().any(|l| l.trim_start_matches(['#', ' ']) == line), "slurm.sh says `{line}`");
    }

    let start = Instant::now();
    let mut cluster = Cluster::start();
    let started = start.elapsed();
    let work = cluster.dir.path().join("work");
    copy_examples(&work);
    std::fs::create_dir(work.join("results")).unwrap();
    let path = path_with_schedlab();

    // One CPU per task (the script asks for 8, more than a CI machine has): on 2 CPUs two
    // shards run at a time. sbatch passes its environment (PATH, SLURM_CONF) to the tasks.
    let mut argv: Vec<&str> = submit.split(' ').skip(1).collect();
    argv.splice(0..0, ["--parsable", "--cpus-per-task=1"]);
    let out = Command::new(tool("sbatch").unwrap())
        .args(&argv)
        .current_dir(&work)
        .env("PATH", &path)
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .unwrap();
    assert!(out.status.success(), "sbatch failed: {}\n{}", String::from_utf8_lossy(&out.stderr), cluster.logs());
    let job = String::from_utf8(out.stdout).unwrap().trim().to_string();
    cluster.jobs.push(job.clone());
    let submitted = start.elapsed();
    cluster.wait_for("the array job to finish", |c| {
        c.slurm("squeue", &["-h", &format!("--jobs={job}"), ACTIVE]).is_some_and(|q| q.trim().is_empty())
    });
    let finished = start.elapsed();

    let tasks = cluster.slurm("scontrol", &["-o", "show", "job", &job]).unwrap();
    let mut lines: Vec<&str> = tasks.lines().collect();
    lines.sort_by_key(|l| field(l, "ArrayTaskId").parse::<u32>().unwrap_or(u32::MAX));
    assert_eq!(lines.len(), 4, "four array tasks:\n{tasks}");
    eprintln!(
        "slurm: daemons up {:.1} s, job {job} submitted at {:.1} s, done at {:.1} s",
        started.as_secs_f64(),
        submitted.as_secs_f64(),
        finished.as_secs_f64()
    );
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(field(l, "ArrayTaskId"), i.to_string(), "{l}");
        assert_eq!((field(l, "JobState"), field(l, "ExitCode")), ("COMPLETED", "0:0"), "{l}\n{}", cluster.logs());
        let log = std::fs::read_to_string(work.join(format!("results/slurm-{job}_{i}.out"))).unwrap();
        assert!(log.contains(&format!("shard {i}/4: 3 runs; 0 already stored, 3 stored now")), "task {i}: {log}");
        let (n, wall_ms) = shard_runs(&work.join(format!("results/shard-{i}")));
        assert_eq!(n, 3, "shard {i} holds its 3 of the plan's 12 runs");
        eprintln!(
            "slurm: shard {i}/4: {} to {} ({}), {n} runs, {wall_ms:.0} ms of simulation",
            field(l, "StartTime"),
            field(l, "EndTime"),
            field(l, "RunTime")
        );
    }

    // The example's merge line (the shell expands the glob), then an unsharded sweep.
    let sh = |cmd: &str| {
        let out = Command::new("/bin/sh").arg("-c").arg(cmd).current_dir(&work).env("PATH", &path).output().unwrap();
        assert!(out.status.success(), "`{cmd}` failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let merged = sh(merge);
    assert!(merged.contains("results/merged/results.db: 12 runs"), "{merged}");
    sh("schedlab sweep examples/sweeps/plan.toml --out unsharded --quiet");
    let all = rows(&work.join("unsharded"));
    assert_eq!(all.len(), 12);
    assert_eq!(rows(&work.join("results/merged")), all, "the merged shards hold the unsharded sweep's runs");
    assert_eq!(
        sh("schedlab compare --from results/merged"),
        sh("schedlab compare --from unsharded"),
        "the same table from the merged shards"
    );
}

// ---- Kubernetes -------------------------------------------------------------------------------

/// `python3 -m kubernetes_validate ARGS`, or why it cannot run.
fn kubernetes_validate(args: &[&str]) -> Result<std::process::Output, String> {
    let out = Command::new("python3")
        .args(["-m", "kubernetes_validate"])
        .args(args)
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("No module named kubernetes_validate") {
        return Err("the kubernetes-validate package (pip install kubernetes-validate)".into());
    }
    Ok(out)
}

/// The strictest Kubernetes schema check available offline, with controls that must fail.
#[test]
fn kubernetes_job_validates_against_the_api_schema() {
    let job = root().join("examples/sweeps/k8s-job.yaml");
    let job = job.to_str().unwrap();
    let latest = match kubernetes_validate(&["--version"]) {
        Ok(o) => String::from_utf8(o.stdout).unwrap().trim().to_string(),
        Err(why) => {
            assert!(std::env::var_os("CI").is_none(), "CI must run the Kubernetes check, but it needs {why}");
            eprintln!("skipped: the Kubernetes schema check needs {why}");
            return;
        }
    };
    // 1.29 is the first release with backoffLimitPerIndex on by default (beta).
    for version in ["1.29.0", latest.as_str()] {
        let o = kubernetes_validate(&["--strict", "-k", version, job]).unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success() && text.contains("passed for resource job/schedlab-sweep"), "{version}: {text}");
    }
    // The check can fail: 1.27 has no backoffLimitPerIndex, and a misspelt field is rejected.
    let o = kubernetes_validate(&["--strict", "-k", "1.27.0", job]).unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && text.contains("'backoffLimitPerIndex' was unexpected"), "{text}");
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.yaml");
    let yaml = std::fs::read_to_string(job).unwrap();
    assert!(yaml.contains("completionMode: Indexed"));
    std::fs::write(&bad, yaml.replace("completionMode: Indexed", "completionMod: Indexed")).unwrap();
    let o = kubernetes_validate(&["--strict", bad.to_str().unwrap()]).unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && text.contains("'completionMod' was unexpected"), "{text}");
}

/// Each pod of the Indexed Job, run here as Kubernetes would start it: the container's command
/// and args, its env plus `JOB_COMPLETION_INDEX`, its workingDir (a copy of the examples), the
/// results volume at its mountPath (a temporary directory in its place). The shards merge to
/// the unsharded sweep.
#[test]
fn kubernetes_job_pods_shard_and_merge_to_the_unsharded_sweep() {
    let yaml = root().join("examples/sweeps/k8s-job.yaml");
    // YAML to JSON with PyYAML (kubernetes-validate's dependency).
    let out = Command::new("python3")
        .args(["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))"])
        .arg(&yaml)
        .output();
    let job: serde_json::Value = match out {
        Ok(o) if o.status.success() => serde_json::from_slice(&o.stdout).unwrap(),
        other => {
            let why = format!("python3 with PyYAML ({other:?})");
            assert!(std::env::var_os("CI").is_none(), "CI must run the Kubernetes pods, but they need {why}");
            eprintln!("skipped: reading the Job needs {why}");
            return;
        }
    };
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    let c = &spec["template"]["spec"]["containers"][0];
    let env: Vec<(String, String)> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_string(), e["value"].as_str().unwrap().to_string()))
        .collect();
    assert!(env.contains(&("SHARDS".into(), n.to_string())), "SHARDS equals completions: {env:?}");
    let mount = c["volumeMounts"][0]["mountPath"].as_str().unwrap();
    let argv: Vec<&str> = c["command"]
        .as_array()
        .unwrap()
        .iter()
        .chain(c["args"].as_array().unwrap())
        .map(|v| v.as_str().unwrap())
        .collect();

    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("workdir");
    copy_examples(&work);
    let results = tmp.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let results_s = results.to_str().unwrap();
    let path = path_with_schedlab();
    for i in 0..n {
        let args: Vec<String> = argv.iter().map(|a| a.replace(mount, results_s)).collect();
        let out = Command::new(&args[0])
            .args(&args[1..])
            .current_dir(&work)
            .env("PATH", &path)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("JOB_COMPLETION_INDEX", i.to_string())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "pod {i}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains(&format!("shard {i}/{n}: 3 runs; 0 already stored, 3 stored now")), "pod {i}: {text}");
    }
    let schedlab = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(&work).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let shards: Vec<String> = (0..n).map(|i| format!("{results_s}/shard-{i}")).collect();
    let merged = format!("{results_s}/merged");
    let mut merge: Vec<&str> = vec!["merge"];
    merge.extend(shards.iter().map(String::as_str));
    merge.extend(["--out", &merged]);
    schedlab(&merge);
    schedlab(&["sweep", "examples/sweeps/plan.toml", "--out", "unsharded", "--quiet"]);
    let all = rows(&work.join("unsharded"));
    assert_eq!(all.len(), 12);
    assert_eq!(rows(Path::new(&merged)), all, "the merged pods hold the unsharded sweep's runs");
}
