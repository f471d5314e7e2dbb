//! Plan files: what they describe, and errors that name the file, the line and the field.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::PathBuf;

use lab::LabError;
use lab::plan::{Shard, parse_plan};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A plan whose workload paths point into the repository, wherever the test runs.
fn plan_text(extra_top: &str, variants: &str) -> String {
    let mixed = root().join("examples/rtapp/mixed.json");
    let periodic = root().join("examples/rtapp/periodic.json");
    format!(
        "seeds = 3\nduration = 0.2\n{extra_top}workloads = [\"rtapp {}\", \"rtapp {}\"]\n{variants}",
        mixed.display(),
        periodic.display()
    )
}

const TWO_VARIANTS: &str =
    "\n[[variant]]\nname = \"base\"\nspec = \"v7.3\"\n\n[[variant]]\nspec = \"+next-buddy-eevdf\"\n";

fn input_error(text: &str) -> String {
    match parse_plan(text, "plan.toml") {
        Err(LabError::Input(m)) => m,
        Err(e) => panic!("expected bad input, got {e:?}"),
        Ok(_) => panic!("expected an error for:\n{text}"),
    }
}

#[test]
fn a_plan_describes_its_runs() {
    let plan = parse_plan(&plan_text("topologies = [\"smp:2\", \"smp:4\"]\n", TWO_VARIANTS), "plan.toml").unwrap();
    assert_eq!(plan.seeds, [1, 2, 3]);
    assert_eq!(plan.duration_ns, 200_000_000);
    assert_eq!(plan.variants[0].spec, "v7.3");
    // A variant without a preset applies on top of the base; its name defaults to its text.
    assert_eq!(plan.variants[1].name, "+next-buddy-eevdf");
    assert_eq!(plan.variants[1].spec, "v7.3 +next-buddy-eevdf");
    assert_eq!(plan.run_count(), 2 * 2 * 2 * 3);
    let runs = plan.runs();
    assert_eq!(runs.len(), 24);
    // Numbered topology, variant, workload, seed; the seed varies fastest.
    assert_eq!((runs[0].topology, runs[0].variant, runs[0].workload, runs[0].seed), (0, 0, 0, 1));
    assert_eq!((runs[1].topology, runs[1].variant, runs[1].workload, runs[1].seed), (0, 0, 0, 2));
    assert_eq!((runs[3].workload, runs[6].variant, runs[12].topology), (1, 1, 1));
    // Shards partition the runs.
    let mut seen = vec![0; runs.len()];
    for i in 0..5 {
        let shard = Shard { index: i, count: 5 };
        runs.iter().filter(|r| shard.contains(r.index)).for_each(|r| seen[r.index] += 1);
    }
    assert!(seen.iter().all(|&n| n == 1));
    // Seed lists and a chosen base.
    assert_eq!(plan.base, 0, "the first variant is the base by default");
    let text = plan_text("base = \"+next-buddy-eevdf\"\n", TWO_VARIANTS).replace("seeds = 3", "seeds = [7, 3]");
    let plan = parse_plan(&text, "p").unwrap();
    assert_eq!((plan.base, plan.seeds.as_slice()), (1, &[7, 3][..]));
    assert_eq!(plan.variants[0].spec, "v7.3", "a preset SPEC stands alone");
}

#[test]
fn errors_name_file_line_and_field() {
    // (plan text, expected fragments)
    let cases: Vec<(String, Vec<&str>)> = vec![
        (plan_text("bogus = 1\n", TWO_VARIANTS), vec!["plan.toml:3:", "bogus"]),
        (plan_text("", &TWO_VARIANTS.replace("name = \"base\"", "nmae = \"base\"")), vec!["plan.toml:6:", "nmae"]),
        (
            plan_text("", &TWO_VARIANTS.replace("+next-buddy-eevdf", "+no-such-patch")),
            vec!["plan.toml:10:", "field `variant[1].spec`", "no-such-patch"],
        ),
        (
            plan_text("", &TWO_VARIANTS.replace("+next-buddy-eevdf", "v7.3+wake-affine-idle-delayed-fix")),
            vec!["plan.toml:10:", "variant[1].spec", "already contains"],
        ),
        (
            plan_text("topologies = [\"smp:2\", \"nosuch\"]\n", TWO_VARIANTS),
            vec!["plan.toml:3:", "topologies[1]", "nosuch"],
        ),
        (
            plan_text("", TWO_VARIANTS).replace("periodic.json", "missing.json"),
            vec!["plan.toml:3:", "workloads[1]", "missing.json"],
        ),
        (plan_text("", TWO_VARIANTS).replace("seeds = 3", "seeds = \"three\""), vec!["plan.toml:1:", "seeds"]),
        (plan_text("", TWO_VARIANTS).replace("seeds = 3", "seeds = 0"), vec!["plan.toml:1:", "field `seeds`"]),
        (
            plan_text("", TWO_VARIANTS).replace("duration = 0.2", "duration = -1.0"),
            vec!["plan.toml:2:", "field `duration`"],
        ),
        (plan_text("base = \"nobody\"\n", TWO_VARIANTS), vec!["plan.toml:3:", "field `base`", "nobody"]),
        (
            plan_text("", &TWO_VARIANTS.replace("spec = \"+next-buddy-eevdf\"", "name = \"base\"\nspec = \"v6.18\"")),
            vec!["plan.toml:10:", "variant[1].name", "base"],
        ),
        (plan_text("", ""), vec!["plan.toml:", "field `variant`", "missing"]),
        (plan_text("", TWO_VARIANTS).replace("seeds = 3", "seeds = [1, 1]"), vec!["plan.toml:1:", "listed twice"]),
        (
            plan_text("", TWO_VARIANTS).replace("seeds = 3", "seeds = [1, 2]\nseed = 4"),
            vec!["plan.toml:2:", "field `seed`"],
        ),
        ("seeds = 3\nworkloads = [\n".to_string(), vec!["plan.toml:"]),
    ];
    for (text, want) in cases {
        let msg = input_error(&text);
        for w in want {
            assert!(msg.contains(w), "`{w}` not in: {msg}\n--- plan:\n{text}");
        }
    }
}

