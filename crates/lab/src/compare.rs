//! A/B comparisons: a base variant against others, per (topology, workload), over seeds.
//!
//! Design (spec `workloads.md` §11.3): every variant runs on the same seeds as the base
//! (common random numbers), so differences are paired by seed.
//!
//! **% change** is signed so that positive means better, as in mmtests: for a lower-is-better
//! metric `100·(base − variant)/base`, for a higher-is-better one `100·(variant − base)/base`,
//! both on the medians over seeds.
//!
//! **The significance rule.** A variant is marked `(I)` (significant improvement) or `(R)`
//! (significant regression) when all of these hold:
//! 1. at least [`MIN_RUNS`] runs: with 3 or more seeds common to base and variant, Student's
//!    paired t-test on the per-seed differences `variant − base` (two-sided); otherwise, with 3
//!    or more runs in each arm, Welch's t-test;
//! 2. the test's p-value is below `alpha` (default 0.05);
//! 3. `|% change| >= min_effect` percent (default 1.0): a real but negligible shift is not
//!    flagged;
//! 4. the mean difference and the median change agree in direction (a skewed sample where they
//!    disagree is not marked).
//!
//! The mark's letter follows the sign of the % change. With fewer than 3 runs nothing is ever
//! marked. When every paired difference is the same non-zero value (a deterministic shift),
//! the test's p is 0; when all are zero, p is 1.

use serde::Serialize;

use crate::plan::{DEFAULT_MAX_EVENTS, Plan, RunKey};
use crate::runner::{Better, CounterRecord, GuestInfo, RunRecord, WorkloadLine};
use crate::stats::{Summary, TTest, paired_t, welch_t};
use crate::store::{MODEL_REVISION, Store, StoredRun, VERSION};
use crate::{LabError, spec, words};

/// Fewer runs than this are never marked significant.
pub const MIN_RUNS: usize = 3;

/// The thresholds of the significance rule.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CompareOptions {
    pub alpha: f64,
    pub min_effect_pct: f64,
}

/// One run, labelled with its variant's name.
#[derive(Clone, Debug)]
pub struct Sample {
    pub variant: String,
    pub key: RunKey,
    pub record: RunRecord,
}

impl From<StoredRun> for Sample {
    fn from(r: StoredRun) -> Self {
        Sample { variant: r.variant_name, key: r.key, record: r.record }
    }
}

/// Significance mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    None,
    /// Significant improvement: `(I)`.
    Improvement,
    /// Significant regression: `(R)`.
    Regression,
}

impl Mark {
    pub fn label(self) -> &'static str {
        match self {
            Mark::None => "",
            Mark::Improvement => "(I)",
            Mark::Regression => "(R)",
        }
    }
}

/// The counters compared side by side: mean per run over an arm's seeds.
pub const COUNTERS: &[&str] = &[
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
    "wakeup_latency_p50_us",
    "wakeup_latency_p99_us",
];

fn counter_values(c: &CounterRecord, lat: [u64; 4]) -> [f64; 16] {
    [
        c.nr_switches as f64,
        c.nr_voluntary_switches as f64,
        c.nr_involuntary_switches as f64,
        c.nr_migrations as f64,
        c.nr_wakeups as f64,
        c.nr_wakeups_sync as f64,
        c.nr_wakeups_local as f64,
        c.nr_wakeups_remote as f64,
        c.nr_wakeups_affine as f64,
        c.nr_wakeups_affine_attempts as f64,
        c.nr_wakeups_migrate as f64,
        c.nr_wakeup_preemptions as f64,
        c.nr_tick_preemptions as f64,
        c.nr_ipis as f64,
        lat[0] as f64 / 1e3,
        lat[2] as f64 / 1e3,
    ]
}

/// One variant's runs in one group.
#[derive(Clone, Debug, Serialize)]
pub struct Arm {
    pub name: String,
    pub spec: String,
    pub seeds: Vec<u64>,
    /// The metric per seed, in `seeds` order.
    pub values: Vec<f64>,
    pub summary: Summary,
    /// Mean per run of each of [`COUNTERS`], in that order.
    pub counters: Vec<f64>,
}

