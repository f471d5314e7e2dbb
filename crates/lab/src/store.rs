//! The results store: one SQLite database (`DIR/results.db`) with one row per run.
//!
//! Each run is inserted in its own transaction as soon as it finishes, in WAL mode, so an
//! interrupted sweep keeps every completed run; the unique key on the run's inputs
//! (schedlab version, full SPEC, topology, workload argv, seed, duration, event bound) makes a
//! rerun skip what is stored and makes merging shard databases idempotent. A model run's
//! version is `VERSION+model.REVISION` ([`version_of`]): the hash of the model's sources this
//! binary was built from, so the runs of another model are never taken for this one's; a
//! real kernel's run (`vm:` SPEC) keeps the plain version, whatever the model.
//!
//! Tables (`PRAGMA user_version` = [`SCHEMA_VERSION`]):
//! - `runs`: the inputs, the metric, every counter as a column, wakeup-latency percentiles, the
//!   whole [`RunRecord`] as JSON (`record`) and the wall time of the run (`wall_ms`, the only
//!   column that differs between two computations of the same run).
//! - `variants`: the names sweeps gave their variants (`name`, full `spec`, `position`; the base
//!   has position 0), so `compare --from` can default to a plan's base and order.
//!
//! SQLite integers are signed, so seeds, counters and bounds are stored as `i64`; plans refuse
//! seeds above 2^63 − 1.
//!
//! A database left by a killed process has a `results.db-wal` file beside it holding committed
//! runs: copy the whole directory, not only `results.db`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use crate::LabError;
use crate::plan::{Plan, RunKey};
use crate::runner::RunRecord;

pub const SCHEMA_VERSION: i64 = 1;
/// The database file inside a results directory.
pub const DB_FILE: &str = "results.db";
/// This build's version, stored with every run.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The model revision: a hash of the simulator's, workload and machine parsers' and run
/// resolver's sources (`build.rs`).
pub const MODEL_REVISION: &str = env!("SCHEDLAB_MODEL_REVISION");

/// The version a run of this key is stored under by this build: `VERSION+model.REVISION` for
/// a model run, `VERSION` for a real kernel's (`vm:` SPEC), whose result the model does not
/// decide.
pub fn version_of(key: &RunKey) -> String {
    if key.spec.starts_with("vm:") { VERSION.to_string() } else { format!("{VERSION}+model.{MODEL_REVISION}") }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    schedlab_version TEXT NOT NULL,
    variant_name TEXT NOT NULL,
    spec TEXT NOT NULL,
    kernel TEXT NOT NULL,
    patches TEXT NOT NULL,
    topology TEXT NOT NULL,
    workload TEXT NOT NULL,
    seed INTEGER NOT NULL,
    duration_ns INTEGER NOT NULL,
    max_events INTEGER NOT NULL,
    metric_name TEXT NOT NULL,
    metric REAL NOT NULL,
    better TEXT NOT NULL,
    simulated_ns INTEGER NOT NULL,
    events INTEGER NOT NULL,
    nr_switches INTEGER NOT NULL,
    nr_voluntary_switches INTEGER NOT NULL,
    nr_involuntary_switches INTEGER NOT NULL,
    nr_migrations INTEGER NOT NULL,
    nr_wakeups INTEGER NOT NULL,
    nr_wakeups_sync INTEGER NOT NULL,
    nr_wakeups_local INTEGER NOT NULL,
    nr_wakeups_remote INTEGER NOT NULL,
    nr_wakeups_affine INTEGER NOT NULL,
    nr_wakeups_affine_attempts INTEGER NOT NULL,
    nr_wakeups_migrate INTEGER NOT NULL,
    nr_wakeup_preemptions INTEGER NOT NULL,
    nr_tick_preemptions INTEGER NOT NULL,
    nr_ipis INTEGER NOT NULL,
    wakeup_latency_p50_ns INTEGER NOT NULL,
    wakeup_latency_p90_ns INTEGER NOT NULL,
    wakeup_latency_p99_ns INTEGER NOT NULL,
    wakeup_latency_max_ns INTEGER NOT NULL,
    record TEXT NOT NULL,
    wall_ms REAL NOT NULL,
    UNIQUE (schedlab_version, spec, topology, workload, seed, duration_ns, max_events)
);
CREATE TABLE IF NOT EXISTS variants (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    position INTEGER NOT NULL
);
";

