//! `schedlab fidelity [DIR]`: the model scored against real-kernel measurements.

use std::io::Write as _;
use std::path::PathBuf;

use lab::fidelity::{self, Options, truth::GroundTruth};

use crate::args::FidelityArgs;
use crate::setup::{UserError, lab_err};

/// The ground truth shipped in the repository (real feature A/B on 2 vCPUs).
const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/ground-truth/qemu-2vcpu");

pub fn fidelity(a: &FidelityArgs) -> anyhow::Result<()> {
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from(SHIPPED));
    let truth = GroundTruth::load(&dir).map_err(lab_err)?;
    if let Some(t) = &a.trace {
        std::fs::create_dir_all(t).map_err(|e| UserError(format!("--trace: {}: {e}", t.display())))?;
    }
    let options = Options {
        runs: a.runs,
        workloads: a.workloads.clone(),
        kernels: a.kernels.clone(),
        trace_dir: a.trace.clone(),
    };
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
