//! One target per parser that takes user input, each with real seed inputs, a structured
//! generator and a dictionary of the format's tokens for mutation.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::rng::Rng;

/// How a parser answered an input.
pub enum Verdict {
    Accepted,
    /// Refused with this message (which must be one line).
    Refused(String),
}

/// `Err` is a broken property other than a panic (e.g. accepted but unusable).
pub type Exec = fn(&[u8]) -> Result<Verdict, String>;

pub struct Target {
    pub name: &'static str,
    /// Real inputs to mutate.
    pub seeds: fn() -> Vec<Vec<u8>>,
    pub generate: fn(&mut Rng) -> Vec<u8>,
    pub exec: Exec,
    pub dictionary: &'static [&'static str],
}

/// Every target, in a fixed order.
pub fn all() -> Vec<Target> {
    vec![
        Target { name: "rtapp", seeds: rtapp_seeds, generate: gen_rtapp, exec: exec_rtapp, dictionary: RTAPP_WORDS },
        Target { name: "plan", seeds: plan_seeds, generate: gen_plan, exec: exec_plan, dictionary: PLAN_WORDS },
        Target {
            name: "topology",
            seeds: topology_seeds,
            generate: gen_topology,
            exec: exec_topology,
            dictionary: TOPOLOGY_WORDS,
        },
        Target { name: "costs", seeds: cost_seeds, generate: gen_costs, exec: exec_costs, dictionary: TOPOLOGY_WORDS },
        Target { name: "spec", seeds: spec_seeds, generate: gen_spec, exec: exec_spec, dictionary: &[] },
        Target { name: "bench", seeds: bench_seeds, generate: gen_bench, exec: exec_bench, dictionary: BENCH_WORDS },
        Target {
            name: "ftrace",
            seeds: ftrace_seeds,
            generate: gen_ftrace,
            exec: exec_ftrace,
            dictionary: FTRACE_WORDS,
        },
        Target { name: "store", seeds: store_seeds, generate: gen_store, exec: exec_store, dictionary: &[] },
    ]
}

pub fn by_name(name: &str) -> Option<Target> {
    all().into_iter().find(|t| t.name == name)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &str, ext: &str) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == ext)).collect()
        })
        .unwrap_or_default();
    paths.sort();
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

fn refused(e: impl std::fmt::Display) -> Result<Verdict, String> {
    Ok(Verdict::Refused(e.to_string()))
}

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

// ---- rt-app JSON -------------------------------------------------------------------------

const RTAPP_WORDS: &[&str] = &[
    "\"tasks\"",
    "\"global\"",
    "\"duration\"",
    "\"instance\"",
    "\"loop\"",
    "\"run\"",
    "\"runtime\"",
    "\"sleep\"",
    "\"timer\"",
    "\"ref\"",
    "\"period\"",
    "\"mode\"",
    "\"absolute\"",
    "\"yield\"",
    "\"phases\"",
    "\"policy\"",
    "\"SCHED_OTHER\"",
    "\"SCHED_IDLE\"",
    "\"SCHED_BATCH\"",
    "\"priority\"",
    "\"cpus\"",
    "\"delay\"",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "null",
    "true",
    "\"\"",
];

fn rtapp_seeds() -> Vec<Vec<u8>> {
    let mut v = files("examples/rtapp", "json");
    v.extend(files("crates/workload/tests/fixtures", "json"));
    v
}

fn gen_rtapp(rng: &mut Rng) -> Vec<u8> {
    let mut s = String::from("{");
    if rng.chance(1, 2) {
        s += &format!("\"global\": {{\"duration\": {}, \"default_policy\": \"SCHED_OTHER\"}},", rng.number());
    }
    s += "\"tasks\": {";
    let n = rng.range(1, 4);
    for i in 0..n {
        if i > 0 {
            s += ",";
        }
        s += &format!("\"t{i}\": {{");
        let mut fields = Vec::new();
        for _ in 0..rng.range(1, 6) {
            fields.push(match rng.below(11) {
                0 => format!("\"instance\": {}", rng.number()),
                1 => format!("\"loop\": {}", rng.number()),
                2 | 3 => format!("\"run\": {}", rng.number()),
                4 => format!("\"sleep\": {}", rng.number()),
                5 => format!(
                    "\"timer\": {{\"ref\": \"r{}\", \"period\": {}, \"mode\": \"{}\"}}",
                    rng.below(3),
                    rng.number(),
                    rng.pick(&["absolute", "relative", "x"])
                ),
                6 => format!("\"priority\": {}", rng.number()),
                7 => format!("\"cpus\": [{}]", rng.number()),
                8 => format!("\"delay\": {}", rng.number()),
                9 => {
                    format!("\"policy\": \"{}\"", rng.pick(&["SCHED_OTHER", "SCHED_IDLE", "SCHED_BATCH", "SCHED_FIFO"]))
                }
                _ => format!("\"phases\": {{\"p0\": {{\"run\": {}, \"sleep\": {}}}}}", rng.number(), rng.number()),
            });
        }
        s += &fields.join(",");
        s += "}";
    }
    s += "}}";
    s.into_bytes()
}

