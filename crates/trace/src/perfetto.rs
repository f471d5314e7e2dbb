//! Perfetto protobuf output (`.pftrace`).
//!
//! A Perfetto trace is the message `Trace { repeated TracePacket packet = 1; }`, so it can be
//! streamed: each packet is appended as field 1 (wire type 2, varint length, bytes) and
//! nothing is held back but a bounded batch of ftrace events.
//!
//! What is written:
//! - the scheduler tracepoints as `FtraceEventBundle`s (one CPU per bundle, at most
//!   [`BATCH`] buffered events across CPUs before every bundle is flushed), which Perfetto
//!   turns into its CPU scheduling tracks and thread states;
//! - counter tracks (`TrackDescriptor` + `TrackEvent` `TYPE_COUNTER`): `cpuN nr_running`
//!   (runnable tasks including the running one, followed from wakeups, sleeps and
//!   migrations), `cpuN V` (the runqueue's `avg_vruntime()`, `curr.vruntime + curr.lag`, at
//!   each wakeup-preemption check) and `lag <comm> <pid>` (a task's lag at each check it
//!   takes part in);
//! - the decision records as instant events with debug annotations on the tracks
//!   `cpuN wakeup_preempt` and `cpuN select_task_rq` (the waking CPU).

use std::collections::BTreeSet;
use std::io::{self, Write};

use prost::Message;
use sim::trace::{EevdfState, PrevState, TaskRef, TraceEvent, TraceSink};

use crate::current::{CurrentTasks, kernel_comm};
use crate::names::select_reason_name;
use crate::proto::{
    self, CounterDescriptor, DebugAnnotation, FtraceEvent, FtraceEventBundle, SchedMigrateTaskFtraceEvent,
    SchedProcessExitFtraceEvent, SchedProcessForkFtraceEvent, SchedSwitchFtraceEvent, SchedWakeupFtraceEvent,
    TracePacket, TrackDescriptor, TrackEvent, ftrace_event,
};
use crate::text::TraceHeader;

/// Ftrace events buffered (over all CPUs) before the bundles are written.
pub const BATCH: usize = 1024;

/// The packet sequence of schedlab's track events.
const SEQUENCE_ID: u32 = 1;

/// Track uuids: a kind in the high 32 bits, a CPU or pid in the low ones.
const KIND_NR_RUNNING: u64 = 1 << 32;
const KIND_V: u64 = 2 << 32;
const KIND_LAG: u64 = 3 << 32;
const KIND_WAKEUP_PREEMPT: u64 = 4 << 32;
const KIND_PLACEMENT: u64 = 5 << 32;

/// What to write besides the ftrace events.
#[derive(Clone, Copy, Debug)]
pub struct PerfettoOptions {
    /// Counter tracks: nr_running, V, lag.
    pub counters: bool,
    /// Instant events for the wakeup-preemption and placement decisions.
    pub decisions: bool,
}

impl Default for PerfettoOptions {
    fn default() -> Self {
        PerfettoOptions { counters: true, decisions: true }
    }
}

/// Streams [`TraceEvent`]s as a Perfetto protobuf trace. Memory is bounded by [`BATCH`]
/// events plus per-CPU and per-task state.
///
/// As a [`TraceSink`] it cannot return errors: the first I/O error is kept, later events are
/// dropped, and [`finish`](Self::finish) returns it.
pub struct PerfettoWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    opts: PerfettoOptions,
    cur: CurrentTasks,
    /// Buffered ftrace events per CPU, and their total.
    bundles: Vec<Vec<FtraceEvent>>,
    buffered: usize,
    /// Tracks whose descriptor has been written.
    tracks: BTreeSet<u64>,
    /// Runnable tasks: pid → the CPU whose runqueue holds it.
    queued: std::collections::BTreeMap<u32, u32>,
    nr_running: Vec<i64>,
    first_sequence_packet: bool,
    packets: u64,
    ftrace_events: u64,
    error: Option<io::Error>,
}

impl<W: Write> PerfettoWriter<W> {
    pub fn new(out: W, header: &TraceHeader) -> io::Result<Self> {
        Self::with_options(out, header, PerfettoOptions::default())
    }

