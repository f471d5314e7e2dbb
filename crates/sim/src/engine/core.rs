//! `__schedule()` and the reschedule machinery of kernel/sched/core.c (v7.3.4): where a
//! reschedule request is acted upon under each preemption model (spec §3.11, §3.12).

use super::{Cause, Ev, Sim, step_slot};
use crate::fair::{Resched, deq};
use crate::select::{CpuFacts, CpuSource, Occupancy, SelectCtx};
use crate::task::Task;
use crate::task::{Step, TaskId, TaskState};
use crate::time::Nanos;

/// Where a reschedule request comes from; it decides how soon the target CPU notices it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    /// From the task running on the target CPU, in kernel mode (a syscall): acted upon at
    /// `preempt_enable()` in preemptible kernels, else when the syscall returns.
    LocalTask,
    /// From an interrupt handler on the target CPU: acted upon at the interrupt's return.
    Irq,
    /// From another CPU: a full request sends an IPI; a lazy one waits for the next tick.
    Remote,
}

/// The idle state an idle CPU sits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum IdleState {
    /// Polling: no IPI needed, no exit latency.
    Poll,
    /// A shallow C-state (C1, WFI).
    Shallow,
    /// The deepest state.
    Deep,
}

/// How a task leaves the CPU in `schedule()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Switch {
    /// Preemption on the way back to user mode, or a yield: `schedule()` from
    /// `exit_to_user_mode_loop()` or `sched_yield()` (`SM_NONE`), traced `R`. The task stays
    /// runnable.
    Preempt,
    /// Preemption inside the kernel: `preempt_schedule_irq()` at an interrupt's return,
    /// `preempt_schedule()` at `preempt_enable()`, `__cond_resched()` (`SM_PREEMPT`), traced
    /// `R+` (TASK_REPORT_MAX). The task stays runnable.
    PreemptKernel,
    /// The task sleeps (`DEQUEUE_SLEEP`, may be delayed).
    Block,
    /// The task sleeps `TASK_UNINTERRUPTIBLE` (a mutex): as `Block`, traced as `D`.
    BlockUninterruptible,
    /// The task exits (`TASK_DEAD`: a special state, never delayed).
    Exit,
}

impl Switch {
    /// An involuntary switch: the task stays runnable.
    fn preempts(self) -> bool {
        matches!(self, Switch::Preempt | Switch::PreemptKernel)
    }
}

impl Sim {
    /// Whether the running task of `cpu` is executing kernel code.
    fn in_kernel(&self, cpu: u32) -> bool {
        let rq = &self.rqs[cpu as usize];
        match rq.curr {
            None => true,
            Some(t) => rq.in_prologue || matches!(self.tasks[t.idx()].step, Step::Kernel { .. } | Step::Next),
        }
    }

    /// `resched_curr()` / `resched_curr_lazy()` (core.c v7.3.4) as seen by the target CPU.
    pub(super) fn resched_request(&mut self, cpu: u32, req: Resched, origin: Origin, cause: Cause) {
        if req == Resched::None {
            return;
        }
        let rq = &mut self.rqs[cpu as usize];
        if rq.curr.is_none() {
            // The idle task always gets a full request; the idle loop polls it.
            self.kick_idle(cpu);
            return;
        }
        if req <= rq.need_resched {
            return;
        }
        if rq.need_resched == Resched::None {
            rq.resched_cause = cause;
        }
        rq.need_resched = req;
        match origin {
            // The interrupt handler that made the request ends with irq_exit().
            Origin::Irq => {}
            Origin::LocalTask => {
                if req == Resched::Full && self.cfg.preempt.preempts_kernel() {
                    self.queue.push(Nanos(self.now), Ev::IrqExit { cpu });
                }
            }
            Origin::Remote => {
                if req == Resched::Full {
                    self.send_ipi(cpu);
                }
            }
        }
    }

