//! Tasks: identity, core scheduler state (`task_struct` fields outside the entity), program
//! position and per-task statistics named as `/proc/<pid>/sched` names them.

use crate::cpumask::CpuMask;
use crate::stats::CompactHistogram;

/// [`Task::mm`] of a kernel thread (`TaskSpec::kthread`): it has no address space (`p->mm`
/// is NULL), so context switches borrow the previous one and cache-aware balancing skips it.
pub const NO_MM: u32 = u32::MAX;

/// Index of a task in the simulation (dense, stable for the whole run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u32);

impl TaskId {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// The scheduler-visible state of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Created but not yet forked into the simulation.
    New,
    /// Queued or running (`TASK_RUNNING`).
    Running,
    /// Asleep (`TASK_INTERRUPTIBLE`); may still be queued as a delayed entity.
    Blocked,
    /// A wakeup is in flight on a remote CPU's wake list.
    Waking,
    Dead,
}

/// What the task is doing with the CPU time it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Fetch the next instruction.
    Next,
    /// User-mode computation with this much CPU time left.
    User { remaining: u64 },
    /// Kernel-mode work with this much CPU time left, then `then`.
    Kernel { remaining: u64, then: AfterKernel },
}

/// What a kernel-mode stretch ends in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterKernel {
    /// Return to user mode (e.g. after a context switch, or a syscall that does not block).
    Return,
    /// Block in a relative hrtimer sleep (`nanosleep()`, `HRTIMER_MODE_REL`): the timer
    /// expires `ns` after it is started, which is at the end of the syscall entry — later than
    /// planned if the task was preempted in between — within `[start + ns, start + ns + slack]`.
    SleepFor { ns: u64 },
    /// Block in an absolute hrtimer sleep (`clock_nanosleep(TIMER_ABSTIME)`) that expires in
    /// `[soft, soft + slack]`; `soft` may have passed by the time the timer is started.
    SleepUntil { soft: u64 },
    /// `sched_yield()`.
    Yield,
    /// `do_exit()`.
    Exit,
    /// Change nice, then return.
    SetNice { nice: i32 },
    /// Complete the IPC system call in progress (`engine/ipc.rs`).
    Ipc,
}

/// Per-task counters (`/proc/<pid>/sched` names).
#[derive(Clone, Debug, Default)]
pub struct TaskStats {
    pub nr_switches: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    pub nr_migrations: u64,
    pub nr_wakeups: u64,
    pub nr_wakeups_sync: u64,
    pub nr_wakeups_local: u64,
    pub nr_wakeups_remote: u64,
    pub nr_wakeups_migrate: u64,
    pub nr_wakeups_affine: u64,
    pub nr_wakeups_affine_attempts: u64,
    pub nr_wakeup_preemptions: u64,
    pub wakeup_latency: CompactHistogram,
}

/// A task's first switch-ins after a wakeup, by what they replaced on the CPU: a task switched
/// out still runnable (`prev_state` R: preempted) or the idle task. A trace reads them off each
/// `sched_wakeup` and the wakee's next `sched_switch`, whichever request (the wakeup's own
/// check, the enqueue's `update_curr()`, a tick) made the switch. Not `/proc/<pid>/sched`
/// fields; kept beside the tasks, not in [`Task`], which stays six cache lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeeSwitchIns {
    pub preempting: u64,
    pub from_idle: u64,
}

/// A fixed-length per-task array (loop counters, timer expiries, latency starts), kept inside
/// the task when it is short (most programs have at most one or two of each), so that using it
/// reads no separate allocation.
#[derive(Clone, Debug)]
pub enum Slots<T: Copy, const N: usize> {
    Inline { len: u8, items: [T; N] },
    Heap(Box<[T]>),
}

impl<T: Copy, const N: usize> Slots<T, N> {
    /// `len` slots holding `fill`.
    pub fn new(len: usize, fill: T) -> Self {
        match u8::try_from(len) {
            Ok(l) if len <= N => Slots::Inline { len: l, items: [fill; N] },
            _ => Slots::Heap(vec![fill; len].into_boxed_slice()),
        }
    }
}

impl<T: Copy, const N: usize> std::ops::Deref for Slots<T, N> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Slots::Inline { len, items } => &items[..*len as usize],
            Slots::Heap(b) => b,
        }
    }
}

impl<T: Copy, const N: usize> std::ops::DerefMut for Slots<T, N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Slots::Inline { len, items } => &mut items[..*len as usize],
            Slots::Heap(b) => b,
        }
    }
}

