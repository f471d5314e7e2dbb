//! Fuzzing and swarm testing on stable Rust, without a coverage-guided engine.
//!
//! **Fuzzing** ([`fuzz`]): every parser that takes user input is a [`targets::Target`]. Each
//! execution feeds it either a structured input from the target's generator (the grammar of the
//! format with boundary numbers: 0, -1, 2^31, 2^32, 2^63 - 1, 2^64 - 1, NaN, huge strings) or a
//! mutation of a real input (the shipped examples, the fixture trace, a results database
//! written by a real sweep). The property checked is the one users rely on: a parser returns
//! either a value or an error of one line, and never panics, aborts or hangs.
//!
//! **Swarm testing** ([`swarm`]), in the style of TigerBeetle's VOPR: each seed draws a random
//! machine, kernel preset, feature set, sysctls, preemption model and workload mix, runs it
//! with every scheduler invariant checked after every event, runs it again and compares the
//! two reports bit for bit. A failing configuration is shrunk to a small reproducer.
//!
//! Both run a bounded slice in `cargo test` (`tests/ci.rs`) and without bound from the
//! `schedlab-fuzz` binary (see its `--help` and the README).

pub mod mutate;
pub mod rng;
pub mod swarm;
pub mod targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use rng::Rng;
use targets::Target;

/// An execution slower than this counts as a hang.
pub const HANG: Duration = Duration::from_secs(5);

/// One input that broke a property.
#[derive(Clone, Debug)]
pub struct Finding {
    pub target: &'static str,
    pub input: Vec<u8>,
    pub what: String,
}

/// What a fuzzing session did.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub execs: u64,
    pub generated: u64,
    pub mutated: u64,
    pub ok: u64,
    pub errors: u64,
    pub findings: Vec<Finding>,
    pub elapsed: Duration,
}

/// Runs `target` until `budget` has passed or `max_execs` executions are done, from `seed`.
/// Panics are caught and reported as findings, with the input, never propagated.
pub fn fuzz(target: &Target, seed: u64, budget: Duration, max_execs: u64) -> Stats {
    let mut rng = Rng::new(seed);
    let corpus = (target.seeds)();
    let started = Instant::now();
    let mut stats = Stats::default();
    while stats.execs < max_execs && started.elapsed() < budget {
        let input = if corpus.is_empty() || rng.chance(1, 2) {
            stats.generated += 1;
            (target.generate)(&mut rng)
        } else {
            stats.mutated += 1;
            let base = rng.pick(&corpus);
            mutate::mutate(&mut rng, base, &corpus, target.dictionary)
        };
        let t0 = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| (target.exec)(&input)));
        let took = t0.elapsed();
        stats.execs += 1;
        let finding = match outcome {
            Ok(Ok(targets::Verdict::Accepted)) => {
                stats.ok += 1;
                None
            }
            Ok(Ok(targets::Verdict::Refused(message))) => {
                stats.errors += 1;
                (message.contains('\n') || message.trim().is_empty())
                    .then(|| format!("error is not one line: {message:?}"))
            }
            Ok(Err(broken)) => Some(broken),
            Err(payload) => Some(format!("panic: {}", panic_message(&payload))),
        };
        let finding = finding.or_else(|| (took > HANG).then(|| format!("hang: {took:?}")));
        if let Some(what) = finding {
            stats.findings.push(Finding { target: target.name, input, what });
        }
    }
    stats.elapsed = started.elapsed();
    stats
}

/// The text of a caught panic.
pub fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Silences the default panic hook (caught panics are findings, printed by the caller) for the
/// life of the guard.
pub struct QuietPanics(Option<PanicHook>);

type PanicHook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

impl QuietPanics {
    pub fn new() -> Self {
        let old = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        QuietPanics(Some(old))
    }
}

impl Default for QuietPanics {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        if let Some(old) = self.0.take() {
            std::panic::set_hook(old);
        }
    }
}