    /// Sends a reschedule IPI; several requests in flight share one.
    /// A CPU polling in idle needs no IPI (`set_nr_if_polling()`): it sees the flag at once.
    pub(super) fn send_ipi(&mut self, cpu: u32) {
        let rq = &mut self.rqs[cpu as usize];
        if rq.ipi_pending {
            return;
        }
        rq.ipi_pending = true;
        let polling = rq.curr.is_none() && rq.idle_state == IdleState::Poll;
        let at = if polling {
            self.now
        } else {
            self.counters.nr_ipis += 1;
            self.now + self.cost(self.costs.ipi_receive_ns)
        };
        self.queue.push(Nanos(at), Ev::Ipi { cpu });
    }

    /// Wakes an idle CPU: it leaves its idle state after the idle governor's exit latency.
    pub(super) fn kick_idle(&mut self, cpu: u32) {
        let rq = &mut self.rqs[cpu as usize];
        if rq.idle_exit_pending || rq.curr.is_some() {
            return;
        }
        rq.idle_exit_pending = true;
        let latency = self.idle_exit_latency(cpu);
        let latency = self.cost(latency);
        self.queue.push(Nanos(self.now + latency), Ev::IdleExit { cpu });
    }

    /// The exit latency of the idle state the CPU is in (chosen when it went idle).
    pub(super) fn idle_exit_latency(&self, cpu: u32) -> u64 {
        idle_state_exit(self.rqs[cpu as usize].idle_state, &self.costs)
    }

    /// A simple idle governor in the spirit of menu: predict the coming idle period from the
    /// last one (bounded by the next timer on this CPU) and pick the deepest state whose target
    /// residency fits; below `idle_poll_ns` (`CPUIDLE_POLL_MIN`, 10 µs, by default) it polls.
    fn select_idle_state(&self, cpu: u32) -> IdleState {
        let rq = &self.rqs[cpu as usize];
        let mut predicted = rq.last_idle_ns;
        if let Some((&(soft, _), _)) = rq.timers.first_key_value() {
            predicted = predicted.min(soft.saturating_sub(self.now));
        }
        if predicted < self.costs.idle_poll_ns {
            IdleState::Poll
        } else if predicted >= self.costs.idle_deep_residency_ns {
            IdleState::Deep
        } else {
            IdleState::Shallow
        }
    }

    /// The CPU has left its idle state: the timer interrupts that woke it (or arrived during
    /// its exit) are handled now ([`Sim::timer_interrupt`]), then the idle loop switches to
    /// whatever is queued. Their wakeups onto this CPU find it already exiting, so they add
    /// no second exit latency.
    pub(super) fn idle_exit(&mut self, cpu: u32) {
        self.rqs[cpu as usize].idle_resuming = true;
        self.timer_interrupt(cpu);
        let rq = &mut self.rqs[cpu as usize];
        rq.idle_resuming = false;
        rq.idle_exit_pending = false;
        if rq.curr.is_none() && rq.cfs.h_nr_queued > 0 {
            self.schedule(cpu, Switch::Preempt);
        }
    }

    /// The return from an interrupt (or `preempt_enable()`): act on a pending request if the
    /// running task is in user mode (either flag) or in preemptible kernel code (full flag).
    /// Returns true if the task was switched out.
    pub(super) fn irq_exit(&mut self, cpu: u32) -> bool {
        let rq = &self.rqs[cpu as usize];
        if rq.curr.is_none() || rq.in_prologue {
            // The idle loop and the end of the switch-in path check for themselves.
            return false;
        }
        let act = match rq.need_resched {
            Resched::None => false,
            Resched::Lazy => !self.in_kernel(cpu),
            // A wait-queue walk holds the queue's spinlock with interrupts off, a mutex spinner
            // runs with preemption disabled: no preemption point until they are done, even
            // under full preemption.
            Resched::Full => {
                !self.in_kernel(cpu) || (self.cfg.preempt.preempts_kernel() && !self.ipc_preempt_disabled(cpu))
            }
        };
        if act {
            // From user mode the interrupt returns through exit_to_user_mode_loop()'s schedule().
            let how = if self.in_kernel(cpu) { Switch::PreemptKernel } else { Switch::Preempt };
            self.schedule(cpu, how);
        }
        act
    }

