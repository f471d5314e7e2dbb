//! `schedlab compare --vm KERNEL`: the model's A/B table (`lab::compare` and `lab::report`,
//! the same significance rule and rendering) with the counters of a real kernel in qemu.
//!
//! Every repetition of every variant is a separate boot. The boots run in rounds: round `i`
//! boots each variant once, in an order drawn from `--seed` and `i` (so drift in a loaded
//! host spreads over the variants instead of favouring the one booted first), and the
//! repetition of round `i` is "seed" `i` of the comparison: the paired test pairs runs of the
//! same round. Each boot runs `warmup` repetitions first and discards them (the first run
//! after boot pays for page-cache misses of the tools and, under TCG, for translating their
//! code), then one measured repetition.

use lab::compare::{CompareOptions, Comparison, Origin, Sample, Selection};
use lab::plan::RunKey;
use lab::runner::{Better, CounterRecord, GuestInfo, RunRecord};
use serde_json::Value;

use crate::VmError;
use crate::console::GuestRun;
use crate::guest::GuestPlan;
use crate::session::{Session, SessionOptions};
use crate::spec::{self, GuestVariant};

/// What to compare.
pub struct CompareRequest {
    pub session: SessionOptions,
    /// The `--vm` argument as typed (for the reproduce line).
    pub vm_arg: String,
    pub base: String,
    pub variants: Vec<String>,
    /// Boots per variant.
    pub runs: u32,
    /// Repetitions discarded at the start of every boot.
    pub warmup: u32,
    /// Seeds the boot order.
    pub seed: u64,
    pub workload: Vec<String>,
    pub options: CompareOptions,
    /// With a trace (`session.trace_kb`): write each measured run's ftrace text here, as
    /// `schedlab analyze` reads it.
    pub trace_out: Option<std::path::PathBuf>,
}

/// The comparison and what each boot did.
pub struct VmComparison {
    pub comparison: Comparison,
    /// Every measured run, in boot order, labelled like the comparison's samples.
    pub samples: Vec<Sample>,
    /// The system-wide `/proc/schedstat` delta around each sample's run (`None` when the guest
    /// kernel has no schedstats or a version this does not decode).
    pub schedstat: Vec<Option<crate::schedstat::Totals>>,
    pub release: String,
    /// `(round, variant name, boot seconds, seconds in all, retried oopses)` in boot order.
    pub boots: Vec<(u32, String, Option<f64>, f64, usize)>,
}

/// The counters `/proc/<tid>/sched` cannot give (the kernel keeps no such count), and those
/// that need a trace (wakeup latency): `n/a` in the table.
pub const GUEST_UNMEASURED: &[&str] =
    &["nr_wakeup_preemptions", "nr_tick_preemptions", "wakeup_latency_p50_us", "wakeup_latency_p99_us"];

