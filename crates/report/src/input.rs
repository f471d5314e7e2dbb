//! What a report is made from: a results database (`results.db`, or a directory holding one) or
//! `schedlab run --json` files, turned into the lab's comparison samples.

use std::path::{Path, PathBuf};

use lab::compare::{self, CompareOptions, Comparison, Sample, Selection};
use lab::plan::RunKey;
use lab::runner::{Better, CounterRecord, RunRecord};
use lab::store::{self, Store};
use serde_json::Value;

/// The significance thresholds of `schedlab compare`'s defaults (see `lab::compare`).
pub const OPTIONS: CompareOptions = CompareOptions { alpha: 0.05, min_effect_pct: 1.0 };

/// Where the runs came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A results database.
    Database(PathBuf),
    /// `run --json` files, in the order given.
    RunJson(Vec<PathBuf>),
}

/// The runs of a report and their comparison.
#[derive(Clone, Debug)]
pub struct Input {
    pub kind: SourceKind,
    /// Every run, labelled with its variant.
    pub samples: Vec<Sample>,
    /// Base first, then the other variants, as (name, SPEC).
    pub selection: (String, String, Vec<(String, String)>),
    pub comparison: Comparison,
    /// Command lines that reproduce the runs.
    pub reproduce: Vec<String>,
    /// Notes for the reader (runs left out, and why).
    pub notes: Vec<String>,
}

impl Input {
    pub fn selection(&self) -> Selection {
        Selection { base: (self.selection.0.clone(), self.selection.1.clone()), variants: self.selection.2.clone() }
    }

    /// The runs of one variant in one group, ordered by seed.
    pub fn runs_of<'a>(&'a self, group: &lab::compare::Group, variant: &str) -> Vec<&'a Sample> {
        let mut v: Vec<&Sample> = self
            .samples
            .iter()
            .filter(|s| {
                s.variant == variant
                    && s.key.topology == group.topology
                    && s.key.workload == group.workload
                    && s.key.duration_ns == group.duration_ns
                    && s.key.max_events == group.max_events
            })
            .collect();
        v.sort_by_key(|s| s.key.seed);
        v
    }
}

/// Whether `path` names a results database (a `.db` file, or a directory with `results.db`).
pub fn is_database(path: &Path) -> bool {
    if path.is_dir() {
        return true;
    }
    path.extension().is_some_and(|e| e == "db" || e == "sqlite")
}

/// Reads a results database. When it holds runs of other schedlab versions or model
/// revisions, only this build's (or else the newest version's) runs are used, and a note says
/// so.
pub fn load_db(path: &Path) -> Result<Input, lab::LabError> {
    let st = Store::open(path)?;
    let mut runs = st.runs()?;
    let mut notes = Vec::new();
    if runs.iter().any(|r| !r.is_current()) {
        let versions = st.versions()?;
        let before = runs.len();
        let shown = if runs.iter().any(|r| r.is_current()) {
            runs.retain(|r| r.is_current());
            format!("this build's (schedlab {}, model {})", store::VERSION, store::MODEL_REVISION)
        } else {
            let keep = versions.iter().max().cloned().unwrap_or_default();
            runs.retain(|r| r.version == keep);
            keep
        };
        notes.push(format!(
            "the database holds runs of schedlab {}; only the {} runs of {shown} are shown ({} left out)",
            versions.join(", "),
            runs.len(),
            before - runs.len()
        ));
    }
    if runs.is_empty() {
        return Err(lab::LabError::Input(format!("{}: the results database has no runs", st.path().display())));
    }
    let mut variants = st.variants()?;
    for r in &runs {
        if !variants.iter().any(|(name, _)| *name == r.variant_name) {
            variants.push((r.variant_name.clone(), r.key.spec.clone()));
        }
    }
    variants.retain(|(name, _)| runs.iter().any(|r| r.variant_name == *name));
    let samples: Vec<Sample> = runs.into_iter().map(Sample::from).collect();
    let Some((base, rest)) = variants.split_first() else {
        return Err(lab::LabError::Input("the results hold no runs with a variant".into()));
    };
    let sel = Selection { base: base.clone(), variants: rest.to_vec() };
    let comparison = compare::build(&samples, &sel, OPTIONS)?;
    let reproduce = comparison.reproduce();
    Ok(Input {
        kind: SourceKind::Database(st.path().to_path_buf()),
        samples,
        selection: (sel.base.0, sel.base.1, sel.variants),
        comparison,
        reproduce,
        notes,
    })
}

/// One `run --json` file, as far as a report needs it.
#[derive(Clone, Debug)]
pub struct RunJson {
    pub path: PathBuf,
    /// The variant's label: the kernel preset, then patches, features and other settings
    /// (`base_slice_ns=…`, `preempt=…`, `hz=…`, `cpus=…`, `cost.KEY=…`) from its command.
    pub label: String,
    pub key: RunKey,
    pub record: RunRecord,
    /// The `command` field: the `schedlab run` line that reproduces it.
    pub command: Option<String>,
}

