//! `schedlab explain`'s engine: where two variants first decide differently, and why.
//!
//! Both variants run the same workload on the same seed, each in its own thread with a trace
//! sink that turns the trace stream into *decision records*: wakeup-preemption verdicts (with
//! their reason and the EEVDF state of curr and wakee), wakeup placements (with the rule that
//! chose the CPU), context switches and migrations. The records go, in batches over bounded
//! channels, to a comparer that walks both streams in lockstep, so memory stays bounded however
//! long the runs are: it keeps only a ring of the last few records. The first index where the
//! records differ (time, CPU, kind, tasks, outcome or reason; EEVDF state is shown, not
//! compared) is the divergence. After it both sinks stop recording and the runs finish
//! untraced, for their metric and counters.
//!
//! The output is deterministic: the comparison is by index and never depends on which thread
//! runs ahead.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use sim::config::Limits;
use sim::engine::{Sim, SimSetup};
use sim::fair::WakeupReason;
use sim::features::Feature;
use sim::kernel::Variant;
use sim::select::SelectReason;
use sim::trace::{EevdfState, PrevState, TaskRef, TraceEvent, TraceSink};

use sim::topology::Topology;

use crate::LabError;
use crate::runner::{Better, CounterRecord, ResolvedWorkload};

// ---- decision records ----------------------------------------------------------------------

/// One decision of the scheduler, with tasks by pid (0 is a CPU's idle task).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Preempt {
        curr: u32,
        wakee: u32,
        preempt: bool,
        reason: WakeupReason,
        curr_state: EevdfState,
        wakee_state: EevdfState,
    },
    Place {
        task: u32,
        prev_cpu: u32,
        target_cpu: u32,
        sync: bool,
        reason: SelectReason,
    },
    Switch {
        prev: u32,
        prev_state: PrevState,
        next: u32,
    },
    Migrate {
        task: u32,
        orig: u32,
        dest: u32,
    },
}

#[derive(Clone, Copy, Debug)]
struct Rec {
    /// Position in the decision stream, from 1.
    seq: u64,
    ts: u64,
    cpu: u32,
    kind: Kind,
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Preempt { .. } => "wakeup-preempt",
            Kind::Place { .. } => "placement",
            Kind::Switch { .. } => "switch",
            Kind::Migrate { .. } => "migrate",
        }
    }

    /// Equal as decisions: EEVDF state is not compared.
    fn same(&self, o: &Kind) -> bool {
        match (self, o) {
            (
                Kind::Preempt { curr, wakee, preempt, reason, .. },
                Kind::Preempt { curr: c2, wakee: w2, preempt: p2, reason: r2, .. },
            ) => curr == c2 && wakee == w2 && preempt == p2 && reason == r2,
            _ => self == o,
        }
    }
}

impl Rec {
    fn same(&self, o: &Rec) -> bool {
        self.ts == o.ts && self.cpu == o.cpu && self.kind.same(&o.kind)
    }
}

const BATCH: usize = 4096;

/// Streams decision records to the comparer until told to stop.
struct StreamSink {
    tx: Option<SyncSender<Vec<Rec>>>,
    buf: Vec<Rec>,
    seq: u64,
    stop: Arc<AtomicBool>,
    comms: BTreeMap<u32, String>,
    comms_out: Arc<Mutex<BTreeMap<u32, String>>>,
}

impl StreamSink {
    fn flush(&mut self) {
        if let Some(tx) = &self.tx
            && !self.buf.is_empty()
            && tx.send(std::mem::take(&mut self.buf)).is_err()
        {
            self.tx = None;
        }
    }

    fn pid(&mut self, t: &TaskRef<'_>) -> u32 {
        if t.pid != 0 && !self.comms.contains_key(&t.pid) {
            self.comms.insert(t.pid, t.comm.to_string());
        }
        t.pid
    }
}