/// The boot order of round `round`: a permutation of `0..n` drawn from `seed` (Fisher-Yates
/// over `sim::rng`, so the same seed gives the same order everywhere).
pub fn boot_order(seed: u64, round: u32, n: usize) -> Vec<usize> {
    let mut rng = sim::rng::SimRng::new(seed ^ (u64::from(round) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

fn counter(c: &Value, k: &str) -> u64 {
    c[k].as_u64().unwrap_or(0)
}

/// The wakeup latency percentiles (p50, p90, p99, max, ns) of a traced run whose trace arrived
/// and was read; `None` for an untraced run.
pub fn trace_latency(run: &GuestRun) -> Option<[u64; 4]> {
    let an = run.trace_analysis()?.ok()?;
    let p = an.wakeup_latency_ns();
    Some([p.p50, p.p90, p.p99, p.max])
}

/// The lab's record of one guest run (counters the guest does not have are 0 here and masked
/// in the table: [`GUEST_UNMEASURED`]; the wakeup latencies come from the run's trace when it
/// was traced).
pub fn record(run: &GuestRun, variant: &str, release: &str, topology: &str, seed: u64) -> RunRecord {
    let c = &run.json["counters"];
    let better = match run.json["metric"]["better"].as_str() {
        Some("higher") => Better::Higher,
        _ => Better::Lower,
    };
    RunRecord {
        variant: variant.to_string(),
        kernel: release.to_string(),
        patches: vec![],
        topology: topology.to_string(),
        workload: run.json["workload"]["argv"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "))
            .unwrap_or_default(),
        seed,
        metric_name: run.metric_name.clone(),
        metric: run.metric,
        better,
        simulated_ns: run.json["native"]["elapsed_ns"].as_u64().unwrap_or(0),
        events: 0,
        counters: CounterRecord {
            nr_switches: counter(c, "nr_switches"),
            nr_voluntary_switches: counter(c, "nr_voluntary_switches"),
            nr_involuntary_switches: counter(c, "nr_involuntary_switches"),
            nr_migrations: counter(c, "nr_migrations"),
            nr_wakeups: counter(c, "nr_wakeups"),
            nr_wakeups_sync: counter(c, "nr_wakeups_sync"),
            nr_wakeups_local: counter(c, "nr_wakeups_local"),
            nr_wakeups_remote: counter(c, "nr_wakeups_remote"),
            nr_wakeups_affine: counter(c, "nr_wakeups_affine"),
            nr_wakeups_affine_attempts: counter(c, "nr_wakeups_affine_attempts"),
            nr_wakeups_migrate: counter(c, "nr_wakeups_migrate"),
            nr_wakeup_preemptions: 0,
            nr_tick_preemptions: 0,
            nr_ipis: counter(c, "nr_ipis"),
        },
        wakeup_latency_ns: trace_latency(run).unwrap_or([0; 4]),
        background: vec![],
        vm: None,
        schedstat: None,
    }
}

/// The counters a guest run left `null` (schedstats off, no RES line), beyond
/// [`GUEST_UNMEASURED`].
fn nulls(run: &GuestRun) -> Vec<&'static str> {
    lab::compare::COUNTERS
        .iter()
        .copied()
        .filter(|k| run.json["counters"].get(*k).is_some_and(Value::is_null))
        .collect()
}

/// The counters a guest run could not measure: [`GUEST_UNMEASURED`] (but the wakeup latencies
/// of a traced run) and those it left `null`.
pub fn unmeasured(run: &GuestRun) -> Vec<String> {
    let traced = trace_latency(run).is_some();
    let mut out: Vec<String> = GUEST_UNMEASURED
        .iter()
        .filter(|k| !(traced && k.starts_with("wakeup_latency")))
        .map(|s| s.to_string())
        .collect();
    out.extend(nulls(run).into_iter().filter(|k| !GUEST_UNMEASURED.contains(k)).map(String::from));
    out
}

/// Every SPEC of a request parsed (base first), before anything boots; names must differ.
pub fn variants(req: &CompareRequest) -> Result<Vec<GuestVariant>, VmError> {
    let base = spec::parse(&req.base, None, "--base")?;
    let mut all: Vec<GuestVariant> = vec![base.clone()];
    for v in &req.variants {
        all.push(spec::parse(v, Some(&base), "--variant")?);
    }
    for (i, v) in all.iter().enumerate() {
        if all[..i].iter().any(|w| w.name == v.name) {
            return Err(VmError::Usage(format!("--variant `{}`: given twice (or the same as --base)", v.name)));
        }
    }
    Ok(all)
}

/// The results store's key of a boot's measured run: SPEC `vm:KERNEL SPEC` (the kernel as
/// `--vm` names it, the guest SPEC in force), the topology as `--topology` named it (`smp:N`,
/// a preset, a file), the workload, "seed"
/// `seed + round` (so `--seed S --runs N` are seeds S..S+N, as the model's), and no time or
/// event bound (0, which no model run has). Accelerator and warm-up are not part of it.
pub fn run_key(kernel_label: &str, v: &GuestVariant, topology: &str, workload: &[String], seed: u64) -> RunKey {
    RunKey {
        spec: format!("vm:{kernel_label} {}", v.spec),
        topology: topology.to_string(),
        workload: workload.to_vec(),
        seed,
        duration_ns: 0,
        max_events: 0,
    }
}

/// Where the boots' runs go and which boots to make.
pub struct Boots<'a> {
    /// Store every measured run as it finishes; a boot whose run is stored already is not
    /// booted again (its stored run is used).
    pub store: Option<&'a lab::store::Store>,
    /// Only the boots whose number (round × variants + variant, base 0) this accepts.
    pub only: &'a (dyn Fn(usize) -> bool + Sync),
    /// Set (by a signal handler): boot nothing more.
    pub cancel: Option<&'a std::sync::atomic::AtomicBool>,
}

/// What [`boot_rounds`] did.
pub struct BootsDone {
    /// Every selected boot's run (booted now or stored before), in boot order, labelled with
    /// the variant's name as typed.
    pub samples: Vec<Sample>,
    /// For each sample, the `/proc/schedstat` delta (`None` for a stored run).
    pub schedstat: Vec<Option<crate::schedstat::Totals>>,
    /// `(round, variant name, boot seconds, seconds in all, retried oopses)` of the boots made.
    pub boots: Vec<(u32, String, Option<f64>, f64, usize)>,
    /// Boots skipped because their run was stored.
    pub already: usize,
    /// Boots not made because of `cancel`.
    pub cancelled: usize,
    /// The host's 1-minute load average at each boot made ([`host_load`]).
    pub host_loads: Vec<f64>,
    /// The session, if anything was booted.
    pub session: Option<Session>,
}

/// Boots `runs` rounds of every variant (the boots `into.only` selects), each round in its
/// seeded order, storing each measured run in `into.store` as it finishes. The session (the
/// kernel fetched, the initramfs built) is made at the first boot needed.
pub fn boot_rounds(
    req: &CompareRequest,
    all: &[GuestVariant],
    into: &Boots<'_>,
    note: &(dyn Fn(&str) + Sync),
) -> Result<BootsDone, VmError> {
    let label = req.session.kernel.label();
    let topology = req.session.topology.name.clone();
    let mut done = BootsDone {
        samples: Vec::new(),
        schedstat: Vec::new(),
        boots: Vec::new(),
        already: 0,
        cancelled: 0,
        host_loads: Vec::new(),
        session: None,
    };
    let total = (0..req.runs as usize * all.len()).filter(|&i| (into.only)(i)).count();
    let lab_err = |e: lab::LabError| VmError::System(e.to_string());
    if let Some(store) = into.store {
        for (vi, v) in all.iter().enumerate() {
            let key = run_key(&label, v, &topology, &req.workload, req.seed);
            store.record_variant(&key.spec, &key.spec, if vi == 0 { 0 } else { 1 + vi as i64 }).map_err(lab_err)?;
        }
    }
    for round in 0..req.runs {
        for vi in boot_order(req.seed, round, all.len()) {
            if !(into.only)(round as usize * all.len() + vi) {
                continue;
            }
            let v = &all[vi];
            let seed = req.seed.wrapping_add(u64::from(round));
            let key = run_key(&label, v, &topology, &req.workload, seed);
            if let Some(stored) = into.store.map(|s| s.get(&key)).transpose().map_err(lab_err)?.flatten() {
                // The launch is not part of the key (a table mixes nothing): a stored run
                // measured the other way is the user's to resolve, not to reuse silently.
                if let Some(g) = stored.record.vm.as_ref()
                    && g.asked_builtin() != req.session.builtin
                {
                    return Err(VmError::Usage(format!(
                        "the results store has {} seed {seed} measured with {}; use another --out, or {}",
                        key.spec,
                        if g.asked_builtin() { "the built-in workers" } else { "the real tool" },
                        if g.asked_builtin() { "add --builtin" } else { "drop --builtin" }
                    )));
                }
                if let Some(g) = stored.record.vm.as_ref()
                    && g.replug != req.session.replug
                {
                    return Err(VmError::Usage(format!(
                        "the results store has {} seed {seed} measured {} the replug before the run; \
                         use another --out, or {}",
                        key.spec,
                        if g.replug { "with" } else { "without" },
                        if g.replug { "drop --no-replug" } else { "add --no-replug" }
                    )));
                }
                done.already += 1;
                done.samples.push(Sample { variant: v.name.clone(), key, record: stored.record });
                done.schedstat.push(None);
                continue;
            }
            if into.cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::SeqCst)) {
                done.cancelled += 1;
                continue;
            }
            let session = match &mut done.session {
                Some(s) => s,
                None => done.session.insert(Session::new(&req.session, note)?),
            };
            let plan = GuestPlan {
                settings: v.settings.clone(),
                calibrate: None,
                warmup: req.warmup,
                runs: 1,
                workload: req.workload.clone(),
                builtin: req.session.builtin,
                replug: req.session.replug,
                trace_kb: req.session.trace_kb,
                own_session: false,
            };
            note(&format!(
                "vm: boot {}/{total}: {} ({}), round {}{}",
                done.boots.len() + done.already + 1,
                label_of(vi),
                v.name,
                round + 1,
                host_load().map_or(String::new(), |l| format!(" (host load average {l:.2})"))
            ));
            done.host_loads.extend(host_load());
            let started = std::time::Instant::now();
            let b =
                session.boot(&plan, &format!("{} `{}`", if vi == 0 { "--base" } else { "--variant" }, v.name), note)?;
            let release = b.console.release.clone().unwrap_or_default();
            let (hz, preempt) = session.kernel.sched_config();
            for run in &b.runs {
                check_trace(run, &format!("{} round {}", v.name, round + 1), req.trace_out.as_deref(), seed, v, note)?;
                check_exact(run, &format!("{} round {}", v.name, round + 1))?;
                let unmeasured = unmeasured(run);
                let mut record = record(run, &v.name, &release, &key.topology, seed);
                record.vm = Some(GuestInfo {
                    kernel: label.clone(),
                    accel: if session.accel == crate::Accel::Kvm { "kvm" } else { "tcg" }.into(),
                    warmup: req.warmup,
                    hz,
                    preempt: preempt.map(String::from),
                    unmeasured,
                    replug: req.session.replug,
                    builtin: Some(req.session.builtin),
                    runner: Some(run.runner()),
                });
                if let Some(store) = into.store {
                    store.insert(&key.spec, &key, &record, started.elapsed().as_secs_f64() * 1e3).map_err(lab_err)?;
                }
                done.samples.push(Sample { variant: v.name.clone(), key: key.clone(), record });
                done.schedstat.push(run.schedstat_delta().ok());
            }
            done.boots.push((round + 1, v.name.clone(), b.boot_secs, b.total_secs, b.retried.len()));
        }
    }
    Ok(done)
}