/// A variant against the base in one group.
#[derive(Clone, Debug, Serialize)]
pub struct VariantResult {
    pub name: String,
    pub spec: String,
    /// `None` when the variant has no runs in this group.
    pub arm: Option<Arm>,
    /// Median % change, positive = better; `None` when undefined (no runs, base median 0).
    pub change_pct: Option<f64>,
    /// The test's 95 % confidence interval of the mean difference, as a percentage of the
    /// base's mean, signed like `change_pct` (positive = better); low end first.
    pub change_ci95_pct: Option<[f64; 2]>,
    pub test: Option<TTest>,
    pub mark: Mark,
}

/// The metric of a workload run beside the foreground one (`--background`), compared like it.
#[derive(Clone, Debug, Serialize)]
pub struct BackgroundResult {
    pub workload: String,
    pub metric: String,
    pub better: Better,
    /// The base's arm (no counters: they are the run's, shown once for the group).
    pub base: Arm,
    pub variants: Vec<VariantResult>,
}

/// One (topology, workload, limits) cell of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    pub topology: String,
    pub workload: Vec<String>,
    pub duration_ns: u64,
    pub max_events: u64,
    pub metric: String,
    pub better: Better,
    pub base: Arm,
    pub variants: Vec<VariantResult>,
    /// The workloads that ran beside the foreground one, in `--background` order.
    pub background: Vec<BackgroundResult>,
    /// A `schedlab compare` command line that recomputes this group.
    pub reproduce: String,
}

/// A whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub schedlab_version: String,
    pub options: CompareOptions,
    pub base: String,
    pub variants: Vec<String>,
    pub groups: Vec<Group>,
    /// Where the runs came from when it was not the model (a real kernel in a VM): what the
    /// table's header says instead of the model's seeds, and the command that reproduces it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// The runs of a comparison measured outside the model: "seed" `i` is then repetition `i`
/// (a boot), paired across variants.
#[derive(Clone, Debug, Serialize)]
pub struct Origin {
    /// The first header line (replacing "schedlab V compare: seeds ...").
    pub title: String,
    /// Further header lines, after the legend.
    pub notes: Vec<String>,
    /// The command that reruns the comparison.
    pub reproduce: String,
    /// What one run is ("boots"), in "mean per run over N boots".
    pub unit: String,
}

/// Which variants to compare: names (or, for stored results, SPECs), base first.
pub struct Selection {
    pub base: (String, String),
    pub variants: Vec<(String, String)>,
}

impl Selection {
    /// The plan's base and every other variant, in plan order.
    pub fn from_plan(plan: &Plan) -> Selection {
        let named = |i: usize| (plan.variants[i].name.clone(), plan.variants[i].spec.clone());
        Selection {
            base: named(plan.base),
            variants: (0..plan.variants.len()).filter(|&i| i != plan.base).map(named).collect(),
        }
    }

    /// Base and variants of a plan, optionally chosen (`--base`, `--variant`) by name or SPEC.
    pub fn in_plan(plan: &Plan, base: Option<&str>, variants: &[String]) -> Result<Selection, LabError> {
        let find = |text: &str, flag: &str| -> Result<(String, String), LabError> {
            let base_full = &plan.base_variant().spec;
            let full = spec::full_variant(text, base_full);
            match plan.variants.iter().find(|v| v.name == text.trim() || v.spec == full) {
                Some(v) => Ok((v.name.clone(), v.spec.clone())),
                None => {
                    let names: Vec<&str> = plan.variants.iter().map(|v| v.name.as_str()).collect();
                    Err(LabError::Input(format!(
                        "{flag} `{text}`: not a variant of {} (variants: {})",
                        plan.origin,
                        names.join(", ")
                    )))
                }
            }
        };
        let mut sel = Selection::from_plan(plan);
        if let Some(b) = base {
            sel.base = find(b, "--base")?;
            sel.variants = plan
                .variants
                .iter()
                .filter(|v| v.name != sel.base.0)
                .map(|v| (v.name.clone(), v.spec.clone()))
                .collect();
        }
        if !variants.is_empty() {
            sel.variants = variants.iter().map(|v| find(v, "--variant")).collect::<Result<_, _>>()?;
        }
        Ok(sel)
    }
}