fn exec_rtapp(b: &[u8]) -> Result<Verdict, String> {
    match workload::rtapp::parse_rtapp(&text(b), "fuzz.json") {
        Ok(app) => {
            workload::bench::validate_programs(&app.tasks, 0).map_err(|e| format!("accepted but invalid: {e}"))?;
            Ok(Verdict::Accepted)
        }
        Err(e) => refused(e),
    }
}

// ---- sweep plans -------------------------------------------------------------------------

const PLAN_WORDS: &[&str] = &[
    "topologies",
    "seeds",
    "seed",
    "duration",
    "max_events",
    "base",
    "workloads",
    "[[variant]]",
    "name",
    "spec",
    "=",
    "\"smp:2\"",
    "\"vm-2cpu\"",
    "\"v7.3\"",
    "\"+next-buddy-eevdf\"",
    "\"pipe -l 10\"",
    "[",
    "]",
    "\n",
];

fn plan_seeds() -> Vec<Vec<u8>> {
    files("examples/sweeps", "toml")
}

fn gen_plan(rng: &mut Rng) -> Vec<u8> {
    let mut s = String::new();
    if rng.chance(2, 3) {
        s += &format!("topologies = [\"{}\"]\n", rng.pick(&["smp:1", "smp:2", "vm-2cpu", "smp:0", "rpi5", "nope"]));
    }
    match rng.below(3) {
        0 => s += &format!("seeds = {}\n", rng.number()),
        1 => s += &format!("seeds = [{}, {}]\n", rng.number(), rng.number()),
        _ => {}
    }
    for key in ["seed", "duration", "max_events"] {
        if rng.chance(1, 3) {
            s += &format!("{key} = {}\n", rng.number());
        }
    }
    let wl = rng.pick(&["pipe -l 10", "hackbench -g 1 -l 5", "stress-ng --cpu 1 --timeout 1", "rtapp x.json", "'pipe"]);
    s += &format!("workloads = [\"{wl}\"]\n");
    for _ in 0..rng.range(0, 3) {
        s += &format!("[[variant]]\nspec = \"{}\"\n", String::from_utf8_lossy(&gen_spec(rng)).replace('"', ""));
    }
    s.into_bytes()
}

fn exec_plan(b: &[u8]) -> Result<Verdict, String> {
    match lab::plan::parse_plan(&text(b), "fuzz.toml") {
        Ok(_) => Ok(Verdict::Accepted),
        Err(e) => refused(e),
    }
}

// ---- topology and cost TOML --------------------------------------------------------------

const TOPOLOGY_WORDS: &[&str] = &[
    "[machine]",
    "[[cpu]]",
    "[costs]",
    "name",
    "packages",
    "nodes_per_package",
    "llcs_per_node",
    "cores_per_llc",
    "threads_per_core",
    "remote_distance",
    "distance",
    "costs_preset",
    "id",
    "core",
    "cluster",
    "llc",
    "package",
    "node",
    "capacity",
    "syscall_ns",
    "context_switch_ns",
    "jitter_pct",
    "=",
    "\"",
    "[",
    "]",
    "\n",
];

fn topology_seeds() -> Vec<Vec<u8>> {
    vec![
        b"[machine]\nname = \"ring\"\npackages = 4\ncores_per_llc = 2\ndistance = [[10, 20, 30, 20], [20, 10, 20, 30], [30, 20, 10, 20], [20, 30, 20, 10]]\n".to_vec(),
        b"[machine]\nname = \"pair\"\nsource = \"hand-written\"\n\n[[cpu]]\nid = 1\ncore = 0\nllc = 0\npackage = 0\nnode = 0\n\n[[cpu]]\nid = 0\ncore = 0\nllc = 0\npackage = 0\nnode = 0\ncapacity = 1024\n\n[costs]\nsyscall_ns = 90\n".to_vec(),
        b"[machine]\nname = \"t\"\npackages = 2\nnodes_per_package = 2\nllcs_per_node = 2\ncores_per_llc = 4\nthreads_per_core = 2\nremote_distance = 21\ncosts_preset = \"vm-2cpu\"\n".to_vec(),
    ]
}