const VM_TABLE: &str = "\n[[vm]]\nvm = \"linux-image-6.12.117+deb13-amd64\"\nvariant = [\"NO_WAKEUP_PREEMPTION\"]\n\
    workload = \"hackbench -p -g 1 -l 200\"\n";

/// `[[vm]]` tables (#15): one `compare --vm` each, with its flags' keys and defaults, numbered
/// after the model's runs; a plan may hold only them.
#[test]
fn vm_tables_name_real_kernel_runs() {
    let plan = parse_plan(&(plan_text("", TWO_VARIANTS) + VM_TABLE), "plan.toml").unwrap();
    assert_eq!(plan.run_count(), 12);
    let t = &plan.vm[0];
    assert_eq!(
        (t.name.as_str(), t.vm.as_str(), t.topology.as_str()),
        ("vm[0]", "linux-image-6.12.117+deb13-amd64", "smp:2")
    );
    assert_eq!((t.base.as_str(), t.variants.as_slice()), ("default", &["NO_WAKEUP_PREEMPTION".to_string()][..]));
    assert_eq!((t.runs, t.warmup, t.seed, t.accel.as_str(), t.timeout_s), (3, 1, 1, "auto", 900));
    assert!(t.replug, "the ground truth's launch by default");
    let plain = parse_plan(&VM_TABLE.replace("[[vm]]\n", "[[vm]]\nreplug = false\n"), "p").unwrap();
    assert!(!plain.vm[0].replug);
    assert!(!t.builtin, "the real tool by default");
    let builtin = parse_plan(&VM_TABLE.replace("[[vm]]\n", "[[vm]]\nbuiltin = true\n"), "p").unwrap();
    assert!(builtin.vm[0].builtin);
    assert_eq!(t.workload, ["hackbench", "-p", "-g", "1", "-l", "200"]);
    assert_eq!((t.boot_count(), plan.vm_first_index(0), plan.total_count()), (6, 12, 18));

    let only =
        parse_plan(&format!("{VM_TABLE}{}", VM_TABLE.replace("[[vm]]", "[[vm]]\nname = \"two\"\nruns = 2")), "p")
            .unwrap();
    assert_eq!((only.run_count(), only.vm.len(), only.vm_first_index(1), only.total_count()), (0, 2, 6, 10));
    assert!(only.variants.is_empty() && only.workloads.is_empty());
}

#[test]
fn bad_vm_tables_name_the_field() {
    let cases = [
        ("runs = 0\n", "vm[0].runs", "1..=10000"),
        ("accel = \"hvf\"\n", "vm[0].accel", "auto, kvm or tcg"),
        ("timeout = 0\n", "vm[0].timeout", "at least 1 second"),
        ("bogus = 1\n", "bogus", "unknown field"),
    ];
    for (extra, field, why) in cases {
        let text = VM_TABLE.replace("[[vm]]\n", &format!("[[vm]]\n{extra}"));
        let e = input_error(&text);
        assert!(e.contains(field) && e.contains(why), "{extra}: {e}");
    }
    let e = input_error(&VM_TABLE.replace("hackbench -p", "rtapp x.json"));
    assert!(e.contains("field `vm[0].workload`") && e.contains("not a benchmark a guest runs"), "{e}");
    let e = input_error(&VM_TABLE.replace("variant = [\"NO_WAKEUP_PREEMPTION\"]\n", ""));
    assert!(e.contains("field `vm[0].variant`: missing"), "{e}");
    let e = input_error(&VM_TABLE.replace("vm = \"linux", "name = \"a\"\nvm = \"linux").repeat(2));
    assert!(e.contains("vm[1].name") && e.contains("`a`"), "{e}");
}