/// Stored runs chosen for a comparison, and a note to show when runs of other versions were left out.
pub struct Stored {
    pub samples: Vec<Sample>,
    pub selection: Selection,
    pub note: Option<String>,
}

/// The runs of a results store to compare: the base and variants by name or SPEC (`--base`,
/// `--variant`; by default the first stored variant and every other one that has runs), only
/// this build's ([`StoredRun::is_current`]: this model revision's, real kernels' of this
/// version) when the store holds others.
pub fn select_stored(store: &Store, base: Option<&str>, variants: &[String]) -> Result<Stored, LabError> {
    let mut runs = store.runs()?;
    let mut note = None;
    if runs.iter().any(|r| !r.is_current()) {
        let versions = store.versions()?;
        if !runs.iter().any(|r| r.is_current()) {
            return Err(LabError::Input(format!(
                "{}: runs of schedlab {} and none of this build (model runs of {VERSION}+model.{MODEL_REVISION})",
                store.path().display(),
                versions.join(", "),
            )));
        }
        note = Some(format!(
            "using the runs of this build (schedlab {VERSION}, model {MODEL_REVISION}; the store also has {})",
            versions.join(", ")
        ));
        runs.retain(|r| r.is_current());
    }
    let named = store.variants()?;
    // Names known from the variants table, then from the runs themselves.
    let mut known: Vec<(String, String)> = named.clone();
    for r in &runs {
        if !known.iter().any(|(n, s)| n == &r.variant_name || s == &r.key.spec) {
            known.push((r.variant_name.clone(), r.key.spec.clone()));
        }
    }
    let has_runs = |spec: &str| runs.iter().any(|r| r.key.spec == spec);
    let find = |text: &str, flag: &str, base_full: Option<&str>| -> Result<(String, String), LabError> {
        if let Some((n, s)) = known.iter().find(|(n, _)| n == text.trim()) {
            return Ok((n.clone(), s.clone()));
        }
        // A real kernel's runs are keyed `vm:KERNEL SPEC`: taken as written.
        let full = match base_full {
            _ if text.trim().starts_with("vm:") => text.trim().to_string(),
            Some(b) => spec::full_variant(text, b),
            None => spec::full_base(text),
        };
        if has_runs(&full) {
            let name = known.iter().find(|(_, s)| s == &full).map_or(text.trim().to_string(), |(n, _)| n.clone());
            return Ok((name, full));
        }
        let names: Vec<&str> = known.iter().map(|(n, _)| n.as_str()).collect();
        Err(LabError::Input(format!(
            "{flag} `{text}`: no stored runs of this variant (variants: {})",
            names.join(", ")
        )))
    };
    let base = match base {
        Some(b) => find(b, "--base", None)?,
        None => match known.first() {
            Some(first) => first.clone(),
            None => return Err(LabError::Input(format!("{}: no runs stored", store.path().display()))),
        },
    };
    let variants: Vec<(String, String)> = if variants.is_empty() {
        known.iter().filter(|(_, s)| s != &base.1 && has_runs(s)).cloned().collect()
    } else {
        variants.iter().map(|v| find(v, "--variant", Some(&base.1))).collect::<Result<_, _>>()?
    };
    if variants.is_empty() {
        return Err(LabError::Input(format!(
            "{}: only the base `{}` has runs; nothing to compare",
            store.path().display(),
            base.0
        )));
    }
    let selection = Selection { base, variants };
    let mut samples = Vec::new();
    for r in runs {
        let label = if r.key.spec == selection.base.1 {
            Some(selection.base.0.clone())
        } else {
            selection.variants.iter().find(|(_, s)| s == &r.key.spec).map(|(n, _)| n.clone())
        };
        if let Some(variant) = label {
            samples.push(Sample { variant, key: r.key, record: r.record });
        }
    }
    Ok(Stored { samples, selection, note })
}

