//! The comparison: the significance rule on synthetic samples, and end-to-end determinism on the
//! rt-app examples (identical output on 1 and several threads).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use lab::compare::{self, CompareOptions, Mark, Sample, Selection};
use lab::plan::{Plan, PlanFlags, RunKey};
use lab::report::{self, Format};
use lab::runner::{Better, RunRecord, RunRequest, run_one};
use lab::spec;
use lab::stats::TestKind;
use lab::sweep::run_all;

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rtapp").join(name).display().to_string()
}

/// A real record to clone: synthetic samples only change the metric.
fn template() -> RunRecord {
    let variant = spec::parse_full("v7.3").unwrap();
    let req = RunRequest {
        variant,
        topology: sim::topology::Topology::smp(2),
        workload: vec!["rtapp".into(), example("periodic.json")],
        seed: 1,
        default_duration_ns: 200_000_000,
        max_events: 10_000_000,
        cpus: None,
    };
    run_one(&req).unwrap()
}

const OPTS: CompareOptions = CompareOptions { alpha: 0.05, min_effect_pct: 1.0 };

/// Samples of a base `A` and a variant `B` on one workload: (seed, metric) pairs.
fn samples(t: &RunRecord, better: Better, a: &[(u64, f64)], b: &[(u64, f64)]) -> Vec<Sample> {
    let mut out = Vec::new();
    for (name, spec, runs) in [("A", "v7.3", a), ("B", "v7.3 NEXT_BUDDY", b)] {
        for &(seed, metric) in runs {
            let mut record = t.clone();
            record.metric = metric;
            record.better = better;
            let key = RunKey {
                spec: spec.into(),
                topology: "smp:2".into(),
                workload: vec!["synthetic".into()],
                seed,
                duration_ns: 1,
                max_events: 1,
            };
            out.push(Sample { variant: name.into(), key, record });
        }
    }
    out
}

fn sel() -> Selection {
    Selection { base: ("A".into(), "v7.3".into()), variants: vec![("B".into(), "v7.3 NEXT_BUDDY".into())] }
}

fn seeded(values: &[f64]) -> Vec<(u64, f64)> {
    values.iter().enumerate().map(|(i, &v)| (i as u64 + 1, v)).collect()
}

const BASE: [f64; 5] = [100.0, 101.5, 98.7, 100.4, 99.2];

fn judge(better: Better, a: &[(u64, f64)], b: &[(u64, f64)], opts: CompareOptions) -> compare::VariantResult {
    let c = compare::build(&samples(&template(), better, a, b), &sel(), opts).unwrap();
    c.groups[0].variants[0].clone()
}

#[test]
fn a_clear_difference_is_marked_by_direction() {
    // 10% lower (per seed, with noise) on a lower-is-better metric: an improvement.
    let faster: Vec<f64> = BASE.iter().zip([0.2, -0.3, 0.1, 0.4, -0.2]).map(|(b, n)| b * 0.9 + n).collect();
    let v = judge(Better::Lower, &seeded(&BASE), &seeded(&faster), OPTS);
    assert_eq!(v.mark, Mark::Improvement, "{v:?}");
    assert_eq!(v.test.unwrap().kind, TestKind::PairedT);
    assert!(v.test.unwrap().p < 0.001);
    assert!((v.change_pct.unwrap() - 100.0 * (100.0 - 90.2) / 100.0).abs() < 1e-9, "{v:?}");
    // The same numbers on a higher-is-better metric: a regression, negative change.
    let v = judge(Better::Higher, &seeded(&BASE), &seeded(&faster), OPTS);
    assert_eq!(v.mark, Mark::Regression);
    assert!(v.change_pct.unwrap() < -9.0);
    // 10% slower on lower-is-better: a regression.
    let slower: Vec<f64> = BASE.iter().map(|b| b * 1.1).collect();
    assert_eq!(judge(Better::Lower, &seeded(&BASE), &seeded(&slower), OPTS).mark, Mark::Regression);
}

#[test]
fn noise_is_not_marked() {
    let other = [99.1, 100.9, 100.2, 98.8, 101.3];
    let v = judge(Better::Lower, &seeded(&BASE), &seeded(&other), OPTS);
    assert_eq!(v.mark, Mark::None, "{v:?}");
    assert!(v.test.unwrap().p > 0.05);
    // Identical results: no difference at all.
    let v = judge(Better::Lower, &seeded(&BASE), &seeded(&BASE), OPTS);
    assert_eq!((v.mark, v.change_pct, v.test.unwrap().p), (Mark::None, Some(0.0), 1.0));
}

#[test]
fn fewer_than_three_runs_are_never_marked() {
    let a = seeded(&[100.0, 100.0]);
    let b = seeded(&[50.0, 50.0]);
    let v = judge(Better::Lower, &a, &b, OPTS);
    assert_eq!(v.mark, Mark::None);
    assert!(v.test.is_none());
    assert_eq!(v.change_pct, Some(50.0));
}