fn gen_topology(rng: &mut Rng) -> Vec<u8> {
    let mut s = format!("[machine]\nname = \"m{}\"\n", rng.below(10));
    if rng.chance(1, 2) {
        for key in
            ["packages", "nodes_per_package", "llcs_per_node", "cores_per_llc", "threads_per_core", "remote_distance"]
        {
            if rng.chance(2, 3) {
                // Mostly small counts, so accepted machines stay cheap to build.
                let v = if rng.chance(4, 5) { rng.range(0, 4).to_string() } else { rng.number() };
                s += &format!("{key} = {v}\n");
            }
        }
    } else {
        let n = rng.range(1, 6);
        for i in 0..n {
            let id = if rng.chance(9, 10) { i.to_string() } else { rng.number() };
            s += &format!(
                "[[cpu]]\nid = {id}\ncore = {}\nllc = {}\npackage = {}\nnode = {}\n",
                rng.range(0, n),
                rng.range(0, 2),
                rng.range(0, 1),
                rng.range(0, 1)
            );
            if rng.chance(1, 3) {
                s += &format!("capacity = {}\n", rng.number());
            }
        }
    }
    if rng.chance(1, 2) {
        s += &format!("[costs]\n{} = {}\n", rng.pick(COST_KEYS), rng.number());
    }
    s.into_bytes()
}

const COST_KEYS: &[&str] =
    &["syscall_ns", "context_switch_ns", "ipi_receive_ns", "idle_exit_ns_deep", "jitter_pct", "wait_ns", "nope"];

fn exec_topology(b: &[u8]) -> Result<Verdict, String> {
    match machine::parse_topology_toml(&text(b), "fuzz.toml") {
        Ok(t) => {
            t.check().map_err(|e| format!("accepted but invalid: {e}"))?;
            // The domain builder relies on the checks: it must not panic on what they accept.
            let _ = t.build_domains();
            Ok(Verdict::Accepted)
        }
        Err(e) => refused(e),
    }
}

fn cost_seeds() -> Vec<Vec<u8>> {
    vec![b"# measured\n[costs]\nsyscall_ns = 90\nwakeup_local_ns = 350\njitter_pct = 0\n".to_vec()]
}

fn gen_costs(rng: &mut Rng) -> Vec<u8> {
    let mut s = String::from("[costs]\n");
    for _ in 0..rng.range(0, 5) {
        s += &format!("{} = {}\n", rng.pick(COST_KEYS), rng.number());
    }
    s.into_bytes()
}

fn exec_costs(b: &[u8]) -> Result<Verdict, String> {
    match machine::parse_cost_toml(&text(b), "fuzz.toml") {
        Ok(overrides) => {
            let mut costs = sim::topology::Costs::x86_server();
            for (k, v) in overrides {
                costs.set(&k, v).map_err(|e| format!("accepted `{k} = {v}` that Costs::set refuses: {e}"))?;
            }
            Ok(Verdict::Accepted)
        }
        Err(e) => refused(e),
    }
}

// ---- kernel SPECs ------------------------------------------------------------------------