    /// A return to user mode (syscall exit, end of the switch-in path): acts on either flag.
    /// Returns true if the task was switched out.
    pub(super) fn return_to_user(&mut self, cpu: u32) -> bool {
        if self.rqs[cpu as usize].need_resched != Resched::None {
            self.schedule(cpu, Switch::Preempt);
            return true;
        }
        false
    }

    /// Saves the progress of the running step and cancels its end event.
    pub(super) fn stop_step(&mut self, cpu: u32) {
        let now = self.now;
        if self.queue.clear_slot(step_slot(cpu)) {
            self.stale_events += 1;
        }
        let rq = &mut self.rqs[cpu as usize];
        let Some(t) = rq.curr else { return };
        let elapsed = now - rq.step_start;
        rq.step_start = now;
        if rq.in_prologue {
            rq.prologue = rq.prologue.saturating_sub(elapsed);
            return;
        }
        let task = &mut self.tasks[t.idx()];
        match &mut task.step {
            Step::User { remaining } | Step::Kernel { remaining, .. } => *remaining = remaining.saturating_sub(elapsed),
            Step::Next => {}
        }
    }

    /// `__schedule()` (core.c v7.3.4) with `pick_next_task_fair()`: switch `cpu` to the best
    /// task, or to idle.
    pub(super) fn schedule(&mut self, cpu: u32, how: Switch) {
        // schedule_debug(): every __schedule() counts, a re-pick of the same task included.
        self.schedstat.cpus[cpu as usize].sched_count += 1;
        self.stop_step(cpu);
        let prev = self.rqs[cpu as usize].curr;
        if let Some(p) = prev {
            match how {
                Switch::Preempt | Switch::PreemptKernel => {}
                Switch::Block | Switch::BlockUninterruptible => {
                    self.tasks[p.idx()].state = TaskState::Blocked;
                    self.fair(cpu).dequeue_task_fair(p, deq::SLEEP);
                }
                Switch::Exit => {
                    self.trace_exit(cpu, p);
                    self.ipc_task_exited(cpu, p);
                    self.tasks[p.idx()].state = TaskState::Dead;
                    let mut f = self.fair(cpu);
                    f.dequeue_task_fair(p, deq::SLEEP | deq::SPECIAL);
                    // task_dead_fair(): the dead task's load leaves its last runqueue.
                    let se = &mut f.ents[p.idx()];
                    let w = crate::fair::weight::scale_load_down(se.load_weight);
                    let (g, avg) = (se.group, se.pelt.avg);
                    f.cfs.pelt.remove_entity_load_avg(&mut se.pelt.avg, w);
                    if let Some((groups, cpu)) = f.groups.as_mut() {
                        groups.remove_task(*cpu, g, &avg, w);
                    }
                    let mm = self.tasks[p.idx()].mm;
                    if mm != crate::task::NO_MM {
                        self.live_tasks -= 1;
                    }
                    self.lb.cache.thread_exited(mm);
                }
            }
        }
        // A queued CPU-stop work (active balance) runs before the next fair pick; it may push
        // `prev` away, having switched it out itself.
        let pushed_prev = self.run_cpu_stopper(cpu, prev);
        let next = self.pick_task_fair(cpu);
        let rq = &mut self.rqs[cpu as usize];
        let cause = rq.resched_cause;
        rq.need_resched = Resched::None;
        rq.resched_cause = Cause::Other;
        if next == prev {
            // Nothing is reset on a re-pick (spec §3.11): vprot, prev_sum_exec_runtime and
            // buddies keep their values and no hrtick is armed.
            if next.is_some() {
                self.start_step(cpu);
            }
            return;
        }
        if self.tracing() {
            let state = match how {
                Switch::Preempt => crate::trace::PrevState::Running,
                Switch::PreemptKernel => crate::trace::PrevState::Preempted,
                Switch::Block => crate::trace::PrevState::Sleeping,
                Switch::BlockUninterruptible => crate::trace::PrevState::Uninterruptible,
                Switch::Exit => crate::trace::PrevState::Dead,
            };
            self.trace_switch(cpu, prev, state, next);
        }
        if let Some(p) = prev {
            if !pushed_prev {
                self.fair(cpu).put_prev_task_fair(p, next);
            }
            let st = &mut self.tasks[p.idx()].stats;
            st.nr_switches += 1;
            self.counters.nr_switches += 1;
            if how.preempts() {
                st.nr_involuntary_switches += 1;
                self.counters.nr_involuntary_switches += 1;
                match cause {
                    Cause::Tick => self.counters.nr_tick_preemptions += 1,
                    Cause::Wakeup => {
                        st.nr_wakeup_preemptions += 1;
                        self.counters.nr_wakeup_preemptions += 1;
                    }
                    Cause::Other => {}
                }
            } else {
                st.nr_voluntary_switches += 1;
                self.counters.nr_voluntary_switches += 1;
            }
        }
        if let Some(n) = next
            && self.tasks[n.idx()].waking_since.is_some()
        {
            // The wakee's first switch-in since its wakeup (switch_to() ends the wait): what
            // did it replace? A prev pushed away by the CPU stopper left through the stopper.
            let w = &mut self.wakee_switch_ins[n.idx()];
            match prev {
                None => w.from_idle += 1,
                Some(_) if how.preempts() && !pushed_prev => w.preempting += 1,
                Some(_) => {}
            }
        }
        match next {
            Some(n) => self.switch_to(cpu, n, prev),
            None => {
                // set_next_task_idle(): only when idle replaces a task (a re-pick of idle
                // returns above, as put_prev_set_next_task() does for next == prev).
                self.schedstat.cpus[cpu as usize].sched_goidle += 1;
                self.switch_to_idle(cpu)
            }
        }
    }

