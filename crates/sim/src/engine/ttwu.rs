//! `try_to_wake_up()` and `wake_up_new_task()` (kernel/sched/core.c v7.3.4, spec §3.14,
//! §3.15): in-place wakeup of delayed tasks, CPU selection, wake lists and IPIs, and the
//! wakeup-preemption check on the target CPU.

use super::core::Origin;
use super::{Cause, Sim};
use crate::fair::Policy;
use crate::fair::{Resched, enq, wf};
use crate::features::Feature;
use crate::select::{self, Placement};
use crate::task::{TaskId, TaskState};

impl Sim {
    /// `try_to_wake_up()` (core.c v7.3.4). `this_cpu` is the CPU the wakeup runs on, `waker`
    /// the task that was running there (`current`, also in interrupt context), `in_task`
    /// false for hardirq/softirq wakeups. Returns whether `select_task_rq()` ran the fair
    /// class's `select_task_rq_fair()` (a wakee allowed on more than one CPU, not requeued in
    /// place by `ttwu_runnable()`), for the waker's cost.
    pub(super) fn try_to_wake_up(
        &mut self,
        p: TaskId,
        wake_flags: u32,
        this_cpu: u32,
        waker: Option<TaskId>,
        in_task: bool,
    ) -> bool {
        let mut wake_flags = wake_flags | wf::TTWU;
        if self.tasks[p.idx()].state != TaskState::Blocked {
            return false;
        }
        let prev_cpu = self.tasks[p.idx()].cpu;
        self.trace_waking(this_cpu, p, prev_cpu);
        let task = &mut self.tasks[p.idx()];
        task.waking_since = Some(self.now);
        task.stats.nr_wakeups += 1;
        self.counters.nr_wakeups += 1;
        if wake_flags & wf::SYNC != 0 {
            task.stats.nr_wakeups_sync += 1;
            self.counters.nr_wakeups_sync += 1;
        }
        if !in_task {
            self.counters.nr_wakeups_irq += 1;
        }
        if self.ents[p.idx()].on_rq {
            // ttwu_runnable(): still queued (delayed dequeue) — requeue in place, no CPU
            // selection, no record_wakee.
            let cpu = task.cpu;
            task.state = TaskState::Running;
            self.count_local_remote(p, cpu, this_cpu);
            let mut f = self.fair(cpu);
            if f.ents[p.idx()].sched_delayed {
                f.enqueue_task_fair(p, enq::DELAYED);
            }
            let req = f.resched;
            let origin = Self::origin(cpu, this_cpu, in_task);
            self.trace_wakeup(cpu, p, false);
            self.resched_request(cpu, req, origin, Cause::Other);
            if self.rqs[cpu as usize].curr != Some(p) {
                self.wakeup_preempt(cpu, p, wake_flags, origin, in_task);
            }
            return false;
        }
        task.state = TaskState::Waking;
        let prev_cpu = task.cpu;
        let selected = task.allowed.weight() > 1;
        let cpu = if selected {
            wake_flags |= wf::RQ_SELECTED;
            let placement = self.select_task_rq(p, prev_cpu, this_cpu, waker, wake_flags);
            let st = &mut self.tasks[p.idx()].stats;
            if placement.affine_attempt {
                st.nr_wakeups_affine_attempts += 1;
                self.counters.nr_wakeups_affine_attempts += 1;
            }
            if placement.affine {
                st.nr_wakeups_affine += 1;
                self.counters.nr_wakeups_affine += 1;
                // wake_affine() ran in the waker CPU's lowest SD_WAKE_AFFINE domain that
                // spans the wakee's previous CPU (select_task_rq_fair()'s affine_sd).
                let level = self.domains.of(this_cpu).iter().position(|sd| {
                    sd.flags & crate::topology::SD_WAKE_AFFINE != 0 && self.domains.span_contains(sd, prev_cpu)
                });
                if let Some(level) = level {
                    self.schedstat.domains[this_cpu as usize][level].ttwu_move_affine += 1;
                }
            }
            if self.tracing() {
                let sync = wake_flags & wf::SYNC != 0;
                self.trace_placement(this_cpu, p, prev_cpu, placement.cpu, sync, placement.reason);
            }
            placement.cpu
        } else {
            task.first_allowed()
        };
        if cpu != prev_cpu {
            wake_flags |= wf::MIGRATED;
            self.set_task_cpu(p, cpu);
            self.tasks[p.idx()].stats.nr_wakeups_migrate += 1;
            self.counters.nr_wakeups_migrate += 1;
        }
        self.count_local_remote(p, cpu, this_cpu);
        if self.params.feat(Feature::TTWU_QUEUE) && self.ttwu_queue_cond(cpu, this_cpu) {
            // Queued wakeups keep only WF_MIGRATED: WF_SYNC and WF_RQ_SELECTED are lost.
            self.rqs[cpu as usize].wake_list.push((p, wake_flags & wf::MIGRATED));
            self.send_ipi(cpu);
        } else {
            self.ttwu_do_activate(cpu, p, wake_flags, Self::origin(cpu, this_cpu, in_task), in_task);
        }
        selected
    }