/// Builds the comparison from samples. Groups appear in the order of their first sample; a
/// group where the base has no run is left out.
pub fn build(samples: &[Sample], sel: &Selection, opts: CompareOptions) -> Result<Comparison, LabError> {
    // Group the samples in one pass, groups in order of first appearance.
    type GroupKey<'a> = (&'a str, &'a [String], u64, u64);
    let mut index: std::collections::BTreeMap<GroupKey, usize> = std::collections::BTreeMap::new();
    let mut grouped: Vec<(GroupKey, Vec<&Sample>)> = Vec::new();
    for s in samples {
        let k = (s.key.topology.as_str(), s.key.workload.as_slice(), s.key.duration_ns, s.key.max_events);
        let i = *index.entry(k).or_insert_with(|| {
            grouped.push((k, Vec::new()));
            grouped.len() - 1
        });
        grouped[i].1.push(s);
    }
    let mut groups = Vec::new();
    let mut guests: Vec<Option<GuestInfo>> = Vec::new();
    for (k, in_group) in grouped {
        // One arm per variant; `part` None is the foreground metric, Some(k) background k's.
        let arm_of = |name: &str, spec: &str, part: Option<usize>| -> Result<Option<Arm>, LabError> {
            let mut runs: Vec<&Sample> = in_group.iter().copied().filter(|s| s.variant == name).collect();
            runs.sort_by_key(|s| s.key.seed);
            if let Some(k) = part {
                runs.retain(|s| s.record.background.len() > k);
            }
            if runs.is_empty() {
                return Ok(None);
            }
            if let Some(w) = runs.windows(2).find(|w| w[0].key.seed == w[1].key.seed) {
                return Err(LabError::Input(format!(
                    "variant `{name}` has two runs with seed {} for {} on {}",
                    w[0].key.seed,
                    words::join(k.1),
                    k.0
                )));
            }
            let values: Vec<f64> = runs
                .iter()
                .map(|s| match part {
                    None => s.record.metric,
                    Some(k) => s.record.background[k].metric,
                })
                .collect();
            let mut counters = vec![0.0; if part.is_none() { COUNTERS.len() } else { 0 }];
            if part.is_none() {
                for s in &runs {
                    for (sum, v) in
                        counters.iter_mut().zip(counter_values(&s.record.counters, s.record.wakeup_latency_ns))
                    {
                        *sum += v;
                    }
                }
                counters.iter_mut().for_each(|c| *c /= runs.len() as f64);
            }
            Ok(Some(Arm {
                name: name.to_string(),
                spec: spec.to_string(),
                seeds: runs.iter().map(|s| s.key.seed).collect(),
                #[allow(clippy::expect_used, reason = "an arm is built only from a non-empty group of runs")]
                summary: Summary::of(&values).expect("non-empty"),
                values,
                counters,
            }))
        };
        let Some(mut base) = arm_of(&sel.base.0, &sel.base.1, None)? else { continue };
        #[allow(clippy::expect_used, reason = "arm_of returned the base arm, so the group has base runs")]
        let first = in_group.iter().find(|s| s.variant == sel.base.0).expect("base has runs");
        let (metric, better) = (first.record.metric_name.clone(), first.record.better);
        if let Some(odd) = in_group.iter().find(|s| s.record.metric_name != metric) {
            return Err(LabError::Input(format!(
                "{} on {}: runs report different metrics (`{metric}`, `{}`)",
                words::join(k.1),
                k.0,
                odd.record.metric_name
            )));
        }
        let mut variants = Vec::new();
        for (name, spec) in &sel.variants {
            let arm = arm_of(name, spec, None)?;
            variants.push(judge(name, spec, &base, arm, better, opts));
        }
        let mut background = Vec::new();
        for (k, part) in first.record.background.iter().enumerate() {
            let Some(bg_base) = arm_of(&sel.base.0, &sel.base.1, Some(k))? else { continue };
            let mut results = Vec::new();
            for (name, spec) in &sel.variants {
                let arm = arm_of(name, spec, Some(k))?;
                results.push(judge(name, spec, &bg_base, arm, part.better, opts));
            }
            background.push(BackgroundResult {
                workload: part.workload.clone(),
                metric: part.metric_name.clone(),
                better: part.better,
                base: bg_base,
                variants: results,
            });
        }
        let guest = first.record.vm.as_ref();
        let reproduce = match guest {
            Some(g) => vm_reproduce_line(g, k.0, k.1, &base.seeds, sel),
            None => reproduce_line(&[k.0.to_string()], &[k.1.to_vec()], &base.seeds, k.2, k.3, sel),
        };
        if guest.is_some() {
            // What a real kernel does not count is n/a in every arm, never a made-up 0.
            let mut unmeasured: Vec<&str> = Vec::new();
            for g in in_group.iter().filter_map(|s| s.record.vm.as_ref()) {
                for u in &g.unmeasured {
                    if !unmeasured.contains(&u.as_str()) {
                        unmeasured.push(u);
                    }
                }
            }
            let idx: Vec<usize> =
                COUNTERS.iter().enumerate().filter(|(_, c)| unmeasured.contains(c)).map(|(i, _)| i).collect();
            let arms = std::iter::once(&mut base).chain(variants.iter_mut().filter_map(|v| v.arm.as_mut()));
            for a in arms {
                for &i in &idx {
                    if let Some(c) = a.counters.get_mut(i) {
                        *c = f64::NAN;
                    }
                }
            }
        }
        guests.push(guest.cloned());
        groups.push(Group {
            topology: k.0.to_string(),
            workload: k.1.to_vec(),
            duration_ns: k.2,
            max_events: k.3,
            metric,
            better,
            base,
            variants,
            background,
            reproduce,
        });
    }
    if groups.is_empty() {
        return Err(LabError::Input(format!("no runs of the base `{}` to compare with", sel.base.0)));
    }
    // Runs of real kernels only: the header says so instead of the model's seeds.
    let origin = match guests.first() {
        Some(Some(g)) if guests.iter().all(Option::is_some) => Some(Origin {
            title: format!(
                "schedlab {VERSION} compare: stored runs of a real kernel under qemu ({}, {})",
                g.kernel,
                g.accel.to_uppercase()
            ),
            notes: vec![
                "one measured run per boot; \"seed\" i is round i of the boots (paired across variants)".to_string(),
                format!("n/a: not counted by the kernel or needing a trace: {}", g.unmeasured.join(", ")),
            ],
            reproduce: groups.iter().map(|g| g.reproduce.clone()).collect::<Vec<_>>().join("; "),
            unit: "boots".into(),
        }),
        _ => None,
    };
    Ok(Comparison {
        schedlab_version: VERSION.to_string(),
        options: opts,
        base: sel.base.0.clone(),
        variants: sel.variants.iter().map(|v| v.0.clone()).collect(),
        groups,
        origin,
    })
}