impl TraceSink for StreamSink {
    fn event(&mut self, ts_ns: u64, cpu: u32, ev: &TraceEvent<'_>) {
        if self.tx.is_none() {
            return;
        }
        if self.stop.load(Ordering::Relaxed) {
            self.buf.clear();
            self.tx = None;
            return;
        }
        let kind = match *ev {
            TraceEvent::WakeupPreempt { curr, wakee, preempt, reason, curr_state, wakee_state } => Kind::Preempt {
                curr: self.pid(&curr),
                wakee: self.pid(&wakee),
                preempt,
                reason,
                curr_state,
                wakee_state,
            },
            TraceEvent::Placement { task, prev_cpu, target_cpu, sync, reason } => {
                Kind::Place { task: self.pid(&task), prev_cpu, target_cpu, sync, reason }
            }
            TraceEvent::Switch { prev, prev_state, next } => {
                Kind::Switch { prev: self.pid(&prev), prev_state, next: self.pid(&next) }
            }
            TraceEvent::Migrate { task, orig_cpu, dest_cpu } => {
                Kind::Migrate { task: self.pid(&task), orig: orig_cpu, dest: dest_cpu }
            }
            _ => return,
        };
        self.seq += 1;
        self.buf.push(Rec { seq: self.seq, ts: ts_ns, cpu, kind });
        if self.buf.len() >= BATCH {
            self.flush();
        }
    }
}

impl Drop for StreamSink {
    fn drop(&mut self) {
        if !self.stop.load(Ordering::Relaxed) {
            self.flush();
        }
        self.tx = None;
        let mut out = self.comms_out.lock().unwrap_or_else(|p| p.into_inner());
        out.append(&mut self.comms);
    }
}

/// Reads one stream record by record.
struct Reader {
    rx: Receiver<Vec<Rec>>,
    batch: std::vec::IntoIter<Rec>,
}

impl Reader {
    fn next(&mut self) -> Option<Rec> {
        loop {
            if let Some(r) = self.batch.next() {
                return Some(r);
            }
            self.batch = self.rx.recv().ok()?.into_iter();
        }
    }
}

/// What a finished run reports.
struct Outcome {
    metric: f64,
    counters: CounterRecord,
    latency_ns: [u64; 4],
    simulated_ns: u64,
}

struct Run {
    variant: Variant,
    comms: Arc<Mutex<BTreeMap<u32, String>>>,
}

// ---- the comparison --------------------------------------------------------------------------

/// What `explain` compares: two variants of one workload on one machine and seed.
#[derive(Clone, Debug)]
pub struct Explain {
    /// The base's full SPEC text (as shown in the header).
    pub base_spec: String,
    /// The variant's full SPEC text.
    pub variant_spec: String,
    pub base: Variant,
    pub variant: Variant,
    pub topology: Topology,
    /// Seed of both runs.
    pub seed: u64,
    /// Simulated ns when the workload sets no bound.
    pub duration_ns: u64,
    /// Events after which each run stops (a safety bound).
    pub max_events: u64,
    /// CPUs every workload task may run on.
    pub cpus: Option<Vec<u32>>,
    /// Benchmarks run beside the workload, each as its argv.
    pub background: Vec<Vec<String>>,
    /// Task-group options (`--autogroup`, `--cgroup`, `--cgroup-weight`) under the workload
    /// line's own.
    pub groups: crate::runner::GroupOptions,
    /// The workload and its own flags (as for `run`).
    pub workload: Vec<String>,
    /// Decisions of context shown before the divergence.
    pub context: usize,
    /// Decisions of each run shown after the divergence.
    pub after: usize,
    /// The command line that reproduces this comparison, shown in the header and in errors.
    pub reproduce: String,
}

