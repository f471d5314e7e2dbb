//! The simulator's progress observer: called every N events with the simulated time, and
//! unable to change the run.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::sync::{Arc, Mutex};

use sim::config::Limits;
use sim::engine::{Sim, SimSetup};

fn setup() -> SimSetup {
    let argv: Vec<String> = ["pipe", "-l", "20000"].map(String::from).to_vec();
    let wl = lab::runner::resolve_workload_on(&argv, &[], 2).unwrap();
    SimSetup {
        sched: sim::kernel::preset("v7.3").unwrap().config(),
        topology: sim::topology::Topology::smp(2),
        seed: 1,
        limits: Limits { max_events: 10_000_000, max_time_ns: 10_000_000_000 },
        tasks: wl.tasks,
        objects: wl.objects,
        check_invariants: false,
    }
}

#[test]
fn observer_sees_progress_and_changes_nothing() {
    let plain = Sim::new(setup()).unwrap().run().unwrap();
    let seen: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let mut sim = Sim::new(setup()).unwrap();
    let log = seen.clone();
    sim.set_observer(1000, Box::new(move |now, events| log.lock().unwrap().push((now, events))));
    let observed = sim.run().unwrap();
    assert_eq!(format!("{plain:?}"), format!("{observed:?}"), "the observer changed the run");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len() as u64, observed.events / 1000, "one call per 1000 events");
    assert!(seen.iter().enumerate().all(|(i, &(_, e))| e == (i as u64 + 1) * 1000));
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "simulated time never goes back");
    assert!(seen.last().unwrap().0 <= observed.simulated_ns);
}