/// A simulated task.
///
/// The fields are laid out by hand (`repr(C)`, hottest first, each task starting a cache
/// line): a run with thousands of tasks touches a different task at almost every event, and
/// what that costs is the number of cache lines the event reads. The first line holds what
/// every step and switch reads; the second what a wakeup reads; the counters follow, the cold
/// identity last.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Task {
    // Line 1: stepping and switching.
    pub step: Step,
    /// The CPU the task last ran on, and the cache refill time it still owes (added to its
    /// next user-mode computation).
    pub cache_debt_ns: u64,
    pub last_cpu: Option<u32>,
    /// `task_cpu(p)`.
    pub cpu: u32,
    pub pc: u32,
    pub spec: u32,
    /// The spec's `mm`, copied here so that a context switch compares two tasks' address
    /// spaces without reading their specs; [`NO_MM`] for a kernel thread.
    pub mm: u32,
    /// Bumped whenever a pending hrtimer of this task is cancelled or consumed.
    pub timer_gen: u32,
    pub state: TaskState,
    /// CONFIG_SCHED_CACHE: whether `p->cache_work` is queued (`work->next != work`), and
    /// `p->preferred_llc` (an `sd_llc_id`, `None` for -1).
    pub cache_work_pending: bool,
    // Line 2: the program's loop counters, sleeping and waking.
    pub loop_counters: Slots<u32, 3>,
    /// When the last wakeup started (`sched_waking`), until the task runs.
    pub waking_since: Option<u64>,
    /// The spec's `timer_slack_ns`, copied here so that arming a sleep reads no spec.
    pub timer_slack_ns: u64,
    /// `p->last_wakee`, `p->wakee_flips`, `p->wakee_flip_decay_ts` (jiffies), `recent_used_cpu`.
    pub wakee_flip_decay_ts: u64,
    pub wakee_flips: u32,
    pub recent_used_cpu: u32,
    // Line 3: waking, then the counters.
    pub last_wakee: Option<TaskId>,
    /// Position in the CPU's `cfs_tasks` list (higher = nearer the head: recently enqueued
    /// or picked); the load balancer takes candidates from the tail.
    pub lb_seq: u64,
    pub preferred_llc: Option<u32>,
    /// `p->cpus_mask`; its weight is `nr_cpus_allowed`.
    pub allowed: CpuMask,
    pub stats: TaskStats,
    /// Fixed-length, so boxed slices (16 bytes, no allocation when empty), not `Vec`s: the
    /// task stays six cache lines.
    pub timer_next: Box<[Option<u64>]>,
    /// Start times of the task's latency measurements (`Op::LatStart`).
    pub lat_start: Box<[u64]>,
    /// The task that spawned this one, if any, and how many of its own children still live.
    pub parent: Option<TaskId>,
    pub live_children: u32,
    pub pid: u32,
    pub nice: i32,
    pub comm: Box<str>,
}

impl Task {
    /// The lowest CPU of the affinity mask, which is never empty (`create_task` refuses an
    /// empty list); the task's CPU if it were.
    pub fn first_allowed(&self) -> u32 {
        self.allowed.first().unwrap_or(self.cpu)
    }

    pub fn allows(&self, cpu: u32) -> bool {
        self.allowed.contains(cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The layout `Task`'s comment promises: what stepping and switching read in the first
    /// cache line, the loop counters and the wakeup fields in the second.
    #[test]
    fn hot_fields_share_the_first_cache_lines() {
        assert_eq!(std::mem::align_of::<Task>(), 64);
        for end in [
            offset_of!(Task, step) + size_of::<Step>(),
            offset_of!(Task, cache_debt_ns) + 8,
            offset_of!(Task, last_cpu) + size_of::<Option<u32>>(),
            offset_of!(Task, mm) + 4,
            offset_of!(Task, timer_gen) + 4,
            offset_of!(Task, state) + 1,
            offset_of!(Task, cache_work_pending) + 1,
        ] {
            assert!(end <= 64, "{end}");
        }
        assert_eq!(offset_of!(Task, loop_counters), 64);
        assert!(offset_of!(Task, recent_used_cpu) + 4 <= 128);
        assert!(offset_of!(Task, allowed) + size_of::<CpuMask>() <= 192);
        assert_eq!(size_of::<Task>(), 6 * 64);
    }

    #[test]
    fn slots_are_inline_when_short() {
        let mut s: Slots<u32, 3> = Slots::new(3, 7);
        assert!(matches!(s, Slots::Inline { .. }));
        s[2] += 1;
        assert_eq!(&*s, &[7, 7, 8]);
        let h: Slots<u32, 3> = Slots::new(4, 1);
        assert!(matches!(h, Slots::Heap(_)));
        assert_eq!(&*h, &[1, 1, 1, 1]);
        assert!(Slots::<u64, 2>::new(0, 0).is_empty());
    }
}
