//! `schedlab run --trace FILE`: the trace file chosen by extension, streamed while the
//! simulation runs.

use std::path::{Path, PathBuf};

use anyhow::Context;
use schedtrace::{SharedSink, TraceFile, TraceFormat, TraceHeader};
use sim::engine::{InvariantViolation, Sim, SimReport};

use crate::setup::UserError;

/// An open trace and its path.
pub struct TraceOut {
    path: PathBuf,
    file: TraceFile,
}

/// Creates the trace file before the run, so a bad name fails fast (exit 2).
pub fn create(path: &Path, nr_cpus: u32, reproduce: &str) -> anyhow::Result<TraceOut> {
    let format = TraceFormat::from_path(path).map_err(|e| UserError(format!("--trace {e}")))?;
    let header = TraceHeader {
        nr_cpus,
        comments: vec![format!("schedlab {}", env!("CARGO_PKG_VERSION")), format!("reproduce: {reproduce}")],
    };
    let file = TraceFile::create(path, format, &header)
        .map_err(|e| UserError(format!("--trace {}: cannot create: {e}", path.display())))?;
    Ok(TraceOut { path: path.to_path_buf(), file })
}

/// Runs the simulation, streaming events to the trace when there is one.
pub fn run(sim: Sim, trace: Option<TraceOut>) -> anyhow::Result<Result<SimReport, InvariantViolation>> {
    let Some(TraceOut { path, file }) = trace else { return Ok(sim.run()) };
    let (handle, sink) = SharedSink::new(file);
    let (result, sink) = sim.run_traced(sink);
    drop(sink);
    let file = handle.into_inner().context("the simulator kept the trace sink")?;
    file.finish().with_context(|| format!("writing trace {}", path.display()))?;
    Ok(result)
}
