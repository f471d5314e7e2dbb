//! The kernel's ftrace text format, as `/sys/kernel/debug/tracing/trace` prints it on a 6.x
//! kernel with the default options (`nop` tracer, `irq-info`, `context-info`, no `record-tgid`):
//!
//! ```text
//! # tracer: nop
//! #
//! #                                _-----=> irqs-off/BH-disabled
//! ...
//!       sched-pipe-101     [001] d..2.     0.000153: sched_switch: prev_comm=sched-pipe ...
//! ```
//!
//! Each line is `"%16s-%-7d [%03d] %s %5llu.%06lu: %s: "` (task, pid, CPU, the 5 latency flags,
//! seconds with 6 decimals rounded to the microsecond as `ns2usecs()` does, the event name)
//! followed by the event's `TP_printk` output. The kernel's `entries-in-buffer` header line is
//! not written (a streamed trace does not know its length): a `#P:<cpus>` comment stands in.
//!
//! Latency flags (`irqs-off`, `need-resched`, `hardirq/softirq`, `preempt-depth`,
//! `migrate-disable`) are not modelled; each event gets the flags it most often carries on a
//! real 6.18 kernel: `d..2.` for `sched_switch` and `sched_wakeup_new`, `d..3.` for
//! `sched_waking` and `sched_migrate_task`, `d..4.` for `sched_wakeup`, `.....` for fork and
//! exit. Perfetto's text importer accepts up to 5 flag characters.

use std::fmt::{self, Write as _};
use std::io::{self, Write};

use sim::trace::{EevdfState, PrevState, TaskRef, TraceEvent, TraceSink};

use crate::current::{CurrentTasks, kernel_comm};
use crate::names::select_reason_name;

/// What the header says about the trace.
#[derive(Clone, Debug, Default)]
pub struct TraceHeader {
    /// Number of CPUs (`#P:` in the kernel's header).
    pub nr_cpus: u32,
    /// Free text written as `# ` comment lines after the first header lines (e.g. the command
    /// that reproduces the run). Must not contain newlines.
    pub comments: Vec<String>,
}

/// Timestamp resolution of text lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// `%5llu.%06lu`, rounded to the microsecond: exactly what the kernel prints.
    #[default]
    Micros,
    /// `%5llu.%09llu`: full nanoseconds (as `trace-cmd report -t` prints). Perfetto and the
    /// reader accept it; analyses then reproduce the simulator's nanosecond figures exactly.
    Nanos,
}

/// Options of the text writer.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    pub precision: Precision,
    /// Write the `schedlab_wakeup_preempt` and `schedlab_placement` decision lines.
    pub decisions: bool,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions { precision: Precision::Micros, decisions: true }
    }
}

/// Streams [`TraceEvent`]s as kernel ftrace text. Memory does not grow with the trace.
///
/// As a [`TraceSink`] it cannot return errors: the first I/O error is kept, later events are
/// dropped, and [`finish`](Self::finish) returns it.
pub struct FtraceTextWriter<W: Write> {
    out: W,
    cur: CurrentTasks,
    opts: TextOptions,
    lines: u64,
    error: Option<io::Error>,
    /// The line being formatted (reused).
    line: String,
}

const LEGEND: &str = "\
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
";

impl<W: Write> FtraceTextWriter<W> {
    /// Writes the header and returns the writer, with default options.
    pub fn new(out: W, header: &TraceHeader) -> io::Result<Self> {
        Self::with_options(out, header, TextOptions::default())
    }

    pub fn with_options(mut out: W, header: &TraceHeader, opts: TextOptions) -> io::Result<Self> {
        writeln!(out, "# tracer: nop")?;
        writeln!(out, "#")?;
        writeln!(out, "# schedlab simulated trace   #P:{}", header.nr_cpus)?;
        for c in &header.comments {
            writeln!(out, "# {c}")?;
        }
        writeln!(out, "#")?;
        out.write_all(LEGEND.as_bytes())?;
        Ok(FtraceTextWriter {
            out,
            cur: CurrentTasks::default(),
            opts,
            lines: 0,
            error: None,
            line: String::with_capacity(256),
        })
    }