/// A real tool whose tasks the guest could only sample (its kernel has no seccomp user
/// notifications): an error, since the sampler perturbs the counters it reads (a third task
/// waking every 2 ms on the guest's vCPUs) and misses each task's last milliseconds.
pub fn check_exact(run: &GuestRun, label: &str) -> Result<(), VmError> {
    match run.sampled() {
        None => Ok(()),
        Some(why) => Err(VmError::Guest(format!(
            "{label}: the guest ran the real tool but could not read its tasks at their exits ({why}); \
             run the built-in workers instead (--builtin, `builtin = true` in a [[vm]] table)"
        ))),
    }
}

/// A traced run's capture: an error when it did not arrive or cannot be read, a note when the
/// guest's buffer lost events, and its text written to `out` (`VARIANT-seedN.txt`, the variant's
/// SPEC with every character but letters, digits, `-`, `_`, `.` and `=` made `_`).
pub fn check_trace(
    run: &GuestRun,
    label: &str,
    out: Option<&std::path::Path>,
    seed: u64,
    v: &GuestVariant,
    note: &(dyn Fn(&str) + Sync),
) -> Result<(), VmError> {
    let Some(cap) = &run.trace else { return Ok(()) };
    let cap = cap.as_ref().map_err(|e| VmError::Guest(format!("{label}: the guest's trace: {e}")))?;
    if let Some(Err(e)) = run.trace_analysis() {
        return Err(VmError::Guest(format!("{label}: the guest's trace: {e}")));
    }
    if cap.dropped > 0 {
        note(&format!(
            "vm: {label}: the guest's trace buffer lost {} events (a bigger --trace-buffer-kb keeps them)",
            cap.dropped
        ));
    }
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| VmError::System(format!("{}: {e}", dir.display())))?;
        let name: String =
            v.spec.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.=".contains(c) { c } else { '_' }).collect();
        let path = dir.join(format!("{name}-seed{seed}.txt"));
        std::fs::write(&path, &cap.text).map_err(|e| VmError::System(format!("{}: {e}", path.display())))?;
        note(&format!("vm: {label}: trace written to {}", path.display()));
    }
    Ok(())
}

