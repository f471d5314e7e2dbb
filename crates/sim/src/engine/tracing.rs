//! Emission of the trace stream (`crate::trace`) from the engine. Nothing here changes the
//! simulation: with or without a sink, runs are identical.

use super::Sim;
use crate::fair::{Fair, WakeupVerdict};
use crate::select::SelectReason;
use crate::task::{Task, TaskId};
use crate::trace::{EevdfState, PrevState, TaskRef, TraceEvent, idle_task};

/// A task as its tracepoints name it.
fn tref(tasks: &[Task], t: TaskId) -> TaskRef<'_> {
    let task = &tasks[t.idx()];
    TaskRef { pid: task.pid, comm: &task.comm, prio: 120 + task.nice }
}

impl Sim {
    #[inline]
    pub(super) fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// `sched_switch` on `cpu` (None is the idle task).
    pub(super) fn trace_switch(&mut self, cpu: u32, prev: Option<TaskId>, prev_state: PrevState, next: Option<TaskId>) {
        let Some(sink) = self.trace.as_mut() else { return };
        let (mut a, mut b) = (String::new(), String::new());
        let prev_ref = prev.map_or_else(|| idle_task(cpu, &mut a), |p| tref(&self.tasks, p));
        let next = next.map_or_else(|| idle_task(cpu, &mut b), |n| tref(&self.tasks, n));
        sink.event(self.now, cpu, &TraceEvent::Switch { prev: prev_ref, prev_state, next });
        if let Some(p) = prev {
            // The task's own entity (on ≤7.2's levels, not its groups').
            let se = &self.ents[p.idx()];
            let ev = TraceEvent::SwitchLag { prev_pid: prev_ref.pid, vlag: se.vlag, delayed: se.sched_delayed };
            sink.event(self.now, cpu, &ev);
        }
    }

    pub(super) fn trace_waking(&mut self, cpu: u32, p: TaskId, target_cpu: u32) {
        let Some(sink) = self.trace.as_mut() else { return };
        let task = tref(&self.tasks, p);
        sink.event(self.now, cpu, &TraceEvent::Waking { task, target_cpu });
        sink.event(self.now, cpu, &TraceEvent::WakingFlips { pid: task.pid, flips: self.tasks[p.idx()].wakee_flips });
    }

    pub(super) fn trace_wakeup(&mut self, cpu: u32, p: TaskId, new: bool) {
        let Some(sink) = self.trace.as_mut() else { return };
        let task = tref(&self.tasks, p);
        let ev = if new {
            TraceEvent::WakeupNew { task, target_cpu: cpu }
        } else {
            TraceEvent::Wakeup { task, target_cpu: cpu }
        };
        sink.event(self.now, cpu, &ev);
        if !new {
            sink.event(self.now, cpu, &TraceEvent::WakeupLag { pid: task.pid, vlag: self.ents[p.idx()].vlag });
        }
    }

    /// `hrtimer_expire_entry` on a busy `cpu`: the tick or the hrtick.
    pub(super) fn trace_timer_expire(&mut self, cpu: u32, function: &'static str) {
        let Some(sink) = self.trace.as_mut() else { return };
        sink.event(self.now, cpu, &TraceEvent::TimerExpire { function });
    }

    pub(super) fn trace_migrate(&mut self, cpu: u32, p: TaskId, orig_cpu: u32, dest_cpu: u32) {
        let Some(sink) = self.trace.as_mut() else { return };
        sink.event(self.now, cpu, &TraceEvent::Migrate { task: tref(&self.tasks, p), orig_cpu, dest_cpu });
    }

    pub(super) fn trace_fork(&mut self, cpu: u32, parent: TaskId, child: TaskId) {
        let Some(sink) = self.trace.as_mut() else { return };
        sink.event(
            self.now,
            cpu,
            &TraceEvent::Fork { parent: tref(&self.tasks, parent), child: tref(&self.tasks, child) },
        );
    }

    pub(super) fn trace_exit(&mut self, cpu: u32, p: TaskId) {
        let Some(sink) = self.trace.as_mut() else { return };
        sink.event(self.now, cpu, &TraceEvent::Exit { task: tref(&self.tasks, p) });
    }

    pub(super) fn trace_placement(
        &mut self,
        cpu: u32,
        p: TaskId,
        prev_cpu: u32,
        target_cpu: u32,
        sync: bool,
        reason: SelectReason,
    ) {
        let Some(sink) = self.trace.as_mut() else { return };
        let ev = TraceEvent::Placement { task: tref(&self.tasks, p), prev_cpu, target_cpu, sync, reason };
        sink.event(self.now, cpu, &ev);
    }

    /// The verdict of `wakeup_preempt_fair` with both entities' EEVDF state after it.
    pub(super) fn trace_wakeup_preempt(&mut self, cpu: u32, curr: TaskId, wakee: TaskId, verdict: WakeupVerdict) {
        if self.trace.is_none() {
            return;
        }
        let (curr_state, wakee_state) = {
            let mut f = self.fair_raw(cpu);
            (eevdf_state(&mut f, curr), eevdf_state(&mut f, wakee))
        };
        #[allow(clippy::expect_used, reason = "the caller checked that tracing is on")]
        let sink = self.trace.as_mut().expect("checked");
        let ev = TraceEvent::WakeupPreempt {
            curr: tref(&self.tasks, curr),
            wakee: tref(&self.tasks, wakee),
            preempt: verdict.preempt,
            reason: verdict.reason,
            curr_state,
            wakee_state,
        };
        sink.event(self.now, cpu, &ev);
    }
}

/// An entity's EEVDF state, read without side effects (V is computed, not moved to).
/// On ≤7.2's levels the state on the task's own level.
fn eevdf_state(f: &mut Fair<'_>, t: TaskId) -> EevdfState {
    f.with_task_level(t, |f| {
        let se = &f.ents[t.idx()];
        EevdfState {
            vruntime: se.vruntime,
            deadline: se.deadline,
            lag: f.avg_vruntime_peek().wrapping_sub(se.vruntime) as i64,
            eligible: f.entity_eligible(t),
            slice: se.slice,
            vprot: se.vprot,
            delayed: se.sched_delayed,
            buddy: f.cfs.next == Some(t),
        }
    })
}
