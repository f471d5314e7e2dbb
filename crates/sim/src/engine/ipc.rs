//! IPC system calls (pipes, sockets, futexes, eventfds, poll, spawn and wait; spec
//! workloads.md §1): the engine side of [`crate::ipc`].
//!
//! A system call runs in up to two kernel-mode stretches:
//! 1. `ipc_fetch` attempts the operation on the object at once (state changes are atomic at
//!    the start of the call), queues the task on the object if it must sleep, and returns a
//!    kernel step of `syscall_ns` (only on entry, not on a retry inside the same call) + the
//!    operation's base cost ([`IpcCosts`](crate::ipc::IpcCosts)) + the copy (`copy_ns_per_kib`).
//! 2. At its end, `ipc_complete` issues the wakes the object asked for — after the copy and
//!    the unlock, as the kernel does — with `try_to_wake_up(p, flags, cpu, current, in_task)`,
//!    one waiter at a time as `__wake_up_common()` walks the queue: each wake is followed by a
//!    stretch charging the waker's side of it (`wakeup_local_ns` for a direct enqueue, plus
//!    `wakeup_remote_enqueue_ns` on another CPU's runqueue, `wakeup_remote_ipi_ns` for a
//!    wake-list + IPI wakeup, `wakeup_polling_idle_ns` for a wake-list wakeup of a polling idle
//!    CPU, each plus `wakeup_select_ns` when the wakee's CPU was selected; nothing for a task
//!    that was not asleep) before the next wake. So a wakee becomes runnable at the start of
//!    the waker's `try_to_wake_up` for it, after the waiters before it; the walk holds the
//!    queue's lock, so these stretches are not preemption points, even under full preemption.
//!
//! Pipe reads and writes run their entry and the unlocked part of the call first (an `Entry`
//! stretch), then take `pipe->mutex` ([`crate::ipc::Mutex`]) for the locked part and the copy
//! ([`PIPE_LOCKED_PCT`], measured) and release it before the wakes. A caller finding it taken
//! spins (a `Spin` stretch, not preemptible) while the owner is on a CPU and this CPU has no
//! full reschedule pending, for as long as the owner's current stretch, then tries again;
//! otherwise it sleeps `TASK_UNINTERRUPTIBLE` (traced `D`) until an unlock wakes it. This is
//! what turns a holder preempted inside a write (the hrtick's full reschedule, a tick upgrading
//! a lazy one) into a convoy of sleeping writers: real 7.3.4 traces show chains of `D`
//! switch-outs in `__mutex_lock` from `anon_pipe_write`, 140-300 per `hackbench -T -p -g 2 -l
//! 100` with HRTICK and 1-2 without (docs/fidelity.md). **Deviation:** a spinner whose owner
//! is preempted notices at the end of the owner's stretch, not at once.
//!
//! Then the task returns to user mode (a preemption point) or sleeps: its program counter is
//! rewound so that the operation is retried when it is woken, with `resumed = true` (no
//! syscall entry cost, the object continues the same call). Progress (bytes already written or
//! read) is kept per task here, so a retry never counts anything twice.
//!
//! Approximations: data written is visible to readers from the start of the write call, not
//! from the end of its copy (≈ 0.3 µs early; two tasks in perfect lockstep on two CPUs may then
//! never block). A softirq-context wake (`in_task` false, TCP) that asks the waker's own CPU to
//! reschedule is acted upon at the end of the system call, not at the `local_bh_enable()` that
//! ran the softirq.
//!
//! A task queued on an object but still in its kernel stretch is "about to sleep" (in the
//! kernel its state is already `TASK_INTERRUPTIBLE`); a wake that reaches it then is recorded
//! and, instead of sleeping, it retries at once (the wait loop's re-check).
//!
//! `Spawn` creates the child at the end of the fork call and calls `wake_up_new_task` in the
//! parent's context (no event); the child inherits `wakee_flips`/`last_wakee` and starts on
//! the parent's CPU before fork placement, as `dup_task_struct`/`sched_fork` leave it.
//! `WaitChildren` is a `wait()` loop: each child exit wakes a waiting parent, which reaps and
//! waits again (a new call) until no child is left. **Deviation:** `__wake_up_parent` passes
//! WF_SYNC, but the waker is exiting, so `select_task_rq_fair` treats it as non-sync; the engine
//! has no "waker exiting" input, so the wake is issued without WF_SYNC (placement is right; it
//! is not counted in `nr_wakeups_sync`, and NEXT_BUDDY's `preempt_sync` does not see it).