fn spec_seeds() -> Vec<Vec<u8>> {
    [
        "v7.3",
        "v6.19-rc6+revert-force-wakeup-preemption",
        "v7.3 +preempt-sync-runtime-fix NEXT_BUDDY base_slice_ns=3000000",
        "v6.12 NO_DELAY_DEQUEUE preempt=full hz=1000",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn gen_spec(rng: &mut Rng) -> Vec<u8> {
    let mut toks = Vec::new();
    if rng.chance(3, 4) {
        toks.push(rng.pick(sim::kernel::KERNELS).name.to_string());
    }
    for _ in 0..rng.range(0, 5) {
        toks.push(match rng.below(6) {
            0 => format!("+{}", rng.pick(sim::kernel::PATCHES).name),
            1 => format!("-{}", rng.pick(sim::kernel::PATCHES).name),
            2 => rng.pick(sim::features::Feature::ALL).name().to_string(),
            3 => format!("NO_{}", rng.pick(sim::features::Feature::ALL).name()),
            4 => format!("{}={}", rng.pick(sim::config::Sysctls::KEYS).0, rng.number()),
            _ => {
                format!("{}={}", rng.pick(&["preempt", "hz"]), rng.pick(&["full", "lazy", "none", "250", "0", "99999"]))
            }
        });
    }
    toks.join(if rng.chance(1, 4) { "," } else { " " }).into_bytes()
}

fn exec_spec(b: &[u8]) -> Result<Verdict, String> {
    match sim::kernel::parse_spec(&text(b), None) {
        Ok(_) => Ok(Verdict::Accepted),
        Err(e) => refused(e),
    }
}

// ---- benchmark flags ---------------------------------------------------------------------

const BENCHES: &[&str] = &["hackbench", "messaging", "pipe", "schbench", "lat_ctx", "netperf", "stress-ng", "pgbench"];

const BENCH_WORDS: &[&str] = &[
    "-l",
    "-g",
    "-f",
    "-p",
    "-P",
    "-T",
    "-s",
    "-t",
    "-m",
    "-r",
    "-c",
    "-j",
    "-S",
    "-N",
    "-F",
    "-R",
    "-W",
    "-n",
    "-q",
    "--",
    "--cpu",
    "--timeout",
    "--pipe",
    "--thread",
    "--threads",
    "--cpu-load",
    "--cpu-load-slice",
    "--loops",
    "--groups",
    "--datasize",
    "--fds",
    "--process",
    "--runtime",
    "--rps",
    "--message-threads",
    "--message-cpus",
    "--worker-cpus",
    "--auto-rps",
    "--taskset",
    "--transactions",
    "--time",
    "--select-only",
    "--jobs",
    "--client",
    "--log-brief",
    "--metrics-brief",
    "--no-vacuum",
    "--protocol",
    "--rate",
    "--latency-limit",
    "TCP_RR",
    "UDP_RR",
    "1,1",
    "0-3",
    "all",
];

fn bench_seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = [
        "hackbench -P -p -g 4 -f 20 -l 250",
        "messaging -p -g 4",
        "pipe -l 100000 -T",
        "schbench -m 2 -t 4 -r 5",
        "lat_ctx -P 4 -s 0 96",
        "netperf -t TCP_RR -l 10 -- -r 1,1",
        "stress-ng --cpu 4 --cpu-load 50 --timeout 5",
        "pgbench -S -c 8 -j 2 -T 5",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    // Every benchmark command line of the mailing-list tables.
    if let Ok(md) = std::fs::read_to_string(repo().join("examples/commands.md")) {
        for line in md.lines() {
            if let Some(i) = line.find("schedlab run") {
                let words: Vec<&str> = line[i..].split_whitespace().collect();
                if let Some(b) = words.iter().position(|w| BENCHES.contains(&w.trim_matches('`'))) {
                    v.push(words[b..].join(" ").trim_end_matches('`').replace("$g", "4").into_bytes());
                }
            }
        }
    }
    v
}

fn gen_bench(rng: &mut Rng) -> Vec<u8> {
    let mut argv = vec![rng.pick(BENCHES).to_string()];
    for _ in 0..rng.range(0, 6) {
        argv.push(rng.pick(BENCH_WORDS).to_string());
        if rng.chance(2, 3) {
            argv.push(rng.number());
        }
    }
    argv.join(" ").into_bytes()
}

fn exec_bench(b: &[u8]) -> Result<Verdict, String> {
    let argv: Vec<String> = text(b).split_whitespace().map(String::from).collect();
    if argv.is_empty() {
        return Ok(Verdict::Refused("empty".into()));
    }
    let ncpus = 1 + (b.len() % 8) as u32;
    match workload::bench::parse_benchmark_on(&argv, ncpus) {
        Ok(wl) => {
            wl.validate().map_err(|e| format!("accepted but invalid programs: {e}"))?;
            Ok(Verdict::Accepted)
        }
        Err(e) => refused(e),
    }
}

// ---- ftrace text -------------------------------------------------------------------------

const FTRACE_WORDS: &[&str] = &[
    "sched_switch: ",
    "sched_waking: ",
    "sched_wakeup: ",
    "sched_wakeup_new: ",
    "sched_migrate_task: ",
    "sched_process_fork: ",
    "sched_process_exit: ",
    "prev_comm=",
    "prev_pid=",
    "prev_prio=",
    "prev_state=",
    "==>",
    "next_comm=",
    "next_pid=",
    "next_prio=",
    "comm=",
    "pid=",
    "prio=",
    "target_cpu=",
    "orig_cpu=",
    "dest_cpu=",
    "[000]",
    "[2147483648]",
    "#P:",
    "cpus=",
    "\n",
    " ",
    "R+",
    "S|D",
    "CPU:001",
];

fn ftrace_seeds() -> Vec<Vec<u8>> {
    files("crates/trace/tests/fixtures", "txt")
}

fn gen_ftrace(rng: &mut Rng) -> Vec<u8> {
    let ncpus = rng.range(1, 4);
    let mut s = if rng.chance(3, 4) { format!("# tracer: nop\n#P:{ncpus}\n") } else { String::new() };
    let mut ts = rng.range(0, 100_000);
    for _ in 0..rng.range(0, 40) {
        ts += rng.range(0, 2000);
        let cpu = if rng.chance(19, 20) { rng.range(0, ncpus - 1).to_string() } else { rng.number() };
        let (a, b) = (rng.range(0, 5), rng.range(0, 5));
        let ev = match rng.below(5) {
            0 | 1 => format!(
                "sched_switch: prev_comm=t{a} prev_pid={a} prev_prio=120 prev_state={} ==> next_comm=t{b} next_pid={b} next_prio=120",
                rng.pick(&["R", "R+", "S", "D", "X", "Q"])
            ),
            2 => format!("sched_waking: comm=t{b} pid={b} prio=120 target_cpu={:03}", rng.range(0, ncpus)),
            3 => format!("sched_wakeup: comm=t{b} pid={b} prio=120 target_cpu={:03}", rng.range(0, ncpus)),
            _ => format!(
                "sched_migrate_task: comm=t{b} pid={b} prio=120 orig_cpu={} dest_cpu={}",
                rng.range(0, ncpus),
                rng.number()
            ),
        };
        s += &format!("  t{a}-{a} [{cpu:0>3}] d..2. {}.{:06}: {ev}\n", ts / 1_000_000, ts % 1_000_000);
    }
    s.into_bytes()
}

fn exec_ftrace(b: &[u8]) -> Result<Verdict, String> {
    match schedtrace::analyze(b, schedtrace::Filter::default()) {
        Ok(an) => {
            let _ = an.latency_table();
            Ok(Verdict::Accepted)
        }
        Err(e) => refused(e),
    }
}

// ---- the results store read path ---------------------------------------------------------

/// A database written by a real two-run sweep, made once per process.
fn store_seeds() -> Vec<Vec<u8>> {
    static DB: OnceLock<Vec<u8>> = OnceLock::new();
    vec![DB.get_or_init(real_store).clone()]
}

#[allow(
    clippy::expect_used,
    reason = "the seed store is built from a constant plan; a failure is a harness bug, shown at once"
)]
fn real_store() -> Vec<u8> {
    struct Quiet;
    impl lab::sweep::SweepProgress for Quiet {
        fn start(&self, _: usize, _: usize) {}
        fn done(&self, _: &lab::plan::RunKey, _: &lab::sweep::Outcome) {}
    }
    let dir = scratch_dir().join("seed-store");
    let _ = std::fs::remove_dir_all(&dir);
    let plan = "seeds = 2\nduration = 0.01\nworkloads = [\"pipe -l 20\"]\n[[variant]]\nspec = \"v7.3\"\n[[variant]]\nspec = \"+next-buddy-eevdf\"\n";
    let plan = lab::plan::parse_plan(plan, "seed.toml").expect("a valid plan");
    {
        let store = lab::store::Store::create(&dir).expect("a store");
        lab::sweep::sweep(&plan, &store, None, &std::sync::atomic::AtomicBool::new(false), &Quiet).expect("a sweep");
    }
    std::fs::read(dir.join(lab::store::DB_FILE)).expect("the database file")
}

fn scratch_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}

fn gen_store(rng: &mut Rng) -> Vec<u8> {
    // Overwrite a few bytes of the real database: mostly in its pages' payloads.
    let mut v = store_seeds().remove(0);
    for _ in 0..rng.range(1, 4) {
        let i = rng.below(v.len());
        v[i] = rng.u64() as u8;
    }
    v
}

fn exec_store(b: &[u8]) -> Result<Verdict, String> {
    let thread = format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_alphanumeric(), "");
    let path = scratch_dir().join(format!("fuzz-{thread}.db"));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    std::fs::write(&path, b).map_err(|e| format!("scratch file: {e}"))?;
    let verdict = match lab::store::Store::open(&path).and_then(|s| s.runs()) {
        Ok(_) => Verdict::Accepted,
        Err(e) => Verdict::Refused(e.to_string()),
    };
    Ok(verdict)
}
