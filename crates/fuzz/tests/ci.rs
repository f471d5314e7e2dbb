//! The bounded CI slice of fuzzing and swarm testing: every parser target for a few seconds,
//! then random simulations for a few more. Long sessions: `schedlab-fuzz` (see the README).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::time::{Duration, Instant};

/// Seconds per fuzz target: eight targets make the slice's 32 s.
const FUZZ_SECONDS: f64 = 4.0;

fn fuzz_target(name: &str) {
    let target = fuzz::targets::by_name(name).expect("a target");
    let st = {
        let _quiet = fuzz::QuietPanics::new();
        fuzz::fuzz(&target, 0x5eed ^ name.len() as u64, Duration::from_secs_f64(FUZZ_SECONDS), u64::MAX)
    };
    eprintln!(
        "{name}: {} execs ({} generated, {} mutated) in {:.1} s: {} accepted, {} refused",
        st.execs,
        st.generated,
        st.mutated,
        st.elapsed.as_secs_f64(),
        st.ok,
        st.errors
    );
    for f in st.findings.iter().take(5) {
        eprintln!("  {}: {} on input {:?}", f.target, f.what, String::from_utf8_lossy(&f.input));
    }
    assert!(st.findings.is_empty(), "{name}: {} findings", st.findings.len());
    // The session really exercised both sides of the parser.
    assert!(st.execs >= 200, "{name}: only {} execs", st.execs);
    assert!(st.ok > 0 && st.errors > 0, "{name}: {} accepted, {} refused", st.ok, st.errors);
}

#[test]
fn fuzz_rtapp() {
    fuzz_target("rtapp");
}
#[test]
fn fuzz_plan() {
    fuzz_target("plan");
}
#[test]
fn fuzz_topology() {
    fuzz_target("topology");
}
#[test]
fn fuzz_costs() {
    fuzz_target("costs");
}
#[test]
fn fuzz_spec() {
    fuzz_target("spec");
}
#[test]
fn fuzz_bench() {
    fuzz_target("bench");
}
#[test]
fn fuzz_ftrace() {
    fuzz_target("ftrace");
}
#[test]
fn fuzz_store() {
    fuzz_target("store");
}

/// Random machines x kernels x features x workloads, each checked after every event and re-run
/// for determinism, for 15 s.
#[test]
fn swarm_slice() {
    let deadline = Instant::now() + Duration::from_secs(15);
    let st = {
        let _quiet = fuzz::QuietPanics::new();
        fuzz::swarm::swarm(1_000_000, u64::MAX, Some(deadline))
    };
    eprintln!("swarm: {} seeds, {} ran clean ({} events), {} refused", st.seeds, st.ran, st.events, st.refused);
    for f in &st.failures {
        eprintln!("  seed {}: {}\n    shrunk: {:?}", f.scenario.seed, f.what, f.scenario);
    }
    assert!(st.failures.is_empty(), "{} swarm failures", st.failures.len());
    assert!(st.ran >= 10, "only {} scenarios ran", st.ran);
}

/// A seed names its scenario: the same seed, the same configuration, so a failure replays.
#[test]
fn swarm_scenarios_replay_from_their_seed() {
    assert_eq!(fuzz::swarm::scenario(42), fuzz::swarm::scenario(42));
    let distinct: std::collections::BTreeSet<String> =
        (0..50).map(|s| format!("{:?}", fuzz::swarm::scenario(s))).collect();
    assert_eq!(distinct.len(), 50);
    // Across seeds the swarm covers every preset and several machines and workloads.
    let scenarios: Vec<_> = (0..300).map(fuzz::swarm::scenario).collect();
    for k in sim::kernel::KERNELS {
        assert!(scenarios.iter().any(|s| s.spec[0] == k.name), "{} never drawn", k.name);
    }
    for w in ["hackbench", "pipe", "schbench", "netperf", "stress-ng", "pgbench", "lat_ctx", "messaging"] {
        assert!(scenarios.iter().any(|s| s.workload[0] == w), "{w} never drawn");
    }
    assert!(scenarios.iter().any(|s| !s.background.is_empty()));
}

/// Inputs the fuzzer found that once gave multi-line errors, each refused in one line now.
#[test]
fn fuzz_findings_stay_fixed() {
    let one_line = |target: &str, input: &[u8]| {
        let t = fuzz::targets::by_name(target).expect("a target");
        match (t.exec)(input) {
            Ok(fuzz::targets::Verdict::Refused(m)) => assert!(!m.contains('\n'), "{target}: {m:?}"),
            Ok(fuzz::targets::Verdict::Accepted) => {}
            Err(e) => panic!("{target}: {e}"),
        }
    };
    // A SPEC token split by a newline (a TOML "\n" escape in a plan): separate tokens.
    one_line("spec", b"v7.3\nNO_SUCH");
    let v = sim::kernel::parse_spec("v7.3\nNEXT_BUDDY", None).expect("whitespace separates tokens");
    assert!(v.config.features.has(sim::features::Feature::NEXT_BUDDY));
    // An rt-app key with a control character, quoted back escaped.
    let e = workload::rtapp::parse_rtapp(r#"{"global": {"calibrati\n": 1}, "tasks": {"t": {"run": 1}}}"#, "f.json")
        .expect_err("unknown key");
    assert!(e.to_string().contains("`calibrati\\n`"), "{e}");
    // A results database whose schema SQL is damaged: SQLite quotes the SQL, newlines and all.
    let mut db = (fuzz::targets::by_name("store").expect("store").seeds)().remove(0);
    let at = db.windows(7).position(|w| w == b"events ").expect("the schema text");
    db[at] = b'[';
    one_line("store", &db);
}
