//! Load balancing as kernel/sched/fair.c does it (v7.3.4, with the 6.12.117 differences named
//! where they apply): `sched_balance_newidle`, `sched_balance_domains` with its intervals and
//! busy factor, and one `sched_balance_rq` for all three callers (newidle, periodic, NOHZ idle).
//!
//! The modules follow the kernel's steps:
//! - [`lb_stats`]: `update_sg_lb_stats` / `update_sd_lb_stats`, the group types and the
//!   busiest-group choice (`update_sd_pick_busiest`), and SIS_UTIL's `update_idle_cpu_scan`;
//! - [`find_busiest`]: `sched_balance_find_src_group` with `calculate_imbalance` and the
//!   migration types, and `sched_balance_find_src_rq`;
//! - [`detach`]: `detach_tasks` / `attach_tasks` with `can_migrate_task`, `task_hot` and the
//!   `nr_migrate` limits;
//! - [`active`]: `need_active_balance` and the CPU stopper;
//! - [`nohz`]: the idle-CPU mask, `nohz_balancer_kick` and `_nohz_idle_balance`.
//!
//! Sched groups and their capacities are built once per topology ([`GroupInfo`]); a balance
//! pass allocates nothing (its CPU mask and task list are scratch buffers kept here).
//!
//! Not modelled, because no topology of the model can express it: `SD_ASYM_PACKING` (no
//! CPU priorities), reduced CPU capacity from RT/IRQ pressure (capacities are the static
//! `arch_scale_cpu_capacity`, so `update_group_capacity` never changes a group), EAS
//! (`rd->pd` is never set), NUMA balancing (`fbq_type` is always `all`) and task groups.
//!
//! [`llc`] is the cache-aware part of 7.2.12/7.3.4 (CONFIG_SCHED_CACHE): per-process LLC
//! preference, the `group_llc_balance` group type and `migrate_llc_task`.

mod active;
mod detach;
mod find_busiest;
mod lb_stats;
mod llc;
mod nohz;
#[cfg(test)]
mod tests;

use super::Sim;
use crate::features::Feature;
use crate::rng::{SimRng, Stream};
use crate::task::TaskId;
use crate::topology::{DomainLevel, Domains, SD_BALANCE_NEWIDLE, SD_SHARE_CPUCAPACITY, SpanId, Topology};

pub(super) use nohz::Nohz;

/// The time one newidle balance pass over a domain takes: a fixed part and a per-CPU scan part
/// ([estimate]; it feeds `max_newidle_lb_cost` and so the newidle gate).
const NEWIDLE_COST_BASE_NS: u64 = 1_000;
const NEWIDLE_COST_PER_CPU_NS: u64 = 40;

/// `SCHED_NR_MIGRATE_BREAK` (sched.h v7.3.4): detach_tasks takes a breather every 32 tasks.
const SCHED_NR_MIGRATE_BREAK: u32 = 32;
/// How long before the start the domains were last balanced, in jiffies: more than any
/// interval (`max_load_balance_interval` is HZ·nr_cpus/10 jiffies, below this for 4096 CPUs at
/// HZ 1000).
const LONG_AGO_JIFFIES: u64 = 1 << 20;
/// `MAX_PINNED_INTERVAL` (fair.c v7.3.4): back-off bound when every task was pinned.
const MAX_PINNED_INTERVAL: u64 = 512;

/// `enum cpu_idle_type` (sched.h v7.3.4; `__CPU_NOT_IDLE` is 0 since 6.10, so `env->idle`
/// is true for both idle types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdleType {
    NotIdle,
    Idle,
    NewlyIdle,
}

impl IdleType {
    fn is_idle(self) -> bool {
        self != IdleType::NotIdle
    }
}

/// Per-CPU, per-domain balancing state (`struct sched_domain` runtime fields).
#[derive(Clone, Debug)]
struct SdState {
    /// `sd->last_balance` in jiffies; negative = before the simulation started.
    last_balance: i64,
    balance_interval_ms: u64,
    nr_balance_failed: u32,
    max_newidle_lb_cost: u64,
    last_decay_max_lb_cost: u64,
    newidle_call: u32,
    newidle_success: u32,
    newidle_ratio: u32,
    newidle_window_ns: u64,
    /// `sd->imb_numa_nr` (topology.c v7.3.4), fixed at build time.
    imb_numa_nr: u32,
}