/// The explanation as text: header, first divergence (or none), the EEVDF state, context, what
/// followed, and the consequences for the metric and counters. Bad input (workload, affinity)
/// is [`LabError::Input`]; a run that fails is [`LabError::Internal`] with the reproducer.
pub fn explain(req: &Explain) -> Result<String, LabError> {
    let (base_spec, var_spec) = (&req.base_spec, &req.variant_spec);
    let (base, variant) = (&req.base, &req.variant);
    let topo = &req.topology;
    let ncpus = topo.nr_cpus() as u32;
    let resolve = || -> Result<(ResolvedWorkload, SimSetup), LabError> {
        let mut wl =
            crate::runner::resolve_workload_on(&req.workload, &req.background, ncpus).map_err(LabError::Input)?;
        wl.group_options = req.groups.under(&wl.group_options);
        let (mut tasks, groups) = wl.grouped_tasks(base.config.sysctl.autogroup);
        if let Some(c) = &req.cpus {
            for t in &mut tasks {
                t.cpus = Some(c.clone());
            }
        }
        let setup = SimSetup {
            sched: base.config.clone(),
            topology: topo.clone(),
            seed: req.seed,
            limits: Limits { max_events: req.max_events, max_time_ns: wl.duration_ns.unwrap_or(req.duration_ns) },
            tasks,
            objects: wl.objects.clone(),
            check_invariants: false,
            groups,
        };
        Ok((wl, setup))
    };
    let runs =
        [Run { variant: base.clone(), comms: Arc::default() }, Run { variant: variant.clone(), comms: Arc::default() }];
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    let mut handles = Vec::new();
    let (better, metric_name) = {
        let (wl, _) = resolve()?;
        (wl.better, wl.metric_name.clone())
    };
    for r in &runs {
        let (wl, mut setup) = resolve()?;
        setup.sched = r.variant.config.clone();
        // Reject bad input (affinity, references) here, with exit code 2.
        drop(Sim::new(setup.clone()).map_err(LabError::Input)?);
        let (tx, rx) = sync_channel::<Vec<Rec>>(2);
        readers.push(Reader { rx, batch: Vec::new().into_iter() });
        let sink = StreamSink {
            tx: Some(tx),
            buf: Vec::with_capacity(BATCH),
            seq: 0,
            stop: Arc::clone(&stop),
            comms: BTreeMap::new(),
            comms_out: Arc::clone(&r.comms),
        };
        handles.push(std::thread::spawn(move || -> Result<Outcome, String> {
            let sim = Sim::new(setup)?;
            let (result, sink) = sim.run_traced(Box::new(sink));
            drop(sink);
            let report = result.map_err(|v| v.to_string())?;
            let lat = report.wakeup_latency.percentiles();
            Ok(Outcome {
                metric: (wl.metric)(&report),
                counters: CounterRecord::from(&report.counters),
                latency_ns: [lat.p50, lat.p90, lat.p99, lat.max],
                simulated_ns: report.simulated_ns,
            })
        }));
    }

    // Walk both streams in lockstep.
    let (Some(mut rb), Some(mut ra)) = (readers.pop(), readers.pop()) else {
        return Err(LabError::Internal("explain: internal error: the two variants' runs were not started".into()));
    };
    let mut context: VecDeque<Rec> = VecDeque::with_capacity(req.context + 1);
    let mut matched = 0u64;
    let mut last_ts = 0u64;
    let divergence = loop {
        match (ra.next(), rb.next()) {
            (None, None) => break None,
            (Some(x), Some(y)) if x.same(&y) => {
                matched += 1;
                last_ts = x.ts;
                if req.context > 0 {
                    if context.len() == req.context {
                        context.pop_front();
                    }
                    context.push_back(x);
                }
            }
            (x, y) => {
                let mut after = [Vec::new(), Vec::new()];
                for (i, rd) in [&mut ra, &mut rb].into_iter().enumerate() {
                    while after[i].len() < req.after {
                        match rd.next() {
                            Some(r) => after[i].push(r),
                            None => break,
                        }
                    }
                }
                break Some((x, y, after));
            }
        }
    };
    stop.store(true, Ordering::Relaxed);
    drop(ra);
    drop(rb);
    let mut outcomes = Vec::new();
    for h in handles {
        let o = h.join().map_err(|_| LabError::Internal("a simulation thread panicked".into()))?;
        outcomes.push(o.map_err(|e| LabError::Internal(format!("{e}\nreproduce with: {}", req.reproduce)))?);
    }

    let comms: Vec<BTreeMap<u32, String>> =
        runs.iter().map(|r| r.comms.lock().unwrap_or_else(|p| p.into_inner()).clone()).collect();
    let mut out = String::new();
    let _ =
        writeln!(out, "# schedlab explain: {} on {}, seed {}", crate::words::join(&req.workload), topo.name, req.seed);
    let _ = writeln!(out, "# base:    {base_spec}");
    let _ = writeln!(out, "# variant: {var_spec}");
    let _ = writeln!(out, "# reproduce: {}", req.reproduce);
    let _ = writeln!(out);
    match &divergence {
        None => {
            let _ = writeln!(
                out,
                "No divergence: both runs made the same {matched} decisions (wakeup-preemption checks, placements, \
                 switches, migrations), the last at {}.",
                secs(last_ts)
            );
        }
        Some((x, y, after)) => {
            #[allow(clippy::expect_used, reason = "a divergence is recorded only where a side has a decision")]
            let first = x.or(*y).expect("one side has a record");
            let _ = writeln!(
                out,
                "First divergence: decision #{} at {} on CPU {} (the {matched} decisions before it are the same in both runs).",
                first.seq,
                secs(first.ts),
                first.cpu
            );
            if let (Some(x), Some(y)) = (x, y)
                && (x.ts != y.ts || x.cpu != y.cpu)
            {
                let _ = writeln!(
                    out,
                    "  (base: {} on CPU {}; variant: {} on CPU {})",
                    secs(x.ts),
                    x.cpu,
                    secs(y.ts),
                    y.cpu
                );
            }
            let _ = writeln!(out);
            for (i, (label, rec)) in [("base", x), ("variant", y)].into_iter().enumerate() {
                let run = &runs[i];
                match rec {
                    Some(r) => {
                        let _ = writeln!(out, "{label:<8} {}", describe(r, &comms[i]));
                        let _ = writeln!(out, "{:<8} why: {}", "", why(r, &run.variant));
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "{label:<8} no further decision: the run ended ({} simulated)",
                            secs(outcomes[i].simulated_ns)
                        );
                    }
                }
            }
            let states: Vec<(usize, &str, Rec)> = [(0, "base", *x), (1, "variant", *y)]
                .into_iter()
                .filter_map(|(i, l, r)| r.map(|r| (i, l, r)))
                .collect();
            if states.iter().any(|(_, _, r)| matches!(r.kind, Kind::Preempt { .. })) {
                let _ = writeln!(out);
                let _ = writeln!(
                    out,
                    "EEVDF state after the check (virtual ns, vruntime/deadline/vprot as s64; lag = V - vruntime, positive = owed service):"
                );
                let _ = writeln!(
                    out,
                    "  {:<8} {:<6} {:<22} {:>16} {:>16} {:>12} {:>8} {:>10} {:>16} {:>7} {:>5}",
                    "run",
                    "entity",
                    "task",
                    "vruntime",
                    "deadline",
                    "lag",
                    "eligible",
                    "slice",
                    "vprot",
                    "delayed",
                    "buddy"
                );
                for (idx, label, r) in &states {
                    let idx = *idx;
                    if let Kind::Preempt { curr, wakee, curr_state, wakee_state, .. } = r.kind {
                        for (ent, pid, s) in [("curr", curr, curr_state), ("wakee", wakee, wakee_state)] {
                            let _ = writeln!(
                                out,
                                "  {:<8} {:<6} {:<22} {:>16} {:>16} {:>12} {:>8} {:>10} {:>16} {:>7} {:>5}",
                                label,
                                ent,
                                task(pid, r.cpu, &comms[idx]),
                                s.vruntime as i64,
                                s.deadline as i64,
                                s.lag,
                                yes(s.eligible),
                                s.slice,
                                s.vprot as i64,
                                yes(s.delayed),
                                yes(s.buddy)
                            );
                        }
                    }
                }
            }
            let _ = writeln!(out);
            if context.is_empty() {
                let _ = writeln!(out, "Context: none (it is the first decision).");
            } else {
                let _ = writeln!(out, "Context: the {} decisions before it (the same in both runs):", context.len());
                for r in &context {
                    let _ = writeln!(out, "  #{:<8} {} CPU{:<3} {}", r.seq, secs(r.ts), r.cpu, describe(r, &comms[0]));
                }
            }
            let _ = writeln!(out);
            let _ = writeln!(out, "Then (the next decisions of each run):");
            for (i, label) in ["base", "variant"].into_iter().enumerate() {
                let _ = writeln!(out, "  {label}:");
                if after[i].is_empty() {
                    let _ = writeln!(out, "    (none)");
                }
                for r in &after[i] {
                    let _ =
                        writeln!(out, "    #{:<8} {} CPU{:<3} {}", r.seq, secs(r.ts), r.cpu, describe(r, &comms[i]));
                }
            }
        }
    }
    let _ = writeln!(out);
    consequences(&mut out, &metric_name, better, &outcomes[0], &outcomes[1], divergence.is_some());
    Ok(out)
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn secs(ns: u64) -> String {
    format!("{}.{:09} s", ns / 1_000_000_000, ns % 1_000_000_000)
}

