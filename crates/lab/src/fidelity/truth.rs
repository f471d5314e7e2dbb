//! Real-kernel measurements in the ground-truth directory format: `summary.csv` (one row per
//! kernel × preempt model × vCPU count × variant × workload × mode, each metric's median, min
//! and max over the boots) and `effects.txt` (the real effects the directory's README selects,
//! one line per variant, workload and mode, with the metrics that moved).
//!
//! The files are read as facts: every malformed cell is an error naming the file, line and
//! column, and an effect line must name a (default, variant) pair that `summary.csv` has.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::LabError;

/// Untraced (`n`) or traced (`t`, ftrace on: slower switches and wakeups).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    Untraced,
    Traced,
}

impl Mode {
    pub fn letter(self) -> &'static str {
        match self {
            Mode::Untraced => "n",
            Mode::Traced => "t",
        }
    }
}

/// The machine and kernel a measurement was taken on: one cost profile is fitted per guest.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Guest {
    /// The kernel's release, e.g. `6.12.117`.
    pub kernel: String,
    /// `default` (the kernel's built-in model) or a model name.
    pub preempt: String,
    pub vcpus: u32,
    pub mode: Mode,
}

impl fmt::Display for Guest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} vCPU", self.kernel, self.vcpus)?;
        if self.preempt != "default" {
            write!(f, " preempt={}", self.preempt)?;
        }
        if self.mode == Mode::Traced {
            f.write_str(" traced")?;
        }
        Ok(())
    }
}

/// One measured case: a guest, a variant (`default` or a feature token) and a workload.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CaseKey {
    pub guest: Guest,
    pub variant: String,
    pub workload: String,
}

/// A metric over the boots of one case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// One row of `summary.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub key: CaseKey,
    /// Boots measured.
    pub n: u32,
    /// Metric name (without `_median`) → its statistics; empty cells are absent.
    pub metrics: BTreeMap<String, Stat>,
}

/// One metric of one line of `effects.txt`.
#[derive(Clone, Debug, PartialEq)]
pub struct Effect {
    /// The variant's case; the default case is the same key with variant `default`.
    pub key: CaseKey,
    pub metric: String,
    /// 1-based line of `effects.txt`.
    pub line: usize,
}

/// A ground-truth directory, read.
#[derive(Clone, Debug)]
pub struct GroundTruth {
    pub dir: PathBuf,
    pub rows: Vec<Row>,
    pub effects: Vec<Effect>,
    /// Lines of `effects.txt`.
    pub effect_lines: usize,
}

/// The short labels of `effects.txt` and the metrics they stand for.
pub const EFFECT_LABELS: &[(&str, &str)] = &[
    ("sw/op", "switches_per_op"),
    ("invol", "invol_share"),
    ("migr/op", "migrations_per_op"),
    ("wk local", "wakeup_local_share"),
    ("wk affine", "wakeup_affine_share"),
    ("T wk preempt", "t_wakeup_preempt_share"),
    ("T wk->idle", "t_wakee_onto_idle_share"),
    ("T R-switch", "t_preempted_switch_share"),
];

impl GroundTruth {
    /// Reads `DIR/summary.csv` and `DIR/effects.txt`.
    pub fn load(dir: &Path) -> Result<GroundTruth, LabError> {
        let summary = dir.join("summary.csv");
        let text =
            std::fs::read_to_string(&summary).map_err(|e| LabError::Input(format!("{}: {e}", summary.display())))?;
        let rows = parse_summary(&text, &summary.display().to_string())?;
        let effects_path = dir.join("effects.txt");
        let text = std::fs::read_to_string(&effects_path)
            .map_err(|e| LabError::Input(format!("{}: {e}", effects_path.display())))?;
        let (effects, effect_lines) = parse_effects(&text, &effects_path.display().to_string(), &rows)?;
        Ok(GroundTruth { dir: dir.to_path_buf(), rows, effects, effect_lines })
    }

    /// The row of one case.
    pub fn row(&self, key: &CaseKey) -> Option<&Row> {
        self.rows.iter().find(|r| &r.key == key)
    }
}