/// Every column of `runs` but `id`, in table order (what merge copies).
const COLUMNS: &str = "schedlab_version, variant_name, spec, kernel, patches, topology, workload, seed, \
    duration_ns, max_events, metric_name, metric, better, simulated_ns, events, nr_switches, \
    nr_voluntary_switches, nr_involuntary_switches, nr_migrations, nr_wakeups, nr_wakeups_sync, \
    nr_wakeups_local, nr_wakeups_remote, nr_wakeups_affine, nr_wakeups_affine_attempts, \
    nr_wakeups_migrate, nr_wakeup_preemptions, nr_tick_preemptions, nr_ipis, wakeup_latency_p50_ns, \
    wakeup_latency_p90_ns, wakeup_latency_p99_ns, wakeup_latency_max_ns, record, wall_ms";

/// A run read back from the store.
#[derive(Clone, Debug)]
pub struct StoredRun {
    pub version: String,
    pub variant_name: String,
    pub key: RunKey,
    pub record: RunRecord,
}

impl StoredRun {
    /// Whether this build would have stored the run under its version ([`version_of`]): a
    /// model run of this model revision, or a real kernel's run of this schedlab version.
    pub fn is_current(&self) -> bool {
        self.version == version_of(&self.key)
    }
}

/// An open results database. Inserts from several threads are serialised by a mutex.
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
}

fn db_err(path: &Path, e: impl std::fmt::Display) -> LabError {
    LabError::Internal(format!("{}: {}", path.display(), one_line(&e.to_string())))
}

/// SQLite quotes a damaged schema's SQL, newlines and all, in its messages: one line instead.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `DIR/results.db` for a directory, the path itself for a file.
pub fn db_path(dir_or_file: &Path) -> PathBuf {
    if dir_or_file.is_dir() || dir_or_file.extension().is_none() {
        dir_or_file.join(DB_FILE)
    } else {
        dir_or_file.to_path_buf()
    }
}

