//! The rt-app importer through its public API: JSON text in, task programs or one-line errors
//! out.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::Path;

use sim::fair::Policy;
use sim::program::{Op, TaskSpec};
use workload::rtapp::{RtApp, RtAppError, load_rtapp, parse_rtapp};

const FOREVER: u32 = u32::MAX;

fn parse(text: &str) -> RtApp {
    match parse_rtapp(text, "t.json") {
        Ok(app) => app,
        Err(err) => panic!("unexpected error: {err}"),
    }
}

/// Parses `text` and checks the whole error message, which must be one line.
fn check_err(text: &str, expected: &str) {
    let err = match parse_rtapp(text, "t.json") {
        Ok(app) => panic!("expected an error, got {app:?}"),
        Err(err) => err.to_string(),
    };
    assert!(!err.contains('\n'), "not one line: {err}");
    assert_eq!(err, expected);
}

fn ops(text: &str) -> Vec<Op> {
    let app = parse(text);
    assert_eq!(app.tasks.len(), 1);
    app.tasks.into_iter().next().unwrap().ops
}

fn run_us(us: u64) -> Op {
    Op::Run { ns: us * 1000 }
}

fn sleep_us(us: u64) -> Op {
    Op::Sleep { ns: us * 1000 }
}

#[test]
fn repeated_keys_keep_document_order() {
    let text = r#"{
        "tasks": {
            "t": {
                "loop": 1,
                "phases": {
                    "p0": { "run": 10, "sleep": 20, "run": 30 },
                    "p1": { "sleep": 40, "run": 50, "sleep": 60, "run": 70 }
                }
            }
        }
    }"#;
    assert_eq!(
        ops(text),
        [run_us(10), sleep_us(20), run_us(30), sleep_us(40), run_us(50), sleep_us(60), run_us(70), Op::Exit]
    );
}

#[test]
fn repeated_phase_names_are_separate_phases() {
    // rt-app's doc/examples/spreading-tasks.json repeats a phase name.
    let text = r#"{ "tasks": { "t": { "loop": 1, "phases": {
        "a": { "run": 1 }, "b": { "run": 2 }, "a": { "run": 3 } } } } }"#;
    assert_eq!(ops(text), [run_us(1), run_us(2), run_us(3), Op::Exit]);
}

#[test]
fn events_are_recognised_by_prefix_like_rt_app() {
    // workgen renames repeated keys run1, run2…; rt-app matches "run", "runtime", … by prefix.
    let text = r#"{ "tasks": { "t": { "loop": 1,
        "run0": 1, "sleep1": 2, "runtime2": 3, "timer_x": { "ref": "a", "period": 4 }, "yield0": "" } } }"#;
    assert_eq!(
        ops(text),
        [
            run_us(1),
            sleep_us(2),
            run_us(3),
            Op::Timer { slot: 0, period_ns: 4000, absolute: false },
            Op::Yield,
            Op::Exit
        ]
    );
}

#[test]
fn json_c_comments_and_trailing_commas_are_accepted() {
    let text = "{\n  // line comment\n  \"tasks\": { /* block\n comment */ \"t\": { \"loop\": 2, \"run\": 5, }, },\n}";
    assert_eq!(ops(text), [run_us(5), Op::Loop { target: 0, slot: 0, count: 2 }, Op::Exit]);
}

#[test]
fn comment_marks_inside_strings_are_text() {
    let text = r#"{ "tasks": { "t": { "loop": 1,
        "timer": { "ref": "a // b /* c", "period": 5 }, "timer": { "ref": "a // b /* c,]", "period": 6 } } } }"#;
    assert_eq!(
        ops(text),
        [
            Op::Timer { slot: 0, period_ns: 5000, absolute: false },
            Op::Timer { slot: 1, period_ns: 6000, absolute: false },
            Op::Exit
        ]
    );
}

#[test]
fn positions_survive_comments_and_escaped_keys() {
    check_err(
        "{ /* \"tasks\": */ \"tasks\": {\n  \"a\\\"b\": { \"lock\": \"m\" } } }",
        "t.json:2:13: tasks.\"a\\\"b\".lock: event `lock` is not supported yet (mutexes are not modelled)",
    );
}

