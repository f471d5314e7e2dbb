//! The lab commands as a user runs them: `kernels`, `patches`, `compare`, `sweep`, `merge`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root()).output().expect("run schedlab")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = schedlab(args);
    assert!(o.status.success(), "schedlab {args:?} failed: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn kernels_and_patches_are_listed() {
    let k = ok(&["kernels"]);
    // One line per preset, then `host`; each says whether autogroup is on.
    assert_eq!(k.lines().count(), sim::kernel::KERNELS.len() + 1);
    assert!(k.lines().any(|l| l.starts_with("v7.3 ") && l.contains("[autogroup: on]")), "{k}");
    assert!(k.lines().last().is_some_and(|l| l.starts_with("host ") && l.contains("autogroup")), "{k}");
    let p = ok(&["patches"]);
    assert_eq!(p.lines().count(), sim::kernel::PATCHES.len());
    let nb = p.lines().find(|l| l.starts_with("next-buddy-eevdf ")).unwrap();
    assert!(nb.contains("e837456fdca8"), "the reference is on the line: {nb}");
}

/// The brief's form (glued SPEC, positional rt-app workload), identical on 1 and 2 threads.
#[test]
fn compare_brief_form_is_deterministic_across_threads() {
    let args = |jobs: &'static str| {
        vec![
            "compare",
            "--jobs",
            jobs,
            "--base",
            "v7.3",
            "--variant",
            "v7.3+next-buddy-eevdf",
            "--runs",
            "3",
            "rtapp",
            "examples/rtapp/mixed.json",
        ]
    };
    let one = ok(&args("1"));
    let two = ok(&args("2"));
    assert_eq!(one, two);
    assert!(one.contains("seeds 1..3, 3 runs per variant"), "{one}");
    assert!(one.contains("positive = better"), "{one}");
    assert!(one.lines().all(|l| l.len() <= 100 && l.is_ascii()), "{one}");
    assert!(
        joined(&one).contains(
            "# reproduce: schedlab compare --topology smp:2 --seed 1 --runs 3 --duration 10 --base v7.3 \
             --variant 'v7.3 +next-buddy-eevdf' --workload 'rtapp examples/rtapp/mixed.json'"
        ),
        "{one}"
    );
    assert!(one.contains("# B = v7.3 +next-buddy-eevdf\n") && one.contains("nr_wakeup_preemptions"), "{one}");
}

/// The text with wrapped `#` lines (` \` then `#   `) joined back into one line each.
fn joined(text: &str) -> String {
    text.replace(" \\\n#   ", " ").replace("\n#   ", " ")
}

