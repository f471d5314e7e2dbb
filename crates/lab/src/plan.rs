//! Experiment plans: topologies × variants × workloads × seeds, with run limits.
//!
//! A plan comes from a TOML file (`schedlab sweep PLAN.toml`, `schedlab compare --plan`) or from
//! `compare`'s flags. Either way it is validated whole before anything runs: every topology
//! resolves, every SPEC parses, every workload resolves. Errors in a file name the file, the
//! line and the field.
//!
//! The file format (unknown keys are errors):
//!
//! ```toml
//! topologies = ["smp:2"]        # presets, smp:N or topology TOML files (default ["smp:2"])
//! seeds = 3                     # a count (seeds seed, seed+1, ...) or a list: [1, 7, 42]
//! seed = 1                      # the first seed when `seeds` is a count (default 1)
//! duration = 0.2                # simulated seconds when the workload sets none (default 10)
//! max_events = 2000000000       # safety bound per run (default 2e9)
//! base = "baseline"             # the variant others are compared with (default: the first)
//! workloads = ["rtapp examples/rtapp/mixed.json", "hackbench -g 4"]
//! cpus = "0-3"                  # optional: taskset -c for every task of every workload
//! background = ["stress-ng --cpu 2"]  # optional: benchmarks run beside every workload
//! autogroup = "off"             # optional: on|off (or true|false) for every workload
//! cgroup = "/bench"             # optional: every workload's foreground tasks in this cgroup
//! cgroup_weight = ["/bench=200"]  # optional: cpu.weight (1..10000) or `idle` per cgroup
//!
//! [[variant]]
//! name = "baseline"             # optional; default: the SPEC as written
//! spec = "v7.3"
//!
//! [[variant]]
//! name = "next-buddy"
//! spec = "+next-buddy-eevdf"    # no preset: applies on top of the base variant
//! ```
//!
//! Real kernels under qemu run as `[[vm]]` tables, one `compare --vm` each, with the keys of
//! its flags (run by `schedlab sweep`, which boots them after the model's runs; `compare
//! --plan` runs only the model):
//!
//! ```toml
//! [[vm]]
//! name = "6.12"                 # optional; default vm[i]
//! vm = "linux-image-6.12.117+deb13-amd64"   # a Debian kernel package or an image path
//! topology = "smp:2"            # smp:N, a preset or a topology file qemu can boot (default smp:2)
//! base = "default"              # guest SPECs: default, FEATURE/NO_FEATURE, preempt=, sysctls
//! variant = ["NO_WAKEUP_PREEMPTION"]
//! runs = 3                      # boots per variant (default 3); warmup = 1, seed = 1,
//! workload = "hackbench -p -g 1 -l 200"     # accel = "auto", timeout = 900 (per boot),
//!                                           # replug = true (false: --no-replug),
//!                                           # trace = false (true: --trace),
//!                                           # builtin = false (true: --builtin)
//! ```
//!
//! A plan may hold only `[[vm]]` tables. Their boots are numbered after the model's runs
//! ([`Plan::vm_first_index`]), so shards divide them too.
//!
//! A workload line may itself start with `--cpus LIST`, `--background 'CMD'`, `--autogroup`,
//! `--cgroup` and `--cgroup-weight` (see [`runner::WorkloadLine`]); the plan's `cpus`,
//! `background`, `autogroup`, `cgroup` and `cgroup_weight` are put in front of every line (the
//! line's own win), so stored runs carry them in their workload.
//!
//! Workload lines are split like a shell does (quotes, backslashes; no expansions); file paths in
//! them, and topology files, are relative to the current directory, not to the plan file, so the
//! stored command lines reproduce from where the sweep ran.
//!
//! Runs are numbered in the order topology, variant, workload, seed (the last varies fastest);
//! [`Plan::runs`] lists them and a shard takes every run whose number is `I` modulo `N`.

use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use sim::kernel::Variant;
use sim::topology::Topology;
use toml::Spanned;

use crate::runner::{self, GroupOptions, RunRequest};
use crate::{LabError, spec, words};