    /// How a request made by this wakeup reaches `cpu`.
    fn origin(cpu: u32, this_cpu: u32, in_task: bool) -> Origin {
        match (cpu == this_cpu, in_task) {
            (false, _) => Origin::Remote,
            (true, true) => Origin::LocalTask,
            (true, false) => Origin::Irq,
        }
    }

    /// `ttwu_stat()` (core.c v7.3.4): the wakee's local/remote counts, and the runqueue and
    /// domain counters of the CPU the wakeup runs on (`this_rq()`).
    fn count_local_remote(&mut self, p: TaskId, cpu: u32, this_cpu: u32) {
        let st = &mut self.tasks[p.idx()].stats;
        let rq = &mut self.schedstat.cpus[this_cpu as usize];
        rq.ttwu_count += 1;
        if cpu == this_cpu {
            st.nr_wakeups_local += 1;
            self.counters.nr_wakeups_local += 1;
            rq.ttwu_local += 1;
        } else {
            st.nr_wakeups_remote += 1;
            self.counters.nr_wakeups_remote += 1;
            let level = self.domains.of(this_cpu).iter().position(|sd| self.domains.span_contains(sd, cpu));
            if let Some(level) = level {
                self.schedstat.domains[this_cpu as usize][level].ttwu_wake_remote += 1;
            }
        }
    }

    /// `ttwu_queue_cond()` (core.c v7.3.4).
    fn ttwu_queue_cond(&self, cpu: u32, this_cpu: u32) -> bool {
        if !self.topo.cpus_share_cache(this_cpu, cpu) {
            return true;
        }
        if cpu == this_cpu {
            return false;
        }
        self.rqs[cpu as usize].cfs.h_nr_queued == 0
    }

    /// `ttwu_do_activate()` (core.c v7.3.4): enqueue on `cpu` and check preemption.
    fn ttwu_do_activate(&mut self, cpu: u32, p: TaskId, wake_flags: u32, origin: Origin, in_task: bool) {
        let mut flags = enq::WAKEUP;
        if wake_flags & wf::MIGRATED != 0 {
            flags |= enq::MIGRATED;
        }
        if wake_flags & wf::RQ_SELECTED != 0 {
            flags |= enq::RQ_SELECTED;
        }
        let mut f = self.fair(cpu);
        f.enqueue_task_fair(p, flags);
        let req = f.resched;
        self.tasks[p.idx()].state = TaskState::Running;
        self.trace_wakeup(cpu, p, false);
        self.lb_enqueued(cpu, p);
        self.resched_request(cpu, req, origin, Cause::Other);
        self.hrtick_update(cpu);
        self.wakeup_preempt(cpu, p, wake_flags, origin, in_task);
    }

    /// The wake-list IPI arrives: process queued wakeups, then act on reschedules at its return.
    pub(super) fn ipi(&mut self, cpu: u32) {
        let rq = &mut self.rqs[cpu as usize];
        rq.ipi_pending = false;
        let mut list = std::mem::take(&mut rq.wake_list);
        for &(p, flags) in &list {
            // sched_ttwu_pending(): runs on the target, from the IPI (interrupt context).
            self.ttwu_do_activate(cpu, p, flags, Origin::Irq, false);
        }
        // The emptied list goes back with its capacity, so the next queued wakeup to this CPU
        // does not allocate (one allocation per IPI otherwise).
        list.clear();
        let rq = &mut self.rqs[cpu as usize];
        if rq.wake_list.is_empty() {
            rq.wake_list = list;
        }
        self.timer_interrupt(cpu);
        self.irq_exit(cpu);
    }

    /// `wakeup_preempt()` (core.c v7.3.4): an idle CPU always reschedules; otherwise the fair
    /// class decides.
    pub(super) fn wakeup_preempt(&mut self, cpu: u32, p: TaskId, wake_flags: u32, origin: Origin, in_task: bool) {
        let rq = &self.rqs[cpu as usize];
        if rq.curr.is_none() {
            self.kick_idle(cpu);
            return;
        }
        let need_full = rq.need_resched == Resched::Full;
        #[allow(clippy::expect_used, reason = "rq.curr was checked to be Some just above")]
        let curr = rq.curr.expect("checked above");
        let mut f = self.fair(cpu);
        let verdict = f.wakeup_preempt_fair(p, wake_flags, need_full, in_task);
        let req = f.resched;
        self.trace_wakeup_preempt(cpu, curr, p, verdict);
        self.resched_request(cpu, req, origin, Cause::Wakeup);
    }