use super::Sim;
use super::core::{IdleState, Switch};
use crate::ipc::{IpcParams, Object, ObjectSpec, Wake};
use crate::program::{Op, TaskSpec};
use crate::task::{AfterKernel, Step, TaskId, TaskState};

/// The IPC objects of a run and per-task system call progress.
pub(super) struct IpcState {
    objects: Vec<Object>,
    /// Indexed by task id; grows as tasks are created.
    tasks: Vec<TaskIpc>,
    params: IpcParams,
}

impl IpcState {
    /// Whether object `obj` has something to read (`EPOLLIN`), for a zero-timeout poll.
    pub(super) fn readable(&self, obj: u32) -> bool {
        self.objects[obj as usize].readable()
    }
}

/// Which stretch of the call is running.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// A write's entry and copy: the data becomes visible (and the write's wakes are decided)
    /// at its end, as the kernel publishes pipe and socket data only after copying it in.
    Copy { obj: u32, bytes: u32 },
    /// Entry, the operation and the copy; the wakes are issued at its end.
    #[default]
    Syscall,
    /// The waker's `try_to_wake_up` work.
    Wakes,
    /// The call's entry and its part outside the object's mutex (pipes), before the lock.
    Entry,
    /// `mutex_optimistic_spin()` on an object's mutex whose owner runs on another CPU: until
    /// the owner's kernel stretch ends, then the lock is tried again.
    Spin,
}

/// How the call ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Outcome {
    /// Return to user mode; the instruction is complete.
    #[default]
    Done,
    /// Return to user mode and issue the instruction again as a new call (a short read of an
    /// `exact` read loop).
    Again,
    /// Sleep on the object; retry the instruction inside the same call when woken.
    Block,
    /// Create a task of this spec, then return.
    Spawn { spec: u32 },
}

/// One task's IPC system call in progress.
#[derive(Clone, Debug, Default)]
struct TaskIpc {
    /// The instruction the progress belongs to.
    op_pc: Option<u32>,
    /// Bytes already written / read by this instruction.
    done: u32,
    /// The task slept inside this instruction's call: the next attempt continues it.
    resumed: bool,
    /// The call will sleep at the end of its kernel time (queued, about to sleep).
    will_block: bool,
    /// A wake arrived while `will_block`.
    woken: bool,
    phase: Phase,
    outcome: Outcome,
    /// Wakes to issue at the end of the `Syscall` stretch.
    wakes: Vec<Wake>,
    /// The next of `wakes` to issue (one per `Wakes` stretch).
    next_wake: usize,
    /// Objects on which the task has poll entries (during a `Poll`/`EpollWait`).
    polled: Vec<u32>,
    /// Sleeping (or about to sleep) in `WaitChildren`.
    waiting_children: bool,
    /// The object a `Read`/`Write` that blocks waits on.
    wait_obj: Option<u32>,
    /// The system call's entry is charged (later attempts inside the call are free).
    entered: bool,
    /// The object whose mutex the call holds (released at the end of the stretch).
    locked: Option<u32>,
    /// Queued on (or woken from) an object's mutex: the next attempt is a waiter's retry.
    mutex_wait: bool,
}

