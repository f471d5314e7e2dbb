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
use lab::runner::{Better, CounterRecord, RunRecord};
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

/// The lab's record of one guest run (counters the guest does not have are 0 here and masked
/// in the table: [`GUEST_UNMEASURED`]).
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
        wakeup_latency_ns: [0; 4],
        background: vec![],
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

/// Boots `runs` rounds of every variant and builds the comparison.
pub fn compare(req: &CompareRequest, note: &(dyn Fn(&str) + Sync)) -> Result<VmComparison, VmError> {
    if req.runs == 0 {
        return Err(VmError::Usage("--runs 0: at least one boot per variant".into()));
    }
    if req.workload.is_empty() {
        return Err(VmError::Usage("no workload given (e.g. `hackbench -p -g 1 -l 200`)".into()));
    }
    // Every SPEC is checked before anything boots.
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
    let mut session = Session::new(&req.session, note)?;
    let topology = format!("smp:{}", session.nr_cpus);
    let kernel_label = session.kernel.label.clone();
    let mut samples = Vec::new();
    let mut schedstat = Vec::new();
    let mut boots = Vec::new();
    let mut release = String::new();
    let mut unmeasured: Vec<&str> = GUEST_UNMEASURED.to_vec();
    let total = req.runs as usize * all.len();
    for round in 0..req.runs {
        for vi in boot_order(req.seed, round, all.len()) {
            let v = &all[vi];
            let plan = GuestPlan {
                settings: v.settings.clone(),
                calibrate: None,
                warmup: req.warmup,
                runs: 1,
                workload: req.workload.clone(),
                builtin: true,
            };
            note(&format!("vm: boot {}/{total}: {} ({}), round {}", boots.len() + 1, label(vi), v.name, round + 1));
            let b =
                session.boot(&plan, &format!("{} `{}`", if vi == 0 { "--base" } else { "--variant" }, v.name), note)?;
            release = b.console.release.clone().unwrap_or_default();
            let seed = u64::from(round) + 1;
            for run in &b.runs {
                for k in nulls(run) {
                    if !unmeasured.contains(&k) {
                        unmeasured.push(k);
                    }
                }
                samples.push(Sample {
                    variant: v.name.clone(),
                    key: RunKey {
                        spec: format!("vm:{kernel_label} {}", v.spec),
                        topology: topology.clone(),
                        workload: req.workload.clone(),
                        seed,
                        duration_ns: 0,
                        max_events: 0,
                    },
                    record: record(run, &v.name, &release, &topology, seed),
                });
                schedstat.push(run.schedstat_delta().ok());
            }
            boots.push((round + 1, v.name.clone(), b.boot_secs, b.total_secs, b.retried.len()));
        }
    }
    let sel = Selection {
        base: (base.name.clone(), base.spec.clone()),
        variants: all[1..].iter().map(|v| (v.name.clone(), v.spec.clone())).collect(),
    };
    let mut comparison =
        lab::compare::build(&samples, &sel, req.options).map_err(|e| VmError::System(e.to_string()))?;
    comparison.mask_counters(&unmeasured);
    let origin = origin(req, &session, &release, &unmeasured);
    for g in &mut comparison.groups {
        g.reproduce = origin.reproduce.clone();
    }
    comparison.origin = Some(origin);
    Ok(VmComparison { comparison, samples, schedstat, release, boots })
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
        header.extend((0..names.len()).map(label));
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

fn label(i: usize) -> String {
    lab::report::label(i)
}

fn origin(req: &CompareRequest, s: &Session, release: &str, unmeasured: &[&str]) -> Origin {
    let (hz, preempt) = s.kernel.sched_config();
    let mut reproduce = format!(
        "schedlab compare --vm {} --accel {} --topology smp:{} --seed {} --runs {} --warmup {}",
        lab::words::quote(&req.vm_arg),
        if s.accel == crate::Accel::Kvm { "kvm" } else { "tcg" },
        s.nr_cpus,
        req.seed,
        req.runs,
        req.warmup
    );
    reproduce += &format!(" --base {}", lab::words::quote(&req.base));
    for v in &req.variants {
        reproduce += &format!(" --variant {}", lab::words::quote(v));
    }
    reproduce += &format!(" {}", lab::words::join(&req.workload));
    Origin {
        title: format!(
            "schedlab {} compare --vm: real kernel {} (release {release}) under qemu {}, {} vCPUs, HZ {}, preempt {} (built-in default)",
            lab::store::VERSION,
            s.kernel.label,
            s.accel.name(),
            s.nr_cpus,
            hz.map_or("?".into(), |h| h.to_string()),
            preempt.unwrap_or("?"),
        ),
        notes: vec![
            format!(
                "{} boots per variant, one measured run each after {} warm-up run(s) discarded; boots in rounds, \
                 the variants' order in each round drawn from seed {}; \"seed\" i below is round i (paired across variants)",
                req.runs, req.warmup, req.seed
            ),
            "counters: the workload's tasks' /proc/<tid>/sched, read before reaping (schedstats on); \
             the metric in the guest's time (emulated under TCG: compare variants, not absolute values)"
                .to_string(),
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