    /// `set_task_cpu()` with `migrate_task_rq_fair()`: the task is not queued anywhere.
    fn set_task_cpu(&mut self, p: TaskId, cpu: u32) {
        let src = self.tasks[p.idx()].cpu;
        if src != cpu {
            let src_idle_now = self.rqs[src as usize].curr.is_none().then(|| crate::pelt::pelt_clock(self.now));
            let se = &mut self.ents[p.idx()];
            let w = crate::fair::weight::scale_load_down(se.load_weight);
            let (g, avg) = (se.group, se.pelt.avg);
            self.rqs[src as usize].cfs.pelt.migrate_task_rq_fair(&mut se.pelt, w, false, src_idle_now);
            if let Some(groups) = self.groups.as_mut() {
                groups.remove_task(src, g, &avg, w);
            }
        }
        if src != cpu {
            self.trace_migrate(cpu, p, src, cpu);
        }
        let task = &mut self.tasks[p.idx()];
        if task.cpu != cpu {
            task.cpu = cpu;
            task.stats.nr_migrations += 1;
            self.counters.nr_migrations += 1;
            // migrate_task_rq_fair(): the task is cache cold on its new CPU.
            self.ents[p.idx()].exec_start = 0;
        }
    }

    /// `select_task_rq_fair()` for a wakeup or fork of `p` on `this_cpu` (fair.c v7.3.4).
    fn select_task_rq(
        &mut self,
        p: TaskId,
        prev_cpu: u32,
        this_cpu: u32,
        waker: Option<TaskId>,
        wake_flags: u32,
    ) -> Placement {
        let jiffies = self.jiffies();
        let pl = self.ents[p.idx()].pelt;
        let p_h_load = self.task_h_load(p, prev_cpu, jiffies);
        let waker_h_load = waker.map_or(0, |wk| self.task_h_load(wk, this_cpu, jiffies));
        let w = select::Waking {
            p_h_load,
            waker_h_load,
            p_util: pl.task_util_est(),
            p_runnable: pl.avg.runnable_avg,
            p_idle_policy: self.ents[p.idx()].policy == Policy::Idle,
            jiffies,
            hz: u64::from(self.cfg.hz),
            ..select::Waking::new(p, prev_cpu, this_cpu, waker, wake_flags)
        };
        self.with_select(|ctx, tasks| select::select_task_rq_fair(ctx, tasks, &w))
    }

    /// `wake_up_new_task()` (core.c v7.3.4): fork placement, `ENQUEUE_INITIAL`, and a
    /// `WF_FORK` preemption check.
    pub(super) fn wake_up_new_task(&mut self, p: TaskId) {
        // The parent is the spawning task, or, for tasks a workload starts at a given time, the
        // workload's launcher outside the model, taken to be on the task's first CPU.
        let parent = self.tasks[p.idx()].parent;
        let parent_cpu = parent.map_or(self.tasks[p.idx()].first_allowed(), |pp| self.tasks[pp.idx()].cpu);
        let mm = self.tasks[p.idx()].mm;
        self.lb.cache.thread_started(mm);
        let task = &mut self.tasks[p.idx()];
        task.state = TaskState::Waking;
        task.recent_used_cpu = task.cpu;
        let cpu = if task.allowed.weight() > 1 {
            let prev = task.cpu;
            self.select_task_rq(p, prev, parent_cpu, None, wf::FORK).cpu
        } else {
            task.first_allowed()
        };
        self.tasks[p.idx()].cpu = cpu;
        let mut f = self.fair(cpu);
        // post_init_entity_util_avg(): a new task's utilisation from its CPU's.
        let se = &mut f.ents[p.idx()];
        let w = crate::fair::weight::scale_load_down(se.load_weight);
        f.cfs.pelt.post_init_entity_util_avg(&mut se.pelt.avg, w, 1024);
        f.enqueue_task_fair(p, enq::INITIAL);
        let req = f.resched;
        self.tasks[p.idx()].state = TaskState::Running;
        if let Some(pp) = parent {
            self.trace_fork(parent_cpu, pp, p);
        }
        self.trace_wakeup(cpu, p, true);
        self.lb_enqueued(cpu, p);
        // A parent forking onto its own CPU asks from task context; anything else is remote.
        let local = parent.is_some_and(|pp| self.rqs[cpu as usize].curr == Some(pp));
        let origin = if local { Origin::LocalTask } else { Origin::Remote };
        self.resched_request(cpu, req, origin, Cause::Other);
        self.hrtick_update(cpu);
        self.wakeup_preempt(cpu, p, wf::FORK, origin, true);
    }
}