/// Boots `runs` rounds of every variant and builds the comparison; with a store, runs already
/// stored are used instead of booting again and new ones are stored.
pub fn compare(
    req: &CompareRequest,
    store: Option<&lab::store::Store>,
    note: &(dyn Fn(&str) + Sync),
) -> Result<VmComparison, VmError> {
    if req.runs == 0 {
        return Err(VmError::Usage("--runs 0: at least one boot per variant".into()));
    }
    if req.workload.is_empty() {
        return Err(VmError::Usage("no workload given (e.g. `hackbench -p -g 1 -l 200`)".into()));
    }
    crate::session::check_workload(&req.workload, &req.session.topology)?;
    // Every SPEC is checked before anything boots.
    let all = variants(req)?;
    let done = boot_rounds(req, &all, &Boots { store, only: &|_| true, cancel: None }, note)?;
    if done.already > 0 {
        note(&format!(
            "vm: {} of {} runs were in the results store already (not booted again)",
            done.already,
            done.samples.len()
        ));
    }
    let release =
        done.samples.iter().rev().map(|s| s.record.kernel.clone()).find(|r| !r.is_empty()).unwrap_or_default();
    let mut unmeasured: Vec<&str> = Vec::new();
    for s in &done.samples {
        for u in s.record.vm.iter().flat_map(|g| g.unmeasured.iter()) {
            if !unmeasured.contains(&u.as_str()) {
                unmeasured.push(u);
            }
        }
    }
    let sel = Selection {
        base: (all[0].name.clone(), all[0].spec.clone()),
        variants: all[1..].iter().map(|v| (v.name.clone(), v.spec.clone())).collect(),
    };
    let mut comparison =
        lab::compare::build(&done.samples, &sel, req.options).map_err(|e| VmError::System(e.to_string()))?;
    comparison.mask_counters(&unmeasured);
    let guest = done.samples.iter().find_map(|s| s.record.vm.clone()).unwrap_or_default();
    let mut origin = origin(req, &guest, &release, &unmeasured);
    // What the kernel built against the topology the model's answer is for: said in the table,
    // a mismatch above all.
    if let Some((_, lines)) = done.session.as_ref().and_then(|s| s.domains_check.as_ref()) {
        origin.notes.extend(lines.iter().cloned());
    }
    if let Some(note) = load_note(&done.host_loads, std::thread::available_parallelism().map_or(1, |n| n.get())) {
        origin.notes.push(note);
    }
    for g in &mut comparison.groups {
        g.reproduce = origin.reproduce.clone();
    }
    comparison.origin = Some(origin);
    Ok(VmComparison { comparison, samples: done.samples, schedstat: done.schedstat, release, boots: done.boots })
}

