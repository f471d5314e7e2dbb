//! `schedlab fidelity [DIR]`: the model scored against real-kernel measurements.

use std::io::Write as _;
use std::path::PathBuf;

use clap::Args;
use lab::fidelity::{self, Options, truth::GroundTruth};

use crate::lab_cmd::lab_err;

/// The ground truth shipped in the repository (real feature A/B on 2 vCPUs).
const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/ground-truth/qemu-2vcpu");

#[derive(Args, Debug)]
pub struct FidelityArgs {
    /// A ground-truth directory (summary.csv, effects.txt); default: the repository's
    /// data/ground-truth/qemu-2vcpu.
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Seeds per case.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Only these workloads, comma-separated (e.g. pp,hb_pipe).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Only these kernels by release, comma-separated (e.g. 7.3.4).
    #[arg(long, value_delimiter = ',')]
    pub kernels: Option<Vec<String>>,
    /// Print one JSON object instead of the tables.
    #[arg(long)]
    pub json: bool,
}

pub fn fidelity(a: &FidelityArgs) -> anyhow::Result<()> {
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from(SHIPPED));
    let truth = GroundTruth::load(&dir).map_err(lab_err)?;
    let options = Options { runs: a.runs, workloads: a.workloads.clone(), kernels: a.kernels.clone() };
    let f = fidelity::run(truth, options).map_err(lab_err)?;
    let scores = fidelity::score::score(&f);
    let text = if a.json {
        format!("{}\n", serde_json::to_string_pretty(&fidelity::score::render_json(&f, &scores))?)
    } else {
        fidelity::score::render_text(&f, &scores)
    };
    // Written, not printed: a closed pipe (`| head`) is an io::Error main treats as success.
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}