#[test]
fn small_effects_need_min_effect() {
    // A 0.5% shift on every seed: certain (p ~ 0), but below the 1% default effect size.
    let shifted: Vec<f64> = BASE.iter().map(|b| b * 0.995).collect();
    let v = judge(Better::Lower, &seeded(&BASE), &seeded(&shifted), OPTS);
    assert_eq!(v.mark, Mark::None);
    assert!(v.test.unwrap().p < 1e-6);
    let v =
        judge(Better::Lower, &seeded(&BASE), &seeded(&shifted), CompareOptions { alpha: 0.05, min_effect_pct: 0.25 });
    assert_eq!(v.mark, Mark::Improvement);
}

#[test]
fn unpaired_arms_fall_back_to_welch() {
    let b: Vec<(u64, f64)> = BASE.iter().enumerate().map(|(i, v)| (100 + i as u64, v * 1.2)).collect();
    let v = judge(Better::Lower, &seeded(&BASE), &b, OPTS);
    assert_eq!(v.test.unwrap().kind, TestKind::WelchT);
    assert_eq!(v.mark, Mark::Regression);
}

#[test]
fn every_format_carries_seeds_and_reproduce_line() {
    let faster: Vec<f64> = BASE.iter().map(|b| b * 0.9).collect();
    let c =
        compare::build(&samples(&template(), Better::Lower, &seeded(&BASE), &seeded(&faster)), &sel(), OPTS).unwrap();
    let table = report::render(&c, Format::Table);
    assert!(table.contains("seeds 1..5") && table.contains("# reproduce: schedlab compare"), "{table}");
    // The variant's row: label, median ... %chg, mark, the 95 % interval and the p-value.
    let row = table.lines().find(|l| l.starts_with("B ")).expect("a row for B");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[5..7], ["+10.00%", "(I)"], "{table}");
    assert!(cells[7].starts_with('[') && cells[8].ends_with(']'), "{row}");
    assert!(cells[9].parse::<f64>().is_ok_and(|p| p < 0.05) || cells[9] == "<0.0001", "{row}");
    assert!(table.contains("# A = A: v7.3 (base)") && table.contains("# B = B: v7.3 NEXT_BUDDY"), "{table}");
    assert!(table.contains("nr_wakeup_preemptions"));
    assert!(table.is_ascii(), "the default table pastes into a plain-text email: {table}");
    assert!(table.lines().all(|l| l.len() <= report::TEXT_WIDTH), "{table}");
    let boxed = report::render(&c, Format::Box);
    assert!(boxed.contains('┆') && boxed.contains("+10.00%"), "{boxed}");
    let md = report::render(&c, Format::Markdown);
    assert!(
        md.contains("**synthetic on smp:2") && md.contains("| +10.00% | (I) |") && md.contains("--seed 1 --runs 5"),
        "{md}"
    );
    let csv = report::render(&c, Format::Csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("topology,workload,") && lines[0].ends_with(",reproduce"));
    assert!(lines[2].contains(",variant,B,v7.3 NEXT_BUDDY,5,1 2 3 4 5,") && lines[2].contains(",(I),"), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&report::render(&c, Format::Json)).unwrap();
    assert_eq!(json["seeds"], serde_json::json!([1, 2, 3, 4, 5]));
    assert!(json["reproduce"][0].as_str().unwrap().starts_with("schedlab compare"));
    let v = &json["groups"][0]["variants"][0];
    assert_eq!(v["mark"], "(I)");
    assert_eq!(v["test"]["kind"], "paired-t");
    let ci = v["change_ci95_pct"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= ci[1].as_f64().unwrap());
    assert!(v["counters"]["nr_switches"].is_number());
}

fn rtapp_plan(seeds: Vec<u64>) -> Plan {
    Plan::from_flags(PlanFlags {
        topologies: &["smp:2".to_string()],
        base: "v7.3",
        variants: &["v7.3+next-buddy-eevdf".to_string(), "NO_DELAY_DEQUEUE".to_string()],
        workloads: vec![vec!["rtapp".into(), example("mixed.json")], vec!["rtapp".into(), example("periodic.json")]],
        seeds,
        duration_s: 0.2,
        max_events: 50_000_000,
        cpus: None,
        background: &[],
        autogroup: None,
        cgroup: None,
        cgroup_weights: &[],
    })
    .unwrap()
}

fn compare_on_threads(plan: &Plan, threads: usize) -> Vec<String> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let slots = plan.runs();
    let requests: Vec<RunRequest> = slots.iter().map(|s| plan.request(s)).collect();
    let outcomes = pool.install(|| run_all(&requests, &AtomicBool::new(false), |_, _| {}));
    let samples: Vec<Sample> = slots
        .iter()
        .zip(outcomes)
        .map(|(s, o)| Sample {
            variant: plan.variants[s.variant].name.clone(),
            key: plan.key(s),
            record: o.unwrap().result.unwrap(),
        })
        .collect();
    let c = compare::build(&samples, &Selection::from_plan(plan), OPTS).unwrap();
    [Format::Table, Format::Markdown, Format::Csv, Format::Json].into_iter().map(|f| report::render(&c, f)).collect()
}

