//! Sweeps into the results store: interrupted sweeps keep their runs, reruns do only what is
//! missing, and shards merged equal one unsharded sweep.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use lab::plan::{Plan, RunKey, Shard, parse_plan};
use lab::store::Store;
use lab::sweep::{Outcome, SweepProgress, sweep};

fn plan() -> Plan {
    let ex = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rtapp");
    let text = format!(
        "seeds = 3\nduration = 0.2\nworkloads = [\"rtapp {}\", \"rtapp {}\"]\n\
         [[variant]]\nspec = \"v7.3\"\n[[variant]]\nname = \"nb\"\nspec = \"+next-buddy-eevdf\"\n",
        ex.join("mixed.json").display(),
        ex.join("periodic.json").display()
    );
    parse_plan(&text, "test plan").unwrap()
}

/// Counts runs and can set the cancel flag after `stop_after` of them.
struct Counter<'a> {
    done: Mutex<usize>,
    stop_after: Option<usize>,
    cancel: &'a AtomicBool,
}

impl SweepProgress for Counter<'_> {
    fn start(&self, _to_run: usize, _already: usize) {}
    fn done(&self, _key: &RunKey, outcome: &Outcome) {
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        let mut n = self.done.lock().unwrap();
        *n += 1;
        if self.stop_after.is_some_and(|s| *n >= s) {
            self.cancel.store(true, Ordering::SeqCst);
        }
    }
}

fn run(plan: &Plan, dir: &Path, shard: Option<Shard>, stop_after: Option<usize>) -> lab::sweep::SweepReport {
    let store = Store::create(dir).unwrap();
    let cancel = AtomicBool::new(false);
    let counter = Counter { done: Mutex::new(0), stop_after, cancel: &cancel };
    // One thread, so "stop after k" stops after exactly k runs.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    pool.install(|| sweep(plan, &store, shard, &cancel, &counter)).unwrap()
}

/// Every stored run's inputs and outputs, without the row id and the wall time.
fn rows(dir: &Path) -> Vec<String> {
    let store = Store::open(dir).unwrap();
    let mut out: Vec<String> = store
        .runs()
        .unwrap()
        .into_iter()
        .map(|r| format!("{} {:?} {}", r.variant_name, r.key, serde_json::to_string(&r.record).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn interrupted_sweep_keeps_runs_and_rerun_completes() {
    let plan = plan();
    let tmp = tempfile::tempdir().unwrap();
    let report = run(&plan, tmp.path(), None, Some(5));
    assert_eq!((report.planned, report.stored, report.cancelled), (12, 5, 7));
    assert_eq!(rows(tmp.path()).len(), 5);
    let report = run(&plan, tmp.path(), None, None);
    assert_eq!((report.already, report.stored, report.cancelled), (5, 7, 0));
    let report = run(&plan, tmp.path(), None, None);
    assert_eq!((report.already, report.stored), (12, 0));
    assert_eq!(Store::open(tmp.path()).unwrap().variants().unwrap()[1].0, "nb");
}

#[test]
fn shards_merged_equal_one_sweep() {
    let plan = plan();
    let whole = tempfile::tempdir().unwrap();
    assert_eq!(run(&plan, whole.path(), None, None).stored, 12);
    let shards: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    for (i, dir) in shards.iter().enumerate() {
        let report = run(&plan, dir.path(), Some(Shard { index: i as u32, count: 3 }), None);
        assert_eq!((report.in_shard, report.stored), (4, 4));
    }
    let merged = tempfile::tempdir().unwrap();
    let store = Store::create(merged.path()).unwrap();
    for dir in &shards {
        assert_eq!(store.merge_from(dir.path()).unwrap(), (4, 0));
    }
    // Merging again copies nothing.
    assert_eq!(store.merge_from(shards[0].path()).unwrap(), (0, 4));
    assert_eq!(rows(merged.path()), rows(whole.path()));
    assert_eq!(store.variants().unwrap(), Store::open(whole.path()).unwrap().variants().unwrap());
}

/// The store keys model runs by the model revision (`lab::store::version_of`): runs stored by
/// a binary of another model (here: the same rows relabelled as the plain version, as every
/// run was stored before the revision was part of the key) are not taken for this model's, so
/// a sweep computes them again and `compare --from` uses only the fresh ones; a real kernel's
/// run (`vm:` SPEC) keeps the plain version and stays current whatever the model.
#[test]
fn runs_of_another_model_are_not_reused() {
    let plan = plan();
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(run(&plan, tmp.path(), None, Some(4)).stored, 4);
    {
        let conn = rusqlite::Connection::open(tmp.path().join("results.db")).unwrap();
        let n = conn.execute("UPDATE runs SET schedlab_version = ?1", [lab::store::VERSION]).unwrap();
        assert_eq!(n, 4);
    }
    let store = Store::open(tmp.path()).unwrap();
    assert!(store.keys().unwrap().is_empty(), "an older model's runs are not this model's");
    assert!(store.runs().unwrap().iter().all(|r| !r.is_current()));
    assert!(lab::compare::select_stored(&store, None, &[]).is_err(), "no run of this model to compare");
    let vm = RunKey {
        spec: "vm:linux-image-7.3.4 default".into(),
        topology: "smp:2".into(),
        workload: vec![],
        seed: 1,
        duration_ns: 0,
        max_events: 0,
    };
    assert_eq!(lab::store::version_of(&vm), lab::store::VERSION);
    let model = &store.runs().unwrap()[0].key;
    assert_eq!(lab::store::version_of(model), format!("{}+model.{}", lab::store::VERSION, lab::store::MODEL_REVISION));
    drop(store);
    let report = run(&plan, tmp.path(), None, None);
    assert_eq!((report.already, report.stored), (0, 12), "every run is computed again for this model");
    let store = Store::open(tmp.path()).unwrap();
    assert_eq!(store.count().unwrap(), 16);
    assert_eq!(store.keys().unwrap().len(), 12);
    let stored = lab::compare::select_stored(&store, None, &[]).unwrap();
    assert!(stored.note.as_deref().is_some_and(|n| n.contains("using the runs of this build")), "{:?}", stored.note);
    assert_eq!(stored.samples.len(), 12, "the fresh runs only");
}