#[test]
fn instances_are_named_and_share_the_program() {
    let text = r#"{ "tasks": {
        "solo": { "run": 1 },
        "many": { "instance": 3, "run": 2 },
        "none": { "instance": 0, "run": 3 },
        "a_very_long_task_name": { "instance": 2, "run": 4 }
    } }"#;
    let app = parse(text);
    let names: Vec<&str> = app.tasks.iter().map(|t| t.comm.as_str()).collect();
    assert_eq!(names, ["solo", "many-0", "many-1", "many-2", "a_very_long_tas", "a_very_long_tas"]);
    assert!(app.tasks[1..4].iter().all(|t| t.ops == app.tasks[1].ops));
}

#[test]
fn loops_compile_to_loop_ops() {
    // Task loop 3 around a phase looped twice and a single phase.
    let text = r#"{ "tasks": { "t": { "loop": 3, "phases": {
        "p0": { "loop": 2, "run": 1, "sleep": 2 },
        "p1": { "run": 3 } } } } }"#;
    let app = parse(text);
    let task = &app.tasks[0];
    assert_eq!(
        task.ops,
        [
            run_us(1),
            sleep_us(2),
            Op::Loop { target: 0, slot: 0, count: 2 },
            run_us(3),
            Op::Loop { target: 0, slot: 1, count: 3 },
            Op::Exit
        ]
    );
    assert_eq!((task.nr_slots, task.nr_timers), (2, 0));
}

#[test]
fn loop_defaults_follow_rt_app() {
    // With phases: task loop defaults to forever, phase loop to 1; -1 is forever.
    let text = r#"{ "tasks": { "t": { "delay": 7, "phases": { "p": { "loop": -1, "run": 1 } } } } }"#;
    assert_eq!(
        ops(text),
        [
            sleep_us(7),
            run_us(1),
            Op::Loop { target: 1, slot: 0, count: FOREVER },
            Op::Loop { target: 1, slot: 1, count: FOREVER },
            Op::Exit
        ]
    );
    // Without phases and without loop: forever.
    assert_eq!(
        ops(r#"{ "tasks": { "t": { "run": 1 } } }"#),
        [run_us(1), Op::Loop { target: 0, slot: 0, count: FOREVER }, Op::Exit]
    );
    // Without phases, `loop: 1` runs the events once.
    assert_eq!(ops(r#"{ "tasks": { "t": { "loop": 1, "run": 1 } } }"#), [run_us(1), Op::Exit]);
    // A task loop of 0 runs no phase at all.
    let text = r#"{ "tasks": { "t": { "loop": 0, "delay": 5, "phases": { "p": { "run": 1 } } } } }"#;
    assert_eq!(ops(text), [sleep_us(5), Op::Exit]);
}

#[test]
fn scheduling_attributes() {
    let text = r#"{
        "global": { "default_policy": "SCHED_BATCH" },
        "tasks": {
            "a": { "priority": -5, "dl-runtime": 300, "cpus": [3, 1, 3], "run": 1 },
            "b": { "policy": "SCHED_OTHER", "priority": 19, "dl-runtime": 20, "run": 1 },
            "c": { "policy": "SCHED_OTHER", "dl-runtime": 500000, "run": 1 },
            "d": { "policy": "SCHED_IDLE", "priority": 7, "dl-runtime": 300, "run": 1 },
            "e": { "runtime": 2000 },
            "f": { "runtime": 2000, "loop": -1, "phases": { "p": { "run": 1 } } }
        }
    }"#;
    let app = parse(text);
    let attrs: Vec<_> = app.tasks.iter().map(|t| (t.policy, t.nice, t.slice_ns, t.cpus.clone())).collect();
    assert_eq!(
        attrs,
        [
            (Policy::Batch, -5, Some(300_000), Some(vec![1, 3])),
            // dl-runtime is clamped to the kernel's 0.1 ms .. 100 ms.
            (Policy::Normal, 19, Some(100_000), None),
            (Policy::Normal, 0, Some(100_000_000), None),
            // sched_setattr() ignores nice and slice for SCHED_IDLE.
            (Policy::Idle, 0, None, None),
            // The legacy task-level "runtime" doubles as dl-runtime, as in rt-app.
            (Policy::Batch, 0, Some(2_000_000), None),
            (Policy::Batch, 0, Some(2_000_000), None),
        ]
    );
    assert_eq!(app.tasks[4].ops, [run_us(2000), Op::Loop { target: 0, slot: 0, count: FOREVER }, Op::Exit]);
    assert_eq!(app.tasks[5].ops, [run_us(1), Op::Loop { target: 0, slot: 0, count: FOREVER }, Op::Exit]);
    let spec: &TaskSpec = &app.tasks[0];
    assert_eq!((spec.start_ns, spec.timer_slack_ns), (0, 50_000));
}

#[test]
fn phase_priority_changes_nice_only_when_it_differs() {
    let text = r#"{ "tasks": { "t": { "priority": 2, "loop": 2, "phases": {
        "same": { "priority": 2, "run": 1 },
        "up": { "priority": -3, "run": 2 },
        "keep": { "run": 3 },
        "down": { "priority": 4, "run": 4 } } } } }"#;
    // The second pass starts at nice 4, so "same" must set 2 again.
    assert_eq!(
        ops(text),
        [
            Op::SetNice { nice: 2 },
            run_us(1),
            Op::SetNice { nice: -3 },
            run_us(2),
            run_us(3),
            Op::SetNice { nice: 4 },
            run_us(4),
            Op::Loop { target: 0, slot: 0, count: 2 },
            Op::Exit
        ]
    );
    let text = r#"{ "tasks": { "t": { "loop": 2, "phases": {
        "a": { "priority": 0, "run": 1 }, "b": { "priority": 5, "run": 2 }, "c": { "priority": 0, "run": 3 } } } } }"#;
    assert_eq!(
        ops(text),
        [
            run_us(1),
            Op::SetNice { nice: 5 },
            run_us(2),
            Op::SetNice { nice: 0 },
            run_us(3),
            Op::Loop { target: 0, slot: 0, count: 2 },
            Op::Exit
        ]
    );
}

