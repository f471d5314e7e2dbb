//! What tasks do with the CPU: stepping through their programs, in user or kernel mode.
//!
//! A CPU-consuming step gets a `StepEnd` event; everything else (loops, timer arithmetic)
//! takes no simulated time. A bounded number of zero-time instructions may run in a row, so a
//! program without any CPU-consuming instruction cannot hang the engine.

use super::core::{Origin, Switch};
use super::{Cause, Ev, Sim, step_slot};
use crate::fair::{Resched, deq, enq};
use crate::program::Op;
use crate::task::{AfterKernel, Step, TaskId};
use crate::time::Nanos;

/// Zero-time instructions a task may execute in a row before the engine calls it a bug.
const MAX_ZERO_TIME_OPS: u32 = 10_000;

impl Sim {
    /// Starts (or resumes) the running task's current step on `cpu`.
    pub(super) fn start_step(&mut self, cpu: u32) {
        let now = self.now;
        let mut budget = MAX_ZERO_TIME_OPS;
        loop {
            let rq = &mut self.rqs[cpu as usize];
            let Some(t) = rq.curr else { return };
            let remaining = if rq.in_prologue {
                rq.prologue
            } else {
                match self.tasks[t.idx()].step {
                    Step::User { remaining } | Step::Kernel { remaining, .. } => remaining,
                    Step::Next => {
                        budget -= 1;
                        assert!(
                            budget > 0,
                            "task {} runs {MAX_ZERO_TIME_OPS} instructions without using CPU time",
                            t.0
                        );
                        self.fetch(t);
                        continue;
                    }
                }
            };
            if remaining == 0 {
                if !self.finish_step(cpu) {
                    return;
                }
                continue;
            }
            self.rqs[cpu as usize].step_start = now;
            if self.queue.set_slot(step_slot(cpu), Nanos(now + remaining), Ev::StepEnd { cpu }) {
                self.stale_events += 1;
            }
            return;
        }
    }

    /// The running step's time is used up.
    pub(super) fn step_end(&mut self, cpu: u32) {
        let rq = &mut self.rqs[cpu as usize];
        if rq.in_prologue {
            rq.prologue = 0;
        } else if let Some(t) = rq.curr {
            match &mut self.tasks[t.idx()].step {
                Step::User { remaining } | Step::Kernel { remaining, .. } => *remaining = 0,
                Step::Next => {}
            }
        }
        if self.finish_step(cpu) {
            self.start_step(cpu);
        }
    }