/// Default simulated time per run when the workload sets none, as `schedlab run`.
pub const DEFAULT_DURATION_S: f64 = 10.0;
/// Default event bound per run, as `schedlab run`.
pub const DEFAULT_MAX_EVENTS: u64 = 2_000_000_000;
/// At most this many seeds per plan.
pub const MAX_SEEDS: usize = 100_000;
/// At most this many runs per plan.
pub const MAX_RUNS: usize = 10_000_000;

/// A topology as named in the plan, and the machine it names.
#[derive(Clone, Debug)]
pub struct PlanTopology {
    pub name: String,
    pub topology: Topology,
}

/// A named variant and its full SPEC (see [`crate::spec`]).
#[derive(Clone, Debug)]
pub struct PlanVariant {
    pub name: String,
    pub spec: String,
    pub variant: Variant,
}

/// A validated plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Where it came from: a file path, or `command line`.
    pub origin: String,
    pub topologies: Vec<PlanTopology>,
    pub variants: Vec<PlanVariant>,
    /// Index into `variants` of the base.
    pub base: usize,
    pub workloads: Vec<Vec<String>>,
    pub seeds: Vec<u64>,
    pub duration_ns: u64,
    pub max_events: u64,
    /// Runs on real kernels under qemu (`[[vm]]` tables), numbered after the model's runs.
    pub vm: Vec<VmPlan>,
}

/// A `[[vm]]` table of a plan: one `compare --vm`, with the same keys as its flags. The guest
/// SPECs, the topology and the kernel are checked by the `vm` crate before anything boots; here
/// only what needs no guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmPlan {
    /// `name`, default `vm[i]` (for messages).
    pub name: String,
    /// `vm`: a Debian kernel package or a kernel image path, as `compare --vm`.
    pub vm: String,
    /// `topology`: `smp:N`, a preset or a topology file (default `smp:2`).
    pub topology: String,
    /// `base` (default `default`) and `variant`, a list of guest SPECs.
    pub base: String,
    pub variants: Vec<String>,
    /// `runs`: boots per variant (default 3); `warmup`: repetitions discarded in each boot
    /// (default 1); `seed`: the boot order's seed and the first "seed" of the rounds (default 1).
    pub runs: u32,
    pub warmup: u32,
    pub seed: u64,
    /// `accel`: `auto`, `kvm` or `tcg` (default `auto`); `timeout`: seconds per boot (900).
    pub accel: String,
    pub timeout_s: u64,
    /// `replug`: replug vCPUs 1..N-1 right before each run, the ground truth's method
    /// (default `true`; `false` is `--no-replug`).
    pub replug: bool,
    /// `builtin`: run schedlab's built-in workers even where the real tool is in the guest,
    /// as `compare --vm --builtin` (default `false`: the real tool, read by the exit trap).
    pub builtin: bool,
    /// `trace`: record the measured runs with ftrace in the guest, as `compare --vm --trace`
    /// (default `false`): fills the wakeup latency rows.
    pub trace: bool,
    /// `workload`: one workload line.
    pub workload: Vec<String>,
}

impl VmPlan {
    /// Boots in the table: one per variant (the base included) and round.
    pub fn boot_count(&self) -> usize {
        self.runs as usize * (1 + self.variants.len())
    }
}

/// One run of a plan, by indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSlot {
    /// The run's number in the whole plan (what shards divide).
    pub index: usize,
    pub topology: usize,
    pub variant: usize,
    pub workload: usize,
    pub seed: u64,
}

/// A run's inputs: what the results store keys on (with the schedlab version).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunKey {
    pub spec: String,
    pub topology: String,
    pub workload: Vec<String>,
    pub seed: u64,
    pub duration_ns: u64,
    pub max_events: u64,
}

impl Plan {
    /// Every run, numbered in plan order.
    pub fn runs(&self) -> Vec<RunSlot> {
        let mut out = Vec::new();
        for topology in 0..self.topologies.len() {
            for variant in 0..self.variants.len() {
                for workload in 0..self.workloads.len() {
                    for &seed in &self.seeds {
                        out.push(RunSlot { index: out.len(), topology, variant, workload, seed });
                    }
                }
            }
        }
        out
    }

    /// The model's runs (what [`Plan::runs`] lists).
    pub fn run_count(&self) -> usize {
        self.topologies.len() * self.variants.len() * self.workloads.len() * self.seeds.len()
    }

