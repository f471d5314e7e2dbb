//! Load balancing to the minimum of spec §5.8 (kernel/sched/fair.c v7.3.4): newidle balance
//! with its `avg_idle` / `max_newidle_lb_cost` gate and NI_RANDOM / NI_RATE, periodic balance
//! per domain with intervals and back-off, `can_migrate_task` / `task_hot`, and a simplified
//! NOHZ idle balance (a busy CPU's tick kicks the first idle CPU to balance for itself).
//!
//! The imbalance calculus is the spec's allowed simplification: the busiest group is the
//! non-local group with the most runnable tasks beyond its CPUs (or, when the local group has
//! an idle CPU, any group with a CPU running two or more), its busiest runqueue the CPU with the
//! most runnable tasks, and up to half the difference is pulled (one task per newidle pass,
//! as every `CONFIG_PREEMPTION` kernel does). PELT-weighted `migrate_load`/`migrate_util`
//! balancing and active balancing are not modelled.

use super::core::Origin;
use super::{Cause, Ev, Sim};
use crate::fair::{Fair, deq, enq};
use crate::features::Feature;
use crate::rng::{SimRng, Stream};
use crate::task::TaskId;
use crate::time::Nanos;
use crate::topology::{DomainLevel, SD_BALANCE_NEWIDLE, SchedDomain};

/// The time one newidle balance pass over a domain takes: a fixed part and a per-CPU scan part
/// ([estimate]; it feeds `max_newidle_lb_cost` and so the newidle gate).
const NEWIDLE_COST_BASE_NS: u64 = 1_000;
const NEWIDLE_COST_PER_CPU_NS: u64 = 40;

/// `sched_balance_rq()`'s idle type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdleType {
    NewlyIdle,
    Idle,
    NotIdle,
}

/// Per-CPU, per-domain balancing state (`struct sched_domain` runtime fields).
#[derive(Clone, Debug)]
struct SdState {
    last_balance: u64,
    balance_interval_ms: u64,
    nr_balance_failed: u32,
    max_newidle_lb_cost: u64,
    last_decay_max_lb_cost: u64,
    newidle_call: u32,
    newidle_success: u32,
    newidle_ratio: u32,
    newidle_window_ns: u64,
}

/// Per-CPU balancing state (`struct rq` fields).
#[derive(Clone, Debug)]
struct CpuLb {
    avg_idle: u64,
    idle_stamp: u64,
    max_idle_balance_cost: u64,
    next_balance: u64,
    sd: Vec<SdState>,
}

/// All load-balancing state of a simulation.
pub(super) struct Balance {
    cpus: Vec<CpuLb>,
    /// `root_domain->overloaded`.
    overloaded: bool,
    nohz_next_balance: u64,
    rng: SimRng,
}

impl Balance {
    pub(super) fn new(sim_domains: &crate::topology::Domains, ncpus: u32, migration_cost: u64, seed: u64) -> Balance {
        let cpus = (0..ncpus)
            .map(|cpu| CpuLb {
                avg_idle: 2 * migration_cost,
                idle_stamp: 0,
                max_idle_balance_cost: migration_cost,
                next_balance: 0,
                sd: sim_domains
                    .of(cpu)
                    .iter()
                    .map(|sd| SdState {
                        last_balance: 0,
                        balance_interval_ms: u64::from(sd.min_interval_ms),
                        nr_balance_failed: 0,
                        max_newidle_lb_cost: 0,
                        last_decay_max_lb_cost: 0,
                        newidle_call: 512,
                        newidle_success: 256,
                        newidle_ratio: 512,
                        newidle_window_ns: 0,
                    })
                    .collect(),
            })
            .collect();
        Balance { cpus, overloaded: false, nohz_next_balance: 0, rng: SimRng::stream(seed, Stream::NewidleBalance) }
    }
}

/// Group statistics of one balancing pass.
#[derive(Clone, Copy, Debug, Default)]
struct GroupStats {
    nr_running: u32,
    idle_cpus: u32,
    weight: u32,
    /// The CPU with the most runnable fair tasks, and that number.
    busiest_cpu: u32,
    busiest_nr: u32,
}

impl Sim {
    /// After an enqueue: the task moves to the head of `cfs_tasks`, and the root domain is
    /// overloaded once a CPU holds two tasks.
    pub(super) fn lb_enqueued(&mut self, cpu: u32, p: TaskId) {
        self.lb_seq += 1;
        self.tasks[p.idx()].lb_seq = self.lb_seq;
        self.update_overloaded(cpu);
    }