    /// Completes a step whose time is used up. Returns false if the CPU switched tasks (the
    /// switch has already started the next step).
    fn finish_step(&mut self, cpu: u32) -> bool {
        let rq = &mut self.rqs[cpu as usize];
        #[allow(
            clippy::expect_used,
            reason = "a step event is posted only for a CPU running a task and cancelled when it stops"
        )]
        let t = rq.curr.expect("a step runs on a busy CPU");
        if rq.in_prologue {
            // The end of the switch-in path: back to wherever the task was. Returning to user
            // mode acts on either flag; resuming kernel code is a preemption point (the
            // `preempt_enable()` after the switch).
            rq.in_prologue = false;
            let user = matches!(self.tasks[t.idx()].step, Step::User { .. } | Step::Next);
            return !(if user { self.return_to_user(cpu) } else { self.irq_exit(cpu) });
        }
        match self.tasks[t.idx()].step {
            Step::Next => true,
            Step::User { .. } => {
                self.tasks[t.idx()].step = Step::Next;
                true
            }
            Step::Kernel { then, .. } => {
                self.tasks[t.idx()].step = Step::Next;
                self.after_kernel(cpu, t, then)
            }
        }
    }

    /// The end of a kernel-mode stretch. Returns false if the CPU switched tasks.
    fn after_kernel(&mut self, cpu: u32, t: TaskId, then: AfterKernel) -> bool {
        match then {
            AfterKernel::Return => !self.return_to_user(cpu),
            AfterKernel::SleepFor { ns } => {
                let slack = self.tasks[t.idx()].timer_slack_ns;
                self.arm_sleep_timer(cpu, t, self.now.saturating_add(ns), slack);
                self.schedule(cpu, Switch::Block);
                false
            }
            AfterKernel::SleepUntil { soft } => {
                let slack = self.tasks[t.idx()].timer_slack_ns;
                self.arm_sleep_timer(cpu, t, soft, slack);
                self.schedule(cpu, Switch::Block);
                false
            }
            AfterKernel::Yield => {
                // do_sched_yield() (syscalls.c v7.3.4).
                self.schedstat.cpus[cpu as usize].yld_count += 1;
                self.fair(cpu).yield_task_fair(t);
                self.schedule(cpu, Switch::Preempt);
                false
            }
            AfterKernel::Exit => {
                self.schedule(cpu, Switch::Exit);
                false
            }
            AfterKernel::Ipc => self.ipc_complete(cpu, t),
            AfterKernel::SetNice { nice } => {
                self.set_nice_running(cpu, t, nice);
                !self.return_to_user(cpu)
            }
        }
    }

    /// Decodes the next instruction of `t` into its step.
    fn fetch(&mut self, t: TaskId) {
        let now = self.now;
        let syscall = self.cost(self.costs.syscall_ns);
        let task = &mut self.tasks[t.idx()];
        let prog = self.spec_prog[task.spec as usize] as usize;
        let op = self.programs[prog].get(task.pc as usize).cloned().unwrap_or(Op::Exit);
        task.pc += 1;
        match op {
            Op::Write { .. }
            | Op::Read { .. }
            | Op::Poll { .. }
            | Op::EpollWait { .. }
            | Op::FutexWait { .. }
            | Op::FutexWake { .. }
            | Op::Spawn { .. }
            | Op::WaitChildren => {
                let step = self.ipc_fetch(t, &op);
                self.tasks[t.idx()].step = step;
                return;
            }
            Op::Mark { id } => {
                let m = self.marks.entry(id).or_insert(super::MarkStat { first_ns: now, last_ns: now, count: 0 });
                m.last_ns = now;
                m.count += 1;
                task.step = Step::Next;
                return;
            }
            Op::Count { id } => {
                *self.counts.entry(id).or_insert(0) += 1;
                task.step = Step::Next;
                return;
            }
            Op::LatStart { slot } => {
                task.lat_start[slot as usize] = now;
                task.step = Step::Next;
                return;
            }
            Op::LatEnd { slot, hist } => {
                let started = task.lat_start[slot as usize];
                self.histograms.entry(hist).or_default().record(now - started);
                task.step = Step::Next;
                return;
            }
            _ => {}
        }
        task.step = match op {
            Op::Run { ns } => Step::User { remaining: ns + std::mem::take(&mut task.cache_debt_ns) },
            Op::Sleep { ns } => Step::Kernel { remaining: syscall, then: AfterKernel::SleepFor { ns } },
            Op::Timer { slot, period_ns, absolute } => {
                let slot = slot as usize;
                let next = match task.timer_next[slot] {
                    None => now + period_ns,
                    Some(prev) => prev + period_ns,
                };
                let wake = syscall + now;
                if next > wake {
                    task.timer_next[slot] = Some(next);
                    Step::Kernel { remaining: syscall, then: AfterKernel::SleepUntil { soft: next } }
                } else {
                    // Late: rt-app does not sleep; relative timers restart from now.
                    task.timer_next[slot] = Some(if absolute { next } else { now });
                    Step::Next
                }
            }
            Op::Yield => Step::Kernel { remaining: syscall, then: AfterKernel::Yield },
            Op::SetNice { nice } => Step::Kernel { remaining: syscall, then: AfterKernel::SetNice { nice } },
            Op::Loop { target, slot, count } => {
                let c = &mut task.loop_counters[slot as usize];
                *c += 1;
                if count == u32::MAX || *c < count {
                    task.pc = target;
                } else {
                    *c = 0;
                }
                Step::Next
            }
            Op::LoopUntil { target, slot, ns } => {
                let end = *task.timer_next[slot as usize].get_or_insert(now + ns);
                if now < end {
                    task.pc = target;
                } else {
                    task.timer_next[slot as usize] = None;
                }
                Step::Next
            }
            Op::LoopWhileEmpty { target, obj } => {
                if !self.ipc.readable(obj) {
                    task.pc = target;
                }
                Step::Next
            }
            Op::Exit => Step::Kernel { remaining: syscall, then: AfterKernel::Exit },
            _ => unreachable!("handled above"),
        };
    }

    /// A nice change of the running task through the core's save/restore bracket
    /// (`set_user_nice()`, core.c v7.3.4; spec §3.17).
    fn set_nice_running(&mut self, cpu: u32, t: TaskId, nice: i32) {
        let policy = self.ents[t.idx()].policy;
        let w_new = policy.weight(nice);
        let lowered = w_new < self.ents[t.idx()].load_weight;
        self.tasks[t.idx()].nice = nice;
        let need_full = self.rqs[cpu as usize].need_resched == Resched::Full;
        let mut f = self.fair(cpu);
        f.dequeue_task_fair(t, deq::SAVE);
        f.put_prev_task_fair(t, None);
        f.reweight_dequeued(t, w_new);
        f.enqueue_task_fair(t, enq::RESTORE);
        f.set_next_task_fair(t, false);
        f.prio_changed_fair(t, lowered, need_full);
        let req = f.resched;
        self.resched_request(cpu, req, Origin::LocalTask, Cause::Other);
    }
}