fn task(pid: u32, cpu: u32, comms: &BTreeMap<u32, String>) -> String {
    if pid == 0 {
        return format!("<idle>/{cpu}");
    }
    format!("{}:{pid}", comms.get(&pid).map_or("?", String::as_str))
}

fn describe(r: &Rec, comms: &BTreeMap<u32, String>) -> String {
    let t = |pid| task(pid, r.cpu, comms);
    match r.kind {
        Kind::Preempt { curr, wakee, preempt, reason, .. } => format!(
            "{:<15} {} woken onto CPU {} while {} runs: {} [{}]",
            r.kind.name(),
            t(wakee),
            r.cpu,
            t(curr),
            if preempt { "PREEMPT" } else { "no preemption" },
            reason.name()
        ),
        Kind::Place { task: p, prev_cpu, target_cpu, sync, reason } => format!(
            "{:<15} {} ({}wakeup by CPU {}): prev CPU {prev_cpu} -> CPU {target_cpu} [{reason:?}]",
            r.kind.name(),
            t(p),
            if sync { "sync " } else { "" },
            r.cpu
        ),
        Kind::Switch { prev, prev_state, next } => format!(
            "{:<15} CPU {}: {} ({}) -> {}",
            r.kind.name(),
            r.cpu,
            t(prev),
            match prev_state {
                PrevState::Running | PrevState::Preempted => "preempted",
                PrevState::Sleeping => "sleeps",
                PrevState::Uninterruptible => "sleeps on a lock",
                PrevState::Dead => "exited",
            },
            t(next)
        ),
        Kind::Migrate { task: p, orig, dest } => format!("{:<15} {} CPU {orig} -> CPU {dest}", r.kind.name(), t(p)),
    }
}

