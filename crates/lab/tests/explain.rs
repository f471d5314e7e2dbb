//! `lab::explain` as a library call, without the binary: the text it returns and its errors.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use lab::LabError;
use lab::explain::{Explain, explain};

fn request(base: &str, variant: &str, workload: &str) -> Explain {
    let base_spec = lab::spec::full_base(base);
    let variant_spec = lab::spec::full_variant(variant, &base_spec);
    Explain {
        base: lab::spec::parse_full(&base_spec).unwrap(),
        variant: lab::spec::parse_full(&variant_spec).unwrap(),
        base_spec,
        variant_spec,
        topology: lab::plan::resolve_topology("smp:2").unwrap(),
        seed: 1,
        duration_ns: 20_000_000,
        max_events: 10_000_000,
        cpus: None,
        background: vec![],
        groups: Default::default(),
        workload: workload.split(' ').map(String::from).collect(),
        context: 2,
        after: 2,
        reproduce: "schedlab explain (test)".into(),
    }
}

#[test]
fn a_feature_that_changes_decisions_diverges_and_the_same_variant_does_not() {
    let out = explain(&request("v7.3", "NO_WAKEUP_PREEMPTION", "rtapp ../../examples/rtapp/mixed.json")).unwrap();
    assert!(out.starts_with("# schedlab explain: rtapp ../../examples/rtapp/mixed.json on smp:2, seed 1\n"), "{out}");
    assert!(out.contains("# variant: v7.3 NO_WAKEUP_PREEMPTION\n# reproduce: schedlab explain (test)\n"), "{out}");
    assert!(out.contains("First divergence: decision #"), "{out}");
    // Two decisions of each run after the divergence, as asked.
    let then = &out[out.find("Then (the next decisions of each run):").unwrap()..];
    assert_eq!(then.lines().filter(|l| l.trim_start().starts_with('#')).count(), 4, "{then}");

    let same = explain(&request("v7.3", "v7.3", "pipe -l 2000")).unwrap();
    assert!(same.contains("No divergence: both runs made the same "), "{same}");
}

#[test]
fn a_bad_workload_is_input_not_internal() {
    match explain(&request("v7.3", "NO_NEXT_BUDDY", "pipe --no-such-flag")) {
        Err(LabError::Input(m)) => assert!(m.contains("--no-such-flag"), "{m}"),
        other => panic!("{other:?}"),
    }
}