impl IpcState {
    /// Builds the objects and checks that every IPC instruction fits its object's kind.
    /// Out-of-range indices are left to `Sim::check_spec_refs`.
    pub(super) fn new(
        objects: &[ObjectSpec],
        specs: &[TaskSpec],
        ncpus: u32,
        costs: &crate::ipc::IpcCosts,
    ) -> Result<IpcState, String> {
        for (i, o) in objects.iter().enumerate() {
            o.validate().map_err(|e| format!("object {i}: {e}"))?;
        }
        for spec in specs {
            let comm = &spec.comm;
            for (i, op) in spec.ops.iter().enumerate() {
                let bad = match *op {
                    Op::Write { obj, .. } | Op::Read { obj, .. } => objects
                        .get(obj as usize)
                        .is_some_and(|o| !o.is_stream())
                        .then(|| format!("reads or writes object {obj}, a futex")),
                    Op::FutexWait { obj } | Op::FutexWake { obj, .. } => objects
                        .get(obj as usize)
                        .is_some_and(|o| *o != ObjectSpec::Futex)
                        .then(|| format!("uses object {obj} as a futex, but it is {:?}", objects[obj as usize])),
                    Op::Poll { set } | Op::EpollWait { set } => spec
                        .poll_sets
                        .get(set as usize)
                        .is_some_and(|s| s.is_empty())
                        .then(|| format!("polls the empty poll set {set}")),
                    Op::Spawn { spec: s } => specs.get(s as usize).and_then(|child| {
                        let cpus = child.cpus.as_ref()?;
                        (cpus.is_empty() || cpus.iter().any(|&c| c >= ncpus))
                            .then(|| format!("spawns `{}`, whose CPU list does not fit the {ncpus} CPUs", child.comm))
                    }),
                    _ => None,
                };
                if let Some(what) = bad {
                    return Err(format!("task `{comm}` (op {i}) {what}"));
                }
            }
            if let Some(o) =
                spec.poll_sets.iter().flatten().find(|&&o| objects.get(o as usize).is_some_and(|s| !s.is_pollable()))
            {
                return Err(format!("task `{comm}` polls object {o}, a futex"));
            }
        }
        let params = IpcParams { costs: *costs, ..IpcParams::v7_3() };
        Ok(IpcState {
            objects: objects.iter().map(|o| Object::new(o, &params.behavior)).collect(),
            tasks: Vec::new(),
            params,
        })
    }
}

/// The per-task entry, created on first use. Inlined with the growth kept out of line: an IPC
/// call looks its entry up several times, and as a call this was 17 instructions a lookup.
#[inline]
fn entry(tasks: &mut Vec<TaskIpc>, t: TaskId) -> &mut TaskIpc {
    if tasks.len() <= t.idx() {
        grow(tasks, t);
    }
    &mut tasks[t.idx()]
}

#[cold]
#[inline(never)]
fn grow(tasks: &mut Vec<TaskIpc>, t: TaskId) {
    tasks.resize_with(t.idx() + 1, TaskIpc::default);
}

/// Copy cost of `bytes` at `per_kib` ns per KiB, rounded up.
fn copy_ns(bytes: u32, per_kib: u64) -> u64 {
    (u64::from(bytes) * per_kib).div_ceil(1024)
}

/// Share of a pipe call's own cost (`pipe_write_ns`, `pipe_read_ns`) spent under `pipe->mutex`,
/// in percent; the rest (the `vfs_write`/`vfs_read` prologue and `fsnotify`, the page prefill of
/// 7.3's `anon_pipe_prefill_and_lock()`) runs before the lock, with the call's entry. Measured
/// on real 7.3.4 (docs/fidelity.md, "The pipe mutex"): of 132 in-kernel preemptions of a
/// hackbench sender inside a `write` before its wakeup, 27 caught it holding the mutex.
/// **Deviation:** reads are taken to split as writes do (not measured), and the unlocked part
/// is charged before the lock, where part of it (`fsnotify`) runs after.
const PIPE_LOCKED_PCT: u64 = 20;