#[test]
fn phase_priority_of_idle_task_is_checked_and_ignored() {
    let text = r#"{ "tasks": { "t": { "policy": "SCHED_IDLE", "loop": 1, "phases": {
        "a": { "priority": 5, "run": 1 } } } } }"#;
    assert_eq!(ops(text), [run_us(1), Op::Exit]);
}

#[test]
fn timers_get_one_slot_per_ref() {
    let text = r#"{ "tasks": { "t": { "loop": 1, "phases": {
        "p0": { "run": 1, "timer": { "ref": "unique", "period": 100 } },
        "p1": { "run": 2, "timer": { "ref": "other", "period": 200, "mode": "relative" },
                "timer": { "ref": "unique", "period": 300, "mode": "absolute" } } } } } }"#;
    let app = parse(text);
    let task = &app.tasks[0];
    assert_eq!(
        task.ops,
        [
            run_us(1),
            // A ref is absolute if any of its uses says so, as rt-app's timer resource is.
            Op::Timer { slot: 0, period_ns: 100_000, absolute: true },
            run_us(2),
            Op::Timer { slot: 1, period_ns: 200_000, absolute: false },
            Op::Timer { slot: 0, period_ns: 300_000, absolute: true },
            Op::Exit
        ]
    );
    assert_eq!(task.nr_timers, 2);
}