    /// Marks the root domain overloaded once a CPU holds two tasks (delayed ones count).
    pub(super) fn update_overloaded(&mut self, cpu: u32) {
        if self.rqs[cpu as usize].cfs.h_nr_queued >= 2 {
            self.lb.overloaded = true;
        }
    }

    /// The CPU leaves idle: `update_avg(avg_idle, idle time)` capped at twice the largest
    /// balance cost (core.c `sched_balance_update_blocked`/`put_prev_task_idle`, v7.3.4).
    pub(super) fn lb_idle_exit(&mut self, cpu: u32) {
        let now = self.now;
        let lb = &mut self.lb.cpus[cpu as usize];
        if lb.idle_stamp != 0 {
            let delta = now - lb.idle_stamp;
            let max = 2 * lb.max_idle_balance_cost;
            let avg = lb.avg_idle as i64 + (delta as i64 - lb.avg_idle as i64) / 8;
            lb.avg_idle = (avg.max(0) as u64).min(max);
            lb.idle_stamp = 0;
        }
    }

    /// `sched_balance_newidle()` (fair.c v7.3.4): called by a CPU about to go idle. Returns true
    /// if a task was pulled.
    pub(super) fn newidle_balance(&mut self, cpu: u32) -> bool {
        if self.rqs[cpu as usize].ttwu_pending() {
            return false;
        }
        let now = self.now;
        let jiffies = self.jiffies();
        let hz = u64::from(self.cfg.hz);
        self.lb.cpus[cpu as usize].idle_stamp = now.max(1);
        self.fair(cpu).pelt_update_blocked();
        let nsd = self.domains.of(cpu).len();
        if nsd == 0 {
            return false;
        }
        let lowest_cost = self.lb.cpus[cpu as usize].sd[0].max_newidle_lb_cost;
        if !self.lb.overloaded || self.lb.cpus[cpu as usize].avg_idle < lowest_cost {
            return false;
        }
        let mut cost = 0u64;
        let mut pulled = false;
        for level in 0..nsd {
            let sd = self.domains.of(cpu)[level].clone();
            let avg_idle = self.lb.cpus[cpu as usize].avg_idle;
            let st = &mut self.lb.cpus[cpu as usize].sd[level];
            // update_newidle_cost(): the maximum decays by ~1 % per second.
            if jiffies > st.last_decay_max_lb_cost + hz {
                st.max_newidle_lb_cost = st.max_newidle_lb_cost * 253 / 256;
                st.last_decay_max_lb_cost = jiffies;
            }
            if avg_idle < cost + st.max_newidle_lb_cost {
                break;
            }
            if sd.flags & SD_BALANCE_NEWIDLE == 0 {
                continue;
            }
            let mut weight = 1u32;
            // Before 7.0 the die is rolled whatever the ratio (behavior.newidle_always_roll).
            let roll = self.params.behavior.newidle_always_roll || st.newidle_ratio < 1024;
            if self.params.feat(Feature::NI_RANDOM) && roll {
                let d = self.lb.rng.below(1024) as u32;
                weight = 1 + st.newidle_ratio;
                if d > weight {
                    self.record_newidle(cpu, level, 0);
                    continue;
                }
                weight = (1024 + weight / 2) / weight;
            }
            let moved = self.sched_balance_rq(cpu, level, IdleType::NewlyIdle);
            let elapsed = NEWIDLE_COST_BASE_NS + NEWIDLE_COST_PER_CPU_NS * u64::from(sd.span_weight);
            cost += elapsed;
            let st = &mut self.lb.cpus[cpu as usize].sd[level];
            st.max_newidle_lb_cost = st.max_newidle_lb_cost.max(elapsed);
            self.record_newidle(cpu, level, if moved { weight } else { 0 });
            if moved {
                pulled = true;
                break;
            }
        }
        let lb = &mut self.lb.cpus[cpu as usize];
        lb.max_idle_balance_cost = lb.max_idle_balance_cost.max(cost);
        if pulled {
            lb.idle_stamp = 0;
        }
        pulled
    }