    /// Event lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Writes one event (decision events only when enabled).
    pub fn write_event(&mut self, ts_ns: u64, cpu: u32, ev: &TraceEvent<'_>) -> io::Result<()> {
        let (name, flags) = match ev {
            TraceEvent::Switch { .. } => ("sched_switch", "d..2."),
            TraceEvent::Waking { .. } => ("sched_waking", "d..3."),
            TraceEvent::Wakeup { .. } => ("sched_wakeup", "d..4."),
            TraceEvent::WakeupNew { .. } => ("sched_wakeup_new", "d..2."),
            TraceEvent::Migrate { .. } => ("sched_migrate_task", "d..3."),
            TraceEvent::Fork { .. } => ("sched_process_fork", "....."),
            TraceEvent::Exit { .. } => ("sched_process_exit", "....."),
            TraceEvent::WakeupPreempt { .. } => ("schedlab_wakeup_preempt", "d..4."),
            TraceEvent::Placement { .. } => ("schedlab_placement", "d..3."),
            TraceEvent::TimerExpire { .. } => ("hrtimer_expire_entry", "d.h1."),
            TraceEvent::WakeupLag { .. } => ("schedlab_wakeup_lag", "d..4."),
            TraceEvent::SwitchLag { .. } => ("schedlab_switch_lag", "d..2."),
            TraceEvent::WakingFlips { .. } => ("schedlab_waking_flips", "d..4."),
        };
        let decision = matches!(
            ev,
            TraceEvent::WakeupPreempt { .. }
                | TraceEvent::Placement { .. }
                | TraceEvent::WakeupLag { .. }
                | TraceEvent::SwitchLag { .. }
                | TraceEvent::WakingFlips { .. }
        );
        if decision && !self.opts.decisions {
            return Ok(());
        }
        let (pid, comm) = self.cur.before(cpu, ev);
        // The line is formatted into a reused String (formatting into memory is cheap; the
        // io::Write adapter of a BufWriter is not), then written in one call.
        let line = &mut self.line;
        line.clear();
        if pid == 0 {
            let _ = write!(line, "{:>16}-{:<7} [{cpu:03}] {flags} ", "<idle>", 0);
        } else {
            let _ = write!(line, "{comm:>16}-{pid:<7} [{cpu:03}] {flags} ");
        }
        match self.opts.precision {
            Precision::Micros => {
                // ns2usecs(): round to the nearest microsecond.
                let us = ts_ns.saturating_add(500) / 1000;
                let _ = write!(line, "{:>5}.{:06}: ", us / 1_000_000, us % 1_000_000);
            }
            Precision::Nanos => {
                let _ = write!(line, "{:>5}.{:09}: ", ts_ns / 1_000_000_000, ts_ns % 1_000_000_000);
            }
        }
        line.push_str(name);
        line.push_str(": ");
        let _ = write_fields(line, ts_ns, ev);
        line.push('\n');
        self.out.write_all(line.as_bytes())?;
        self.cur.after(cpu, ev);
        self.lines += 1;
        Ok(())
    }

    /// Flushes and returns the output, or the first error met while streaming.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> TraceSink for FtraceTextWriter<W> {
    fn event(&mut self, ts_ns: u64, cpu: u32, ev: &TraceEvent<'_>) {
        if self.error.is_none()
            && let Err(e) = self.write_event(ts_ns, cpu, ev)
        {
            self.error = Some(e);
        }
    }
}

/// `prev_state` as `sched_switch` prints it: `R+` for a task preempted inside the kernel
/// (TASK_REPORT_MAX), `R` for one switched out runnable by `schedule()` (preempted on the
/// way back to user mode, or yielding), `S` for a sleeping one, `D` on a mutex, `X`
/// (EXIT_DEAD) for one that exited. The idle task leaves the CPU through `schedule_idle()`,
/// not a preemption, and shows `R`.
pub(crate) fn prev_state_str(s: PrevState) -> &'static str {
    match s {
        PrevState::Running => "R",
        PrevState::Preempted => "R+",
        PrevState::Sleeping => "S",
        PrevState::Uninterruptible => "D",
        PrevState::Dead => "X",
    }
}