/// Several workloads as --workload strings; JSON and CSV carry seeds and the reproduce line,
/// and rerunning the reproduce line gives the same result.
#[test]
fn compare_several_workloads_json_and_csv() {
    let args = [
        "compare",
        "--seeds",
        "4,9,11",
        "--duration",
        "0.2",
        "--base",
        "v7.3",
        "--variant",
        "NO_DELAY_DEQUEUE",
        "--variant",
        "v6.18",
        "--workload",
        "rtapp examples/rtapp/mixed.json",
        "--workload",
        "rtapp examples/rtapp/periodic.json",
        "--format",
        "json",
    ];
    let json: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
    assert_eq!(json["seeds"], serde_json::json!([4, 9, 11]));
    let groups = json["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["variants"][0]["spec"], "v7.3 NO_DELAY_DEQUEUE");
    assert_eq!(groups[1]["variants"][1]["spec"], "v6.18");
    assert_eq!(groups[1]["base"]["values"].as_array().unwrap().len(), 3);
    let reproduce = json["reproduce"][0].as_str().unwrap();
    assert!(reproduce.contains("--seeds 4,9,11"), "{reproduce}");
    let mut again: Vec<String> = lab::words::split(reproduce).unwrap();
    assert_eq!(again.remove(0), "schedlab");
    again.extend(["--format".into(), "json".into()]);
    let again: serde_json::Value =
        serde_json::from_str(&ok(&again.iter().map(String::as_str).collect::<Vec<_>>())).unwrap();
    // The same numbers and marks; only the variants' names differ (the line names them by SPEC).
    let numbers = |v: &serde_json::Value| -> Vec<String> {
        let mut out = Vec::new();
        for g in v["groups"].as_array().unwrap() {
            out.push(format!("{} {}", g["workload"], g["base"]["values"]));
            for var in g["variants"].as_array().unwrap() {
                out.push(format!("{} {} {} {}", var["spec"], var["values"], var["change_pct"], var["mark"]));
            }
        }
        out
    };
    assert_eq!(numbers(&again), numbers(&json));

    let mut csv_args = args.to_vec();
    *csv_args.last_mut().unwrap() = "csv";
    let csv = ok(&csv_args);
    assert_eq!(csv.lines().count(), 1 + 2 * 3, "{csv}");
    assert!(csv.lines().nth(1).unwrap().contains(",base,v7.3,v7.3,3,4 9 11,"), "{csv}");
}

fn sqlite_rows(dir: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(dir.join("results.db")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT schedlab_version, variant_name, spec, topology, workload, seed, duration_ns, metric, nr_switches, \
             nr_wakeups, wakeup_latency_p99_ns, record FROM runs ORDER BY spec, topology, workload, seed",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok(format!(
                "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, i64>(6)?,
                r.get::<_, f64>(7)?,
                r.get::<_, i64>(8)?,
                r.get::<_, i64>(9)?,
                r.get::<_, i64>(10)?,
                r.get::<_, String>(11)?
            ))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// The example plan end to end: a sweep, a rerun that skips everything, two shards merged
/// equal to the unsharded sweep, and the same table from the store as from the plan.
#[test]
fn sweep_rerun_shards_merge_and_compare_from() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| tmp.path().join(name).display().to_string();
    let plan = "examples/sweeps/plan.toml";
    let out = ok(&["sweep", plan, "--out", &dir("all")]);
    assert!(out.contains("12 runs in the plan; 0 already stored, 12 stored now"), "{out}");
    let out = ok(&["sweep", plan, "--out", &dir("all")]);
    assert!(out.contains("12 already stored, 0 stored now"), "{out}");
    let all = sqlite_rows(&tmp.path().join("all"));
    assert_eq!(all.len(), 12);
    assert!(
        all[0].starts_with(&format!(
            "{}+model.{}|v7.3|v7.3|smp:2|[\"rtapp\",\"examples/rtapp/mixed.json\"]|1|",
            env!("CARGO_PKG_VERSION"),
            lab::store::MODEL_REVISION
        )),
        "{}",
        all[0]
    );

    let out = ok(&["sweep", plan, "--shard", "0/2", "--out", &dir("s0"), "--jobs", "1"]);
    assert!(out.contains("shard 0/2: 6 runs; 0 already stored, 6 stored now"), "{out}");
    ok(&["sweep", plan, "--shard", "1/2", "--out", &dir("s1"), "--jobs", "2"]);
    let out = ok(&["merge", &dir("s0"), &dir("s1"), "--out", &dir("merged")]);
    assert!(out.contains("6 runs copied, 0 already present") && out.contains(": 12 runs"), "{out}");
    let out = ok(&["merge", &dir("s1"), "--out", &dir("merged")]);
    assert!(out.contains("0 runs copied, 6 already present"), "{out}");
    assert_eq!(sqlite_rows(&tmp.path().join("merged")), all);

    let from_all = ok(&["compare", "--from", &dir("all")]);
    assert_eq!(ok(&["compare", "--from", &dir("merged")]), from_all);
    assert_eq!(ok(&["compare", "--plan", plan]), from_all);
    assert!(from_all.contains("# B = next-buddy: v7.3 +next-buddy-eevdf"), "{from_all}");
    // Choosing variants by name or by SPEC.
    let by_spec = ok(&["compare", "--from", &dir("all"), "--base", "v7.3", "--variant", "v7.3+next-buddy-eevdf"]);
    assert_eq!(by_spec, from_all);
    let o = schedlab(&["compare", "--from", &dir("all"), "--variant", "nosuch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--variant `nosuch`"), "{}", stderr(&o));
}