    /// `pick_task_fair()` (fair.c v7.3.4); newidle balancing joins with the machine model.
    fn pick_task_fair(&mut self, cpu: u32) -> Option<TaskId> {
        if !self.gents.is_empty() {
            // ≤7.2's levels: the pick itself dequeues delayed entities, which may leave no
            // task to run (`goto idle`: newidle balance, then pick again).
            if let Some(t) = self.fair(cpu).pick_task_fair() {
                return Some(t);
            }
            if !self.newidle_balance(cpu) {
                return None;
            }
            return self.fair(cpu).pick_task_fair();
        }
        if self.rqs[cpu as usize].cfs.h_nr_queued == 0 && !self.newidle_balance(cpu) {
            return None;
        }
        // Requests made by update_curr() here are consumed by this very schedule().
        self.fair(cpu).pick_task_fair()
    }

    /// The switch-in of `next` on `cpu`: the `next` side of `__schedule()` and
    /// `context_switch()` (core.c v7.3.4; the same in v6.12.117).
    ///
    /// The address-space part is priced by the CPU's loaded mm, not by `prev`:
    /// `context_switch()` gives a kernel thread (idle included) no mm switch at all, only
    /// `enter_lazy_tlb()` (it borrows `prev->active_mm`); a task with an mm goes through x86
    /// `switch_mm_irqs_off()` (arch/x86/mm/tlb.c v7.3.4 and v6.12.117), which compares
    /// `next->mm` with `cpu_tlbstate.loaded_mm` and reloads CR3 only if they differ. So a
    /// process that runs again after idle or a kernel thread costs a thread switch, and one
    /// that follows another process through idle or a kernel thread costs a process switch.
    /// (Back from lazy mode into the same mm, the kernel still flushes if the mm's `tlb_gen`
    /// moved meanwhile; the model has no TLB shootdowns, so that never happens here.)
    fn switch_to(&mut self, cpu: u32, next: TaskId, prev: Option<TaskId>) {
        let now = self.now;
        let from_idle = prev.is_none();
        let mm = self.tasks[next.idx()].mm;
        let rq = &mut self.rqs[cpu as usize];
        let switch_mm = mm != crate::task::NO_MM && mm != rq.loaded_mm;
        if switch_mm {
            rq.loaded_mm = mm;
            self.counters.nr_mm_switches += 1;
        }
        let cost = if switch_mm { self.costs.context_switch_mm_ns } else { self.costs.context_switch_ns };
        let cost = self.cost(cost);
        if from_idle {
            self.lb_idle_exit(cpu);
        }
        // pick_next_task_fair() moves the picked task to the head of cfs_tasks.
        self.lb_seq += 1;
        self.tasks[next.idx()].lb_seq = self.lb_seq;
        let rq = &mut self.rqs[cpu as usize];
        if from_idle && let Some(since) = rq.idle_since.take() {
            rq.idle_ns += now - since;
            rq.last_idle_ns = now - since;
        }
        rq.curr = Some(next);
        rq.prologue = cost;
        rq.in_prologue = cost > 0;
        let hrtick = self.params.feat(crate::features::Feature::HRTICK);
        let mut f = self.fair(cpu);
        f.set_next_task_fair(next, true);
        let delay = if hrtick { f.hrtick_delay(next) } else { None };
        let req = f.resched;
        let penalty = self.cache_cold_penalty(next, cpu);
        let penalty = self.cost(penalty);
        let task = &mut self.tasks[next.idx()];
        task.state = TaskState::Running;
        task.cache_debt_ns += penalty;
        task.last_cpu = Some(cpu);
        if let Step::User { remaining } = &mut task.step {
            *remaining += std::mem::take(&mut task.cache_debt_ns);
        }
        if let Some(since) = task.waking_since.take() {
            task.stats.wakeup_latency.record(now - since);
            self.wakeup_latency.record(now - since);
        }
        if let Some(d) = delay {
            // hrtick_schedule_exit() (core.c v7.3.4) programs the timer once the switch-in
            // path is done: the request's length counts from there, while the runtime counts
            // from the pick, so the hrtick finds the request used up. Programmed at the pick,
            // a truncated delay of a non-nice-0 task expires a nanosecond short of the
            // deadline and the pick keeps the still-protected task.
            let after = if self.params.behavior.hrtick_armed_after_switch { cost } else { 0 };
            self.hrtick_start(cpu, after + d);
        }
        self.resched_request(cpu, req, Origin::LocalTask, Cause::Tick);
        self.ensure_tick(cpu);
        self.start_step(cpu);
    }

