//! The periodic tick (`sched_tick`), HRTICK and hrtimer sleeps (kernel/sched/core.c,
//! kernel/time/hrtimer.c semantics as spec §3.12 and workloads §1.1 state them).
//!
//! Ticks are aligned to jiffy boundaries on every CPU and stop while a CPU is idle (NOHZ idle).
//! An hrtimer sleep fires at the first timer interrupt on its CPU at or after its soft expiry,
//! and at the latest at its hard expiry (soft + timer slack).

use super::core::{IdleState, Origin};
use super::{Cause, Ev, Sim, hrtick_slot};
use crate::fair::Resched;
use crate::task::{Step, TaskId};
use crate::time::Nanos;

/// `hrtick_start()` re-programs an armed timer only when the expiry moves by more than this.
const HRTICK_REPROGRAM_NS: u64 = 5_000;

impl Sim {
    /// Starts the periodic tick of a CPU that leaves idle, at the next jiffy boundary.
    pub(super) fn ensure_tick(&mut self, cpu: u32) {
        let tick = self.params.tick_nsec;
        let rq = &mut self.rqs[cpu as usize];
        if rq.tick_armed {
            return;
        }
        rq.tick_armed = true;
        let next = (self.now / tick + 1) * tick;
        rq.tick_next = next;
        self.queue.push(Nanos(next), Ev::Tick { cpu });
    }

    /// `sched_tick()` (core.c v7.3.4) and `task_tick_fair(queued = 0)`.
    pub(super) fn tick(&mut self, cpu: u32) {
        let rq = &mut self.rqs[cpu as usize];
        if rq.curr.is_none() {
            // The idle loop keeps the tick until one fires into it (`do_idle()` passes
            // `got_tick` to `cpuidle_idle_call()`, 6.12.117, 6.18.44, 7.2.12, 7.3.4): this
            // tick runs sched_tick() on the idle CPU, whose SCHED_SOFTIRQ balances it as
            // CPU_IDLE, and then the loop stops the tick until the CPU is busy again.
            rq.tick_armed = false;
            self.sched_balance_trigger(cpu, true);
            self.nohz_balance_enter_idle(cpu);
            self.timer_interrupt(cpu);
            return;
        }
        let next = self.now + self.params.tick_nsec;
        self.rqs[cpu as usize].tick_next = next;
        self.queue.push(Nanos(next), Ev::Tick { cpu });
        self.trace_timer_expire(cpu, "tick_nohz_handler");
        self.timer_irq_time(cpu);
        // Lazy mode: a pending lazy request becomes a full one at the tick.
        let rq = &mut self.rqs[cpu as usize];
        if rq.need_resched == Resched::Lazy {
            rq.need_resched = Resched::Full;
        }
        let mut f = self.fair(cpu);
        f.task_tick();
        let req = f.resched;
        let curr = self.rqs[cpu as usize].curr;
        if let Some(p) = curr {
            // The end of task_tick_fair(): CONFIG_SCHED_CACHE queues the process's LLC scan.
            self.task_tick_cache(cpu, p);
        }
        self.resched_request(cpu, req, Origin::Irq, Cause::Tick);
        // SCHED_SOFTIRQ at the end of the tick interrupt: periodic and NOHZ idle balancing.
        self.sched_balance_trigger(cpu, false);
        self.timer_interrupt(cpu);
        if let Some(p) = curr {
            // The queued task work (TWA_RESUME) runs on the way back to user mode; here at
            // the tick's exit, even when the task is preempted there or is in a kernel path.
            self.run_cache_work(p);
        }
        self.irq_exit(cpu);
    }