/// Per-CPU balancing state (`struct rq` fields).
#[derive(Clone, Debug)]
struct CpuLb {
    avg_idle: u64,
    idle_stamp: u64,
    max_idle_balance_cost: u64,
    next_balance: u64,
    sd: Vec<SdState>,
    /// `rq->active_balance` and `rq->push_cpu`: a stopper work is queued on this CPU.
    active_balance: bool,
    push_cpu: u32,
    /// The queued work is `active_load_balance_llc_cpu_stop` (`LBF_ACTIVE_LB_LLC`).
    active_balance_llc: bool,
}

/// A sched group as built once per topology (`struct sched_group` and its
/// `sched_group_capacity`, topology.c v7.3.4), indexed by the group's interned span.
#[derive(Clone, Copy, Debug, Default)]
struct GroupInfo {
    /// `group_weight`.
    weight: u32,
    /// `sg->cores`: the distinct cores of the group.
    cores: u32,
    /// `sgc->capacity`, `min_capacity`, `max_capacity` (static: no RT/IRQ pressure).
    capacity: u64,
    min_capacity: u64,
    max_capacity: u64,
    /// `sg->flags`: the flags of the child domain the group stands for (0 for one CPU).
    flags: u32,
}

/// All load-balancing state of a simulation.
pub(super) struct Balance {
    cpus: Vec<CpuLb>,
    /// `root_domain->overloaded`.
    overloaded: bool,
    /// By [`SpanId`]: the groups of every domain.
    groups: Vec<GroupInfo>,
    /// By [`SpanId`]: `sgc->imbalance`, set when affinity kept a lower domain unbalanced.
    group_imbalance: Vec<bool>,
    nohz: Nohz,
    rng: SimRng,
    /// `env->cpus` of the current pass: a CPU is out when its entry equals `pass`.
    excluded: Vec<u32>,
    pass: u32,
    /// The source's `cfs_tasks` order of the current `detach_tasks`, and the tasks detached
    /// and not yet attached (`env->tasks`).
    order: Vec<(u64, TaskId)>,
    detached: Vec<TaskId>,
    /// CONFIG_SCHED_CACHE state ([`llc`]).
    pub(super) cache: llc::CacheSched,
}

impl Balance {
    pub(super) fn new(domains: &Domains, topo: &Topology, cfg: &crate::config::SchedConfig, seed: u64) -> Balance {
        let migration_cost = cfg.sysctl.migration_cost_ns;
        let ncpus = domains.nr_cpus();
        let cpus = (0..ncpus)
            .map(|cpu| CpuLb {
                avg_idle: 2 * migration_cost,
                idle_stamp: 0,
                max_idle_balance_cost: migration_cost,
                next_balance: 0,
                sd: domains
                    .of(cpu)
                    .iter()
                    .map(|sd| SdState {
                        // The machine has been up and idle: every domain is due at the first
                        // busy tick, as after idle periods with no balancing.
                        last_balance: -(LONG_AGO_JIFFIES as i64),
                        balance_interval_ms: u64::from(sd.min_interval_ms),
                        nr_balance_failed: 0,
                        max_newidle_lb_cost: 0,
                        last_decay_max_lb_cost: 0,
                        newidle_call: 512,
                        newidle_success: 256,
                        newidle_ratio: 512,
                        newidle_window_ns: 0,
                        imb_numa_nr: crate::select::imb_numa_nr(topo, domains, cpu, sd),
                    })
                    .collect(),
                active_balance: false,
                push_cpu: 0,
                active_balance_llc: false,
            })
            .collect();
        Balance {
            cpus,
            overloaded: false,
            groups: build_groups(domains, topo),
            group_imbalance: vec![false; domains.nr_spans()],
            nohz: Nohz::new(domains),
            rng: SimRng::stream(seed, Stream::NewidleBalance),
            excluded: vec![0; ncpus as usize],
            pass: 0,
            order: Vec::new(),
            detached: Vec::new(),
            cache: llc::CacheSched::new(domains, topo, cfg.behavior.sched_cache, cfg.sysctl.llc.enabled),
        }
    }
}