/// `a` before `b` in wrapping u64 time (`(s64)(a - b) < 0`).
fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// The rule behind a decision, in words.
fn why(r: &Rec, v: &Variant) -> String {
    match r.kind {
        Kind::Preempt { preempt, reason, curr_state: c, wakee_state: w, .. } => wakeup_why(preempt, reason, &c, &w, v),
        Kind::Place { reason, .. } => select_why(reason),
        Kind::Switch { prev_state, .. } => match prev_state {
            PrevState::Running | PrevState::Preempted => {
                "curr was preempted: a reschedule it had pending (wakeup preemption, tick or slice end) was acted on"
                    .into()
            }
            PrevState::Sleeping => "curr blocked (went to sleep) and the scheduler picked the next entity".into(),
            PrevState::Uninterruptible => {
                "curr blocked uninterruptibly on a mutex whose owner was not running (no optimistic spin) and the scheduler picked the next entity"
                    .into()
            }
            PrevState::Dead => "curr exited".into(),
        },
        Kind::Migrate { .. } => "the load balancer (or a wakeup placement) moved the task".into(),
    }
}

/// A short description of each wakeup-preemption reason (`wakeup_preempt_fair`).
pub fn wakeup_reason_text(reason: WakeupReason) -> &'static str {
    match reason {
        WakeupReason::SameEntity => "the wakee is the running task itself: nothing to decide",
        WakeupReason::NeedReschedPending => "curr already has a full reschedule pending: the check is skipped",
        WakeupReason::NoWakeupPreemption => "the WAKEUP_PREEMPTION feature is off: wakeups never preempt",
        WakeupReason::IdleCurr => {
            "curr is SCHED_IDLE (or the CPU idles) and the wakee is not: a non-idle wakee always preempts"
        }
        WakeupReason::IdleMismatch => "the wakee is SCHED_IDLE and curr is not: an idle-policy wakee never preempts",
        WakeupReason::NotNormalPolicy => "the wakee is not SCHED_NORMAL (e.g. SCHED_BATCH): no wakeup preemption",
        WakeupReason::WakeeDelayed => {
            "the wakee is a delayed-dequeue entity being requeued (DELAY_DEQUEUE): no preemption"
        }
        WakeupReason::Fork => "a fork wakeup (WF_FORK): the new child does not preempt here",
        WakeupReason::ForcedWakerIneligible => {
            "curr (the waker) is no longer eligible (it ran past the average vruntime V): reschedule forced"
        }
        WakeupReason::PreemptSyncResched => {
            "NEXT_BUDDY: the wakee became the next buddy and, for this WF_SYNC wakeup, preempt_sync() found its \
             deadline earlier than curr's after curr ran past the migration-cost threshold: reschedule"
        }
        WakeupReason::PreemptSyncNone => {
            "NEXT_BUDDY: the wakee became the next buddy, but preempt_sync() declined for this WF_SYNC wakeup \
             (its deadline is not earlier than curr's, or curr ran less than the threshold): no preemption now; \
             the buddy is picked when curr sleeps"
        }
        WakeupReason::PickedWakee => "pick_eevdf() would pick the wakee: it is eligible with the earliest deadline",
        WakeupReason::ShortEligible => {
            "PREEMPT_SHORT: the wakee asks for a shorter slice than curr and is eligible: preempt, cancelling curr's slice protection"
        }
        WakeupReason::PickedOther => "pick_eevdf() would not pick the wakee: curr (or another entity) keeps the CPU",
    }
}