    /// The time a timer interrupt takes on a busy CPU (`timer_irq_ns`). Debian's kernels
    /// (6.12.117, 7.3.4) are built without `CONFIG_IRQ_TIME_ACCOUNTING`, so `rq_clock_task()`
    /// runs on through the handler and `update_curr()` charges it to the interrupted task as
    /// runtime: the task's work ends that much later and its vruntime grows by it. Modelled as
    /// the running step (or the switch-in path) taking `timer_irq_ns` longer; the handler's
    /// decisions are taken at its entry.
    fn timer_irq_time(&mut self, cpu: u32) {
        let ns = self.cost(self.costs.timer_irq_ns);
        if ns == 0 {
            return;
        }
        self.stop_step(cpu);
        let rq = &mut self.rqs[cpu as usize];
        let Some(t) = rq.curr else { return };
        if rq.in_prologue {
            rq.prologue += ns;
        } else {
            let task = &mut self.tasks[t.idx()];
            match &mut task.step {
                Step::User { remaining } | Step::Kernel { remaining, .. } => *remaining += ns,
                // Between two instructions: the interrupt is a stretch of its own.
                Step::Next => task.step = Step::User { remaining: ns },
            }
        }
        self.start_step(cpu);
    }

    /// Arms (or re-arms) the hrtick `delay` ns from now (`hrtick_start()`, core.c v7.3.4).
    pub(super) fn hrtick_start(&mut self, cpu: u32, delay: u64) {
        let at = self.now + delay;
        let rq = &mut self.rqs[cpu as usize];
        if let Some(old) = rq.hrtick_at
            && old.abs_diff(at) <= HRTICK_REPROGRAM_NS
        {
            return;
        }
        rq.hrtick_at = Some(at);
        // One queued event per CPU: a later expiry is picked up when the queued event fires
        // (`hrtick_expired`), so re-arming never piles events up in the queue.
        if rq.hrtick_queued.is_none_or(|q| at < q) {
            rq.hrtick_queued = Some(at);
            if self.queue.set_slot(hrtick_slot(cpu), Nanos(at), Ev::Hrtick { cpu }) {
                self.stale_events += 1;
            }
        }
    }

    /// The queued hrtick event fires: the timer expires now if it is still armed for now, is
    /// re-queued if it was re-armed later, and is gone if it was cancelled. Returns whether the
    /// timer really expired.
    pub(super) fn hrtick_expired(&mut self, cpu: u32) -> bool {
        let now = self.now;
        let rq = &mut self.rqs[cpu as usize];
        rq.hrtick_queued = None;
        match rq.hrtick_at {
            None => false,
            Some(at) if at > now => {
                rq.hrtick_queued = Some(at);
                self.queue.set_slot(hrtick_slot(cpu), Nanos(at), Ev::Hrtick { cpu });
                false
            }
            Some(_) => {
                self.hrtick(cpu);
                true
            }
        }
    }

    /// `hrtick_update()` (fair.c v7.3.4): after an enqueue, arm the hrtick for the running
    /// fair task if none is armed.
    pub(super) fn hrtick_update(&mut self, cpu: u32) {
        if !self.params.feat(crate::features::Feature::HRTICK) || self.rqs[cpu as usize].hrtick_at.is_some() {
            return;
        }
        let Some(curr) = self.rqs[cpu as usize].curr else { return };
        let mut f = self.fair(cpu);
        let delay = f.hrtick_delay(curr);
        let req = f.resched;
        if let Some(d) = delay {
            self.hrtick_start(cpu, d);
        }
        self.resched_request(cpu, req, Origin::LocalTask, Cause::Tick);
    }

    /// `hrtick()` expiry: `task_tick_fair(queued = 1)` (`entity_tick()` at every group level,
    /// [`crate::fair::Fair::hrtick_tick`]) then an unconditional full reschedule.
    pub(super) fn hrtick(&mut self, cpu: u32) {
        self.rqs[cpu as usize].hrtick_at = None;
        if self.rqs[cpu as usize].curr.is_some() {
            self.trace_timer_expire(cpu, "hrtick");
            self.timer_irq_time(cpu);
            self.fair(cpu).hrtick_tick();
            self.resched_request(cpu, Resched::Full, Origin::Irq, Cause::Tick);
        }
        self.timer_interrupt(cpu);
        self.irq_exit(cpu);
    }

