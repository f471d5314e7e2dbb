//! `schedlab-fuzz`: long fuzzing and swarm sessions (the CI slice is `tests/ci.rs`).
//!
//! ```text
//! schedlab-fuzz fuzz [--seconds N] [--target NAME] [--seed S]   # every target, N s each
//! schedlab-fuzz swarm [--seeds N] [--first S] [--jobs J]        # N random simulations
//! ```
//! Findings are written to `fuzz-findings/` (inputs) and printed; the exit code is 1 if any.

use std::time::{Duration, Instant};

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    match args.iter().position(|a| a == name) {
        Some(i) => match args.get(i + 1).and_then(|v| v.parse().ok()) {
            Some(v) => v,
            None => {
                eprintln!("schedlab-fuzz: {name} needs a value");
                std::process::exit(2);
            }
        },
        None => default,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let _quiet = fuzz::QuietPanics::new();
    let failed = match args.first().map(String::as_str) {
        Some("fuzz") => run_fuzz(&args),
        Some("swarm") => run_swarm(&args),
        _ => {
            eprintln!(
                "usage: schedlab-fuzz fuzz [--seconds N] [--target NAME] [--seed S] | swarm [--seeds N] [--first S] [--jobs J]"
            );
            std::process::exit(2);
        }
    };
    std::process::exit(i32::from(failed));
}

fn run_fuzz(args: &[String]) -> bool {
    let seconds: f64 = arg(args, "--seconds", 60.0);
    let seed: u64 = arg(args, "--seed", 1);
    let only: String = arg(args, "--target", String::new());
    let targets: Vec<_> = fuzz::targets::all().into_iter().filter(|t| only.is_empty() || t.name == only).collect();
    if targets.is_empty() {
        eprintln!("schedlab-fuzz: no target `{only}`");
        std::process::exit(2);
    }
    let mut total = 0;
    let mut findings = 0;
    let started = Instant::now();
    for t in &targets {
        let st = fuzz::fuzz(t, seed, Duration::from_secs_f64(seconds), u64::MAX);
        println!(
            "{:<10} {:>10} execs in {:>7.1} s ({:>8.0}/s): {} accepted, {} refused, {} findings",
            t.name,
            st.execs,
            st.elapsed.as_secs_f64(),
            st.execs as f64 / st.elapsed.as_secs_f64(),
            st.ok,
            st.errors,
            st.findings.len()
        );
        total += st.execs;
        findings += st.findings.len();
        let _ = std::fs::create_dir_all("fuzz-findings");
        for (i, f) in st.findings.iter().enumerate().take(20) {
            let path = format!("fuzz-findings/{}-{i}", f.target);
            let _ = std::fs::write(&path, &f.input);
            println!("  {path}: {}", f.what);
        }
    }
    println!("total {total} execs in {:.1} s, {findings} findings", started.elapsed().as_secs_f64());
    findings > 0
}

fn run_swarm(args: &[String]) -> bool {
    let seeds: u64 = arg(args, "--seeds", 1000);
    let first: u64 = arg(args, "--first", 1);
    let jobs: u64 = arg(args, "--jobs", 1).max(1);
    let started = Instant::now();
    // Seeds are split into `jobs` interleaved-free blocks, one thread each.
    let per = seeds.div_ceil(jobs);
    let results: Vec<fuzz::swarm::SwarmStats> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs)
            .map(|j| {
                let start = first + j * per;
                let count = per.min((first + seeds).saturating_sub(start));
                s.spawn(move || fuzz::swarm::swarm(start, count, None))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let (mut n, mut ran, mut refused, mut events, mut failures) = (0, 0, 0, 0, Vec::new());
    for r in results {
        n += r.seeds;
        ran += r.ran;
        refused += r.refused;
        events += r.events;
        failures.extend(r.failures);
    }
    println!(
        "swarm: {n} seeds ({first}..{}) in {:.1} s: {ran} ran clean ({events} events, invariants checked after each, re-run identical), {refused} refused as input, {} failures",
        first + seeds,
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    for f in &failures {
        println!("  seed {}: {}\n    shrunk: {:?}", f.scenario.seed, f.what, f.scenario);
    }
    !failures.is_empty()
}