/// The part of a pipe call's cost `base` under `pipe->mutex`.
fn locked_part(base: u64) -> u64 {
    base * PIPE_LOCKED_PCT / 100
}

impl Sim {
    /// Replaces the IPC model's parameters (kernel-version switches and per-operation costs).
    /// Call it between `Sim::new` and `run`: the objects are rebuilt empty.
    pub fn set_ipc_params(&mut self, params: IpcParams) {
        assert_eq!(self.events, 0, "IPC parameters can only be set before the run");
        self.ipc.params = params;
        self.ipc.objects = self.objects.iter().map(|o| Object::new(o, &params.behavior)).collect();
    }

    /// The IPC model's parameters.
    pub fn ipc_params(&self) -> &IpcParams {
        &self.ipc.params
    }

    /// Starts an IPC system call of `t` (its pc already points past `op`): attempts the
    /// operation and returns the kernel step of the call.
    pub(super) fn ipc_fetch(&mut self, t: TaskId, op: &Op) -> Step {
        let task = &self.tasks[t.idx()];
        let pc = task.pc - 1;
        let live_children = task.live_children;
        let spec_idx = task.spec as usize;
        let syscall_ns = self.costs.syscall_ns;
        let per_kib = self.costs.copy_ns_per_kib;
        // Borrowed, not copied: the parameters are read on every IPC call.
        let IpcState { objects, tasks, params, .. } = &mut self.ipc;
        let IpcParams { behavior, costs } = &*params;
        let st = entry(tasks, t);
        if st.op_pc != Some(pc) {
            debug_assert!(st.polled.is_empty() && !st.waiting_children, "task {} left an IPC call unfinished", t.0);
            st.op_pc = Some(pc);
            st.done = 0;
            st.resumed = false;
            st.entered = false;
        }
        let resumed = st.resumed;
        let mut cost = if st.entered { 0 } else { syscall_ns };
        st.entered = true;
        if cost > 0
            && let Op::Write { obj, .. } | Op::Read { obj, .. } = *op
            && let o = &objects[obj as usize]
            && o.has_mutex()
        {
            // The call's entry and the part of it outside pipe->mutex run first, unlocked (an
            // `Entry` stretch); the lock is tried at its end.
            let base = if matches!(*op, Op::Write { .. }) { o.write_cost(costs) } else { o.read_cost(costs) };
            st.phase = Phase::Entry;
            let cost = self.cost(cost + base - locked_part(base));
            return Step::Kernel { remaining: cost, then: AfterKernel::Ipc };
        }
        let mut wakes = std::mem::take(&mut st.wakes);
        wakes.clear();
        st.wait_obj = None;
        if let Op::Write { obj, .. } | Op::Read { obj, .. } = *op
            && let Some(m) = objects[obj as usize].mutex_mut()
        {
            // mutex_lock(&pipe->mutex) at the top of anon_pipe_read()/anon_pipe_write(), and
            // again after every wait inside the call.
            let woken_first = std::mem::take(&mut st.mutex_wait);
            if !m.trylock(t, woken_first) {
                #[allow(clippy::expect_used, reason = "trylock fails only on an owned lock")]
                let owner = m.owner().expect("a contended mutex has an owner");
                st.wakes = wakes;
                // mutex_spin_on_owner() spins while the owner is on a CPU and this CPU has no
                // full reschedule pending (need_resched() does not test the lazy bit).
                let spin = Self::owner_running_until(&self.tasks, &self.rqs, owner)
                    .filter(|_| self.rqs[self.tasks[t.idx()].cpu as usize].need_resched != crate::fair::Resched::Full);
                if let Some(until) = spin {
                    st.phase = Phase::Spin;
                    let spin_ns = until.saturating_sub(self.now).max(1);
                    let cost = self.cost(cost);
                    return Step::Kernel { remaining: cost + spin_ns, then: AfterKernel::Ipc };
                }
                // The slow path: queued on the wait list, asleep TASK_UNINTERRUPTIBLE at the
                // end of this stretch unless an unlock wakes it first.
                m.add_waiter(t);
                st.mutex_wait = true;
                st.outcome = Outcome::Block;
                st.will_block = true;
                st.woken = false;
                st.phase = Phase::Syscall;
                let cost = self.cost(cost);
                return Step::Kernel { remaining: cost, then: AfterKernel::Ipc };
            }
            st.locked = Some(obj);
        }
        let outcome = match *op {
            Op::Write { obj, bytes } => {
                // Charge the entry and the copy of what is left now; apply the write at the end
                // of that time (`ipc_complete`), when the data becomes visible to readers.
                let o = &objects[obj as usize];
                let base = o.write_cost(costs);
                cost += if o.has_mutex() { locked_part(base) } else { base }
                    + copy_ns(bytes.saturating_sub(st.done), per_kib);
                st.phase = Phase::Copy { obj, bytes };
                st.wait_obj = Some(obj);
                st.wakes = wakes;
                let cost = self.cost(cost);
                return Step::Kernel { remaining: cost, then: AfterKernel::Ipc };
            }
            Op::Read { obj, bytes, exact } => {
                st.wait_obj = Some(obj);
                let o = &mut objects[obj as usize];
                let x = o.read(t, bytes.saturating_sub(st.done), resumed, &mut wakes);
                st.done = st.done.saturating_add(x.bytes);
                let base = o.read_cost(costs);
                cost += if o.has_mutex() { locked_part(base) } else { base } + copy_ns(x.bytes, per_kib);
                if x.blocked {
                    Outcome::Block
                } else if exact && st.done < bytes && !matches!(o, Object::EventFd(_)) {
                    Outcome::Again
                } else {
                    Outcome::Done
                }
            }
            Op::Poll { set } | Op::EpollWait { set } => {
                // Poll entries are non-exclusive; epoll inherits WF_SYNC only from 6.10.
                let keep_sync = matches!(op, Op::Poll { .. }) || behavior.epoll_sync;
                let set = &self.specs[spec_idx].poll_sets[set as usize];
                cost += costs.poll_ns;
                if behavior.pipe_poll_usage {
                    for &o in set {
                        if let Object::Pipe(p) = &mut objects[o as usize] {
                            p.poll_usage = true;
                        }
                    }
                }
                if set.iter().any(|&o| objects[o as usize].readable()) {
                    for o in st.polled.drain(..) {
                        objects[o as usize].poll_unregister(t);
                    }
                    Outcome::Done
                } else {
                    for &o in set {
                        objects[o as usize].poll_register(t, keep_sync, behavior.pipe_poll_usage);
                        if !st.polled.contains(&o) {
                            st.polled.push(o);
                        }
                    }
                    Outcome::Block
                }
            }
            Op::FutexWait { obj } => {
                let Object::Futex(f) = &mut objects[obj as usize] else { unreachable!("validated") };
                cost += costs.futex_wait_ns;
                if f.wait(t, resumed) { Outcome::Block } else { Outcome::Done }
            }
            Op::FutexWake { obj, n } => {
                let Object::Futex(f) = &mut objects[obj as usize] else { unreachable!("validated") };
                cost += costs.futex_wake_ns;
                f.wake(n, &mut wakes);
                Outcome::Done
            }
            Op::Spawn { spec } => {
                cost += costs.spawn_ns;
                Outcome::Spawn { spec }
            }
            Op::WaitChildren => {
                // Every wait() pass is a call of its own (the program loops over wait()).
                cost = syscall_ns + costs.wait_ns;
                st.waiting_children = live_children > 0;
                if st.waiting_children { Outcome::Block } else { Outcome::Done }
            }
            _ => unreachable!("{op:?} is not an IPC instruction"),
        };
        st.outcome = outcome;
        st.will_block = outcome == Outcome::Block;
        st.woken = false;
        st.phase = Phase::Syscall;
        st.wakes = wakes;
        let cost = self.cost(cost);
        Step::Kernel { remaining: cost, then: AfterKernel::Ipc }
    }

