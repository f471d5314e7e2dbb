//! The seccomp exit trap on the real rt-tests `hackbench`: every worker the tool forks or
//! creates is read once, at its exit, and the readings add up to what the kernel folds into
//! `getrusage(RUSAGE_CHILDREN)` (crates/native/src/exit_trap.rs says how the two differ).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use native::tools::CounterSource;
use native::{NativeOptions, NativeRun, run_native};

fn argv(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// Why the test cannot run here: no rt-tests hackbench, or no seccomp user notifications.
fn skip() -> Option<String> {
    if native::tools::find_program("hackbench", &["/usr/sbin"]).is_none() {
        return Some("rt-tests hackbench is not installed (Debian package rt-tests)".into());
    }
    native::exit_trap::unavailable()
}

/// `getrusage(RUSAGE_CHILDREN)` is the whole test process's: one run at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(flags: &str) -> Option<NativeRun> {
    if let Some(why) = skip() {
        eprintln!("skipped: {why}");
        return None;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    Some(run_native(&argv(flags), &NativeOptions::default()).unwrap())
}

/// Every task once (the workers and the tool's main), all named `hackbench`, each with at
/// least the switch into the notification wait (or, for the main, its final one).
fn check_every_task_read_once(r: &NativeRun, workers: usize) {
    assert!(r.runner.starts_with("rt-tests hackbench"), "{}", r.runner);
    assert_eq!(r.counters, Some(CounterSource::ExitTrap { exits: workers + 1 }), "{:?}", r.counters);
    assert_eq!(r.tasks.len(), workers + 1, "{:?}", r.tasks);
    let mut pids: Vec<u32> = r.tasks.iter().map(|t| t.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids.len(), workers + 1, "a task read twice: {:?}", r.tasks);
    for t in &r.tasks {
        assert_eq!(t.comm, "hackbench");
        assert!(t.nr_voluntary_switches >= 1, "{t:?}");
        assert_eq!(t.nr_switches, t.nr_voluntary_switches + t.nr_involuntary_switches, "{t:?}");
    }
    // The per-task readings are the run's counters (no whole-tree substitute).
    assert_eq!(r.switch_totals, None);
    // The tool's own `Time:` line, parsed (hackbench prints milliseconds: the runs below are
    // long enough, 2-5 ms here, not to print 0.000, which 50 loops of 5 fds sometimes did).
    assert!(r.metric > 0.0, "{}", r.metric);
}

fn sums(r: &NativeRun) -> (u64, u64) {
    (r.tasks.iter().map(|t| t.nr_voluntary_switches).sum(), r.tasks.iter().map(|t| t.nr_involuntary_switches).sum())
}

/// Threads: an exiting thread is released (its `nvcsw`/`nivcsw` added to its process's) in
/// `exit_notify()`, after the trap's reading in the notification wait; the main is read as a
/// zombie after its final switch, as its reaping sees it. Between the reading and the release a
/// thread can still switch (a preemption, or a sleep on a lock in `do_exit()`: seen as 1 of 3
/// and 7 of 81 voluntary switches more in rusage on 6.18), so rusage is at least the readings
/// and at most one switch of each kind per worker more.
#[test]
fn hackbench_threads_are_read_at_their_exits_and_add_up_to_rusage() {
    let Some(r) = run("hackbench -T -p -g 2 -f 5 -l 200") else { return };
    check_every_task_read_once(&r, 20);
    let (v, i) = sums(&r);
    let (rv, ri) = r.rusage_switches.unwrap();
    assert!(rv >= v && rv - v <= 20, "voluntary: rusage {rv}, per task {v}");
    assert!(ri >= i && ri - i <= 20, "involuntary: rusage {ri}, per task {i}");
}

/// Processes: each worker is added to rusage when rt-tests' main reaps it, normally after its
/// final switch (one voluntary switch more than the trap read). `do_exit()` can add more of
/// either kind: a sleep on a lock (as for threads, above) is a voluntary one, and under preempt
/// none the exit path reschedules at each of its `cond_resched()` points (unmapping the `mm`,
/// closing the files), where a busy host preempts it. Seen on 6.18: 11 voluntary and, in
/// another run, 11 involuntary surplus switches for 10 workers (once each in about 30 runs),
/// hence up to two of each kind per worker.
#[test]
fn hackbench_processes_are_read_at_their_exits() {
    let Some(r) = run("hackbench -p -g 1 -f 5 -l 400") else { return };
    let workers = 10;
    check_every_task_read_once(&r, workers);
    let (v, i) = sums(&r);
    let (rv, ri) = r.rusage_switches.unwrap();
    let bound = 2 * workers as u64;
    assert!(rv >= v && rv - v <= bound, "voluntary: rusage {rv}, per task {v}");
    assert!(ri >= i && ri - i <= bound, "involuntary: rusage {ri}, per task {i}");
}