    /// The timer migration of kernel/time/timer_migration.c (6.9+, so 6.12.117 and 7.3.4):
    /// a timer-wheel timer that is not pinned is "global", and while its CPU idles in NOHZ the
    /// hierarchy hands its expiry to an active CPU, which runs it from its own timer softirq
    /// at its next tick (`tmigr_handle_remote()` from `run_timer_softirq()`). The model's
    /// global timers are the timeouts of unbound kernel threads (`schedule_timeout()` in
    /// `rcu_gp_kthread`, `kcompactd`'s `wait_event_freezable_timeout()`; a per-CPU kworker's
    /// delayed work is queued with `add_timer_on()`, which pins it). So the expired timeouts
    /// of unbound kthreads on the idle `cpu` move to the timer list of the lowest-numbered
    /// busy CPU, whose next timer interrupt wakes them there (`try_to_wake_up()` with that
    /// CPU's current task as the waker); with every CPU idle they stay (the last CPU to go
    /// idle keeps the first global expiry) and wake `cpu`.
    fn migrate_global_timers(&mut self, cpu: u32) {
        let now = self.now;
        let due: Vec<(u64, u64)> = self.rqs[cpu as usize]
            .timers
            .iter()
            .take_while(|(key, _)| key.0 <= now)
            .filter(|(_, (t, _))| {
                let task = &self.tasks[t.idx()];
                task.mm == crate::task::NO_MM && task.allowed.weight() > 1
            })
            .map(|(&key, _)| key)
            .collect();
        // Looked for only when there is a global timer to hand over: this runs at every timer
        // interrupt of an idle CPU, and the scan is over every CPU.
        if due.is_empty() {
            return;
        }
        let Some(active) = (0..self.rqs.len() as u32).find(|&c| c != cpu && self.rqs[c as usize].curr.is_some()) else {
            return;
        };
        for key in due {
            if let Some(timer) = self.rqs[cpu as usize].timers.remove(&key) {
                self.rqs[active as usize].timers.insert(key, timer);
            }
        }
    }

    /// Arms an hrtimer sleep of `t` on `cpu`: soft expiry `soft`, hard `soft + slack`.
    ///
    /// An absolute expiry may already have passed when the timer is started (the task was
    /// preempted in its syscall after it checked the time). `hrtimer_start_range_ns()` then
    /// still enqueues it and the clock event is programmed for the earliest expiry, which the
    /// clockevents layer raises to its minimum delta (kernel/time/hrtimer.c, clockevents.c),
    /// so the timer interrupt comes at once, not in the past.
    ///
    /// A kernel thread's sleep (`TaskSpec::kthread`: `rcu_preempt` in `schedule_timeout_idle()`,
    /// a kworker's delayed work, both kernel/time/timer.c) is a timer-wheel timer instead: its
    /// expiry is a jiffy (`expires` in jiffies, 6.12.117 and 7.3.4 alike), so it is raised to
    /// the next jiffy boundary, and it has no slack. The wheel runs from `TIMER_SOFTIRQ`, which
    /// the tick raises (`update_process_times()` → `run_local_timers()`): on a busy CPU the
    /// thread is woken by that jiffy's tick after `sched_tick()`, on an idle one (the tick
    /// stopped) by the clock event NOHZ programs for the timer's jiffy.
    pub(super) fn arm_sleep_timer(&mut self, cpu: u32, t: TaskId, soft: u64, slack: u64) {
        let (soft, slack) = if self.tasks[t.idx()].mm == crate::task::NO_MM {
            let tick = self.params.tick_nsec;
            (soft.div_ceil(tick).saturating_mul(tick), 0)
        } else {
            (soft, slack)
        };
        let task = &mut self.tasks[t.idx()];
        task.timer_gen = task.timer_gen.wrapping_add(1);
        let generation = task.timer_gen;
        self.timer_seq += 1;
        self.rqs[cpu as usize].timers.insert((soft, self.timer_seq), (t, generation));
        let hard = soft.saturating_add(slack).max(self.now);
        self.queue.push(Nanos(hard), Ev::TimerHard { cpu, task: t, generation });
    }