    /// The number of the first boot of `[[vm]]` table `t` among all the plan's runs: the
    /// tables' boots follow the model's runs, table by table, and inside a table round by
    /// round, base first then the variants in order (what shards divide; the boot order inside
    /// a round is drawn from the table's seed).
    pub fn vm_first_index(&self, t: usize) -> usize {
        self.run_count() + self.vm[..t].iter().map(VmPlan::boot_count).sum::<usize>()
    }

    /// Every run of the plan: the model's and the boots of the `[[vm]]` tables.
    pub fn total_count(&self) -> usize {
        self.vm_first_index(self.vm.len())
    }

    pub fn request(&self, slot: &RunSlot) -> RunRequest {
        RunRequest {
            variant: self.variants[slot.variant].variant.clone(),
            topology: self.topologies[slot.topology].topology.clone(),
            workload: self.workloads[slot.workload].clone(),
            seed: slot.seed,
            default_duration_ns: self.duration_ns,
            max_events: self.max_events,
            cpus: None,
        }
    }

    pub fn key(&self, slot: &RunSlot) -> RunKey {
        RunKey {
            spec: self.variants[slot.variant].spec.clone(),
            topology: self.topologies[slot.topology].name.clone(),
            workload: self.workloads[slot.workload].clone(),
            seed: slot.seed,
            duration_ns: self.duration_ns,
            max_events: self.max_events,
        }
    }

    pub fn base_variant(&self) -> &PlanVariant {
        &self.variants[self.base]
    }
}

/// A shard: `index` in `0..count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Parses `I/N` with `0 <= I < N` (0-based, as `SLURM_ARRAY_TASK_ID` with `--array=0-(N-1)`
    /// and Kubernetes' `JOB_COMPLETION_INDEX`).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("`{text}` is not I/N with 0 <= I < N (0-based shard index I of N shards)");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.trim().parse::<u32>().map_err(|_| bad())?, n.trim().parse::<u32>().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether the run numbered `index` belongs to this shard (run number modulo N).
    pub fn contains(&self, index: usize) -> bool {
        index % self.count as usize == self.index as usize
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Resolves a topology spec: a preset, `smp:N`, `host`, or a topology TOML file, optionally
/// with `:cpus=LIST`/`:nodes=LIST` (see `machine::resolve_topology`).
pub fn resolve_topology(name: &str) -> Result<Topology, String> {
    machine::resolve_topology(name)
}

/// Checks that a workload command line resolves (file exists, flags parse) and that its
/// `--cpus` exist on every machine of the plan.
pub fn check_workload(argv: &[String], topologies: &[PlanTopology]) -> Result<(), String> {
    runner::resolve_workload(argv)?;
    let line = runner::WorkloadLine::parse(argv)?;
    for t in topologies {
        line.cpus_on(t.topology.nr_cpus() as u32).map_err(|e| format!("on {}: {e}", t.name))?;
    }
    Ok(())
}

/// Puts a plan's (or compare's) `cpus`, `background` and task-group options in front of a
/// workload line; the line's own options win (a line's `--cpus` replaces the plan's, its
/// `--cgroup-weight` for a path the plan's for that path: [`GroupOptions::under`]).
pub fn with_line_options(
    argv: Vec<String>,
    cpus: Option<&str>,
    background: &[Vec<String>],
    groups: &GroupOptions,
) -> Result<Vec<String>, String> {
    if cpus.is_none() && background.is_empty() && groups.is_empty() {
        return Ok(argv);
    }
    let mut line = runner::WorkloadLine::parse(&argv)?;
    if line.cpus.is_none() {
        line.cpus = cpus.map(str::to_string);
    }
    line.background = [background, &line.background[..]].concat();
    line.groups = groups.under(&line.groups);
    Ok(line.to_argv())
}

/// `count` seeds from `first` on: `first, first + 1, ...` (wrapping).
pub fn seed_range(first: u64, count: usize) -> Vec<u64> {
    (0..count as u64).map(|i| first.wrapping_add(i)).collect()
}

/// A plan's inputs as given on the command line; [`Plan::from_flags`] validates them and names
/// the flag in every error.
pub struct PlanFlags<'a> {
    pub topologies: &'a [String],
    pub base: &'a str,
    /// Variants as typed; the name is the text as typed.
    pub variants: &'a [String],
    pub workloads: Vec<Vec<String>>,
    pub seeds: Vec<u64>,
    pub duration_s: f64,
    pub max_events: u64,
    /// `--cpus` for every workload.
    pub cpus: Option<&'a str>,
    /// `--background` commands for every workload, as typed.
    pub background: &'a [String],
    /// `--autogroup`, `--cgroup` and `--cgroup-weight` for every workload, as typed.
    pub autogroup: Option<&'a str>,
    pub cgroup: Option<&'a str>,
    pub cgroup_weights: &'a [String],
}