#[test]
fn bad_input_exits_2_naming_the_place() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("plan.toml");
    let good = std::fs::read_to_string(root().join("examples/sweeps/plan.toml")).unwrap();
    let out = tmp.path().join("out").display().to_string();
    // "plan.toml:N:" for the first line of the example plan that contains `text`.
    let line_of = |text: &str| format!("plan.toml:{}:", good.lines().position(|l| l.contains(text)).unwrap() + 1);
    let cases = [
        (good.replace("duration = 0.2", "duraton = 0.2"), vec![line_of("duration = 0.2"), "duraton".into()]),
        (
            good.replace("+next-buddy-eevdf\"", "+next-buddy\""),
            vec![line_of("+next-buddy-eevdf\""), "variant[1].spec".into(), "next-buddy".into()],
        ),
        (
            good.replace("periodic.json", "nope.json"),
            vec![line_of("periodic.json"), "workloads[1]".into(), "nope.json".into()],
        ),
    ];
    for (text, want) in cases {
        std::fs::write(&plan, &text).unwrap();
        let o = schedlab(&["sweep", plan.to_str().unwrap(), "--out", &out]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        for w in want {
            assert!(stderr(&o).contains(&w), "`{w}` not in: {}", stderr(&o));
        }
        assert!(!stderr(&o).contains("panicked"));
    }
    let bad = [
        (
            vec!["compare", "--base", "v7.3", "--variant", "v7.3+nope", "rtapp", "examples/rtapp/mixed.json"],
            "--variant `v7.3+nope`",
        ),
        (
            vec!["compare", "--base", "v9", "--variant", "NEXT_BUDDY", "rtapp", "examples/rtapp/mixed.json"],
            "--base `v9`",
        ),
        (vec!["compare", "--base", "v7.3", "--variant", "NEXT_BUDDY"], "no workload"),
        (vec!["compare", "--base", "v7.3", "--variant", "NEXT_BUDDY", "rtapp", "nope.json"], "nope.json"),
        (vec!["compare", "--plan", "examples/sweeps/plan.toml", "--runs", "3"], "--runs"),
        (vec!["compare", "--from", "/nonexistent/results"], "no results database"),
        (vec!["sweep", "examples/sweeps/plan.toml", "--shard", "2/2"], "--shard"),
        (vec!["sweep", "/nonexistent/plan.toml"], "/nonexistent/plan.toml"),
    ];
    for (args, want) in bad {
        let o = schedlab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: `{want}` not in {}", stderr(&o));
    }
}