    pub fn with_options(out: W, header: &TraceHeader, opts: PerfettoOptions) -> io::Result<Self> {
        let mut w = PerfettoWriter {
            out,
            buf: Vec::with_capacity(4096),
            opts,
            cur: CurrentTasks::default(),
            bundles: Vec::new(),
            buffered: 0,
            tracks: BTreeSet::new(),
            queued: Default::default(),
            nr_running: vec![0; header.nr_cpus as usize],
            first_sequence_packet: true,
            packets: 0,
            ftrace_events: 0,
            error: None,
        };
        if opts.counters {
            // Every CPU's nr_running track starts at 0 when the trace starts.
            for cpu in 0..header.nr_cpus {
                w.counter(0, KIND_NR_RUNNING | cpu as u64, 0, || {
                    (format!("cpu{cpu} nr_running"), Some(proto::unit::COUNT))
                })?;
            }
        }
        Ok(w)
    }

    /// Packets written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Ftrace events accepted so far (written or buffered).
    pub fn ftrace_events(&self) -> u64 {
        self.ftrace_events
    }

    fn write_packet(&mut self, mut packet: TracePacket) -> io::Result<()> {
        if packet.ftrace_events.is_none() {
            packet.trusted_packet_sequence_id = Some(SEQUENCE_ID);
            if self.first_sequence_packet {
                packet.sequence_flags = Some(proto::SEQ_INCREMENTAL_STATE_CLEARED);
                self.first_sequence_packet = false;
            }
        }
        self.buf.clear();
        // Field 1 of Trace, wire type 2 (length-delimited).
        self.buf.push(0x0a);
        #[allow(clippy::expect_used, reason = "encoding into a Vec cannot run out of space")]
        packet.encode_length_delimited(&mut self.buf).expect("a Vec grows");
        self.out.write_all(&self.buf)?;
        self.packets += 1;
        Ok(())
    }

    fn ensure_track(
        &mut self,
        uuid: u64,
        describe: impl FnOnce() -> (String, Option<i32>),
        counter: bool,
    ) -> io::Result<()> {
        if self.tracks.insert(uuid) {
            let (name, unit) = describe();
            let desc = TrackDescriptor {
                uuid: Some(uuid),
                name: Some(name),
                parent_uuid: None,
                counter: counter.then_some(CounterDescriptor { unit }),
            };
            self.write_packet(TracePacket { track_descriptor: Some(desc), ..Default::default() })?;
        }
        Ok(())
    }

    fn counter(
        &mut self,
        ts_ns: u64,
        uuid: u64,
        value: i64,
        describe: impl FnOnce() -> (String, Option<i32>),
    ) -> io::Result<()> {
        self.ensure_track(uuid, describe, true)?;
        let ev = TrackEvent {
            r#type: Some(proto::track_event_type::COUNTER),
            track_uuid: Some(uuid),
            counter_value: Some(value),
            ..Default::default()
        };
        self.write_packet(TracePacket { timestamp: Some(ts_ns), track_event: Some(ev), ..Default::default() })
    }

    fn instant(
        &mut self,
        ts_ns: u64,
        uuid: u64,
        track_name: impl FnOnce() -> String,
        name: String,
        args: Vec<DebugAnnotation>,
    ) -> io::Result<()> {
        self.ensure_track(uuid, || (track_name(), None), false)?;
        let ev = TrackEvent {
            r#type: Some(proto::track_event_type::INSTANT),
            track_uuid: Some(uuid),
            name: Some(name),
            counter_value: None,
            debug_annotations: args,
        };
        self.write_packet(TracePacket { timestamp: Some(ts_ns), track_event: Some(ev), ..Default::default() })
    }

    fn add_running(&mut self, ts_ns: u64, cpu: u32, delta: i64) -> io::Result<()> {
        if !self.opts.counters {
            return Ok(());
        }
        let i = cpu as usize;
        if i >= self.nr_running.len() {
            self.nr_running.resize(i + 1, 0);
        }
        self.nr_running[i] += delta;
        let v = self.nr_running[i];
        self.counter(ts_ns, KIND_NR_RUNNING | cpu as u64, v, || {
            (format!("cpu{cpu} nr_running"), Some(proto::unit::COUNT))
        })
    }

    fn push_ftrace(&mut self, cpu: u32, ev: FtraceEvent) -> io::Result<()> {
        let i = cpu as usize;
        if i >= self.bundles.len() {
            self.bundles.resize_with(i + 1, Vec::new);
        }
        self.bundles[i].push(ev);
        self.buffered += 1;
        self.ftrace_events += 1;
        if self.buffered >= BATCH {
            self.flush_bundles()?;
        }
        Ok(())
    }