    /// The time a task loses refilling caches when it runs on `cpu` after running elsewhere,
    /// by how far the caches are (`migration_*_ns`, for a 64 KiB working set).
    fn cache_cold_penalty(&self, t: TaskId, cpu: u32) -> u64 {
        let Some(last) = self.tasks[t.idx()].last_cpu else { return 0 };
        if last == cpu {
            return 0;
        }
        let (a, b) = (&self.topo.cpus[last as usize], &self.topo.cpus[cpu as usize]);
        if a.smt_id == b.smt_id {
            self.costs.migration_smt_ns
        } else if a.llc_id == b.llc_id {
            self.costs.migration_llc_ns
        } else if a.node_id == b.node_id {
            self.costs.migration_cross_llc_ns
        } else {
            self.costs.migration_cross_node_ns
        }
    }

    fn switch_to_idle(&mut self, cpu: u32) {
        let state = self.select_idle_state(cpu);
        let rq = &mut self.rqs[cpu as usize];
        rq.idle_state = state;
        rq.curr = None;
        rq.in_prologue = false;
        rq.idle_since = Some(self.now);
        // hrtick_cancel(): the idle path cancels the hrtick.
        rq.hrtick_at = None;
        // __update_idle_core(): a core whose threads are all idle is advertised to the LLC.
        if self.domains.sched_smt_active() {
            self.with_select(|ctx, _| crate::select::update_idle_core(ctx, cpu));
        }
    }