impl Store {
    /// Opens (creating if needed) the database of a results directory or file.
    pub fn create(dir_or_file: &Path) -> Result<Store, LabError> {
        let path = db_path(dir_or_file);
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                LabError::Input(format!("{}: cannot create the results directory: {e}", parent.display()))
            })?;
        }
        Store::open_path(path, true)
    }

    /// Opens an existing database; a missing one is bad input.
    pub fn open(dir_or_file: &Path) -> Result<Store, LabError> {
        let path = db_path(dir_or_file);
        if !path.is_file() {
            return Err(LabError::Input(format!("{}: no results database here", path.display())));
        }
        Store::open_path(path, false)
    }

    fn open_path(path: PathBuf, create: bool) -> Result<Store, LabError> {
        let conn = Connection::open(&path).map_err(|e| db_err(&path, e))?;
        let setup = || -> rusqlite::Result<i64> {
            conn.busy_timeout(std::time::Duration::from_secs(30))?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            conn.pragma_query_value(None, "user_version", |r| r.get(0))
        };
        let version = setup().map_err(|e| {
            LabError::Input(format!("{}: not a results database: {}", path.display(), one_line(&e.to_string())))
        })?;
        match version {
            0 => {
                let tables: i64 = conn
                    .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0))
                    .map_err(|e| db_err(&path, e))?;
                if tables > 0 || !create {
                    return Err(LabError::Input(format!("{}: not a schedlab results database", path.display())));
                }
                conn.execute_batch(SCHEMA).map_err(|e| db_err(&path, e))?;
                conn.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(|e| db_err(&path, e))?;
            }
            SCHEMA_VERSION => {}
            v => {
                return Err(LabError::Input(format!(
                    "{}: results schema {v}, this schedlab reads schema {SCHEMA_VERSION}",
                    path.display()
                )));
            }
        }
        Ok(Store { conn: Mutex::new(conn), path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a half-written row (SQLite is
        // transactional), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The keys of the runs stored for this build ([`version_of`]: model runs of this model
    /// revision, real kernels' runs of this version).
    pub fn keys(&self) -> Result<BTreeSet<RunKey>, LabError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT spec, topology, workload, seed, duration_ns, max_events FROM runs \
                 WHERE (schedlab_version = ?1 AND substr(spec, 1, 3) = 'vm:') \
                 OR (schedlab_version = ?2 AND substr(spec, 1, 3) != 'vm:')",
            )
            .map_err(|e| db_err(&self.path, e))?;
        let model = format!("{VERSION}+model.{MODEL_REVISION}");
        let rows = stmt
            .query_map([VERSION, model.as_str()], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })
            .map_err(|e| db_err(&self.path, e))?;
        let mut out = BTreeSet::new();
        for row in rows {
            let (spec, topology, workload, seed, duration_ns, max_events) = row.map_err(|e| db_err(&self.path, e))?;
            let workload = serde_json::from_str(&workload).map_err(|e| db_err(&self.path, e))?;
            out.insert(RunKey {
                spec,
                topology,
                workload,
                seed: seed as u64,
                duration_ns: duration_ns as u64,
                max_events: max_events as u64,
            });
        }
        Ok(out)
    }

    /// Records a plan's variant names (the base at position 0).
    pub fn record_variants(&self, plan: &Plan) -> Result<(), LabError> {
        let conn = self.conn();
        let mut position = 1;
        for (i, v) in plan.variants.iter().enumerate() {
            let pos = if i == plan.base { 0 } else { position };
            if i != plan.base {
                position += 1;
            }
            conn.execute(
                "INSERT INTO variants (name, spec, position) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET spec = excluded.spec, position = excluded.position",
                params![v.name, v.spec, pos],
            )
            .map_err(|e| db_err(&self.path, e))?;
        }
        Ok(())
    }

    /// Records one variant name (`position` 0 for a base), keeping a position already recorded
    /// for that name: the runs of real kernels (`vm:` SPECs) name their variants by their SPEC.
    pub fn record_variant(&self, name: &str, spec: &str, position: i64) -> Result<(), LabError> {
        self.conn()
            .execute(
                "INSERT INTO variants (name, spec, position) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO NOTHING",
                params![name, spec, position],
            )
            .map_err(|e| db_err(&self.path, e))?;
        Ok(())
    }

    /// The stored run of this build's version ([`version_of`]) with this key, if any.
    pub fn get(&self, key: &RunKey) -> Result<Option<StoredRun>, LabError> {
        let version = version_of(key);
        let conn = self.conn();
        let workload = serde_json::to_string(&key.workload).map_err(|e| db_err(&self.path, e))?;
        let row = conn
            .query_row(
                "SELECT variant_name, record FROM runs WHERE schedlab_version = ?1 AND spec = ?2 AND topology = ?3 \
                 AND workload = ?4 AND seed = ?5 AND duration_ns = ?6 AND max_events = ?7",
                params![
                    version,
                    key.spec,
                    key.topology,
                    workload,
                    key.seed as i64,
                    key.duration_ns as i64,
                    key.max_events as i64
                ],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
            )
            .optional()
            .map_err(|e| db_err(&self.path, e))?;
        let Some((variant_name, record)) = row else { return Ok(None) };
        let record: RunRecord = serde_json::from_str(&record).map_err(|e| db_err(&self.path, e))?;
        Ok(Some(StoredRun { version, variant_name, key: key.clone(), record }))
    }

    /// The recorded variant names and full SPECs, base first.
    pub fn variants(&self) -> Result<Vec<(String, String)>, LabError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT name, spec FROM variants ORDER BY position, name")
            .map_err(|e| db_err(&self.path, e))?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| db_err(&self.path, e))?;
        rows.collect::<Result<_, _>>().map_err(|e| db_err(&self.path, e))
    }

    /// Stores one run in its own transaction; `false` if a run with the same key was there.
    pub fn insert(&self, variant_name: &str, key: &RunKey, rec: &RunRecord, wall_ms: f64) -> Result<bool, LabError> {
        let c = &rec.counters;
        let lat = rec.wakeup_latency_ns;
        let workload = serde_json::to_string(&key.workload).map_err(|e| db_err(&self.path, e))?;
        let patches = serde_json::to_string(&rec.patches).map_err(|e| db_err(&self.path, e))?;
        let record = serde_json::to_string(rec).map_err(|e| db_err(&self.path, e))?;
        let better = serde_json::to_value(rec.better).map_err(|e| db_err(&self.path, e))?;
        let conn = self.conn();
        let n = conn
            .execute(
                &format!(
                    "INSERT OR IGNORE INTO runs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, \
                     ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, \
                     ?29, ?30, ?31, ?32, ?33, ?34, ?35)"
                ),
                params![
                    version_of(key),
                    variant_name,
                    key.spec,
                    rec.kernel,
                    patches,
                    key.topology,
                    workload,
                    key.seed as i64,
                    key.duration_ns as i64,
                    key.max_events as i64,
                    rec.metric_name,
                    rec.metric,
                    better.as_str().unwrap_or("lower"),
                    rec.simulated_ns as i64,
                    rec.events as i64,
                    c.nr_switches as i64,
                    c.nr_voluntary_switches as i64,
                    c.nr_involuntary_switches as i64,
                    c.nr_migrations as i64,
                    c.nr_wakeups as i64,
                    c.nr_wakeups_sync as i64,
                    c.nr_wakeups_local as i64,
                    c.nr_wakeups_remote as i64,
                    c.nr_wakeups_affine as i64,
                    c.nr_wakeups_affine_attempts as i64,
                    c.nr_wakeups_migrate as i64,
                    c.nr_wakeup_preemptions as i64,
                    c.nr_tick_preemptions as i64,
                    c.nr_ipis as i64,
                    lat[0] as i64,
                    lat[1] as i64,
                    lat[2] as i64,
                    lat[3] as i64,
                    record,
                    wall_ms,
                ],
            )
            .map_err(|e| db_err(&self.path, e))?;
        Ok(n == 1)
    }

    /// Every stored run, ordered by topology, workload, SPEC and seed.
    pub fn runs(&self) -> Result<Vec<StoredRun>, LabError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT schedlab_version, variant_name, spec, topology, workload, seed, duration_ns, max_events, \
                 record FROM runs ORDER BY topology, workload, duration_ns, max_events, spec, seed, schedlab_version",
            )
            .map_err(|e| db_err(&self.path, e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, i64>(7)?,
                    r.get::<_, String>(8)?,
                ))
            })
            .map_err(|e| db_err(&self.path, e))?;
        let mut out = Vec::new();
        for row in rows {
            let (version, variant_name, spec, topology, workload, seed, duration_ns, max_events, record) =
                row.map_err(|e| db_err(&self.path, e))?;
            let workload: Vec<String> = serde_json::from_str(&workload).map_err(|e| db_err(&self.path, e))?;
            let record: RunRecord = serde_json::from_str(&record).map_err(|e| {
                LabError::Input(format!(
                    "{}: a stored run of schedlab {version} cannot be read by this version ({e}); rerun the sweep",
                    self.path.display()
                ))
            })?;
            let key = RunKey {
                spec,
                topology,
                workload,
                seed: seed as u64,
                duration_ns: duration_ns as u64,
                max_events: max_events as u64,
            };
            out.push(StoredRun { version, variant_name, key, record });
        }
        Ok(out)
    }

    pub fn count(&self) -> Result<u64, LabError> {
        let conn = self.conn();
        conn.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| db_err(&self.path, e))
    }

    /// Copies every run (and variant name) of another results database that this one lacks.
    /// Returns (runs copied, runs skipped as already present).
    pub fn merge_from(&self, other: &Path) -> Result<(u64, u64), LabError> {
        let src = Store::open(other)?;
        drop(src); // Checked schema and recovered any WAL; attach it now.
        let src_path = db_path(other);
        let conn = self.conn();
        conn.execute("ATTACH DATABASE ?1 AS src", [src_path.to_string_lossy()]).map_err(|e| db_err(&src_path, e))?;
        let result = (|| -> rusqlite::Result<(u64, u64)> {
            let tx = conn.unchecked_transaction()?;
            let total: i64 = tx.query_row("SELECT count(*) FROM src.runs", [], |r| r.get(0))?;
            let copied = tx.execute(
                &format!("INSERT OR IGNORE INTO main.runs ({COLUMNS}) SELECT {COLUMNS} FROM src.runs ORDER BY id"),
                [],
            )?;
            tx.execute("INSERT OR IGNORE INTO main.variants (name, spec, position) SELECT name, spec, position FROM src.variants", [])?;
            tx.commit()?;
            Ok((copied as u64, total as u64 - copied as u64))
        })();
        let detach = conn.execute("DETACH DATABASE src", []);
        let counts = result.map_err(|e| db_err(&src_path, e))?;
        detach.map_err(|e| db_err(&src_path, e))?;
        Ok(counts)
    }

    /// The schedlab versions present in the store.
    pub fn versions(&self) -> Result<Vec<String>, LabError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT DISTINCT schedlab_version FROM runs ORDER BY schedlab_version")
            .map_err(|e| db_err(&self.path, e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| db_err(&self.path, e))?;
        rows.collect::<Result<_, _>>().map_err(|e| db_err(&self.path, e))
    }

    /// Whether the store has a run with this key for this version (used by tests and tools).
    pub fn contains(&self, key: &RunKey) -> Result<bool, LabError> {
        Ok(self.get(key)?.is_some())
    }
}