    /// `sched_balance_newidle()`'s success bookkeeping (NI_RANDOM, NI_RATE; fair.c v7.3.4).
    fn record_newidle(&mut self, cpu: u32, level: usize, success: u32) {
        let now = self.now;
        let ni_rate = self.params.feat(Feature::NI_RATE);
        let st = &mut self.lb.cpus[cpu as usize].sd[level];
        st.newidle_call += 1;
        st.newidle_success += success;
        if st.newidle_call >= 1024 {
            let rate_credit = if ni_rate { ((now - st.newidle_window_ns) >> 22) as u32 } else { 0 };
            // 6.12.y-6.19: `newidle_ratio = newidle_success`, unclamped; 7.0+ clamps to 1024.
            st.newidle_ratio = if self.params.behavior.newidle_always_roll {
                st.newidle_success
            } else {
                (st.newidle_success + rate_credit).min(1024)
            };
            st.newidle_call /= 2;
            st.newidle_success /= 2;
            st.newidle_window_ns = now;
        }
    }

    /// Periodic balancing from the tick (`sched_balance_domains()`, fair.c v7.3.4).
    pub(super) fn periodic_balance(&mut self, cpu: u32) {
        let jiffies = self.jiffies();
        if jiffies < self.lb.cpus[cpu as usize].next_balance {
            return;
        }
        let idle = self.rqs[cpu as usize].curr.is_none();
        self.fair(cpu).pelt_update_blocked();
        let hz = u64::from(self.cfg.hz);
        let max_lb_interval = (hz * self.rqs.len() as u64 / 10).max(1);
        let mut next_balance = jiffies + hz;
        for level in 0..self.domains.of(cpu).len() {
            let sd = self.domains.of(cpu)[level].clone();
            let busy = !idle;
            let st = &self.lb.cpus[cpu as usize].sd[level];
            let mut interval = st.balance_interval_ms * if busy { u64::from(sd.busy_factor) } else { 1 };
            interval = (interval * hz / 1000).max(1);
            if busy {
                interval = interval.saturating_sub(1).max(1);
            }
            let interval = interval.clamp(1, max_lb_interval);
            if jiffies >= st.last_balance + interval {
                if self.should_we_balance(cpu, &sd) {
                    let moved =
                        self.sched_balance_rq(cpu, level, if idle { IdleType::Idle } else { IdleType::NotIdle });
                    let _ = moved;
                }
                self.lb.cpus[cpu as usize].sd[level].last_balance = jiffies;
            }
            let st = &self.lb.cpus[cpu as usize].sd[level];
            next_balance = next_balance.min(st.last_balance + interval);
        }
        // The top level clears the overload flag when nothing is left to spread.
        if self.rqs.iter().all(|r| r.cfs.h_nr_queued <= 1) {
            self.lb.overloaded = false;
        }
        self.lb.cpus[cpu as usize].next_balance = next_balance;
    }

    /// `should_we_balance()` (fair.c v7.3.4): one CPU per group balances a domain: the first
    /// idle CPU of the local group, else the group's first CPU.
    fn should_we_balance(&self, cpu: u32, sd: &SchedDomain) -> bool {
        let local = self.domains.groups(sd).next().expect("a domain has groups");
        match local.iter().find(|&&c| self.rqs[c as usize].curr.is_none() && self.rqs[c as usize].cfs.h_nr_queued == 0)
        {
            Some(&first_idle) => first_idle == cpu,
            None => local.first() == Some(&cpu),
        }
    }

    fn group_stats(&self, cpus: &[u32]) -> GroupStats {
        let mut g = GroupStats { weight: cpus.len() as u32, ..GroupStats::default() };
        for &c in cpus {
            let rq = &self.rqs[c as usize];
            let nr = rq.cfs.h_nr_runnable;
            g.nr_running += nr;
            if rq.curr.is_none() && rq.cfs.h_nr_queued == 0 && !rq.ttwu_pending() {
                g.idle_cpus += 1;
            }
            if nr > g.busiest_nr {
                g.busiest_nr = nr;
                g.busiest_cpu = c;
            }
        }
        g
    }