fn wakeup_why(preempt: bool, reason: WakeupReason, c: &EevdfState, w: &EevdfState, v: &Variant) -> String {
    let verdict = if preempt { "preemption" } else { "no preemption" };
    let mut s = format!("{verdict}: {}", wakeup_reason_text(reason));
    let earlier = before(w.deadline, c.deadline);
    match reason {
        WakeupReason::PreemptSyncNone if earlier => {
            s += if v.config.behavior.preempt_sync_runtime_fix {
                "; here the wakee's deadline is earlier, so curr had run less than the threshold since it was picked"
            } else {
                "; here the wakee's deadline is earlier, so it is the runtime test: without preempt-sync-runtime-fix \
                 preempt_sync() measures rq_clock_task - exec_start, always 0 right after update_curr()"
            };
        }
        WakeupReason::PreemptSyncNone => s += "; here the wakee's deadline is not earlier than curr's",
        _ => {}
    }
    let mut facts = Vec::new();
    facts.push(format!("wakee {}eligible (lag {})", if w.eligible { "" } else { "not " }, w.lag));
    facts.push(format!("curr {}eligible (lag {})", if c.eligible { "" } else { "not " }, c.lag));
    if earlier {
        facts.push(format!("wakee's deadline earlier than curr's by {} ns", c.deadline.wrapping_sub(w.deadline)));
    } else {
        facts.push(format!("wakee's deadline later than curr's by {} ns", w.deadline.wrapping_sub(c.deadline)));
    }
    if v.config.features.has(Feature::RUN_TO_PARITY) && c.eligible && before(c.vruntime, c.vprot) {
        facts.push(format!(
            "curr protected by RUN_TO_PARITY until vprot ({} ns of virtual time left)",
            c.vprot.wrapping_sub(c.vruntime)
        ));
    }
    if w.buddy {
        facts.push("wakee is the next buddy".into());
    }
    if w.delayed {
        facts.push("wakee is delayed-dequeued".into());
    }
    s += &format!(". State: {}.", facts.join("; "));
    s
}

/// A short description of each placement rule (`select_task_rq_fair`).
pub fn select_why(reason: SelectReason) -> String {
    match reason {
        SelectReason::Pinned => "the task may run on one CPU only: no selection".into(),
        SelectReason::CurrentCpu => "WF_CURRENT_CPU: the waker's CPU, which the task may use".into(),
        SelectReason::SlowPath => {
            "fork/exec slow path: the idlest CPU of the idlest group (sched_balance_find_dst_cpu)".into()
        }
        SelectReason::NoBalanceDomain => "fork/exec with no domain carrying the balance flag: prev CPU".into(),
        SelectReason::SyncReciprocal => {
            "wake-affine-sync-reciprocal: a reciprocal WF_SYNC pair on a non-SMT machine keeps the waker's CPU".into()
        }
        SelectReason::SisTarget => "select_idle_sibling: the target (wake_affine's choice) is idle".into(),
        SelectReason::SisPrev => "select_idle_sibling: prev CPU is idle and shares cache with the target".into(),
        SelectReason::SisKthreadStack => "select_idle_sibling: a per-CPU kthread waker stacks the wakee on prev".into(),
        SelectReason::SisRecent => "select_idle_sibling: recent_used_cpu is idle and cache-affine".into(),
        SelectReason::SisIdleCapacity(c) => format!("select_idle_capacity found CPU {c} (asymmetric capacity)"),
        SelectReason::SisCapacityNone => "select_idle_capacity found nothing: the target".into(),
        SelectReason::SisNoLlc => "the target has no LLC domain: the target".into(),
        SelectReason::SisIdleSmt(c) => format!("select_idle_smt: CPU {c}, an idle SMT sibling of prev"),
        SelectReason::SisIdleCore(c) => format!("select_idle_core: CPU {c}, on a wholly idle core"),
        SelectReason::SisIdleThread(c) => {
            format!("the idle-core scan found no idle core; CPU {c}, an idle thread it passed")
        }
        SelectReason::SisIdleCpu(c) => format!("select_idle_cpu: CPU {c}, idle within the SIS_UTIL scan depth"),
        SelectReason::SisPrevAff => {
            "cluster machine: prev was idle but in another cluster; nothing better found".into()
        }
        SelectReason::SisRecentAff => "cluster machine: recent_used_cpu was idle but in another cluster".into(),
        SelectReason::SisNone => "select_idle_sibling found nothing idle: the target".into(),
    }
}

