//! A per-CPU timeline excerpt: which task ran on which CPU during a short window, from a traced
//! re-run that stops at the end of the window (so it costs little whatever the run's length).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use sim::engine::{Sim, SimSetup};
use sim::trace::{TraceEvent, TraceSink};

/// One stretch of a task on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    pub cpu: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub pid: u32,
}

/// The tasks that ran on each CPU in `[start_ns, end_ns)`.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// Which run this is (variant, workload, seed).
    pub label: String,
    pub nr_cpus: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Ordered by CPU, then start.
    pub slices: Vec<Slice>,
    /// Task names by pid.
    pub comms: BTreeMap<u32, String>,
}

impl Timeline {
    /// Busy time per CPU inside the window.
    pub fn busy_ns(&self) -> Vec<u64> {
        let mut busy = vec![0; self.nr_cpus as usize];
        for s in &self.slices {
            busy[s.cpu as usize] += s.end_ns - s.start_ns;
        }
        busy
    }

    /// Pids in order of total time in the window (most first, then by pid).
    pub fn tasks_by_time(&self) -> Vec<(u32, u64)> {
        let mut per: BTreeMap<u32, u64> = BTreeMap::new();
        for s in &self.slices {
            *per.entry(s.pid).or_default() += s.end_ns - s.start_ns;
        }
        let mut v: Vec<(u32, u64)> = per.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

#[derive(Default)]
struct State {
    start: u64,
    end: u64,
    /// What runs on each CPU, and since when (pid 0 = idle).
    running: Vec<(u32, u64)>,
    slices: Vec<Slice>,
    comms: BTreeMap<u32, String>,
}

impl State {
    fn close(&mut self, cpu: u32, pid: u32, since: u64, until: u64) {
        let (a, b) = (since.max(self.start), until.min(self.end));
        if pid != 0 && a < b {
            self.slices.push(Slice { cpu, start_ns: a, end_ns: b, pid });
        }
    }
}

struct GanttSink(Rc<RefCell<State>>);

impl TraceSink for GanttSink {
    fn event(&mut self, ts_ns: u64, cpu: u32, ev: &TraceEvent<'_>) {
        let TraceEvent::Switch { prev, next, .. } = ev else { return };
        let mut st = self.0.borrow_mut();
        if ts_ns >= st.end {
            return;
        }
        let (pid, since) = st.running[cpu as usize];
        // The tracepoint's prev is what the CPU ran; trust it over our bookkeeping.
        let pid = if prev.pid != 0 { prev.pid } else { pid };
        st.close(cpu, pid, since, ts_ns);
        st.running[cpu as usize] = (next.pid, ts_ns);
        if next.pid != 0 && !st.comms.contains_key(&next.pid) {
            st.comms.insert(next.pid, next.comm.to_string());
        }
    }
}

/// Re-runs `setup` up to `start_ns + len_ns` with a trace sink and returns the timeline of the
/// window `[start_ns, start_ns + len_ns)` (shorter if every task exits first).
pub fn trace_timeline(mut setup: SimSetup, label: String, start_ns: u64, len_ns: u64) -> Result<Timeline, String> {
    let nr_cpus = setup.topology.nr_cpus() as u32;
    let end = start_ns.saturating_add(len_ns);
    setup.limits.max_time_ns = setup.limits.max_time_ns.min(end);
    setup.check_invariants = false;
    let state = Rc::new(RefCell::new(State {
        start: start_ns,
        end,
        running: vec![(0, 0); nr_cpus as usize],
        ..State::default()
    }));
    let sim = Sim::new(setup)?;
    let (result, sink) = sim.run_traced(Box::new(GanttSink(Rc::clone(&state))));
    drop(sink);
    let report = result.map_err(|e| e.to_string())?;
    let mut st = Rc::try_unwrap(state).map_err(|_| "trace sink still shared".to_string())?.into_inner();
    let stop = report.simulated_ns.min(end);
    for cpu in 0..nr_cpus {
        let (pid, since) = st.running[cpu as usize];
        st.close(cpu, pid, since, stop);
    }
    st.slices.sort_by_key(|s| (s.cpu, s.start_ns));
    Ok(Timeline { label, nr_cpus, start_ns, end_ns: stop.max(start_ns), slices: st.slices, comms: st.comms })
}

/// Where the excerpt starts for a run of `simulated_ns`: 10 ms in (past start-up), or a quarter
/// of the way into shorter runs.
pub fn default_start_ns(simulated_ns: u64) -> u64 {
    (simulated_ns / 4).min(10_000_000)
}