    /// `sched_balance_rq()` (fair.c v7.3.4), simplified as the module docs say: pulls tasks
    /// from the busiest runqueue of `cpu`'s domain at `level` to `cpu`. Returns true if any
    /// task moved.
    fn sched_balance_rq(&mut self, cpu: u32, level: usize, idle: IdleType) -> bool {
        let sd = self.domains.of(cpu)[level].clone();
        let groups: Vec<Vec<u32>> = self.domains.groups(&sd).map(|g| g.to_vec()).collect();
        let local = self.group_stats(&groups[0]);
        let mut busiest: Option<GroupStats> = None;
        for g in &groups[1..] {
            let s = self.group_stats(g);
            if s.busiest_nr < 2 && !(s.busiest_nr >= 1 && local.idle_cpus > 0 && s.nr_running > s.weight) {
                continue;
            }
            let excess = |x: &GroupStats| i64::from(x.nr_running) - i64::from(x.weight);
            if busiest.is_none_or(|b| (excess(&s), s.nr_running) > (excess(&b), b.nr_running)) {
                busiest = Some(s);
            }
        }
        let Some(b) = busiest else {
            self.balanced(cpu, level);
            return false;
        };
        // Compare per-CPU load of the two groups (weights may differ).
        let (ln, lw, bn, bw) =
            (u64::from(local.nr_running), u64::from(local.weight), u64::from(b.nr_running), u64::from(b.weight));
        let spread_to_idle = local.idle_cpus > 0 && b.busiest_nr >= 2;
        if !spread_to_idle && bn * lw <= (ln + 1) * bw {
            self.balanced(cpu, level);
            return false;
        }
        let diff = (bn * lw).saturating_sub(ln * bw) / (lw + bw).max(1);
        let mut imbalance = diff.max(1) as u32;
        if idle == IdleType::NewlyIdle {
            imbalance = 1;
        }
        let moved = self.detach_attach(b.busiest_cpu, cpu, imbalance, idle, level, &sd);
        let st = &mut self.lb.cpus[cpu as usize].sd[level];
        st.balance_interval_ms = u64::from(sd.min_interval_ms);
        if moved == 0 {
            if idle != IdleType::NewlyIdle {
                st.nr_balance_failed += 1;
            }
        } else {
            st.nr_balance_failed = 0;
        }
        moved > 0
    }

    /// Nothing to do: back off (`balance_interval` doubles up to `max_interval`).
    fn balanced(&mut self, cpu: u32, level: usize) {
        let max = u64::from(self.domains.of(cpu)[level].max_interval_ms);
        let st = &mut self.lb.cpus[cpu as usize].sd[level];
        st.nr_balance_failed = 0;
        st.balance_interval_ms = (st.balance_interval_ms * 2).min(max);
    }

    /// `detach_tasks()` + `attach_tasks()` (fair.c v7.3.4): candidates from the tail of the
    /// source's task list (least recently enqueued or picked first).
    fn detach_attach(
        &mut self,
        src: u32,
        dst: u32,
        imbalance: u32,
        idle: IdleType,
        level: usize,
        sd: &SchedDomain,
    ) -> u32 {
        let mut candidates: Vec<TaskId> = self.rqs[src as usize].cfs.timeline.iter().map(|k| TaskId(k.id)).collect();
        candidates.sort_by_key(|t| (self.tasks[t.idx()].lb_seq, t.0));
        let loop_max = (self.cfg.sysctl.nr_migrate as usize).min(self.rqs[src as usize].cfs.h_nr_queued as usize);
        let mut moved = 0u32;
        for (looked, p) in candidates.into_iter().enumerate() {
            if looked >= loop_max || moved >= imbalance {
                break;
            }
            // Never empty the source when balancing for an idle CPU.
            if idle != IdleType::NotIdle && self.rqs[src as usize].cfs.h_nr_runnable <= 1 {
                break;
            }
            if !self.can_migrate_task(p, src, dst, level, sd) {
                // list_move(): a refused task goes to the head of the list.
                self.lb_seq += 1;
                self.tasks[p.idx()].lb_seq = self.lb_seq;
                continue;
            }
            self.migrate_queued_task(p, src, dst);
            moved += 1;
            if idle == IdleType::NewlyIdle {
                // CONFIG_PREEMPTION (every PREEMPT_DYNAMIC build): one task per newidle pass.
                break;
            }
        }
        moved
    }

