//! The scheduler metrics of a native run's ftrace capture, computed by the same analysis as
//! `schedlab analyze` ([`schedtrace::Analyzer`]), restricted to the run's tasks (by name: the
//! benchmark's task names) and to its measured interval.

use crate::ftrace::Captured;

/// Analyses the records of `cap` between `start_ns` and `end_ns` (CLOCK_MONOTONIC, the
/// instance's trace clock) for tasks named one of `comms`.
pub fn analyze_capture(
    cap: &Captured,
    comms: &[&str],
    start_ns: u64,
    end_ns: u64,
) -> Result<schedtrace::Analysis, String> {
    let name = |c: &&str| -> String { c.chars().take(15).collect() };
    let filter = schedtrace::Filter {
        comm: comms.first().map(name),
        pid: None,
        also_comms: comms.iter().skip(1).map(name).collect(),
    };
    let mut records = schedtrace::read_ftrace_text(cap.text.as_bytes());
    let mut an = schedtrace::Analyzer::new(filter);
    // The text has µs timestamps: widen the window by the rounding.
    let (lo, hi) = (start_ns.saturating_sub(1_000), end_ns + 1_000);
    for r in records.by_ref() {
        let r = r.map_err(|e| format!("ftrace capture: {e}"))?;
        if r.ts_ns >= lo && r.ts_ns <= hi {
            an.record(&r);
        }
    }
    Ok(an.finish(records.nr_cpus()))
}