/// The SPEC a real kernel was told, from its stored key `vm:KERNEL SPEC`.
pub fn guest_spec<'a>(stored: &'a str, kernel: &str) -> &'a str {
    stored.strip_prefix("vm:").and_then(|s| s.strip_prefix(kernel)).map_or(stored, str::trim)
}

/// The `schedlab compare --vm` command line that reboots a group of real-kernel runs: rounds
/// are "seeds" `seed..seed+runs`.
pub fn vm_reproduce_line(g: &GuestInfo, topology: &str, workload: &[String], seeds: &[u64], sel: &Selection) -> String {
    let mut cmd = format!(
        "schedlab compare --vm {} --accel {} --topology {} --seed {} --runs {} --warmup {}",
        words::quote(&g.kernel),
        g.accel,
        words::quote(topology),
        seeds.first().copied().unwrap_or(1),
        seeds.len(),
        g.warmup
    );
    if !g.replug {
        cmd += " --no-replug";
    }
    if g.asked_builtin() {
        cmd += " --builtin";
    }
    cmd += &format!(" --base {}", words::quote(guest_spec(&sel.base.1, &g.kernel)));
    for (_, spec) in &sel.variants {
        cmd += &format!(" --variant {}", words::quote(guest_spec(spec, &g.kernel)));
    }
    cmd + " " + &words::join(workload)
}