/// A count as an integer, anything else with the lab's precision.
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.0}") } else { crate::report::fmt_value(v) }
}

fn change(base: f64, new: f64) -> String {
    if base == new {
        "=".into()
    } else if base != 0.0 && base.is_finite() && new.is_finite() {
        format!("{:+.2}%", 100.0 * (new - base) / base.abs())
    } else {
        "new".into()
    }
}

fn consequences(out: &mut String, metric_name: &str, better: Better, a: &Outcome, b: &Outcome, diverged: bool) {
    let c = |o: &Outcome| {
        let k = &o.counters;
        vec![
            ("nr_switches", k.nr_switches as f64),
            ("nr_voluntary_switches", k.nr_voluntary_switches as f64),
            ("nr_involuntary_switches", k.nr_involuntary_switches as f64),
            ("nr_wakeup_preemptions", k.nr_wakeup_preemptions as f64),
            ("nr_tick_preemptions", k.nr_tick_preemptions as f64),
            ("nr_migrations", k.nr_migrations as f64),
            ("nr_wakeups", k.nr_wakeups as f64),
            ("nr_wakeups_sync", k.nr_wakeups_sync as f64),
            ("nr_wakeups_affine", k.nr_wakeups_affine as f64),
            ("nr_wakeups_migrate", k.nr_wakeups_migrate as f64),
            ("nr_ipis", k.nr_ipis as f64),
            ("wakeup_latency_p50_us", o.latency_ns[0] as f64 / 1e3),
            ("wakeup_latency_p90_us", o.latency_ns[1] as f64 / 1e3),
            ("wakeup_latency_p99_us", o.latency_ns[2] as f64 / 1e3),
            ("wakeup_latency_max_us", o.latency_ns[3] as f64 / 1e3),
            ("simulated_s", o.simulated_ns as f64 / 1e9),
        ]
    };
    let (ca, cb) = (c(a), c(b));
    let _ = writeln!(
        out,
        "Consequences (whole runs{}):",
        if diverged { "; every difference arises after the divergence" } else { "" }
    );
    let better_word = match better {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    };
    let _ = writeln!(out, "  {:<28} {:>16} {:>16} {:>10}", "", "base", "variant", "change");
    let verdict = if a.metric == b.metric {
        String::new()
    } else if (b.metric < a.metric) == (better == Better::Lower) {
        " (variant better)".into()
    } else {
        " (variant worse)".into()
    };
    let _ = writeln!(
        out,
        "  {:<28} {:>16} {:>16} {:>10}{verdict}",
        format!("{metric_name} ({better_word})"),
        crate::report::fmt_value(a.metric),
        crate::report::fmt_value(b.metric),
        change(a.metric, b.metric)
    );
    let mut same = Vec::new();
    for ((name, x), (_, y)) in ca.iter().zip(&cb) {
        if x == y {
            same.push(*name);
            continue;
        }
        let _ = writeln!(out, "  {:<28} {:>16} {:>16} {:>10}", name, num(*x), num(*y), change(*x, *y));
    }
    if !same.is_empty() {
        let _ = writeln!(out, "  equal in both: {}", same.join(", "));
    }
}