/// `build_sched_groups()` + `init_sched_groups_capacity()` (topology.c v7.3.4) for every
/// group of every domain, once: weight, cores, capacities and the child domain's flags.
fn build_groups(domains: &Domains, topo: &Topology) -> Vec<GroupInfo> {
    let mut groups = vec![GroupInfo::default(); domains.nr_spans()];
    let mut done = vec![false; domains.nr_spans()];
    for cpu in 0..domains.nr_cpus() {
        for sd in domains.of(cpu) {
            for span in domains.group_spans(sd) {
                if std::mem::replace(&mut done[span.0 as usize], true) {
                    continue;
                }
                let cpus = domains.cpus(span);
                let mut cores: Vec<u32> = cpus.iter().map(|&c| topo.cpus[c as usize].smt_id).collect();
                cores.sort_unstable();
                cores.dedup();
                let caps = cpus.iter().map(|&c| u64::from(topo.cpus[c as usize].capacity));
                let flags = domains.of(cpus[0]).iter().find(|child| child.span == span).map_or(0, |child| child.flags);
                groups[span.0 as usize] = GroupInfo {
                    weight: cpus.len() as u32,
                    cores: cores.len() as u32,
                    capacity: caps.clone().sum(),
                    min_capacity: caps.clone().min().unwrap_or(0),
                    max_capacity: caps.max().unwrap_or(0),
                    flags,
                };
            }
        }
    }
    groups
}

impl Sim {
    fn group(&self, span: SpanId) -> GroupInfo {
        self.lb.groups[span.0 as usize]
    }

    /// `capacity_of(cpu)`: `arch_scale_cpu_capacity` (nothing else takes capacity here).
    fn capacity_of(&self, cpu: u32) -> u64 {
        u64::from(self.topo.cpus[cpu as usize].capacity)
    }

    /// `idle_cpu()` (core.c v7.3.4): the idle task runs, nothing is queued or pending.
    fn lb_idle_cpu(&self, cpu: u32) -> bool {
        let rq = &self.rqs[cpu as usize];
        rq.curr.is_none() && rq.cfs.h_nr_queued == 0 && !rq.ttwu_pending()
    }

    /// `is_core_idle()` (sched.h v7.3.4): every other SMT sibling of `cpu` is idle.
    fn is_core_idle(&self, cpu: u32) -> bool {
        match self.domains.of(cpu).first() {
            Some(sd) if sd.level == DomainLevel::Smt => {
                self.domains.span(sd).iter().all(|&c| c == cpu || self.lb_idle_cpu(c))
            }
            _ => true,
        }
    }

    /// After an enqueue: the task moves to the head of `cfs_tasks`, and the root domain is
    /// overloaded once a CPU holds two tasks.
    pub(super) fn lb_enqueued(&mut self, cpu: u32, p: TaskId) {
        self.lb_seq += 1;
        self.tasks[p.idx()].lb_seq = self.lb_seq;
        self.update_overloaded(cpu);
    }

    /// `add_nr_running()` (sched.h v7.3.4): the root domain is overloaded once a CPU holds two
    /// tasks (delayed ones count).
    pub(super) fn update_overloaded(&mut self, cpu: u32) {
        if self.rqs[cpu as usize].cfs.h_nr_queued >= 2 {
            self.lb.overloaded = true;
        }
    }

    /// The CPU leaves idle: `update_avg(avg_idle, idle time)` capped at twice the largest
    /// balance cost (core.c `put_prev_task_idle` → `update_rq_avg_idle`, v7.3.4).
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

    /// `sched_balance_update_blocked_averages()` (fair.c v7.3.4) for `cpu`.
    fn update_blocked_averages(&mut self, cpu: u32) {
        let groups_blocked = self.fair(cpu).pelt_update_blocked();
        let jiffies = self.jiffies();
        // `__update_blocked_fair()` clears `done` for any cfs_rq of the hierarchy with load.
        let has_blocked = self.rqs[cpu as usize].cfs.pelt.has_blocked_load() || groups_blocked == Some(true);
        self.lb.nohz.blocked_updated(cpu, jiffies, has_blocked);
    }

