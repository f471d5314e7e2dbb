//! Tasks: identity, core scheduler state (`task_struct` fields outside the entity), program
//! position and per-task statistics named as `/proc/<pid>/sched` names them.

use crate::cpumask::CpuMask;
use crate::stats::CompactHistogram;

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

/// A simulated task.
#[derive(Clone, Debug)]
pub struct Task {
    pub pid: u32,
    pub comm: String,
    pub nice: i32,
    pub spec: u32,
    pub state: TaskState,
    /// `task_cpu(p)`.
    pub cpu: u32,
    /// `p->cpus_mask`; its weight is `nr_cpus_allowed`.
    pub allowed: CpuMask,
    pub pc: u32,
    pub step: Step,
    pub loop_counters: Vec<u32>,
    pub timer_next: Vec<Option<u64>>,
    /// Bumped whenever a pending hrtimer of this task is cancelled or consumed.
    pub timer_gen: u32,
    /// When the last wakeup started (`sched_waking`), until the task runs.
    pub waking_since: Option<u64>,
    /// `p->last_wakee`, `p->wakee_flips`, `p->wakee_flip_decay_ts` (jiffies), `recent_used_cpu`.
    pub last_wakee: Option<TaskId>,
    pub wakee_flips: u32,
    pub wakee_flip_decay_ts: u64,
    pub recent_used_cpu: u32,
    /// The task that spawned this one, if any, and how many of its own children still live.
    pub parent: Option<TaskId>,
    pub live_children: u32,
    /// Position in the CPU's `cfs_tasks` list (higher = nearer the head: recently enqueued
    /// or picked); the load balancer takes candidates from the tail.
    pub lb_seq: u64,
    /// The CPU the task last ran on, and the cache refill time it still owes (added to its
    /// next user-mode computation).
    pub last_cpu: Option<u32>,
    pub cache_debt_ns: u64,
    /// Start times of the task's latency measurements (`Op::LatStart`).
    pub lat_start: Vec<u64>,
    /// CONFIG_SCHED_CACHE: `p->preferred_llc` (an `sd_llc_id`, `None` for -1), and whether
    /// `p->cache_work` is queued (`work->next != work`).
    pub preferred_llc: Option<u32>,
    pub cache_work_pending: bool,
    pub stats: TaskStats,
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