/// Issue 14: the seed thread's pinned runs (`taskset -c 78,79`) compared on the Altra, with the
/// table within 100 columns, the CPU list carried into the reproduce line, and a 95 % interval
/// and p-value for the change.
#[test]
fn compare_pinned_on_a_large_machine_fits_100_columns() {
    let out = ok(&[
        "compare",
        "--topology",
        "ampere-altra-80",
        "--cpus",
        "78,79",
        "--runs",
        "3",
        "--base",
        "v7.2",
        "--variant",
        "v7.2 +wake-affine-sync-reciprocal",
        "pipe",
        "--classic",
        "-l",
        "5000",
    ]);
    assert!(out.lines().all(|l| l.len() <= 100 && l.is_ascii()), "{out}");
    assert!(out.contains("# A = v7.2 (base)\n# B = v7.2 +wake-affine-sync-reciprocal\n"), "{out}");
    assert!(joined(&out).contains(" --cpus 78,79 --base v7.2 "), "{out}");
    assert!(joined(&out).contains("--workload 'pipe --classic -l 5000'"), "{out}");
    // The reproduce line, run, prints the same table.
    let line = joined(&out).lines().find_map(|l| l.strip_prefix("# reproduce: ").map(str::to_string)).unwrap();
    let again: Vec<String> = lab::words::split(&line).unwrap();
    let again: Vec<&str> = again.iter().skip(1).map(String::as_str).collect();
    assert_eq!(ok(&again), out, "{line}");
    let row = out.lines().find(|l| l.starts_with("B ")).expect("B's row");
    assert!(row.contains('[') && row.contains(']') && row.contains('%'), "{row}");
    let o = schedlab(&[
        "compare",
        "--cpus",
        "80",
        "--topology",
        "ampere-altra-80",
        "--base",
        "v7.2",
        "--variant",
        "NEXT_BUDDY",
        "pipe",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("CPU 80 is not within the machine's CPUs 0-79"), "{}", stderr(&o));
}

/// "schbench beside stress-ng": the background workload's metric is compared like the
/// foreground one, in the table and in JSON.
#[test]
fn compare_background_metrics_in_table_and_json() {
    let args = [
        "compare",
        "--runs",
        "3",
        "--base",
        "v7.3",
        "--variant",
        "NO_DELAY_DEQUEUE",
        "--background",
        "stress-ng --cpu 2 --timeout 1",
        "schbench",
        "-m",
        "1",
        "-t",
        "2",
        "-r",
        "1",
    ];
    let out = ok(&args);
    assert!(out.contains("beside it, stress-ng --cpu 2 --timeout 1: bogo_ops_per_sec, higher is better"), "{out}");
    let json_args: Vec<&str> = args.iter().copied().chain(["--format", "json"]).collect();
    let json: serde_json::Value = serde_json::from_str(&ok(&json_args)).unwrap();
    let bg = &json["groups"][0]["background"][0];
    assert_eq!(bg["metric"], "bogo_ops_per_sec");
    assert_eq!(bg["base"]["values"].as_array().unwrap().len(), 3);
    assert!(bg["base"]["values"][0].as_f64().unwrap() > 0.0, "{bg}");
    assert!(bg["variants"][0]["change_pct"].is_number(), "{bg}");
}

/// A plan's `cpus` and `background` reach every run (and the stored workload).
#[test]
fn plan_cpus_and_background() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("plan.toml");
    std::fs::write(
        &plan,
        "topologies = [\"smp:4\"]\nseeds = 2\ncpus = \"0-1\"\nbackground = [\"stress-ng --cpu 1 --timeout 1\"]\n\
         workloads = [\"pipe -l 2000\"]\n[[variant]]\nspec = \"v7.3\"\n[[variant]]\nspec = \"NEXT_BUDDY\"\n",
    )
    .unwrap();
    let out = ok(&["compare", "--plan", plan.to_str().unwrap()]);
    assert!(out.contains("--cpus 0-1 --background 'stress-ng --cpu 1 --timeout 1' pipe -l 2000 on smp:4"), "{out}");
    std::fs::write(&plan, "seeds = 2\ncpus = \"0-7\"\nworkloads = [\"pipe\"]\n[[variant]]\nspec = \"v7.3\"\n").unwrap();
    let o = schedlab(&["compare", "--plan", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("field `workloads[0]`") && stderr(&o).contains("CPU 2"), "{}", stderr(&o));
}

/// The foreground hog's share of CPU 0 against four background hogs, from a compare's JSON:
/// foreground bogo-ops over the sum of both (every hog does the same work per CPU second).
fn hog_share(extra: &[&str]) -> (f64, String) {
    let mut args = vec!["compare", "--format", "json", "--runs", "2", "--cpus", "0"];
    args.extend(["--background", "stress-ng --cpu 4"]);
    args.extend(extra);
    args.extend(["--base", "v6.12", "--variant", "NEXT_BUDDY", "stress-ng", "--cpu", "1", "--timeout", "2"]);
    let j: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
    let g = &j["groups"][0];
    let fg = g["base"]["summary"]["median"].as_f64().unwrap();
    let bg = g["background"][0]["base"]["summary"]["median"].as_f64().unwrap();
    (fg / (fg + bg), j["reproduce"][0].as_str().unwrap().to_string())
}

/// `compare --autogroup/--cgroup/--cgroup-weight` (#14): one hog beside `stress-ng --cpu 4` on
/// one CPU of a v6.12 model gets 1/5 of it without groups, 1/2 in its own autogroup (the
/// default: two sessions of equal weight) and 4/5 in a cgroup of cpu.weight 400 against the
/// background's autogroup (weight 100's 1024 shares against 4096). A plan's `autogroup`,
/// `cgroup` and `cgroup_weight` give the same runs.
#[test]
fn compare_group_options_change_the_cpu_share() {
    let (off, rep_off) = hog_share(&["--autogroup", "off"]);
    let (auto, _) = hog_share(&[]);
    let (weighted, rep_w) = hog_share(&["--cgroup", "/fg", "--cgroup-weight", "/fg=400"]);
    assert!((off - 0.2).abs() < 0.02, "no groups: {off}");
    assert!((auto - 0.5).abs() < 0.02, "autogroups: {auto}");
    assert!((weighted - 0.8).abs() < 0.02, "cpu.weight 400: {weighted}");
    assert!(rep_off.contains("--background 'stress-ng --cpu 4' --autogroup off --base v6.12"), "{rep_off}");
    assert!(rep_w.contains("--cgroup /fg --cgroup-weight /fg=400 --base"), "{rep_w}");

    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("plan.toml");
    std::fs::write(
        &plan,
        "seeds = 2\ncpus = \"0\"\nbackground = [\"stress-ng --cpu 4\"]\ncgroup = \"/fg\"\n\
         cgroup_weight = [\"/fg=400\"]\nautogroup = true\nworkloads = [\"stress-ng --cpu 1 --timeout 2\", \
         \"--cgroup-weight /fg=100 stress-ng --cpu 1 --timeout 2\"]\n\
         [[variant]]\nspec = \"v6.12\"\n[[variant]]\nspec = \"NEXT_BUDDY\"\n",
    )
    .unwrap();
    let j: serde_json::Value =
        serde_json::from_str(&ok(&["compare", "--format", "json", "--plan", plan.to_str().unwrap()])).unwrap();
    let share = |g: &serde_json::Value| {
        let fg = g["base"]["summary"]["median"].as_f64().unwrap();
        fg / (fg + g["background"][0]["base"]["summary"]["median"].as_f64().unwrap())
    };
    let groups = j["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert!((share(&groups[0]) - weighted).abs() < 1e-9, "the plan's keys are the flags: {}", share(&groups[0]));
    // A line's own --cgroup-weight wins over the plan's for that path: equal weights, half each.
    assert!((share(&groups[1]) - 0.5).abs() < 0.02, "{}", share(&groups[1]));
    let words: Vec<&str> = groups[1]["workload"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert!(words.contains(&"/fg=100") && !words.contains(&"/fg=400") && words.contains(&"--autogroup"), "{words:?}");

    std::fs::write(
        &plan,
        "seeds = 1\ncgroup_weight = [\"/fg=0\"]\nworkloads = [\"pipe\"]\n[[variant]]\nspec = \"v7.3\"\n",
    )
    .unwrap();
    let o = schedlab(&["compare", "--plan", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("field `cgroup_weight[0]`") && err.contains("1..10000"), "{err}");
    let o = schedlab(&["compare", "--base", "v7.3", "--variant", "NEXT_BUDDY", "--autogroup", "maybe", "pipe"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--autogroup maybe: expected on or off"), "{}", stderr(&o));
}