    /// The end of a kernel stretch of `t`'s IPC call on `cpu`. Returns false if the CPU
    /// switched tasks.
    pub(super) fn ipc_complete(&mut self, cpu: u32, t: TaskId) -> bool {
        let st = entry(&mut self.ipc.tasks, t);
        if let Phase::Copy { obj, bytes } = st.phase {
            let resumed = st.resumed;
            let mut wakes = std::mem::take(&mut st.wakes);
            wakes.clear();
            let x = self.ipc.objects[obj as usize].write(t, bytes.saturating_sub(st.done), resumed, &mut wakes);
            let st = entry(&mut self.ipc.tasks, t);
            st.done = st.done.saturating_add(x.bytes);
            st.outcome = if x.blocked { Outcome::Block } else { Outcome::Done };
            st.will_block = st.outcome == Outcome::Block;
            st.woken = false;
            st.phase = Phase::Syscall;
            st.wakes = wakes;
        }
        let st = entry(&mut self.ipc.tasks, t);
        if st.phase == Phase::Entry {
            // Into the locked part of the call: fetch it again, now to take the mutex.
            st.phase = Phase::Syscall;
            self.tasks[t.idx()].pc -= 1;
            return true;
        }
        if st.phase == Phase::Spin {
            // The owner's stretch is over (or it left the CPU): try the lock again. The end of
            // the spin is the slow path's preempt_enable(), a preemption point.
            st.phase = Phase::Syscall;
            self.tasks[t.idx()].pc -= 1;
            return !self.irq_exit(cpu);
        }
        if st.phase == Phase::Syscall {
            if let Some(obj) = st.locked.take() {
                // mutex_unlock() before the call's wakes; a contended unlock wakes the first
                // waiter (wake_up_q() → wake_up_process(): no WF_SYNC) ahead of them.
                #[allow(clippy::expect_used, reason = "only an object with a mutex is ever locked")]
                let m = self.ipc.objects[obj as usize].mutex_mut().expect("a locked object has a mutex");
                if let Some(w) = m.unlock(t) {
                    st.wakes.insert(0, Wake { task: w, flags: 0, in_task: true });
                }
            }
            st.phase = Phase::Wakes;
            st.next_wake = 0;
            if let Outcome::Spawn { spec } = st.outcome {
                self.ipc_spawn(cpu, t, spec);
            }
        }
        // __wake_up_common() walks the wait queue one waiter at a time: each wakee becomes
        // runnable when the waker's try_to_wake_up() for it starts, after the ones before it.
        while entry(&mut self.ipc.tasks, t).phase == Phase::Wakes {
            let st = entry(&mut self.ipc.tasks, t);
            let Some(&w) = st.wakes.get(st.next_wake) else {
                st.wakes.clear();
                break;
            };
            st.next_wake += 1;
            let waker_ns = self.ipc_wake(cpu, t, w);
            let cost = self.cost(waker_ns);
            if cost > 0 {
                self.tasks[t.idx()].step = Step::Kernel { remaining: cost, then: AfterKernel::Ipc };
                return true;
            }
        }
        self.ipc_finish(cpu, t)
    }