fn field<'a>(v: &'a Value, path: &Path, name: &str) -> Result<&'a Value, String> {
    let mut cur = v;
    for part in name.split('.') {
        cur = cur.get(part).ok_or_else(|| format!("{}: missing field `{name}`", path.display()))?;
    }
    Ok(cur)
}

fn u64_field(v: &Value, path: &Path, name: &str) -> Result<u64, String> {
    field(v, path, name)?
        .as_u64()
        .ok_or_else(|| format!("{}: field `{name}` is not a non-negative integer", path.display()))
}

fn str_field(v: &Value, path: &Path, name: &str) -> Result<String, String> {
    field(v, path, name)?
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{}: field `{name}` is not a string", path.display()))
}

fn str_list(v: &Value, path: &Path, name: &str) -> Result<Vec<String>, String> {
    let arr =
        field(v, path, name)?.as_array().ok_or_else(|| format!("{}: field `{name}` is not a list", path.display()))?;
    arr.iter()
        .map(|x| {
            x.as_str().map(str::to_string).ok_or_else(|| format!("{}: `{name}` holds a non-string", path.display()))
        })
        .collect()
}

/// Settings a `schedlab run` command line adds to its kernel preset, as SPEC-like tokens.
fn command_tokens(command: &str) -> Vec<String> {
    // Split as a shell does: `--background 'stress-ng --cpu 2'` is one value.
    let words: Vec<String> =
        lab::words::split(command).unwrap_or_else(|_| command.split_whitespace().map(String::from).collect());
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < words.len() {
        let (flag, value) = (words[i].as_str(), words[i + 1].as_str());
        let tok = match flag {
            "--sysctl" => Some(value.to_string()),
            "--preempt" => Some(format!("preempt={value}")),
            "--hz" => Some(format!("hz={value}")),
            "--cpus" => Some(format!("cpus={value}")),
            "--cost" => Some(format!("cost.{value}")),
            "--background" => Some(format!("background={}", lab::words::quote(value))),
            _ => None,
        };
        if let Some(t) = tok {
            out.push(t);
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}

/// Parses one `run --json` document; errors name the file and the field.
pub fn parse_run_json(path: &Path, text: &str) -> Result<RunJson, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        format!("{}: line {}, column {}: not a `schedlab run --json` result: {e}", path.display(), e.line(), e.column())
    })?;
    let kernel = str_field(&v, path, "kernel")?;
    let patches = str_list(&v, path, "patches")?;
    let features = str_list(&v, path, "features")?;
    let command = v.get("command").and_then(Value::as_str).map(str::to_string);
    let mut label = vec![kernel.clone()];
    label.extend(patches.iter().cloned());
    label.extend(features.iter().cloned());
    if let Some(c) = &command {
        label.extend(command_tokens(c));
    }
    let label = label.join(" ");
    let metric_name = str_field(&v, path, "metric.name")?;
    let metric = field(&v, path, "metric.value")?
        .as_f64()
        .ok_or_else(|| format!("{}: field `metric.value` is not a number", path.display()))?;
    let better = match str_field(&v, path, "metric.better")?.as_str() {
        "lower" => Better::Lower,
        "higher" => Better::Higher,
        other => return Err(format!("{}: field `metric.better` is `{other}`, not lower or higher", path.display())),
    };
    let c = |name: &str| u64_field(&v, path, &format!("counters.{name}"));
    let counters = CounterRecord {
        nr_switches: c("nr_switches")?,
        nr_voluntary_switches: c("nr_voluntary_switches")?,
        nr_involuntary_switches: c("nr_involuntary_switches")?,
        nr_migrations: c("nr_migrations")?,
        nr_wakeups: c("nr_wakeups")?,
        nr_wakeups_sync: c("nr_wakeups_sync")?,
        nr_wakeups_local: c("nr_wakeups_local")?,
        nr_wakeups_remote: c("nr_wakeups_remote")?,
        nr_wakeups_affine: c("nr_wakeups_affine")?,
        nr_wakeups_affine_attempts: c("nr_wakeups_affine_attempts")?,
        nr_wakeups_migrate: c("nr_wakeups_migrate")?,
        nr_wakeup_preemptions: c("nr_wakeup_preemptions")?,
        nr_tick_preemptions: c("nr_tick_preemptions")?,
        nr_ipis: c("nr_ipis")?,
    };
    let lat = |q: &str| u64_field(&v, path, &format!("wakeup_latency_ns.{q}"));
    let workload = str_list(&v, path, "workload.argv")?;
    let topology = str_field(&v, path, "topology")?;
    let seed = u64_field(&v, path, "seed")?;
    let record = RunRecord {
        variant: label.clone(),
        kernel,
        patches,
        topology: topology.clone(),
        workload: workload.join(" "),
        seed,
        metric_name,
        metric,
        better,
        simulated_ns: u64_field(&v, path, "sim.simulated_ns")?,
        events: u64_field(&v, path, "sim.events")?,
        counters,
        wakeup_latency_ns: [lat("p50")?, lat("p90")?, lat("p99")?, lat("max")?],
        background: background_metrics(&v, path)?,
        vm: None,
        schedstat: None,
    };
    // Run files carry no plan limits: every file falls in the group of its topology and
    // workload.
    let key = RunKey { spec: label.clone(), topology, workload, seed, duration_ns: 0, max_events: 0 };
    Ok(RunJson { path: path.to_path_buf(), label, key, record, command })
}