impl Plan {
    pub fn from_flags(f: PlanFlags<'_>) -> Result<Plan, LabError> {
        let input = |msg: String| LabError::Input(msg);
        let mut topologies = Vec::new();
        for name in f.topologies {
            let topology = resolve_topology(name).map_err(|e| input(format!("--topology: {e}")))?;
            topologies.push(PlanTopology { name: name.clone(), topology });
        }
        if f.variants.is_empty() {
            return Err(input("--variant: give at least one variant SPEC to compare with --base".into()));
        }
        let base_spec = spec::full_base(f.base);
        let base = spec::parse_full(&base_spec).map_err(|e| input(format!("--base `{}`: {e}", f.base)))?;
        let mut variants =
            vec![PlanVariant { name: f.base.trim().to_string(), spec: base_spec.clone(), variant: base }];
        for v in f.variants {
            let full = spec::full_variant(v, &base_spec);
            let variant = spec::parse_full(&full).map_err(|e| input(format!("--variant `{v}`: {e}")))?;
            if variants.iter().any(|p| p.name == v.trim()) {
                return Err(input(format!("--variant `{v}`: given twice (or equal to --base)")));
            }
            variants.push(PlanVariant { name: v.trim().to_string(), spec: full, variant });
        }
        if f.workloads.is_empty() {
            return Err(input(
                "no workload: give one after the options (`rtapp FILE.json`) or --workload \"...\"".into(),
            ));
        }
        let mut background = Vec::new();
        for b in f.background {
            match words::split(b) {
                Ok(w) if !w.is_empty() => background.push(w),
                Ok(_) => return Err(input("--background: empty command".into())),
                Err(e) => return Err(input(format!("--background: {e}"))),
            }
        }
        let groups = GroupOptions::from_flags(f.autogroup, f.cgroup, f.cgroup_weights).map_err(input)?;
        let mut workloads = Vec::new();
        for argv in f.workloads {
            if argv.is_empty() {
                return Err(input("--workload: empty workload".into()));
            }
            let argv = with_line_options(argv, f.cpus, &background, &groups).map_err(input)?;
            check_workload(&argv, &topologies).map_err(|e| input(format!("workload `{}`: {e}", words::join(&argv))))?;
            workloads.push(argv);
        }
        check_limits(f.seeds.len(), f.duration_s, f.max_events).map_err(|(flag, e)| input(format!("--{flag}: {e}")))?;
        let plan = Plan {
            origin: "command line".into(),
            topologies,
            variants,
            base: 0,
            workloads,
            seeds: f.seeds,
            duration_ns: (f.duration_s * 1e9).round() as u64,
            max_events: f.max_events,
            vm: Vec::new(),
        };
        if plan.run_count() > MAX_RUNS {
            return Err(input(format!("{} runs is more than the limit of {MAX_RUNS}", plan.run_count())));
        }
        Ok(plan)
    }
}