#[test]
fn global_duration() {
    let duration = |g: &str| parse(&format!(r#"{{ {g} "tasks": {{ "t": {{ "run": 1 }} }} }}"#)).duration_ns;
    assert_eq!(duration(""), None);
    assert_eq!(duration(r#""global": { "duration": -1 },"#), None);
    assert_eq!(duration(r#""global": { "duration": 0 },"#), None);
    assert_eq!(
        duration(r#""global": { "duration": 10, "calibration": 123, "ftrace": "main,task" },"#),
        Some(10_000_000_000)
    );
    let ignored = r#""global": { "duration": 1, "calibration": "CPU3", "logdir": "./", "log_basename": "x",
        "log_size": "file", "lock_pages": false, "ftrace": true, "gnuplot": false, "pi_enabled": false,
        "cumulative_slack": true, "io_device": "/dev/null", "mem_buffer_size": 4096 },"#;
    assert_eq!(duration(ignored), Some(1_000_000_000));
}

#[test]
fn syntax_errors_have_line_and_column() {
    check_err("{\n  \"tasks\": {\n    \"t\": { \"run\" 10 }\n  }\n}", "t.json:3:18: invalid JSON: expected `:`");
    check_err("{ \"tasks\": {} ", "t.json:1:14: invalid JSON: EOF while parsing an object");
    check_err("{} x", "t.json:1:4: invalid JSON: trailing characters");
    check_err("{\n /* never closed\n}", "t.json:2:2: invalid JSON: unterminated /* comment");
}

#[test]
fn unknown_keys_are_errors() {
    check_err(
        "{ \"tasks\": {\n  \"t\": {\n    \"run\": 1,\n    \"prio\": 3 } } }",
        "t.json:4:5: tasks.t.prio: unknown task property or event `prio` (expected instance, loop, \
         delay, policy, priority, cpus, dl-runtime, dl-period, dl-deadline, phases, or an event \
         (run, runtime, sleep, timer, yield, …))",
    );
    check_err(
        r#"{ "tasks": { "t": { "phases": { "p1": { "run": 1, "spin": 2 } } } } }"#,
        "t.json:1:51: tasks.t.phases.p1.spin: unknown phase property or event `spin` (expected loop, \
         priority, or an event (run, runtime, sleep, timer, yield, …))",
    );
    check_err(
        r#"{ "global": { "verbose": true }, "tasks": { "t": { "run": 1 } } }"#,
        "t.json:1:15: global.verbose: unknown global setting `verbose` (expected duration, \
         calibration, default_policy, pi_enabled, lock_pages, logdir, log_basename, log_size, \
         ftrace, gnuplot, io_device, mem_buffer_size, cumulative_slack, frag)",
    );
    check_err(
        r#"{ "tasks": { "t": { "timer": { "ref": "a", "period": 5, "phase": 1 } } } }"#,
        "t.json:1:57: tasks.t.timer.phase: unknown timer field `phase` (expected ref, period, mode)",
    );
    check_err(
        r#"{ "task": {} }"#,
        "t.json:1:3: task: unknown top-level key `task` (expected global, tasks, resources)",
    );
}

#[test]
fn unsupported_features_are_errors() {
    check_err(
        r#"{ "tasks": { "t": { "phases": { "p1": { "run": 1, "lock": "m", "unlock": "m" } } } } }"#,
        "t.json:1:51: tasks.t.phases.p1.lock: event `lock` is not supported yet (mutexes are not modelled)",
    );
    check_err(
        r#"{ "tasks": { "t": { "run": 1, "sem_wait1": "s" } } }"#,
        "t.json:1:31: tasks.t.sem_wait1: event `sem_wait` is not supported yet (semaphores are not modelled)",
    );
    check_err(
        r#"{ "tasks": { "t": { "policy": "SCHED_FIFO", "run": 1 } } }"#,
        "t.json:1:21: tasks.t.policy: policy `SCHED_FIFO` is not supported yet (schedlab simulates the fair class only)",
    );
    check_err(
        r#"{ "tasks": { "t": { "phases": { "p": { "cpus": [0], "run": 1 } } } } }"#,
        "t.json:1:40: tasks.t.phases.p.cpus: per-phase `cpus` is not supported yet (a task's policy, \
         affinity and slice are fixed for its life in schedlab; set them at task level)",
    );
    check_err(
        r#"{ "tasks": { "t": { "util_max": 512, "run": 1 } } }"#,
        "t.json:1:21: tasks.t.util_max: `util_max` is not supported yet (uclamp, task groups and NUMA binding are not modelled)",
    );
    check_err(
        r#"{ "tasks": { "t": { "dl-runtime": 500, "phases": { "p": { "priority": 3, "run": 1 } } } } }"#,
        "t.json:1:59: tasks.t.phases.p.priority: per-phase `priority` in a task with `dl-runtime` is \
         not supported yet (rt-app either resets the slice at such a nice change (before its commit \
         2ac2e0a) or ignores the change (since), and neither is modelled)",
    );
    let err = parse_rtapp(r#"{ "tasks": { "t": { "barrier": "b" } } }"#, "t.json").unwrap_err();
    assert!(matches!(err, RtAppError::Unsupported { .. }));
    assert_eq!(err.location().map(|at| at.path.as_str()), Some("tasks.t.barrier"));
}

#[test]
fn invalid_values_are_errors() {
    check_err(
        r#"{ "tasks": { "t": { "run": -5 } } }"#,
        "t.json:1:21: tasks.t.run: a duration in µs must be in 0..=2147483647, found -5",
    );
    check_err(
        r#"{ "tasks": { "t": { "sleep": 1.5 } } }"#,
        "t.json:1:21: tasks.t.sleep: a duration in µs must be an integer, found 1.5",
    );
    check_err(
        r#"{ "tasks": { "t": { "run": "10" } } }"#,
        "t.json:1:21: tasks.t.run: expected a duration in µs (an integer), found a string",
    );
    check_err(
        r#"{ "tasks": { "t": { "priority": 20, "run": 1 } } }"#,
        "t.json:1:21: tasks.t.priority: a nice value must be in -20..=19, found 20",
    );
    check_err(
        "{ \"tasks\": { \"t\": {\n \"loop\": 2,\n \"run\": 1,\n \"loop\": 3 } } }",
        "t.json:4:2: tasks.t.loop: `loop` is repeated (first at line 2)",
    );
    check_err(
        r#"{ "tasks": { "t": { "run": 1, "phases": { "p": { "run": 1 } } } } }"#,
        "t.json:1:21: tasks.t.run: rt-app ignores events next to `phases`; move them into a phase",
    );
    check_err(
        r#"{ "tasks": { "t": { "phases": { "p": { "loop": 0, "run": 1 } } } } }"#,
        "t.json:1:40: tasks.t.phases.p.loop: a phase loop count must be at least 1 or -1 (forever), \
         found 0 (rt-app would loop forever)",
    );
    check_err(
        r#"{ "tasks": { "t": { "loop": 1 } } }"#,
        "t.json:1:14: tasks.t: no events: rt-app needs at least one event (run, sleep, timer, …)",
    );
    check_err(
        r#"{ "tasks": { "t": { "timer": { "ref": "a" } } } }"#,
        "t.json:1:21: tasks.t.timer: a timer needs a period > 0 µs",
    );
    check_err(r#"{ "tasks": { "t": { "cpus": [], "run": 1 } } }"#, "t.json:1:21: tasks.t.cpus: the CPU list is empty");
    check_err(
        r#"{ "tasks": { "t": { "cpus": [0, -1], "run": 1 } } }"#,
        "t.json:1:21: tasks.t.cpus: cpus[1]: expected a CPU number, found -1",
    );
    check_err(
        r#"{ "tasks": { "t": { "run": 0 } } }"#,
        "t.json:1:14: tasks.t: this loops forever without using any time (every event is `run: 0`)",
    );
    check_err(r#"{ "global": {} }"#, "t.json: tasks: missing: rt-app needs a `tasks` object");
    check_err(r#"[1]"#, "t.json: (document): the document must be an object, found an array");
    check_err(
        r#"{ "tasks": { "t": { "run": 1 }, "t": { "run": 2 } } }"#,
        "t.json:1:33: tasks.t: task `t` is defined twice (first at line 1)",
    );
    check_err(
        r#"{ "global": { "default_policy": "SCHED_NORMAL" }, "tasks": { "t": { "run": 1 } } }"#,
        "t.json:1:15: global.default_policy: unknown policy `SCHED_NORMAL` (expected SCHED_OTHER, SCHED_BATCH or SCHED_IDLE)",
    );
}

#[test]
fn odd_keys_are_quoted_in_paths() {
    check_err(
        r#"{ "tasks": { "my task.1": { "lock": "m" } } }"#,
        "t.json:1:29: tasks.\"my task.1\".lock: event `lock` is not supported yet (mutexes are not modelled)",
    );
}

#[test]
fn load_reports_the_path() {
    let err = load_rtapp(Path::new("/nonexistent/rt-app.json")).unwrap_err();
    assert!(matches!(err, RtAppError::Io { .. }));
    assert!(err.to_string().starts_with("/nonexistent/rt-app.json: cannot read: "), "{err}");
}

#[test]
fn example_files_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rtapp");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    let names: Vec<_> = paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for expected in ["mixed.json", "nice-hogs.json", "periodic.json"] {
        assert!(names.iter().any(|n| n == expected), "{expected} missing from {}", dir.display());
    }
    for path in &paths {
        let app = load_rtapp(path).unwrap_or_else(|err| panic!("{err}"));
        assert!(!app.tasks.is_empty(), "{}", path.display());
    }
    let hogs = load_rtapp(&dir.join("nice-hogs.json")).unwrap();
    assert_eq!(hogs.duration_ns, Some(10_000_000_000));
    let nices: Vec<i32> = hogs.tasks.iter().map(|t| t.nice).collect();
    assert_eq!(nices, [0, 5, -5]);
    let mixed = load_rtapp(&dir.join("mixed.json")).unwrap();
    assert!(mixed.tasks.iter().filter(|t| t.slice_ns == Some(300_000)).count() == 3);
}