    /// `sched_balance_newidle()` (fair.c v7.3.4): called by a CPU about to go idle. Returns true
    /// if a task was pulled (or arrived meanwhile).
    pub(super) fn newidle_balance(&mut self, cpu: u32) -> bool {
        if self.rqs[cpu as usize].ttwu_pending() {
            return false;
        }
        let now = self.now;
        let jiffies = self.jiffies();
        let hz = u64::from(self.cfg.hz);
        let mut next_balance = jiffies + hz;
        self.lb.cpus[cpu as usize].idle_stamp = now.max(1);
        let nsd = self.domains.of(cpu).len();
        if nsd == 0 {
            return false;
        }
        let lowest_cost = self.lb.cpus[cpu as usize].sd[0].max_newidle_lb_cost;
        if !self.lb.overloaded || self.lb.cpus[cpu as usize].avg_idle < lowest_cost {
            self.update_next_balance(cpu, 0, &mut next_balance);
            self.finish_newidle(cpu, next_balance, false);
            return false;
        }
        self.update_blocked_averages(cpu);
        let mut cost = 0u64;
        let mut pulled = false;
        let mut continue_balancing = true;
        for level in 0..nsd {
            self.update_next_balance(cpu, level, &mut next_balance);
            let avg_idle = self.lb.cpus[cpu as usize].avg_idle;
            if avg_idle < cost + self.lb.cpus[cpu as usize].sd[level].max_newidle_lb_cost {
                break;
            }
            let (flags, span_weight) = {
                let sd = &self.domains.of(cpu)[level];
                (sd.flags, sd.span_weight)
            };
            if flags & SD_BALANCE_NEWIDLE != 0 {
                let mut weight = 1u32;
                let ratio = self.lb.cpus[cpu as usize].sd[level].newidle_ratio;
                let mut skipped = false;
                // Before 7.0 the die is rolled whatever the ratio (behavior.newidle_always_roll).
                let roll = self.params.behavior.newidle_always_roll || ratio < 1024;
                if self.params.feat(Feature::NI_RANDOM) && roll {
                    let d = self.lb.rng.below(1024) as u32;
                    weight = 1 + ratio;
                    if d > weight {
                        self.update_newidle_stats(cpu, level, 0);
                        skipped = true;
                    }
                    weight = (1024 + weight / 2) / weight;
                }
                if !skipped {
                    pulled = self.sched_balance_rq(cpu, level, IdleType::NewlyIdle, &mut continue_balancing) > 0;
                    let elapsed = NEWIDLE_COST_BASE_NS + NEWIDLE_COST_PER_CPU_NS * u64::from(span_weight);
                    cost += elapsed;
                    self.update_newidle_cost(cpu, level, elapsed, if pulled { weight } else { 0 });
                }
            }
            if pulled || !continue_balancing {
                break;
            }
        }
        let lb = &mut self.lb.cpus[cpu as usize];
        lb.max_idle_balance_cost = lb.max_idle_balance_cost.max(cost);
        if self.rqs[cpu as usize].cfs.h_nr_queued > 0 {
            pulled = true;
        }
        self.finish_newidle(cpu, next_balance, pulled);
        pulled
    }

    /// The `out:` of `sched_balance_newidle()`: `next_balance`, `idle_stamp`, and the NOHZ
    /// blocked-load update a CPU going idle does for all idle CPUs (`nohz_newidle_balance`).
    fn finish_newidle(&mut self, cpu: u32, next_balance: u64, pulled: bool) {
        let lb = &mut self.lb.cpus[cpu as usize];
        lb.next_balance = lb.next_balance.min(next_balance);
        if pulled {
            lb.idle_stamp = 0;
        } else {
            self.nohz_newidle_balance(cpu);
        }
    }

    /// `update_newidle_cost()` (fair.c v7.3.4): raise or decay (~1 % per second) the domain's
    /// `max_newidle_lb_cost`; with a cost, record the outcome too. Returns whether it decayed.
    fn update_newidle_cost(&mut self, cpu: u32, level: usize, cost: u64, success: u32) -> bool {
        let jiffies = self.jiffies();
        let hz = u64::from(self.cfg.hz);
        if cost != 0 {
            self.update_newidle_stats(cpu, level, success);
        }
        let st = &mut self.lb.cpus[cpu as usize].sd[level];
        if cost > st.max_newidle_lb_cost {
            st.max_newidle_lb_cost = cost;
            st.last_decay_max_lb_cost = jiffies;
        } else if jiffies > st.last_decay_max_lb_cost + hz {
            st.max_newidle_lb_cost = st.max_newidle_lb_cost * 253 / 256;
            st.last_decay_max_lb_cost = jiffies;
            return true;
        }
        false
    }