    /// `can_migrate_task()` (fair.c v7.3.4) in the kernel's order.
    fn can_migrate_task(&mut self, p: TaskId, src: u32, dst: u32, level: usize, sd: &SchedDomain) -> bool {
        let se = self.ents[p.idx()];
        if se.sched_delayed {
            // Delayed tasks move only for migrate_load balancing, which is not modelled.
            return false;
        }
        let failed = self.lb.cpus[dst as usize].sd[level].nr_balance_failed;
        if self.params.feat(Feature::PLACE_LAG) && self.rqs[dst as usize].cfs.h_nr_queued > 0 && failed == 0 {
            let now = self.now;
            let f = Fair::new(&mut self.rqs[src as usize].cfs, &mut self.ents, &self.params, now);
            if !f.entity_eligible(p) {
                return false;
            }
        }
        if !self.tasks[p.idx()].allows(dst) || self.rqs[src as usize].curr == Some(p) {
            return false;
        }
        let hot = self.task_hot(p, src, dst, sd);
        !hot || failed > sd.cache_nice_tries
    }

    /// `task_hot()` (fair.c v7.3.4).
    fn task_hot(&self, p: TaskId, src: u32, dst: u32, sd: &SchedDomain) -> bool {
        if sd.level == DomainLevel::Smt || self.ents[p.idx()].policy == crate::fair::Policy::Idle {
            return false;
        }
        let dst_busy = self.rqs[dst as usize].cfs.h_nr_queued > 0;
        if self.params.feat(Feature::CACHE_HOT_BUDDY) && dst_busy && self.rqs[src as usize].cfs.next == Some(p) {
            return true;
        }
        if self.cfg.sysctl.migration_cost_always_hot() {
            return true;
        }
        let exec_start = self.ents[p.idx()].exec_start;
        exec_start != 0 && self.now.saturating_sub(exec_start) < self.cfg.sysctl.migration_cost_ns
    }

    /// `detach_task()` + `attach_task()`: dequeue without SLEEP (lag saved, deadline made
    /// relative), move, enqueue with ENQUEUE_MIGRATED, then `wakeup_preempt(dst, p, 0)`.
    fn migrate_queued_task(&mut self, p: TaskId, src: u32, dst: u32) {
        self.fair(src).dequeue_task_fair(p, deq::SAVE | deq::MIGRATING);
        let se = &mut self.ents[p.idx()];
        let w = crate::fair::weight::scale_load_down(se.load_weight);
        self.rqs[src as usize].cfs.pelt.migrate_task_rq_fair(&mut se.pelt, w, true, None);
        self.trace_migrate(dst, p, src, dst);
        let task = &mut self.tasks[p.idx()];
        task.cpu = dst;
        task.stats.nr_migrations += 1;
        self.counters.nr_migrations += 1;
        self.lb_seq += 1;
        self.tasks[p.idx()].lb_seq = self.lb_seq;
        let mut f = self.fair(dst);
        f.enqueue_task_fair(p, enq::MIGRATED);
        let req = f.resched;
        self.resched_request(dst, req, Origin::LocalTask, Cause::Other);
        self.update_overloaded(dst);
        self.wakeup_preempt(dst, p, 0, Origin::LocalTask, false);
    }

    /// A busy CPU's tick: with more than one task queued and an idle CPU somewhere, kick the
    /// first idle CPU to balance (`nohz_balancer_kick()`, simplified).
    pub(super) fn nohz_kick(&mut self, cpu: u32) {
        let jiffies = self.jiffies();
        if self.rqs[cpu as usize].cfs.h_nr_runnable < 2 || jiffies < self.lb.nohz_next_balance {
            return;
        }
        let Some(target) = (0..self.rqs.len() as u32).find(|&c| {
            let rq = &self.rqs[c as usize];
            rq.curr.is_none() && rq.cfs.h_nr_queued == 0 && !rq.tick_armed && !rq.ttwu_pending()
        }) else {
            return;
        };
        self.lb.nohz_next_balance = jiffies + 1;
        self.counters.nr_ipis += 1;
        let at = self.now + self.cost(self.costs.ipi_receive_ns);
        self.queue.push(Nanos(at), Ev::NohzBalance { cpu: target });
    }

    /// The kicked idle CPU balances its domains as `CPU_IDLE` (`sched_balance_domains`).
    pub(super) fn nohz_balance(&mut self, cpu: u32) {
        if self.rqs[cpu as usize].curr.is_some() {
            return;
        }
        self.lb.cpus[cpu as usize].next_balance = 0;
        self.periodic_balance(cpu);
        if self.rqs[cpu as usize].cfs.h_nr_queued > 0 {
            self.kick_idle(cpu);
        }
    }

    pub(super) fn jiffies(&self) -> u64 {
        self.now / self.params.tick_nsec
    }
}