    /// Whether the running task of `cpu` runs with preemption disabled: inside a wait-queue
    /// walk (`__wake_up_common()` under the queue's lock, its `Wakes` stretches) or spinning
    /// on a mutex (`__mutex_lock_common()` disables preemption around the spin).
    pub(super) fn ipc_preempt_disabled(&self, cpu: u32) -> bool {
        self.rqs[cpu as usize]
            .curr
            .and_then(|t| self.ipc.tasks.get(t.idx()))
            .is_some_and(|st| matches!(st.phase, Phase::Wakes | Phase::Spin))
    }

    /// When `owner` leaves its current kernel stretch, if it is on a CPU (`owner_on_cpu()`):
    /// the end of its switch-in path and of the step after it.
    fn owner_running_until(tasks: &[crate::task::Task], rqs: &[super::Rq], owner: TaskId) -> Option<u64> {
        let task = &tasks[owner.idx()];
        let rq = &rqs[task.cpu as usize];
        if task.state != TaskState::Running || rq.curr != Some(owner) {
            return None;
        }
        let step = match task.step {
            Step::User { remaining } | Step::Kernel { remaining, .. } => remaining,
            Step::Next => 0,
        };
        Some(rq.step_start + if rq.in_prologue { rq.prologue + step } else { step })
    }