/// Checks the run limits; the error names the field (`runs`, `duration`, `max_events`).
fn check_limits(seeds: usize, duration_s: f64, max_events: u64) -> Result<(), (&'static str, String)> {
    if seeds == 0 || seeds > MAX_SEEDS {
        return Err(("runs", format!("{seeds} seeds: give 1..={MAX_SEEDS}")));
    }
    if !(duration_s > 0.0 && duration_s <= 1e6) {
        return Err(("duration", format!("{duration_s} is not a positive number of seconds (at most 1e6)")));
    }
    if max_events == 0 {
        return Err(("max_events", "must be at least 1".into()));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The TOML file.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    topologies: Option<Spanned<Vec<Spanned<String>>>>,
    seeds: Option<Spanned<RawSeeds>>,
    seed: Option<Spanned<u64>>,
    duration: Option<Spanned<f64>>,
    max_events: Option<Spanned<u64>>,
    base: Option<Spanned<String>>,
    workloads: Option<Spanned<Vec<Spanned<String>>>>,
    cpus: Option<Spanned<String>>,
    background: Option<Spanned<Vec<Spanned<String>>>>,
    autogroup: Option<Spanned<OnOff>>,
    cgroup: Option<Spanned<String>>,
    cgroup_weight: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    variant: Vec<RawVariant>,
    #[serde(default)]
    vm: Vec<RawVm>,
}

/// A `[[vm]]` table: the keys of `compare --vm`'s flags.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVm {
    name: Option<Spanned<String>>,
    vm: Spanned<String>,
    topology: Option<Spanned<String>>,
    base: Option<Spanned<String>>,
    #[serde(default)]
    variant: Vec<Spanned<String>>,
    runs: Option<Spanned<u32>>,
    warmup: Option<Spanned<u32>>,
    seed: Option<Spanned<u64>>,
    accel: Option<Spanned<String>>,
    timeout: Option<Spanned<u64>>,
    replug: Option<bool>,
    builtin: Option<bool>,
    trace: Option<bool>,
    workload: Spanned<String>,
}

/// `autogroup = "on"`/`"off"` (as the flag) or `true`/`false`.
#[derive(Deserialize)]
#[serde(untagged)]
enum OnOff {
    Bool(bool),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: Option<Spanned<String>>,
    spec: Spanned<String>,
}

/// `seeds = 3` or `seeds = [1, 7, 42]`.
enum RawSeeds {
    Count(u64),
    List(Vec<u64>),
}