/// The `background` array of a `run --json` file (absent: none).
fn background_metrics(v: &serde_json::Value, path: &Path) -> Result<Vec<lab::runner::PartMetric>, String> {
    let Some(list) = v.get("background").and_then(|b| b.as_array()) else { return Ok(Vec::new()) };
    let bad =
        |i: usize, f: &str| format!("{}: field `background[{i}].{f}` is missing or of the wrong type", path.display());
    let mut out = Vec::new();
    for (i, b) in list.iter().enumerate() {
        let metric = b.get("metric").ok_or_else(|| bad(i, "metric"))?;
        out.push(lab::runner::PartMetric {
            workload: b.get("workload").and_then(|w| w.as_str()).ok_or_else(|| bad(i, "workload"))?.to_string(),
            metric_name: metric.get("name").and_then(|w| w.as_str()).ok_or_else(|| bad(i, "metric.name"))?.to_string(),
            metric: metric.get("value").and_then(|w| w.as_f64()).unwrap_or(f64::NAN),
            better: match metric.get("better").and_then(|w| w.as_str()) {
                Some("lower") => Better::Lower,
                Some("higher") => Better::Higher,
                _ => return Err(bad(i, "metric.better")),
            },
        });
    }
    Ok(out)
}

/// Reads `run --json` files. The base is the variant of the first file; the other variants
/// follow in the order they first appear.
pub fn load_run_json(paths: &[PathBuf]) -> Result<(Input, Vec<RunJson>), lab::LabError> {
    let input_err = lab::LabError::Input;
    let mut runs = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(p).map_err(|e| input_err(format!("{}: {e}", p.display())))?;
        runs.push(parse_run_json(p, &text).map_err(input_err)?);
    }
    let mut names: Vec<String> = Vec::new();
    for r in &runs {
        if !names.contains(&r.label) {
            names.push(r.label.clone());
        }
    }
    let Some((base, rest)) = names.split_first() else {
        return Err(input_err("no run files given".into()));
    };
    let sel = Selection {
        base: (base.clone(), base.clone()),
        variants: rest.iter().map(|n| (n.clone(), n.clone())).collect(),
    };
    let samples: Vec<Sample> = runs
        .iter()
        .map(|r| Sample { variant: r.label.clone(), key: r.key.clone(), record: r.record.clone() })
        .collect();
    for (i, a) in runs.iter().enumerate() {
        if let Some(b) = runs[..i].iter().find(|b| b.key == a.key) {
            return Err(input_err(format!(
                "{} and {}: the same run (variant `{}`, seed {}, same workload and topology) given twice",
                b.path.display(),
                a.path.display(),
                a.label,
                a.key.seed
            )));
        }
    }
    let comparison = compare::build(&samples, &sel, OPTIONS)?;
    let reproduce = runs.iter().filter_map(|r| r.command.clone()).collect();
    let input = Input {
        kind: SourceKind::RunJson(paths.to_vec()),
        samples,
        selection: (sel.base.0, sel.base.1, sel.variants),
        comparison,
        reproduce,
        notes: Vec::new(),
    };
    Ok((input, runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_settings_become_label_tokens() {
        let t = command_tokens(
            "schedlab run --seed 1 --topology smp:2 --kernel v7.3 --sysctl base_slice_ns=3000000 --preempt full --cpus 0 pipe",
        );
        assert_eq!(t, ["base_slice_ns=3000000", "preempt=full", "cpus=0"]);
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let p = Path::new("x.json");
        let e = parse_run_json(p, "{\"kernel\": \"v7.3\", \"patches\": [], \"features\": []}").unwrap_err();
        assert!(e.contains("x.json") && e.contains("metric.name"), "{e}");
        let e = parse_run_json(p, "{").unwrap_err();
        assert!(e.contains("x.json: line 1"), "{e}");
    }
}