    fn flush_bundles(&mut self) -> io::Result<()> {
        for cpu in 0..self.bundles.len() {
            if self.bundles[cpu].is_empty() {
                continue;
            }
            let event = std::mem::take(&mut self.bundles[cpu]);
            let bundle = FtraceEventBundle { cpu: Some(cpu as u32), event };
            self.write_packet(TracePacket { ftrace_events: Some(bundle), ..Default::default() })?;
        }
        self.buffered = 0;
        Ok(())
    }

    /// Writes one event.
    pub fn write_event(&mut self, ts_ns: u64, cpu: u32, ev: &TraceEvent<'_>) -> io::Result<()> {
        let (current, _) = self.cur.before(cpu, ev);
        let ftrace = |event| FtraceEvent { timestamp: Some(ts_ns), pid: Some(current), event: Some(event) };
        use ftrace_event::Event as E;
        match ev {
            TraceEvent::Switch { prev, prev_state, next } => {
                let state = match prev_state {
                    // Perfetto decodes the kernel's preempted bit by kernel version; plain
                    // running is unambiguous.
                    // Perfetto decodes the preempted bit by kernel version; both print runnable.
                    PrevState::Running | PrevState::Preempted => proto::task_state::RUNNING,
                    PrevState::Sleeping => proto::task_state::INTERRUPTIBLE,
                    PrevState::Uninterruptible => proto::task_state::UNINTERRUPTIBLE,
                    PrevState::Dead => proto::task_state::EXIT_DEAD,
                };
                let sw = SchedSwitchFtraceEvent {
                    prev_comm: Some(kernel_comm(prev.comm).to_string()),
                    prev_pid: Some(prev.pid as i32),
                    prev_prio: Some(prev.prio),
                    prev_state: Some(state),
                    next_comm: Some(kernel_comm(next.comm).to_string()),
                    next_pid: Some(next.pid as i32),
                    next_prio: Some(next.prio),
                };
                self.push_ftrace(cpu, ftrace(E::SchedSwitch(sw)))?;
                if prev.pid != 0
                    && !matches!(prev_state, PrevState::Running | PrevState::Preempted)
                    && self.queued.remove(&prev.pid).is_some()
                {
                    self.add_running(ts_ns, cpu, -1)?;
                }
            }
            TraceEvent::Waking { task, target_cpu } => {
                self.push_ftrace(cpu, ftrace(E::SchedWaking(wakeup(task, *target_cpu))))?;
            }
            TraceEvent::Wakeup { task, target_cpu } | TraceEvent::WakeupNew { task, target_cpu } => {
                let e = wakeup(task, *target_cpu);
                let e = if matches!(ev, TraceEvent::Wakeup { .. }) { E::SchedWakeup(e) } else { E::SchedWakeupNew(e) };
                self.push_ftrace(cpu, ftrace(e))?;
                if let Some(old) = self.queued.insert(task.pid, *target_cpu) {
                    self.add_running(ts_ns, old, -1)?;
                }
                self.add_running(ts_ns, *target_cpu, 1)?;
            }
            TraceEvent::Migrate { task, orig_cpu, dest_cpu } => {
                let m = SchedMigrateTaskFtraceEvent {
                    comm: Some(kernel_comm(task.comm).to_string()),
                    pid: Some(task.pid as i32),
                    prio: Some(task.prio),
                    orig_cpu: Some(*orig_cpu as i32),
                    dest_cpu: Some(*dest_cpu as i32),
                };
                self.push_ftrace(cpu, ftrace(E::SchedMigrateTask(m)))?;
                if let Some(q) = self.queued.get_mut(&task.pid) {
                    let from = std::mem::replace(q, *dest_cpu);
                    self.add_running(ts_ns, from, -1)?;
                    self.add_running(ts_ns, *dest_cpu, 1)?;
                }
            }
            TraceEvent::Fork { parent, child } => {
                let f = SchedProcessForkFtraceEvent {
                    parent_comm: Some(kernel_comm(parent.comm).to_string()),
                    parent_pid: Some(parent.pid as i32),
                    child_comm: Some(kernel_comm(child.comm).to_string()),
                    child_pid: Some(child.pid as i32),
                };
                self.push_ftrace(cpu, ftrace(E::SchedProcessFork(f)))?;
            }
            TraceEvent::Exit { task } => {
                let x = SchedProcessExitFtraceEvent {
                    comm: Some(kernel_comm(task.comm).to_string()),
                    pid: Some(task.pid as i32),
                    tgid: Some(task.pid as i32),
                    prio: Some(task.prio),
                };
                self.push_ftrace(cpu, ftrace(E::SchedProcessExit(x)))?;
            }
            TraceEvent::WakeupPreempt { curr, wakee, preempt, reason, curr_state, wakee_state } => {
                if self.opts.counters {
                    let v = curr_state.vruntime.wrapping_add(curr_state.lag as u64) as i64;
                    self.counter(ts_ns, KIND_V | cpu as u64, v, || (format!("cpu{cpu} V"), None))?;
                    for (t, s) in [(curr, curr_state), (wakee, wakee_state)] {
                        let name = || (format!("lag {} {}", kernel_comm(t.comm), t.pid), Some(proto::unit::TIME_NS));
                        self.counter(ts_ns, KIND_LAG | t.pid as u64, s.lag, name)?;
                    }
                }
                if self.opts.decisions {
                    let name = format!("{} ({})", if *preempt { "preempt" } else { "no preempt" }, reason.name());
                    let mut args = vec![
                        DebugAnnotation::string("curr", task_label(curr)),
                        DebugAnnotation::string("wakee", task_label(wakee)),
                        DebugAnnotation::bool("preempt", *preempt),
                        DebugAnnotation::string("reason", reason.name().to_string()),
                    ];
                    eevdf_args(&mut args, "curr", curr_state);
                    eevdf_args(&mut args, "wakee", wakee_state);
                    let uuid = KIND_WAKEUP_PREEMPT | cpu as u64;
                    self.instant(ts_ns, uuid, || format!("cpu{cpu} wakeup_preempt"), name, args)?;
                }
            }
            TraceEvent::Placement { task, prev_cpu, target_cpu, sync, reason } => {
                if self.opts.decisions {
                    let args = vec![
                        DebugAnnotation::string("task", task_label(task)),
                        DebugAnnotation::uint("prev_cpu", *prev_cpu as u64),
                        DebugAnnotation::uint("target_cpu", *target_cpu as u64),
                        DebugAnnotation::bool("sync", *sync),
                        DebugAnnotation::string("reason", select_reason_name(*reason).to_string()),
                    ];
                    let name = format!("{} -> cpu{target_cpu} ({})", task_label(task), select_reason_name(*reason));
                    let uuid = KIND_PLACEMENT | cpu as u64;
                    self.instant(ts_ns, uuid, || format!("cpu{cpu} select_task_rq"), name, args)?;
                }
            }
            // The CPU tracks show what the switches did; timer interrupts are for `analyze`'s
            // reading of the text form.
            TraceEvent::TimerExpire { .. }
            | TraceEvent::WakeupLag { .. }
            | TraceEvent::SwitchLag { .. }
            | TraceEvent::WakingFlips { .. } => {}
        }
        self.cur.after(cpu, ev);
        Ok(())
    }