    /// `update_newidle_stats()` (fair.c v7.3.4): NI_RANDOM's success ratio, NI_RATE's credit.
    fn update_newidle_stats(&mut self, cpu: u32, level: usize, success: u32) {
        let now = self.now;
        let ni_rate = self.params.feat(Feature::NI_RATE);
        let always_roll = self.params.behavior.newidle_always_roll;
        let st = &mut self.lb.cpus[cpu as usize].sd[level];
        st.newidle_call += 1;
        st.newidle_success += success;
        if st.newidle_call >= 1024 {
            let rate_credit = if ni_rate { ((now - st.newidle_window_ns) >> 22) as u32 } else { 0 };
            // 6.12.y-6.19: `newidle_ratio = newidle_success`, unclamped; 7.0+ clamps to 1024.
            st.newidle_ratio =
                if always_roll { st.newidle_success } else { (st.newidle_success + rate_credit).min(1024) };
            st.newidle_call /= 2;
            st.newidle_success /= 2;
            st.newidle_window_ns = now;
        }
    }

    /// `sched_balance_trigger()` (fair.c v7.3.4) from a tick: SCHED_SOFTIRQ runs
    /// `sched_balance_domains()` (CPU_IDLE or CPU_NOT_IDLE as the runqueue is) when
    /// `next_balance` is due, then the NOHZ kick, which returns at once on a CPU whose tick
    /// found it idle (`idle_balance`: `sched_tick()`'s `rq->idle_balance = idle_cpu()`).
    pub(super) fn sched_balance_trigger(&mut self, cpu: u32, idle_balance: bool) {
        if self.domains.of(cpu).is_empty() {
            return;
        }
        if self.jiffies() >= self.lb.cpus[cpu as usize].next_balance {
            self.update_blocked_averages(cpu);
            let idle = if self.lb_idle_cpu(cpu) { IdleType::Idle } else { IdleType::NotIdle };
            self.sched_balance_domains(cpu, idle);
        }
        if !idle_balance {
            self.nohz_balancer_kick(cpu);
        }
    }

    /// `sched_balance_domains()` (fair.c v7.3.4): balance each domain whose interval is due,
    /// lowest first, stopping where another CPU of the group balances more actively.
    fn sched_balance_domains(&mut self, cpu: u32, mut idle: IdleType) {
        let jiffies = self.jiffies();
        let hz = u64::from(self.cfg.hz);
        let mut continue_balancing = true;
        let mut busy = idle != IdleType::Idle && !self.sched_idle_rq(cpu);
        let mut next_balance = jiffies + 60 * hz;
        let mut update_next = false;
        let mut need_decay = false;
        let mut max_cost = 0u64;
        for level in 0..self.domains.of(cpu).len() {
            need_decay = self.update_newidle_cost(cpu, level, 0, 0);
            max_cost += self.lb.cpus[cpu as usize].sd[level].max_newidle_lb_cost;
            if !continue_balancing {
                if need_decay {
                    continue;
                }
                break;
            }
            let mut interval = self.sd_balance_interval(cpu, level, busy);
            if jiffies as i64 >= self.lb.cpus[cpu as usize].sd[level].last_balance + interval as i64 {
                if self.sched_balance_rq(cpu, level, idle, &mut continue_balancing) > 0 {
                    idle = if self.lb_idle_cpu(cpu) { IdleType::Idle } else { IdleType::NotIdle };
                    busy = idle != IdleType::Idle && !self.sched_idle_rq(cpu);
                }
                self.lb.cpus[cpu as usize].sd[level].last_balance = jiffies as i64;
                interval = self.sd_balance_interval(cpu, level, busy);
            }
            let due = (self.lb.cpus[cpu as usize].sd[level].last_balance + interval as i64).max(0) as u64;
            if next_balance > due {
                next_balance = due;
                update_next = true;
            }
        }
        let lb = &mut self.lb.cpus[cpu as usize];
        if need_decay {
            lb.max_idle_balance_cost = self.cfg.sysctl.migration_cost_ns.max(max_cost);
        }
        if update_next {
            lb.next_balance = next_balance;
        }
    }