impl VmComparison {
    /// The system-wide `/proc/schedstat` deltas, mean per run for each variant (A, B, ... as
    /// in the table), as a text table (`#` header) or Markdown; empty when none was decoded.
    pub fn render_schedstat(&self, markdown: bool) -> String {
        let c = &self.comparison;
        let Some(g) = c.groups.first() else { return String::new() };
        let mut names = vec![g.base.name.clone()];
        names.extend(g.variants.iter().map(|v| v.name.clone()));
        let mut cols: Vec<Vec<(&'static str, u64)>> = Vec::new();
        let mut n = Vec::new();
        for name in &names {
            let deltas: Vec<&crate::schedstat::Totals> = self
                .samples
                .iter()
                .zip(&self.schedstat)
                .filter(|(s, _)| &s.variant == name)
                .filter_map(|(_, d)| d.as_ref())
                .collect();
            if deltas.is_empty() {
                return String::new();
            }
            let mut sum = deltas[0].named();
            for d in &deltas[1..] {
                for (acc, (_, v)) in sum.iter_mut().zip(d.named()) {
                    acc.1 += v;
                }
            }
            n.push(deltas.len());
            cols.push(sum);
        }
        let mut out = String::new();
        let title = format!(
            "system-wide /proc/schedstat deltas around the run (every task of the guest, the agent included): \
             mean per run over {} boots",
            n[0]
        );
        let mut header = vec!["counter".to_string()];
        header.extend((0..names.len()).map(label_of));
        let rows: Vec<Vec<String>> = (0..cols[0].len())
            .map(|i| {
                let mut row = vec![cols[0][i].0.to_string()];
                for (col, &k) in cols.iter().zip(&n) {
                    let mean = col[i].1 as f64 / k as f64;
                    row.push(if mean.fract() == 0.0 { format!("{mean:.0}") } else { format!("{mean:.1}") });
                }
                row
            })
            .collect();
        if markdown {
            out += &format!("\n**{title}**\n\n| {} |\n|{}\n", header.join(" | "), " --- |".repeat(header.len()));
            for r in &rows {
                out += &format!("| {} |\n", r.join(" | "));
            }
        } else {
            out.push('\n');
            for line in lab::report::wrap(&title, 100, "", "    ") {
                out += &line;
                out.push('\n');
            }
            let width: Vec<usize> = (0..header.len())
                .map(|j| std::iter::once(&header).chain(&rows).map(|r| r[j].len()).max().unwrap_or(0))
                .collect();
            for r in std::iter::once(&header).chain(&rows) {
                let cells: Vec<String> = r
                    .iter()
                    .enumerate()
                    .map(
                        |(j, c)| {
                            if j == 0 { format!("{c:<w$}", w = width[j]) } else { format!("{c:>w$}", w = width[j]) }
                        },
                    )
                    .collect();
                out += cells.join("  ").trim_end();
                out.push('\n');
            }
        }
        out
    }
}

/// The table's note on the host's load during the boots (`None` without boots): under TCG the
/// counters per operation follow the emulation speed, which a busy host lowers.
pub fn load_note(loads: &[f64], host_cpus: usize) -> Option<String> {
    let lo = loads.iter().copied().reduce(f64::min)?;
    let hi = loads.iter().copied().reduce(f64::max)?;
    let busy = hi > 0.5 * host_cpus as f64;
    Some(format!(
        "host load average {lo:.1}-{hi:.1} at the boots ({host_cpus} host CPUs){}",
        if busy {
            ": a busy host stalls a TCG guest's vCPUs and slows its emulation, which moves its counters per \
             operation (docs/vm.md); the ground truth was measured on an idle host"
        } else {
            ""
        }
    ))
}

/// The host's 1-minute load average (`/proc/loadavg`): a TCG guest's vCPUs are host threads,
/// and on a busy host they stall for milliseconds while the guest's clock runs on, which
/// moves its counters (more ticks per message, wakees left on a stalled vCPU); the ground
/// truth was measured on an idle host, so each boot says what it had.
pub fn host_load() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

fn label_of(i: usize) -> String {
    lab::report::label(i)
}

fn origin(req: &CompareRequest, g: &GuestInfo, release: &str, unmeasured: &[&str]) -> Origin {
    let accel = if g.accel == "kvm" { crate::Accel::Kvm } else { crate::Accel::Tcg };
    let mut reproduce = format!(
        "schedlab compare --vm {} --accel {} --topology {} --seed {} --runs {} --warmup {}",
        lab::words::quote(&req.vm_arg),
        if accel == crate::Accel::Kvm { "kvm" } else { "tcg" },
        lab::words::quote(&req.session.topology.name),
        req.seed,
        req.runs,
        req.warmup
    );
    if !req.session.replug {
        reproduce += " --no-replug";
    }
    if req.session.builtin {
        reproduce += " --builtin";
    }
    reproduce += &format!(" --base {}", lab::words::quote(&req.base));
    for v in &req.variants {
        reproduce += &format!(" --variant {}", lab::words::quote(v));
    }
    reproduce += &format!(" {}", lab::words::join(&req.workload));
    Origin {
        title: format!(
            "schedlab {} compare --vm: real kernel {} (release {release}) under qemu {}, {} vCPUs, HZ {}, preempt {} (built-in default)",
            lab::store::VERSION,
            req.session.kernel.label(),
            accel.name(),
            req.session.topology.nr_cpus(),
            g.hz.map_or("?".into(), |h| h.to_string()),
            g.preempt.as_deref().unwrap_or("?"),
        ),
        notes: vec![
            format!(
                "{} boots per variant, one measured run each after {} warm-up run(s) discarded; boots in rounds, \
                 the variants' order in each round drawn from seed {}; \"seed\" i below is round i (paired across variants)",
                req.runs, req.warmup, req.seed
            ),
            if req.session.replug {
                "launch: the shell that starts each run quiets its wakee_flips (seven wakes a second apart), then takes \
                 vCPUs 1..N-1 offline and back online (the ground truth's method: the benchmark inherits the shell's \
                 wakee_flips)"
                    .to_string()
            } else {
                "launch: no replug right before the run (--no-replug): the benchmark inherits the launching shell's \
                 wakee_flips as its earlier work left them"
                    .to_string()
            },
            format!(
                "ran: {}; counters: the workload's tasks' /proc/<tid>/sched, read {} (schedstats on); \
                 the metric in the guest's time (emulated under TCG: compare variants, not absolute values)",
                g.runner.as_deref().unwrap_or("built-in workers"),
                if g.runner.as_deref().is_some_and(|r| r.contains("exit trap")) {
                    "at each task's exit, the tool as a zombie"
                } else {
                    "as zombies before reaping"
                }
            ),
            format!("n/a: not counted by the kernel or needing a trace: {}", unmeasured.join(", ")),
        ],
        reproduce,
        unit: "boots".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_load_is_noted_and_a_busy_host_said() {
        assert_eq!(load_note(&[], 2), None);
        assert_eq!(load_note(&[0.2, 0.05], 2).unwrap(), "host load average 0.1-0.2 at the boots (2 host CPUs)");
        let busy = load_note(&[3.4, 7.4], 2).unwrap();
        assert!(busy.starts_with("host load average 3.4-7.4 at the boots (2 host CPUs): a busy host"), "{busy}");
    }

    #[test]
    fn boot_orders_are_seeded_permutations() {
        let a = boot_order(1, 0, 3);
        assert_eq!(a, boot_order(1, 0, 3), "same seed and round, same order");
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2]);
        // Over rounds and seeds, the base is not always booted first.
        let firsts: Vec<usize> = (0..3).flat_map(|s| (0..4).map(move |r| boot_order(s, r, 2)[0])).collect();
        assert!(firsts.contains(&0) && firsts.contains(&1), "{firsts:?}");
    }