fn b(v: bool) -> u8 {
    v as u8
}

fn task_fields(out: &mut String, t: &TaskRef<'_>) -> fmt::Result {
    write!(out, "comm={} pid={} prio={}", kernel_comm(t.comm), t.pid, t.prio)
}

/// Virtual times are printed signed, as `/proc/<pid>/sched` does (`SPLIT_NS` of an s64): the
/// kernel starts them just below zero, at `(u64)-(1LL << 20)`.
fn eevdf_fields(out: &mut String, who: &str, s: &EevdfState) -> fmt::Result {
    write!(
        out,
        " {who}_vruntime={} {who}_deadline={} {who}_lag={} {who}_eligible={} {who}_slice={} {who}_vprot={} \
         {who}_delayed={} {who}_buddy={}",
        s.vruntime as i64,
        s.deadline as i64,
        s.lag,
        b(s.eligible),
        s.slice,
        s.vprot as i64,
        b(s.delayed),
        b(s.buddy)
    )
}

/// The `TP_printk` output of each event (and schedlab's two decision formats).
fn write_fields(out: &mut String, ts_ns: u64, ev: &TraceEvent<'_>) -> fmt::Result {
    match ev {
        TraceEvent::Switch { prev, prev_state, next } => write!(
            out,
            "prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
            kernel_comm(prev.comm),
            prev.pid,
            prev.prio,
            if prev.pid == 0 { "R" } else { prev_state_str(*prev_state) },
            kernel_comm(next.comm),
            next.pid,
            next.prio
        ),
        TraceEvent::Waking { task, target_cpu }
        | TraceEvent::Wakeup { task, target_cpu }
        | TraceEvent::WakeupNew { task, target_cpu } => {
            task_fields(out, task)?;
            write!(out, " target_cpu={target_cpu:03}")
        }
        TraceEvent::Migrate { task, orig_cpu, dest_cpu } => {
            task_fields(out, task)?;
            write!(out, " orig_cpu={orig_cpu} dest_cpu={dest_cpu}")
        }
        TraceEvent::Fork { parent, child } => write!(
            out,
            "comm={} pid={} child_comm={} child_pid={}",
            kernel_comm(parent.comm),
            parent.pid,
            kernel_comm(child.comm),
            child.pid
        ),
        TraceEvent::Exit { task } => task_fields(out, task),
        TraceEvent::WakeupPreempt { curr, wakee, preempt, reason, curr_state, wakee_state } => {
            write!(
                out,
                "curr_comm={} curr_pid={} wakee_comm={} wakee_pid={} preempt={} reason={}",
                kernel_comm(curr.comm),
                curr.pid,
                kernel_comm(wakee.comm),
                wakee.pid,
                b(*preempt),
                reason.name()
            )?;
            eevdf_fields(out, "curr", curr_state)?;
            eevdf_fields(out, "wakee", wakee_state)
        }
        TraceEvent::Placement { task, prev_cpu, target_cpu, sync, reason } => {
            task_fields(out, task)?;
            write!(
                out,
                " prev_cpu={prev_cpu} target_cpu={target_cpu:03} sync={} reason={}",
                b(*sync),
                select_reason_name(*reason)
            )
        }
        // The kernel prints the timer's address (hashed) and its clock's `now`; the model has
        // neither, so the address is the unhashed placeholder and `now` the event's time.
        TraceEvent::TimerExpire { function } => {
            write!(out, "hrtimer=(____ptrval____) function={function} now={ts_ns}")
        }
        // The fields of the guest's probes (`native::ftrace::LAG_PROBES`), without the probe's
        // `(__probestub_...)` location.
        TraceEvent::WakeupLag { pid, vlag } => write!(out, "pid={pid} vlag={vlag}"),
        TraceEvent::SwitchLag { prev_pid, vlag, delayed } => {
            write!(out, "prev_pid={prev_pid} prev_vlag={vlag} prev_delayed={}", b(*delayed))
        }
        TraceEvent::WakingFlips { pid, flips } => write!(out, "pid={pid} flips={flips}"),
    }
}
