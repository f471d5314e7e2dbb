//! Running many runs: in parallel, in index order, and into the results store.
//!
//! Runs go to rayon's current thread pool (install a pool to choose the thread count) and
//! results come back in index order, so nothing downstream depends on the thread count or on
//! which run finished first.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use crate::LabError;
use crate::plan::{Plan, RunKey, RunSlot, Shard};
use crate::runner::{RunRecord, RunRequest, run_one};
use crate::store::Store;

/// What one run produced, and how long it took on the wall clock.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub result: Result<RunRecord, String>,
    pub wall_ms: f64,
}

/// Runs every request on rayon's current pool; `None` for runs not started because `cancel`
/// was set. `on_done(index, outcome)` is called on a worker thread as each run finishes.
pub fn run_all<F>(requests: &[RunRequest], cancel: &AtomicBool, on_done: F) -> Vec<Option<Outcome>>
where
    F: Fn(usize, &Outcome) + Sync,
{
    (0..requests.len())
        .into_par_iter()
        .map(|i| {
            if cancel.load(Ordering::Relaxed) {
                return None;
            }
            let started = Instant::now();
            let result = run_one(&requests[i]);
            let outcome = Outcome { result, wall_ms: started.elapsed().as_secs_f64() * 1e3 };
            on_done(i, &outcome);
            Some(outcome)
        })
        .collect()
}

/// What a sweep did.
#[derive(Clone, Debug, Default)]
pub struct SweepReport {
    /// Runs in the whole plan.
    pub planned: usize,
    /// Runs in this shard.
    pub in_shard: usize,
    /// Runs of this shard already in the store (skipped).
    pub already: usize,
    /// Runs stored by this invocation.
    pub stored: usize,
    /// Runs not started because of an interrupt.
    pub cancelled: usize,
    /// Runs that failed: their inputs and message (nothing is stored for them).
    pub failed: Vec<(RunKey, String)>,
}

/// Progress hooks of a sweep (called from worker threads).
pub trait SweepProgress: Sync {
    /// Before the first run: how many will run now, and how many were already stored.
    fn start(&self, to_run: usize, already: usize);
    /// After each run is stored (or failed).
    fn done(&self, key: &RunKey, outcome: &Outcome);
}

/// Runs the plan's runs of `shard` (all runs without one) that `store` lacks, storing each as it
/// finishes. Failed runs are reported, not stored, so a rerun retries them.
pub fn sweep(
    plan: &Plan,
    store: &Store,
    shard: Option<Shard>,
    cancel: &AtomicBool,
    progress: &dyn SweepProgress,
) -> Result<SweepReport, LabError> {
    for (i, v) in plan.variants.iter().enumerate() {
        if let Some(j) = plan.variants[..i].iter().position(|w| w.spec == v.spec) {
            return Err(LabError::Input(format!(
                "{}: variants `{}` and `{}` are the same SPEC `{}`; a results store keys runs on the SPEC",
                plan.origin, plan.variants[j].name, v.name, v.spec
            )));
        }
    }
    store.record_variants(plan)?;
    let existing = store.keys()?;
    let slots: Vec<RunSlot> = plan.runs().into_iter().filter(|s| shard.is_none_or(|sh| sh.contains(s.index))).collect();
    let in_shard = slots.len();
    let todo: Vec<(RunSlot, RunKey)> =
        slots.into_iter().map(|s| (s, plan.key(&s))).filter(|(_, k)| !existing.contains(k)).collect();
    let already = in_shard - todo.len();
    progress.start(todo.len(), already);
    let requests: Vec<RunRequest> = todo.iter().map(|(s, _)| plan.request(s)).collect();
    let store_errors = std::sync::Mutex::new(Vec::new());
    let outcomes = run_all(&requests, cancel, |i, outcome| {
        let (slot, key) = &todo[i];
        if let Ok(rec) = &outcome.result
            && let Err(e) = store.insert(&plan.variants[slot.variant].name, key, rec, outcome.wall_ms)
        {
            store_errors.lock().unwrap_or_else(|p| p.into_inner()).push(e);
            cancel.store(true, Ordering::Relaxed);
        }
        progress.done(key, outcome);
    });
    if let Some(e) = store_errors.into_inner().unwrap_or_else(|p| p.into_inner()).into_iter().next() {
        return Err(e);
    }
    let mut report = SweepReport { planned: plan.run_count(), in_shard, already, ..SweepReport::default() };
    for ((_, key), outcome) in todo.into_iter().zip(outcomes) {
        match outcome {
            None => report.cancelled += 1,
            Some(Outcome { result: Ok(_), .. }) => report.stored += 1,
            Some(Outcome { result: Err(e), .. }) => report.failed.push((key, e)),
        }
    }
    Ok(report)
}