    /// `sched_idle_rq()` (fair.c v7.3.4): every queued task is SCHED_IDLE.
    fn sched_idle_rq(&self, cpu: u32) -> bool {
        let cfs = &self.rqs[cpu as usize].cfs;
        cfs.h_nr_queued > 0 && cfs.h_nr_queued == cfs.h_nr_idle
    }

    /// `get_sd_balance_interval()` (fair.c v7.3.4), in jiffies.
    fn sd_balance_interval(&self, cpu: u32, level: usize, busy: bool) -> u64 {
        let sd = &self.domains.of(cpu)[level];
        let mut interval = self.lb.cpus[cpu as usize].sd[level].balance_interval_ms;
        if busy {
            interval *= u64::from(sd.busy_factor);
        }
        interval = self.msecs_to_jiffies(interval);
        if busy {
            interval = interval.saturating_sub(1);
        }
        interval.clamp(1, self.max_load_balance_interval())
    }

    /// `update_next_balance()` (fair.c v7.3.4): the idle interval of one domain.
    fn update_next_balance(&self, cpu: u32, level: usize, next_balance: &mut u64) {
        let last = self.lb.cpus[cpu as usize].sd[level].last_balance;
        let next = (last + self.sd_balance_interval(cpu, level, false) as i64).max(0) as u64;
        *next_balance = (*next_balance).min(next);
    }

    /// `max_load_balance_interval` = HZ · nr_cpus / 10 (fair.c v7.3.4).
    fn max_load_balance_interval(&self) -> u64 {
        (u64::from(self.cfg.hz) * self.rqs.len() as u64 / 10).max(1)
    }

    /// `msecs_to_jiffies()`, rounding up as the kernel does for HZ that do not divide 1000.
    fn msecs_to_jiffies(&self, ms: u64) -> u64 {
        let hz = u64::from(self.cfg.hz);
        (ms * hz).div_ceil(1000)
    }

    /// `should_we_balance()` (fair.c v7.3.4): newidle balancing runs on any CPU with an empty
    /// runqueue; otherwise one CPU per group balances a domain: the first idle CPU of the local
    /// group on an idle core, else its first idle SMT thread, else the group's first CPU.
    fn should_we_balance(&self, env: &detach::LbEnv) -> bool {
        if self.lb_excluded(env.dst_cpu) {
            return false;
        }
        if env.idle == IdleType::NewlyIdle {
            let rq = &self.rqs[env.dst_cpu as usize];
            return rq.cfs.h_nr_queued == 0 && !rq.ttwu_pending();
        }
        let sd = &self.domains.of(env.this_cpu)[env.level];
        #[allow(clippy::expect_used, reason = "the topology builder gives every domain at least one group")]
        let local = self.domains.groups(sd).next().expect("a domain has groups");
        let smt = self.domains.sched_smt_active() && sd.flags & SD_SHARE_CPUCAPACITY == 0;
        let mut idle_smt = None;
        for &c in local {
            if self.lb_excluded(c) || !self.lb_idle_cpu(c) {
                continue;
            }
            if smt && !self.is_core_idle(c) {
                idle_smt.get_or_insert(c);
                continue;
            }
            return c == env.dst_cpu;
        }
        if let Some(c) = idle_smt {
            return c == env.dst_cpu;
        }
        local.first() == Some(&env.dst_cpu)
    }

    /// Starts a pass: `env->cpus = sched_domain_span(sd) & cpu_active_mask` (all CPUs are
    /// active; the span is implied by iterating the domain's groups).
    fn lb_begin_pass(&mut self) {
        self.lb.pass = self.lb.pass.wrapping_add(1).max(1);
    }

    fn lb_excluded(&self, cpu: u32) -> bool {
        self.lb.excluded[cpu as usize] == self.lb.pass
    }

    fn lb_exclude(&mut self, cpu: u32) {
        self.lb.excluded[cpu as usize] = self.lb.pass;
    }

    pub(super) fn jiffies(&self) -> u64 {
        self.now / self.params.tick_nsec
    }
}