    /// A timer interrupt on `cpu`: every sleep whose soft expiry has passed is woken, in
    /// expiry order, from hardirq context (`hrtimer_wakeup()`: a non-sync wakeup).
    ///
    /// On a CPU halted in idle (any state but polling) the handler cannot run before the CPU
    /// has left that state: `default_idle()` (and a cpuidle state's enter callback) halts
    /// with interrupts enabled (`safe_halt()`, `sti; hlt`), and the interrupt is taken
    /// once the CPU executes again, the state's exit latency after the timer's expiry (for
    /// a guest's halted vCPU, the hypervisor's wake of it). Until then the runqueue is the
    /// idle one (`rq->curr == rq->idle`, `nr_running == 0`): `available_idle_cpu()` holds
    /// and a wakee may still be placed there. So the CPU is woken and the expired timers
    /// wait for [`Sim::idle_exit`], which runs this handler as the CPU resumes.
    ///
    /// Before that, an unbound kernel thread's expired timeout leaves the idle CPU for an
    /// active one ([`Sim::migrate_global_timers`]).
    pub(super) fn timer_interrupt(&mut self, cpu: u32) {
        let rq = &self.rqs[cpu as usize];
        if rq.curr.is_none() && rq.idle_state != IdleState::Poll && !rq.idle_resuming {
            self.migrate_global_timers(cpu);
            let rq = &self.rqs[cpu as usize];
            if rq.timers.first_key_value().is_some_and(|(&(soft, _), _)| soft <= self.now) {
                self.kick_idle(cpu);
            }
            return;
        }
        loop {
            let rq = &mut self.rqs[cpu as usize];
            let Some((&key, _)) = rq.timers.first_key_value() else { break };
            if key.0 > self.now {
                break;
            }
            #[allow(clippy::expect_used, reason = "the key was read from the same map just above")]
            let (t, generation) = rq.timers.remove(&key).expect("present");
            let task = &mut self.tasks[t.idx()];
            if task.timer_gen != generation {
                continue;
            }
            task.timer_gen = task.timer_gen.wrapping_add(1);
            let waker = self.rqs[cpu as usize].curr;
            // A timer expiry runs in interrupt context: no waker's cost to charge.
            let _ = self.try_to_wake_up(t, 0, cpu, waker, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Ev, Sim, SimSetup};
    use crate::config::{Limits, SchedConfig};
    use crate::program::{Op, TaskSpec};
    use crate::task::TaskId;
    use crate::topology::Topology;

    /// Two hogs at nice 0 and nice 5 pinned to CPU 0 of two (the ground truth's `fair_nice`)
    /// for 2 s: (nice-5 runtime, nice-5 switches).
    fn nice5_turns(sched: SchedConfig) -> (u64, u64) {
        let hog = |comm: &str, nice| TaskSpec {
            nice,
            cpus: Some(vec![0]),
            ..TaskSpec::new(comm, vec![Op::Run { ns: 1_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }])
        };
        let setup = SimSetup {
            sched,
            topology: Topology::smp(2),
            seed: 1,
            limits: Limits { max_events: 10_000_000, max_time_ns: 2_000_000_000 },
            tasks: vec![hog("nice0", 0), hog("nice5", 5)],
            objects: vec![],
            check_invariants: true,
            groups: Vec::new(),
        };
        let report = Sim::new(setup).expect("valid setup").run().expect("invariants hold");
        let t = &report.tasks[1];
        (t.sum_exec_runtime_ns, t.stats.nr_switches)
    }

    /// 7.3.4 programs an hrtick started in `__schedule()` only after the switch
    /// (`hrtick_schedule_exit()`), so it finds the nice-5 hog's request used up and every
    /// nice-5 turn is one 1.4 ms request; programmed at the pick (as 6.12.117 does), the
    /// truncated delay expires just short of the deadline, the protected hog is picked again
    /// and runs on to the tick (real 7.3.4 guest: 323 switches/s, one nice-5 turn per ~1.5 ms).
    #[test]
    fn the_hrtick_armed_after_the_switch_ends_each_nice5_turn_at_its_request() {
        let slice = SchedConfig::v7_3().sysctl.base_slice(2);
        let (run, switches) = nice5_turns(SchedConfig::v7_3());
        let per_turn = run / switches;
        assert!(per_turn < slice + slice / 10, "nice-5 turns of {per_turn} ns with a {slice} ns slice");
        let mut at_pick = SchedConfig::v7_3();
        at_pick.behavior.hrtick_armed_after_switch = false;
        let (run0, switches0) = nice5_turns(at_pick);
        assert!(run0 / switches0 > per_turn + slice / 4, "armed at the pick: {} ns per turn", run0 / switches0);
    }

    /// Wakeup times of the task named `comm`, from the trace.
    struct Wakings(std::rc::Rc<std::cell::RefCell<Vec<u64>>>, &'static str);
    impl crate::trace::TraceSink for Wakings {
        fn event(&mut self, ts_ns: u64, _cpu: u32, ev: &crate::trace::TraceEvent<'_>) {
            if let crate::trace::TraceEvent::Waking { task, .. } = ev
                && task.comm == self.1
            {
                self.0.borrow_mut().push(ts_ns);
            }
        }
    }

    /// A hog and a periodic task (a 1.5 ms absolute timer, 10 µs of work) on one CPU for
    /// 200 ms: the periodic task's wakeup times.
    fn periodic_wakeups(kthread: bool) -> Vec<u64> {
        let hog =
            TaskSpec::new("hog", vec![Op::Run { ns: 1_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }]);
        let ops = vec![
            Op::Timer { slot: 0, period_ns: 1_500_000, absolute: true },
            Op::Run { ns: 10_000 },
            Op::Loop { target: 0, slot: 0, count: u32::MAX },
        ];
        let setup = SimSetup {
            sched: SchedConfig::v7_3(),
            topology: Topology::smp(1),
            seed: 1,
            limits: Limits { max_events: 1_000_000, max_time_ns: 200_000_000 },
            tasks: vec![hog, TaskSpec { kthread, start_ns: 300_000, ..TaskSpec::new("periodic", ops) }],
            objects: vec![],
            check_invariants: true,
            groups: Vec::new(),
        };
        let times = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let sink = Box::new(Wakings(times.clone(), "periodic"));
        let (report, _) = Sim::new(setup).expect("valid setup").run_traced(sink);
        report.expect("invariants hold");
        times.take()
    }

    /// A kernel thread's timer is a timer-wheel timer (`schedule_timeout()`, 6.12.117 and
    /// 7.3.4 kernel/time/timer.c): it expires at a jiffy, from the tick, so the thread wakes
    /// only at jiffy boundaries of its busy CPU. A user task's hrtimer sleep of the same
    /// program wakes at its own expiry (plus slack), between ticks.
    #[test]
    fn a_kernel_thread_wakes_at_a_jiffy_from_the_tick() {
        let tick = SchedConfig::v7_3().tick_nsec();
        let k = periodic_wakeups(true);
        assert!(k.len() >= 40, "{} kernel-thread wakeups in 200 ms", k.len());
        assert!(
            k.iter().all(|t| t % tick == 0),
            "off-jiffy wakeups: {:?}",
            k.iter().filter(|t| *t % tick != 0).collect::<Vec<_>>()
        );
        let u = periodic_wakeups(false);
        assert!(u.len() > k.len(), "user task {} wakeups, kernel thread {}", u.len(), k.len());
        assert!(u.iter().filter(|t| *t % tick != 0).count() > u.len() / 2, "user task woken at ticks: {u:?}");
    }

    fn hard_expiries(sim: &mut Sim) -> Vec<u64> {
        std::iter::from_fn(|| sim.queue.pop())
            .filter_map(|(at, ev)| matches!(ev, Ev::TimerHard { .. }).then_some(at.0))
            .collect()
    }

    /// A sleep whose hard expiry has passed when it is armed is posted for now, never for a
    /// time the event loop has left behind; one still ahead keeps its hard expiry.
    #[test]
    fn a_sleep_armed_after_its_hard_expiry_fires_now() {
        let setup = SimSetup {
            sched: SchedConfig::v7_3(),
            topology: Topology::smp(1),
            seed: 1,
            limits: Limits { max_events: 1_000, max_time_ns: 10_000_000 },
            tasks: vec![TaskSpec::new("sleeper", vec![Op::Sleep { ns: 1_000 }])],
            objects: vec![],
            check_invariants: false,
            groups: Vec::new(),
        };
        let mut sim = Sim::new(setup).expect("valid setup");
        sim.now = 1_000_000;
        sim.arm_sleep_timer(0, TaskId(0), 200_000, 50_000);
        assert_eq!(hard_expiries(&mut sim), [1_000_000]);
        sim.arm_sleep_timer(0, TaskId(0), 980_000, 50_000);
        assert_eq!(hard_expiries(&mut sim), [1_030_000]);
    }
}