    #[test]
    fn a_guest_run_becomes_a_lab_record() {
        let v: Value = serde_json::from_str(
            r#"{"counters":{"nr_switches":100,"nr_voluntary_switches":90,"nr_involuntary_switches":10,"nr_migrations":3,
                "nr_wakeups":80,"nr_wakeups_sync":70,"nr_wakeups_local":40,"nr_wakeups_remote":40,"nr_wakeups_affine":5,
                "nr_wakeups_affine_attempts":9,"nr_wakeups_migrate":2,"nr_wakeup_preemptions":null,"nr_ipis":null},
               "native":{"ops":50,"op":"message","elapsed_ns":123},"workload":{"argv":["hackbench","-p"]},
               "metric":{"name":"seconds","value":0.5,"better":"lower"}}"#,
        )
        .unwrap();
        let run = GuestRun::from_json(&v).unwrap();
        let r = record(&run, "B", "6.12.117+deb13-amd64", "smp:2", 2);
        assert_eq!(r.counters.nr_wakeups_affine_attempts, 9);
        assert_eq!(r.counters.nr_voluntary_switches, 90);
        assert_eq!((r.metric, r.better, r.seed, r.simulated_ns), (0.5, Better::Lower, 2, 123));
        assert_eq!(r.workload, "hackbench -p");
        assert_eq!(nulls(&run), ["nr_wakeup_preemptions", "nr_ipis"]);
    }
}