#[test]
fn same_output_on_one_and_several_threads() {
    let plan = rtapp_plan(vec![1, 2, 3]);
    assert_eq!(plan.variants[1].spec, "v7.3 +next-buddy-eevdf", "the glued SPEC is split");
    assert_eq!(plan.variants[2].spec, "v7.3 NO_DELAY_DEQUEUE", "a SPEC without preset builds on the base");
    let one = compare_on_threads(&plan, 1);
    let three = compare_on_threads(&plan, 3);
    assert_eq!(one, three);
    assert!(one[0].contains("# B = v7.3 +next-buddy-eevdf\n"), "{}", one[0]);
    assert!(one[0].contains("# C = NO_DELAY_DEQUEUE: v7.3 NO_DELAY_DEQUEUE\n"), "{}", one[0]);
    assert!(one[0].lines().all(|l| l.len() <= report::TEXT_WIDTH), "{}", one[0]);
    assert!(one[0].contains("rtapp") && one[0].contains("periodic.json"));
}

/// Runs of a real kernel (`compare --vm --out`, a plan's `[[vm]]`) read back from the store:
/// by their `vm:` SPECs, the counters the kernel does not keep n/a (not 0), a header saying
/// where they came from, and a `compare --vm` line that reboots them.
#[test]
fn stored_real_kernel_runs_compare_with_their_origin() {
    let dir = tempfile::tempdir().unwrap();
    let store = lab::store::Store::create(dir.path()).unwrap();
    let mut t = template();
    t.vm = Some(lab::runner::GuestInfo {
        kernel: "linux-image-6.12.117+deb13-amd64".into(),
        accel: "tcg".into(),
        warmup: 1,
        hz: Some(250),
        preempt: Some("voluntary".into()),
        unmeasured: vec!["nr_wakeup_preemptions".into(), "nr_ipis".into()],
        replug: true,
        builtin: Some(false),
        runner: Some("rt-tests hackbench".into()),
    });
    let workload: Vec<String> = ["hackbench", "-p", "-g", "1", "-l", "200"].map(String::from).to_vec();
    for (spec, metric) in [("default", 1.2), ("NO_WAKEUP_PREEMPTION", 0.6)] {
        let full = format!("vm:linux-image-6.12.117+deb13-amd64 {spec}");
        store.record_variant(&full, &full, if spec == "default" { 0 } else { 2 }).unwrap();
        for seed in 4..7 {
            let mut r = t.clone();
            r.metric = metric + seed as f64 / 100.0;
            r.counters.nr_wakeup_preemptions = 0;
            let key = RunKey {
                spec: full.clone(),
                topology: "smp:2".into(),
                workload: workload.clone(),
                seed,
                duration_ns: 0,
                max_events: 0,
            };
            assert!(store.insert(&full, &key, &r, 1.0).unwrap());
            assert_eq!(store.get(&key).unwrap().unwrap().record, r, "read back as written");
        }
    }
    // The base by default is the one recorded at position 0.
    let stored = lab::compare::select_stored(&store, None, &[]).unwrap();
    assert_eq!(stored.selection.base.1, "vm:linux-image-6.12.117+deb13-amd64 default");
    let by_spec = lab::compare::select_stored(
        &store,
        Some("vm:linux-image-6.12.117+deb13-amd64 default"),
        &["vm:linux-image-6.12.117+deb13-amd64 NO_WAKEUP_PREEMPTION".to_string()],
    )
    .unwrap();
    assert_eq!(by_spec.samples.len(), 6);
    let c = lab::compare::build(&stored.samples, &stored.selection, OPTS).unwrap();
    let g = &c.groups[0];
    let at = |name: &str| lab::compare::COUNTERS.iter().position(|c| *c == name).unwrap();
    assert!(g.base.counters[at("nr_wakeup_preemptions")].is_nan() && g.base.counters[at("nr_ipis")].is_nan());
    assert!(g.variants[0].arm.as_ref().unwrap().counters[at("nr_ipis")].is_nan());
    assert!(!g.base.counters[at("nr_switches")].is_nan());
    assert_eq!(g.variants[0].mark, Mark::Improvement);
    assert_eq!(
        g.reproduce,
        "schedlab compare --vm linux-image-6.12.117+deb13-amd64 --accel tcg --topology smp:2 --seed 4 --runs 3 \
         --warmup 1 --base default --variant NO_WAKEUP_PREEMPTION hackbench -p -g 1 -l 200"
    );
    // Runs measured without the replug rerun without it.
    let mut plain = t.vm.clone().unwrap();
    plain.replug = false;
    let line = lab::compare::vm_reproduce_line(&plain, "smp:2", &workload, &[4, 5, 6], &stored.selection);
    assert!(line.contains("--warmup 1 --no-replug --base default"), "{line}");
    let origin = c.origin.as_ref().unwrap();
    assert!(
        origin.title.contains("real kernel under qemu (linux-image-6.12.117+deb13-amd64, TCG)"),
        "{}",
        origin.title
    );
    let text = lab::report::render(&c, lab::report::Format::Table);
    assert!(text.contains("over 3 boots"), "{text}");
    let ipis = text.lines().find(|l| l.starts_with("nr_ipis")).unwrap();
    assert!(ipis.contains("n/a") && !ipis.contains(" 0 "), "{ipis}");
}