    /// Runs `f` with a CPU-selection context over the live runqueues (read on demand) and the
    /// task table.
    pub(super) fn with_select<R>(&mut self, f: impl FnOnce(&mut SelectCtx<'_>, &mut [Task]) -> R) -> R {
        let live = LiveFacts { rqs: &self.rqs, groups: self.groups.as_ref(), topo: &self.topo, costs: &self.costs };
        let mut ctx = SelectCtx {
            topo: &self.topo,
            domains: &self.domains,
            cpus: &live,
            llc: &mut self.llc,
            features: &self.params.features,
            behavior: &self.params.behavior,
        };
        f(&mut ctx, &mut self.tasks)
    }
}

/// The runqueues as CPU selection reads them, computed per CPU when asked.
struct LiveFacts<'a> {
    rqs: &'a [super::Rq],
    /// With task groups `cpu_load()` is the load hierarchy's root (`fair/group_pelt.rs`).
    groups: Option<&'a crate::fair::group::Groups>,
    topo: &'a crate::topology::Topology,
    costs: &'a crate::topology::Costs,
}

impl CpuSource for LiveFacts<'_> {
    fn facts(&self, cpu: u32) -> CpuFacts {
        let r = &self.rqs[cpu as usize];
        let capacity = self.capacity(cpu);
        let o = self.occupancy(cpu);
        let (idle_exit_latency_ns, idle_stamp) = self.idle_exit(cpu);
        CpuFacts {
            idle: o.idle,
            nr_running: o.nr_running,
            nr_delayed: o.nr_delayed,
            nr_idle_policy: o.nr_idle_policy,
            ttwu_pending: o.ttwu_pending,
            cpu_load: self.cpu_load(cpu),
            cpu_util: r.cfs.pelt.cpu_util_cfs(capacity),
            cpu_runnable: r.cfs.pelt.cpu_runnable(),
            capacity,
            idle_exit_latency_ns,
            idle_stamp,
        }
    }
    fn nr_cpus(&self) -> usize {
        self.rqs.len()
    }
    fn occupancy(&self, cpu: u32) -> Occupancy {
        let r = &self.rqs[cpu as usize];
        Occupancy {
            idle: r.curr.is_none(),
            nr_running: r.cfs.h_nr_queued,
            nr_delayed: r.cfs.nr_delayed(),
            nr_idle_policy: r.cfs.h_nr_idle,
            ttwu_pending: r.ttwu_pending(),
        }
    }
    fn capacity(&self, cpu: u32) -> u64 {
        u64::from(self.topo.cpus[cpu as usize].capacity)
    }
    fn cpu_load(&self, cpu: u32) -> u64 {
        self.groups.map_or(&self.rqs[cpu as usize].cfs.pelt, |g| g.load_root(cpu)).cpu_load()
    }
    fn idle_exit(&self, cpu: u32) -> (u64, u64) {
        let r = &self.rqs[cpu as usize];
        let latency = if r.curr.is_none() { idle_state_exit(r.idle_state, self.costs) } else { 0 };
        (latency, r.idle_since.unwrap_or(0))
    }
}

/// The exit latency of an idle state.
fn idle_state_exit(state: IdleState, costs: &crate::topology::Costs) -> u64 {
    match state {
        IdleState::Poll => 0,
        IdleState::Shallow => costs.idle_exit_ns_c1,
        IdleState::Deep => costs.idle_exit_ns_deep,
    }
}