    /// Writes the buffered bundles, flushes and returns the output, or the first error met
    /// while streaming.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.flush_bundles()?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> TraceSink for PerfettoWriter<W> {
    fn event(&mut self, ts_ns: u64, cpu: u32, ev: &TraceEvent<'_>) {
        if self.error.is_none()
            && let Err(e) = self.write_event(ts_ns, cpu, ev)
        {
            self.error = Some(e);
        }
    }
}

fn wakeup(t: &TaskRef<'_>, target_cpu: u32) -> SchedWakeupFtraceEvent {
    SchedWakeupFtraceEvent {
        comm: Some(kernel_comm(t.comm).to_string()),
        pid: Some(t.pid as i32),
        prio: Some(t.prio),
        success: Some(1),
        target_cpu: Some(target_cpu as i32),
    }
}

fn task_label(t: &TaskRef<'_>) -> String {
    format!("{}:{}", kernel_comm(t.comm), t.pid)
}

fn eevdf_args(args: &mut Vec<DebugAnnotation>, who: &str, s: &EevdfState) {
    args.push(DebugAnnotation::int(&format!("{who}_vruntime"), s.vruntime as i64));
    args.push(DebugAnnotation::int(&format!("{who}_deadline"), s.deadline as i64));
    args.push(DebugAnnotation::int(&format!("{who}_lag"), s.lag));
    args.push(DebugAnnotation::bool(&format!("{who}_eligible"), s.eligible));
    args.push(DebugAnnotation::uint(&format!("{who}_slice"), s.slice));
    args.push(DebugAnnotation::int(&format!("{who}_vprot"), s.vprot as i64));
    args.push(DebugAnnotation::bool(&format!("{who}_delayed"), s.delayed));
    args.push(DebugAnnotation::bool(&format!("{who}_buddy"), s.buddy));
}