impl<'de> Deserialize<'de> for RawSeeds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawSeeds;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of seeds (e.g. 3) or a list of seeds (e.g. [1, 7, 42])")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawSeeds, E> {
                u64::try_from(v).map(RawSeeds::Count).map_err(|_| E::custom(format!("{v} is not a number of seeds")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawSeeds, E> {
                Ok(RawSeeds::Count(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawSeeds, A::Error> {
                let mut out = Vec::new();
                while let Some(s) = seq.next_element::<u64>()? {
                    out.push(s);
                }
                Ok(RawSeeds::List(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Reads and validates a plan file.
pub fn load_plan(path: &Path) -> Result<Plan, LabError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| LabError::Input(format!("{}: cannot read the plan: {e}", path.display())))?;
    parse_plan(&text, &path.display().to_string())
}

/// Parses and validates plan text; `origin` names it in errors.
pub fn parse_plan(text: &str, origin: &str) -> Result<Plan, LabError> {
    let raw: RawPlan = toml::from_str(text).map_err(|e| syntax_error(text, origin, &e))?;
    let at = |offset: usize, field: &str, msg: String| {
        let (line, _) = line_column(text, offset);
        LabError::Input(format!("{origin}:{line}: field `{field}`: {msg}"))
    };

    let mut topologies = Vec::new();
    match &raw.topologies {
        None => topologies.push(PlanTopology { name: "smp:2".into(), topology: Topology::smp(2) }),
        Some(list) => {
            if list.get_ref().is_empty() {
                return Err(at(list.span().start, "topologies", "empty list: name at least one machine".into()));
            }
            for (i, name) in list.get_ref().iter().enumerate() {
                let topology = resolve_topology(name.get_ref())
                    .map_err(|e| at(name.span().start, &format!("topologies[{i}]"), e))?;
                if topologies.iter().any(|t: &PlanTopology| &t.name == name.get_ref()) {
                    return Err(at(name.span().start, &format!("topologies[{i}]"), "listed twice".into()));
                }
                topologies.push(PlanTopology { name: name.get_ref().clone(), topology });
            }
        }
    }

    let vm = parse_vm_tables(&raw.vm, &at)?;
    if raw.variant.is_empty() && raw.workloads.is_none() && !vm.is_empty() {
        // Only real kernels: no model runs.
        return Ok(Plan {
            origin: origin.to_string(),
            topologies,
            variants: Vec::new(),
            base: 0,
            workloads: Vec::new(),
            seeds: Vec::new(),
            duration_ns: 0,
            max_events: DEFAULT_MAX_EVENTS,
            vm,
        });
    }
    if raw.variant.is_empty() {
        return Err(LabError::Input(format!(
            "{origin}: field `variant`: missing: add at least one [[variant]] table with a `spec` (or only [[vm]] tables)"
        )));
    }
    let names: Vec<String> = raw
        .variant
        .iter()
        .map(|v| {
            v.name.as_ref().map_or_else(|| v.spec.get_ref().trim().to_string(), |n| n.get_ref().trim().to_string())
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        let span = raw.variant[i].name.as_ref().map_or(raw.variant[i].spec.span(), |n| n.span());
        if name.is_empty() {
            return Err(at(span.start, &format!("variant[{i}].name"), "empty name".into()));
        }
        if let Some(j) = names[..i].iter().position(|n| n == name) {
            return Err(at(span.start, &format!("variant[{i}].name"), format!("`{name}` is also variant[{j}]'s name")));
        }
    }
    let base = match &raw.base {
        None => 0,
        Some(b) => names.iter().position(|n| n == b.get_ref().trim()).ok_or_else(|| {
            at(
                b.span().start,
                "base",
                format!("no variant is named `{}` (variants: {})", b.get_ref(), names.join(", ")),
            )
        })?,
    };
    let base_raw = &raw.variant[base].spec;
    let base_spec = spec::full_base(base_raw.get_ref());
    let mut variants = Vec::new();
    for (i, v) in raw.variant.iter().enumerate() {
        let full = if i == base { base_spec.clone() } else { spec::full_variant(v.spec.get_ref(), &base_spec) };
        let variant = spec::parse_full(&full).map_err(|e| at(v.spec.span().start, &format!("variant[{i}].spec"), e))?;
        variants.push(PlanVariant { name: names[i].clone(), spec: full, variant });
    }

    let Some(wl) = &raw.workloads else {
        return Err(LabError::Input(format!(
            "{origin}: field `workloads`: missing: list workload command lines, e.g. workloads = [\"rtapp examples/rtapp/mixed.json\"]"
        )));
    };
    if wl.get_ref().is_empty() {
        return Err(at(wl.span().start, "workloads", "empty list: give at least one workload".into()));
    }
    let mut background = Vec::new();
    for (i, cmd) in raw.background.as_ref().map_or(&[][..], |b| b.get_ref()).iter().enumerate() {
        let field = format!("background[{i}]");
        match words::split(cmd.get_ref()) {
            Ok(w) if !w.is_empty() => background.push(w),
            Ok(_) => return Err(at(cmd.span().start, &field, "empty command".into())),
            Err(e) => return Err(at(cmd.span().start, &field, e)),
        }
    }
    if let Some(c) = &raw.cpus {
        runner::WorkloadLine::parse(&["--cpus".to_string(), c.get_ref().clone()])
            .map_err(|e| at(c.span().start, "cpus", e))?;
    }
    let cpus = raw.cpus.as_ref().map(|c| c.get_ref().as_str());
    let mut groups = GroupOptions::default();
    if let Some(a) = &raw.autogroup {
        let text = match a.get_ref() {
            OnOff::Bool(b) => if *b { "on" } else { "off" }.to_string(),
            OnOff::Text(t) => t.clone(),
        };
        groups.take("--autogroup", &text).map_err(|e| at(a.span().start, "autogroup", e))?;
    }
    if let Some(c) = &raw.cgroup {
        groups.take("--cgroup", c.get_ref()).map_err(|e| at(c.span().start, "cgroup", e))?;
    }
    for (i, w) in raw.cgroup_weight.as_ref().map_or(&[][..], |w| w.get_ref()).iter().enumerate() {
        groups
            .take("--cgroup-weight", w.get_ref())
            .map_err(|e| at(w.span().start, &format!("cgroup_weight[{i}]"), e))?;
    }
    let mut workloads = Vec::new();
    for (i, line) in wl.get_ref().iter().enumerate() {
        let field = format!("workloads[{i}]");
        let argv = words::split(line.get_ref()).map_err(|e| at(line.span().start, &field, e))?;
        if argv.is_empty() {
            return Err(at(line.span().start, &field, "empty workload".into()));
        }
        let argv = with_line_options(argv, cpus, &background, &groups).map_err(|e| at(line.span().start, &field, e))?;
        check_workload(&argv, &topologies).map_err(|e| at(line.span().start, &field, e))?;
        if workloads.contains(&argv) {
            return Err(at(line.span().start, &field, "listed twice".into()));
        }
        workloads.push(argv);
    }

    let first = raw.seed.as_ref().map_or(1, |s| *s.get_ref());
    let seeds = match &raw.seeds {
        None => {
            return Err(LabError::Input(format!(
                "{origin}: field `seeds`: missing: give a number of seeds (seeds = 3) or a list (seeds = [1, 7, 42])"
            )));
        }
        Some(s) => match s.get_ref() {
            RawSeeds::Count(n) => {
                if *n == 0 || *n > MAX_SEEDS as u64 {
                    return Err(at(s.span().start, "seeds", format!("{n} seeds: give 1..={MAX_SEEDS}")));
                }
                if let Some(seed) = &raw.seed
                    && first.checked_add(*n - 1).is_none_or(|last| last > i64::MAX as u64)
                {
                    return Err(at(seed.span().start, "seed", "the seeds would exceed 2^63 - 1".into()));
                }
                seed_range(first, *n as usize)
            }
            RawSeeds::List(list) => {
                if let Some(seed) = &raw.seed {
                    return Err(at(seed.span().start, "seed", "only with a count of seeds; `seeds` is a list".into()));
                }
                if list.is_empty() || list.len() > MAX_SEEDS {
                    return Err(at(s.span().start, "seeds", format!("{} seeds: give 1..={MAX_SEEDS}", list.len())));
                }
                let mut sorted = list.clone();
                sorted.sort_unstable();
                if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                    return Err(at(s.span().start, "seeds", format!("seed {} is listed twice", w[0])));
                }
                if let Some(big) = list.iter().find(|&&s| s > i64::MAX as u64) {
                    return Err(at(s.span().start, "seeds", format!("seed {big} exceeds 2^63 - 1")));
                }
                list.clone()
            }
        },
    };
    let duration_s = raw.duration.as_ref().map_or(DEFAULT_DURATION_S, |d| *d.get_ref());
    let max_events = raw.max_events.as_ref().map_or(DEFAULT_MAX_EVENTS, |m| *m.get_ref());
    if let Err((field, msg)) = check_limits(seeds.len(), duration_s, max_events) {
        let span = match field {
            "duration" => raw.duration.as_ref().map(|d| d.span()),
            "max_events" => raw.max_events.as_ref().map(|m| m.span()),
            _ => raw.seeds.as_ref().map(|s| s.span()),
        };
        let field = if field == "runs" { "seeds" } else { field };
        return Err(at(span.map_or(0, |s| s.start), field, msg));
    }
    let plan = Plan {
        origin: origin.to_string(),
        topologies,
        variants,
        base,
        workloads,
        seeds,
        duration_ns: (duration_s * 1e9).round() as u64,
        max_events,
        vm,
    };
    if plan.run_count() > MAX_RUNS {
        return Err(LabError::Input(format!(
            "{origin}: {} runs is more than the limit of {MAX_RUNS}",
            plan.run_count()
        )));
    }
    Ok(plan)
}

/// The `[[vm]]` tables, checked for what needs no guest: a workload line that splits and
/// names a workload, counts and an accelerator in range, names not given twice.
fn parse_vm_tables(raw: &[RawVm], at: &dyn Fn(usize, &str, String) -> LabError) -> Result<Vec<VmPlan>, LabError> {
    let mut out: Vec<VmPlan> = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let field = |k: &str| format!("vm[{i}].{k}");
        let name = t.name.as_ref().map_or_else(|| format!("vm[{i}]"), |n| n.get_ref().trim().to_string());
        if let Some(n) = &t.name
            && (name.is_empty() || out.iter().any(|o| o.name == name))
        {
            return Err(at(n.span().start, &field("name"), format!("`{name}` is empty or names another [[vm]] table")));
        }
        if t.vm.get_ref().trim().is_empty() {
            return Err(at(t.vm.span().start, &field("vm"), "empty: a Debian kernel package or an image path".into()));
        }
        let workload =
            words::split(t.workload.get_ref()).map_err(|e| at(t.workload.span().start, &field("workload"), e))?;
        match workload.first() {
            None => return Err(at(t.workload.span().start, &field("workload"), "empty workload".into())),
            Some(w) if !workload::bench::BENCHMARKS.contains(&w.as_str()) => {
                return Err(at(
                    t.workload.span().start,
                    &field("workload"),
                    format!(
                        "`{w}` is not a benchmark a guest runs (one of {})",
                        workload::bench::BENCHMARKS.join(", ")
                    ),
                ));
            }
            Some(_) => {}
        }
        let runs = t.runs.as_ref().map_or(3, |r| *r.get_ref());
        if let Some(r) = &t.runs
            && (runs == 0 || runs > 10_000)
        {
            return Err(at(r.span().start, &field("runs"), format!("{runs}: give 1..=10000 boots per variant")));
        }
        let accel = t.accel.as_ref().map_or_else(|| "auto".to_string(), |a| a.get_ref().clone());
        if let Some(a) = &t.accel
            && !["auto", "kvm", "tcg"].contains(&accel.as_str())
        {
            return Err(at(a.span().start, &field("accel"), format!("`{accel}`: expected auto, kvm or tcg")));
        }
        let timeout_s = t.timeout.as_ref().map_or(900, |x| *x.get_ref());
        if let Some(x) = &t.timeout
            && timeout_s == 0
        {
            return Err(at(x.span().start, &field("timeout"), "must be at least 1 second".into()));
        }
        let seed = t.seed.as_ref().map_or(1, |s| *s.get_ref());
        if let Some(s) = &t.seed
            && seed.checked_add(u64::from(runs)).is_none_or(|end| end > i64::MAX as u64)
        {
            return Err(at(s.span().start, &field("seed"), "the rounds' seeds would exceed 2^63 - 1".into()));
        }
        if t.variant.is_empty() {
            return Err(at(
                t.vm.span().start,
                &field("variant"),
                "missing: list the guest SPECs to compare with `base`".into(),
            ));
        }
        out.push(VmPlan {
            name,
            vm: t.vm.get_ref().trim().to_string(),
            topology: t.topology.as_ref().map_or_else(|| "smp:2".to_string(), |x| x.get_ref().clone()),
            base: t.base.as_ref().map_or_else(|| "default".to_string(), |x| x.get_ref().clone()),
            variants: t.variant.iter().map(|v| v.get_ref().clone()).collect(),
            runs,
            warmup: t.warmup.as_ref().map_or(1, |w| *w.get_ref()),
            seed,
            accel,
            timeout_s,
            replug: t.replug.unwrap_or(true),
            builtin: t.builtin.unwrap_or(false),
            trace: t.trace.unwrap_or(false),
            workload,
        });
    }
    Ok(out)
}

/// A TOML error as `origin:line:column: message`, naming the key when the message does not.
fn syntax_error(text: &str, origin: &str, error: &toml::de::Error) -> LabError {
    let offset = error.span().map_or(0, |s| s.start);
    let (line, column) = line_column(text, offset);
    let mut message = error.message().trim().to_string();
    if let Some(key) = key_at(text, offset)
        && !message.contains(&format!("`{key}`"))
    {
        message = format!("field `{key}`: {message}");
    }
    LabError::Input(format!("{origin}:{line}:{column}: {message}"))
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// The key of a `key = value` line containing `offset`, if any.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let (key, _) = text[start..end].split_once('=')?;
    let key = key.trim().trim_matches('"');
    (!key.is_empty() && !key.starts_with('#') && !key.starts_with('[')).then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition() {
        assert_eq!(Shard::parse("1/4").unwrap(), Shard { index: 1, count: 4 });
        for bad in ["4/4", "1", "a/2", "0/0", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        let shards: Vec<Shard> = (0..3).map(|i| Shard { index: i, count: 3 }).collect();
        for run in 0..20 {
            assert_eq!(shards.iter().filter(|s| s.contains(run)).count(), 1);
        }
    }

    #[test]
    fn key_and_position() {
        let text = "seeds = 3\nbogus = 1\n";
        assert_eq!(line_column(text, 10), (2, 1));
        assert_eq!(key_at(text, 12).as_deref(), Some("bogus"));
    }
}