/// The % change of `new` against `base`, positive = better.
pub fn change_pct(base: f64, new: f64, better: Better) -> Option<f64> {
    if base == 0.0 || !base.is_finite() || !new.is_finite() {
        return if base == new { Some(0.0) } else { None };
    }
    let raw = 100.0 * (new - base) / base.abs();
    // `+ 0.0` turns a negated zero into 0 (no "-0.00%").
    Some(match better {
        Better::Lower => -raw + 0.0,
        Better::Higher => raw + 0.0,
    })
}

/// Applies the significance rule of the module documentation.
pub fn judge(
    name: &str,
    spec: &str,
    base: &Arm,
    arm: Option<Arm>,
    better: Better,
    opts: CompareOptions,
) -> VariantResult {
    let Some(arm) = arm else {
        return VariantResult {
            name: name.into(),
            spec: spec.into(),
            arm: None,
            change_pct: None,
            change_ci95_pct: None,
            test: None,
            mark: Mark::None,
        };
    };
    let change = change_pct(base.summary.median, arm.summary.median, better);
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for (i, seed) in base.seeds.iter().enumerate() {
        if let Ok(j) = arm.seeds.binary_search(seed) {
            before.push(base.values[i]);
            after.push(arm.values[j]);
        }
    }
    let test = if before.len() >= MIN_RUNS {
        paired_t(&before, &after)
    } else if base.values.len() >= MIN_RUNS && arm.values.len() >= MIN_RUNS {
        welch_t(&base.values, &arm.values)
    } else {
        None
    };
    let mark = match (test, change) {
        (Some(t), Some(c)) if t.p < opts.alpha && c.abs() >= opts.min_effect_pct => {
            // The mean difference, in the "better" direction, must agree with the change.
            let mean_better = match better {
                Better::Lower => -t.mean_diff,
                Better::Higher => t.mean_diff,
            };
            if mean_better > 0.0 && c > 0.0 {
                Mark::Improvement
            } else if mean_better < 0.0 && c < 0.0 {
                Mark::Regression
            } else {
                Mark::None
            }
        }
        _ => Mark::None,
    };
    let change_ci95_pct = test.and_then(|t| {
        let scale = base.summary.mean.abs();
        if scale == 0.0 || !scale.is_finite() {
            return None;
        }
        let [lo, hi] = t.ci95.map(|d| 100.0 * d / scale);
        Some(match better {
            Better::Lower => [-hi + 0.0, -lo + 0.0],
            Better::Higher => [lo + 0.0, hi + 0.0],
        })
    });
    VariantResult {
        name: name.into(),
        spec: spec.into(),
        arm: Some(arm),
        change_pct: change,
        change_ci95_pct,
        test,
        mark,
    }
}

/// Seeds as compare flags: `--seed S --runs N` when consecutive, else `--seeds a,b,c`.
pub fn seed_flags(seeds: &[u64]) -> String {
    let consecutive = seeds.windows(2).all(|w| w[0].checked_add(1) == Some(w[1]));
    match seeds {
        [first, ..] if consecutive => format!("--seed {first} --runs {}", seeds.len()),
        _ => format!("--seeds {}", seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(",")),
    }
}