/// Parses `summary.csv`. `origin` names the file in messages.
pub fn parse_summary(text: &str, origin: &str) -> Result<Vec<Row>, LabError> {
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else {
        return Err(LabError::Input(format!("{origin}:1: empty file; expected a CSV header")));
    };
    let columns: Vec<&str> = header.split(',').collect();
    let col = |name: &str| -> Result<usize, LabError> {
        columns
            .iter()
            .position(|c| *c == name)
            .ok_or_else(|| LabError::Input(format!("{origin}:1: header has no column `{name}`")))
    };
    let (c_kernel, c_preempt, c_vcpus, c_variant, c_workload, c_mode, c_n) =
        (col("kernel")?, col("preempt")?, col("vcpus")?, col("variant")?, col("workload")?, col("mode")?, col("n")?);
    // Metric columns come in `_median`, `_min`, `_max` triples.
    let mut metric_cols = Vec::new();
    for (i, c) in columns.iter().enumerate() {
        if let Some(name) = c.strip_suffix("_median") {
            let lo = col(&format!("{name}_min"))?;
            let hi = col(&format!("{name}_max"))?;
            metric_cols.push((name.to_string(), i, lo, hi));
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    for (i, line) in lines {
        let at = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').collect();
        if cells.len() != columns.len() {
            return Err(LabError::Input(format!(
                "{origin}:{at}: {} cells, the header has {}",
                cells.len(),
                columns.len()
            )));
        }
        let mode = match cells[c_mode] {
            "n" => Mode::Untraced,
            "t" => Mode::Traced,
            other => return Err(LabError::Input(format!("{origin}:{at}: mode: `{other}` is neither `n` nor `t`"))),
        };
        let vcpus =
            cells[c_vcpus].parse::<u32>().ok().filter(|v| (1..=4096).contains(v)).ok_or_else(|| {
                LabError::Input(format!("{origin}:{at}: vcpus: `{}` is not a CPU count", cells[c_vcpus]))
            })?;
        let n = cells[c_n]
            .parse::<u32>()
            .map_err(|_| LabError::Input(format!("{origin}:{at}: n: `{}` is not a count", cells[c_n])))?;
        let mut metrics = BTreeMap::new();
        for (name, m, lo, hi) in &metric_cols {
            if cells[*m].is_empty() {
                continue;
            }
            let num = |c: usize| -> Result<f64, LabError> {
                cells[c].parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| {
                    LabError::Input(format!("{origin}:{at}: {}: `{}` is not a number", columns[c], cells[c]))
                })
            };
            let stat = Stat { median: num(*m)?, min: num(*lo)?, max: num(*hi)? };
            if !(stat.min <= stat.median && stat.median <= stat.max) {
                return Err(LabError::Input(format!("{origin}:{at}: {name}: the median is not inside min-max")));
            }
            metrics.insert(name.clone(), stat);
        }
        let key = CaseKey {
            guest: Guest { kernel: cells[c_kernel].to_string(), preempt: cells[c_preempt].to_string(), vcpus, mode },
            variant: cells[c_variant].to_string(),
            workload: cells[c_workload].to_string(),
        };
        if rows.iter().any(|r| r.key == key) {
            return Err(LabError::Input(format!("{origin}:{at}: a second row for the same case")));
        }
        rows.push(Row { key, n, metrics });
    }
    Ok(rows)
}

/// Parses `effects.txt`: `VARIANT on KERNEL, N vCPU, WORKLOAD[ [traced]]: LABEL A -> B; …`.
/// Each line must match exactly one (variant, default) pair of `rows`.
pub fn parse_effects(text: &str, origin: &str, rows: &[Row]) -> Result<(Vec<Effect>, usize), LabError> {
    let mut effects = Vec::new();
    let mut nr_lines = 0;
    for (i, line) in text.lines().enumerate() {
        let at = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        nr_lines += 1;
        let bad = |what: &str| LabError::Input(format!("{origin}:{at}: {what}"));
        let (head, body) = line.split_once(": ").ok_or_else(|| bad("expected `CASE: METRICS`"))?;
        let (variant, rest) = head.split_once(" on ").ok_or_else(|| bad("expected `VARIANT on KERNEL, ...`"))?;
        let parts: Vec<&str> = rest.split(", ").collect();
        let [kernel, vcpus, workload] = parts[..] else {
            return Err(bad("expected `KERNEL, N vCPU, WORKLOAD`"));
        };
        let vcpus: u32 = vcpus
            .strip_suffix(" vCPU")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad(&format!("`{vcpus}` is not `N vCPU`")))?;
        let (workload, mode) = match workload.strip_suffix(" [traced]") {
            Some(w) => (w, Mode::Traced),
            None => (workload, Mode::Untraced),
        };
        let candidates: Vec<&Row> = rows
            .iter()
            .filter(|r| {
                r.key.variant == variant
                    && r.key.workload == workload
                    && r.key.guest.kernel == kernel
                    && r.key.guest.vcpus == vcpus
                    && r.key.guest.mode == mode
            })
            .collect();
        let row = match candidates[..] {
            [one] => one,
            [] => return Err(bad("no summary.csv row for this case")),
            _ => return Err(bad("several preempt models have this case; effects.txt cannot tell which")),
        };
        let default_key = CaseKey { variant: "default".into(), ..row.key.clone() };
        if !rows.iter().any(|r| r.key == default_key) {
            return Err(bad("summary.csv has no default row for this case"));
        }
        for part in body.split("; ") {
            let (label, metric) = EFFECT_LABELS
                .iter()
                .find(|(label, _)| part.strip_prefix(label).is_some_and(|r| r.starts_with(' ')))
                .ok_or_else(|| bad(&format!("unknown metric in `{part}`")))?;
            let values = &part[label.len()..];
            if !values.contains(" -> ") {
                return Err(bad(&format!("`{part}`: expected `A -> B`")));
            }
            if !row.metrics.contains_key(*metric) {
                return Err(bad(&format!("summary.csv has no {metric} for this case")));
            }
            effects.push(Effect { key: row.key.clone(), metric: (*metric).to_string(), line: at });
        }
    }
    Ok((effects, nr_lines))
}