    /// Returns to user mode, or sleeps with the instruction rewound for its retry.
    fn ipc_finish(&mut self, cpu: u32, t: TaskId) -> bool {
        let st = entry(&mut self.ipc.tasks, t);
        match st.outcome {
            Outcome::Done | Outcome::Spawn { .. } => {
                st.op_pc = None;
                st.done = 0;
                st.resumed = false;
                !self.return_to_user(cpu)
            }
            Outcome::Again => {
                st.resumed = false;
                st.entered = false;
                self.tasks[t.idx()].pc -= 1;
                !self.return_to_user(cpu)
            }
            Outcome::Block => {
                // A mutex sleep keeps `resumed`: the call has not reached the object yet.
                st.resumed |= !st.mutex_wait;
                st.will_block = false;
                self.tasks[t.idx()].pc -= 1;
                if std::mem::take(&mut st.woken) {
                    // Woken before it slept: the wait loop re-checks at once (the step is
                    // `Next`, so the retry is fetched now).
                    return true;
                }
                if st.mutex_wait {
                    // schedule_preempt_disabled() in the mutex slow path: no preemption point
                    // before the sleep.
                    self.schedule(cpu, Switch::BlockUninterruptible);
                    return false;
                }
                let wait_obj = st.wait_obj;
                if self.preempted_before_sleep(cpu, wait_obj) {
                    // Preempted while still TASK_RUNNING: off the wait queue, and the wait
                    // loop's check runs again (the retry) when the task is next picked.
                    if let Some(o) = wait_obj {
                        self.ipc.objects[o as usize].cancel_wait(t);
                    }
                    // __cond_resched() in might_sleep() (voluntary) or preempt_schedule() at
                    // the wait queue's unlock (full, lazy): inside the kernel.
                    self.schedule(cpu, Switch::PreemptKernel);
                    return false;
                }
                self.schedule(cpu, Switch::Block);
                false
            }
        }
    }

    /// Whether a full reschedule request pending when a read or write is about to sleep on
    /// `wait_obj` preempts the task first: under full preemption at the `preempt_enable()`
    /// of any spin unlock on the way (the wait queue's, after the call's own wakes); under
    /// voluntary preemption at the `might_sleep()` of a `wait_event*()` (pipes, see
    /// [`Object::might_sleep_before_wait`]); never under `none`, where the task sleeps and the
    /// request waits for the next pick. Lazy requests wait for the return to user mode.
    /// Futex waits, polls and `wait()` sleep as before (no object wait queue to leave).
    fn preempted_before_sleep(&self, cpu: u32, wait_obj: Option<u32>) -> bool {
        use crate::config::PreemptModel;
        let Some(o) = wait_obj else { return false };
        if self.rqs[cpu as usize].need_resched != crate::fair::Resched::Full {
            return false;
        }
        match self.cfg.preempt {
            PreemptModel::Full | PreemptModel::Lazy => true,
            PreemptModel::Voluntary => self.ipc.objects[o as usize].might_sleep_before_wait(),
            PreemptModel::None => false,
        }
    }