/// A `schedlab compare` command line for the given cross product.
pub fn reproduce_line(
    topologies: &[String],
    workloads: &[Vec<String>],
    seeds: &[u64],
    duration_ns: u64,
    max_events: u64,
    sel: &Selection,
) -> String {
    let mut cmd = String::from("schedlab compare");
    for t in topologies {
        cmd += &format!(" --topology {}", words::quote(t));
    }
    cmd += &format!(" {} --duration {}", seed_flags(seeds), duration_ns as f64 / 1e9);
    if max_events != DEFAULT_MAX_EVENTS {
        cmd += &format!(" --max-events {max_events}");
    }
    // Workload-line options every workload shares are printed as compare's own flags, as the
    // user typed them (`--cpus 78,79`), the rest of each line as --workload.
    let lines: Vec<WorkloadLine> = workloads
        .iter()
        .map(|w| WorkloadLine::parse(w).unwrap_or_else(|_| WorkloadLine { main: w.clone(), ..Default::default() }))
        .collect();
    let shared = |l: &WorkloadLine| (l.cpus.clone(), l.background.clone(), l.groups.clone());
    let common = lines.first().map(shared).filter(|c| lines.iter().all(|l| shared(l) == *c));
    if let Some((cpus, background, groups)) = &common {
        if let Some(c) = cpus {
            cmd += &format!(" --cpus {}", words::quote(c));
        }
        for b in background {
            cmd += &format!(" --background {}", words::quote(&words::join(b)));
        }
        for w in groups.to_words() {
            cmd += &format!(" {}", words::quote(&w));
        }
    }
    cmd += &format!(" --base {}", words::quote(&sel.base.1));
    for (_, spec) in &sel.variants {
        cmd += &format!(" --variant {}", words::quote(spec));
    }
    for (w, line) in workloads.iter().zip(&lines) {
        let w = if common.is_some() { &line.main } else { w };
        cmd += &format!(" --workload {}", words::quote(&words::join(w)));
    }
    cmd
}

impl Comparison {
    /// Marks counters the runs could not measure (a real kernel keeps no count of wakeup
    /// preemptions): their means become NaN, which every rendering prints as `n/a`.
    pub fn mask_counters(&mut self, unmeasured: &[&str]) {
        let idx: Vec<usize> =
            COUNTERS.iter().enumerate().filter(|(_, c)| unmeasured.contains(c)).map(|(i, _)| i).collect();
        for g in &mut self.groups {
            let arms = std::iter::once(&mut g.base).chain(g.variants.iter_mut().filter_map(|v| v.arm.as_mut()));
            for a in arms {
                for &i in &idx {
                    if let Some(c) = a.counters.get_mut(i) {
                        *c = f64::NAN;
                    }
                }
            }
        }
    }

    /// One command line reproducing everything when the groups form a full cross product of
    /// topologies × workloads with the same seeds and limits; otherwise one per group.
    pub fn reproduce(&self) -> Vec<String> {
        if let Some(o) = &self.origin {
            return vec![o.reproduce.clone()];
        }
        let mut topologies: Vec<String> = Vec::new();
        let mut workloads: Vec<Vec<String>> = Vec::new();
        for g in &self.groups {
            if !topologies.contains(&g.topology) {
                topologies.push(g.topology.clone());
            }
            if !workloads.contains(&g.workload) {
                workloads.push(g.workload.clone());
            }
        }
        let g0 = &self.groups[0];
        let uniform = self.groups.len() == topologies.len() * workloads.len()
            && self.groups.iter().all(|g| {
                g.base.seeds == g0.base.seeds && g.duration_ns == g0.duration_ns && g.max_events == g0.max_events
            });
        if !uniform {
            return self.groups.iter().map(|g| g.reproduce.clone()).collect();
        }
        let sel = Selection {
            base: (self.base.clone(), g0.base.spec.clone()),
            variants: g0.variants.iter().map(|v| (v.name.clone(), v.spec.clone())).collect(),
        };
        vec![reproduce_line(&topologies, &workloads, &g0.base.seeds, g0.duration_ns, g0.max_events, &sel)]
    }

    /// Every seed used by the base, in order.
    pub fn seeds(&self) -> Vec<u64> {
        let mut all: Vec<u64> = self.groups.iter().flat_map(|g| g.base.seeds.iter().copied()).collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}