    /// Issues one wake from `waker` running on `cpu`; returns the waker-side cost: the
    /// wake-list path's or the direct enqueue's, plus `wakeup_select_ns` when
    /// `select_task_rq()` ran `select_task_rq_fair()` (core.c v7.3.4: only for a wakee allowed
    /// on more than one CPU) and `wakeup_remote_enqueue_ns` when the waker enqueued directly on
    /// another CPU's runqueue (`ttwu_queue()` → `ttwu_do_activate()` under that runqueue's
    /// lock, or `ttwu_runnable()` under `__task_rq_lock()` of a task queued there).
    fn ipc_wake(&mut self, cpu: u32, waker: TaskId, w: Wake) -> u64 {
        let st = entry(&mut self.ipc.tasks, w.task);
        if st.will_block {
            st.woken = true;
            return 0;
        }
        if self.tasks[w.task.idx()].state != TaskState::Blocked {
            // Already woken (a poller reached by several sources, a runnable task).
            return 0;
        }
        debug_assert!(
            (st.resumed || st.mutex_wait) && st.op_pc.is_some(),
            "task {} is woken by IPC but sleeps elsewhere",
            w.task.0
        );
        let selected = self.try_to_wake_up(w.task, w.flags, cpu, Some(waker), w.in_task);
        let select_ns = if selected { self.costs.wakeup_select_ns } else { 0 };
        let task = &self.tasks[w.task.idx()];
        let path_ns = match task.state {
            // Queued on the target's wake list: an IPI, unless the target polls in idle.
            TaskState::Waking => {
                let rq = &self.rqs[task.cpu as usize];
                if rq.curr.is_none() && rq.idle_state == IdleState::Poll {
                    self.costs.wakeup_polling_idle_ns
                } else {
                    self.costs.wakeup_remote_ipi_ns
                }
            }
            _ if task.cpu != cpu => self.costs.wakeup_local_ns + self.costs.wakeup_remote_enqueue_ns,
            _ => self.costs.wakeup_local_ns,
        };
        path_ns + select_ns
    }

    /// The end of `fork`/`clone` in `parent` on `cpu`.
    fn ipc_spawn(&mut self, cpu: u32, parent: TaskId, spec: u32) {
        #[allow(clippy::expect_used, reason = "Sim::new validated every spawned task spec")]
        let child = self.create_task(spec, Some(parent)).expect("Sim::new validated spawned CPU lists");
        let (flips, last, decay) = {
            let p = &self.tasks[parent.idx()];
            (p.wakee_flips, p.last_wakee, p.wakee_flip_decay_ts)
        };
        let c = &mut self.tasks[child.idx()];
        c.wakee_flips = flips;
        c.last_wakee = last;
        c.wakee_flip_decay_ts = decay;
        if c.allows(cpu) {
            // sched_fork(): __set_task_cpu(p, smp_processor_id()).
            c.cpu = cpu;
        }
        self.tasks[parent.idx()].live_children += 1;
        self.wake_up_new_task(child);
    }

    /// Exit notification (`exit_notify` → `do_notify_parent` → `__wake_up_parent`), called by
    /// `schedule()` for a task `p` exiting on `cpu` before it leaves the runqueue.
    pub(super) fn ipc_task_exited(&mut self, cpu: u32, p: TaskId) {
        if let Some(st) = self.ipc.tasks.get_mut(p.idx()) {
            *st = TaskIpc::default();
        }
        let Some(parent) = self.tasks[p.idx()].parent else { return };
        let par = &mut self.tasks[parent.idx()];
        if par.state == TaskState::Dead {
            return;
        }
        par.live_children = par.live_children.saturating_sub(1);
        if entry(&mut self.ipc.tasks, parent).waiting_children {
            // WF_SYNC dropped: see the module docs (waker exiting).
            self.ipc_wake(cpu, p, Wake { task: parent, flags: 0, in_task: true });
        }
    }
}
