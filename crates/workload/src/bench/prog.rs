//! Building task programs: flat op lists with loop counters, and the relocation that lets
//! several workloads share one simulation.

use sim::fair::Policy;
use sim::program::{Op, TaskSpec};

use super::Base;

/// `timer_slack_ns` of a SCHED_OTHER task.
pub(crate) const TIMER_SLACK_NS: u64 = 50_000;

/// Loop counts at or above this are split into nested loops (`u32::MAX` means "forever").
const MAX_LOOP: u64 = u32::MAX as u64 - 1;

/// A program under construction.
#[derive(Debug, Default)]
pub(crate) struct Prog {
    pub(crate) ops: Vec<Op>,
    slots: u16,
    timers: u16,
}

impl Prog {
    pub(crate) fn new() -> Prog {
        Prog::default()
    }

    pub(crate) fn op(&mut self, op: Op) -> &mut Self {
        self.ops.push(op);
        self
    }

    /// `Run` for `ns` of CPU time; nothing when `ns` is 0.
    pub(crate) fn run(&mut self, ns: u64) -> &mut Self {
        if ns > 0 {
            self.ops.push(Op::Run { ns });
        }
        self
    }

    /// A new periodic timer slot.
    pub(crate) fn timer(&mut self) -> u16 {
        self.timers += 1;
        self.timers - 1
    }

    fn slot(&mut self) -> u16 {
        self.slots += 1;
        self.slots - 1
    }

    /// `body` executed `count` times (nothing for 0; nested loops above `u32::MAX - 1`).
    pub(crate) fn repeat(&mut self, count: u64, body: &dyn Fn(&mut Prog)) -> &mut Self {
        if count == 0 {
            return self;
        }
        if count > MAX_LOOP {
            let inner = 1u64 << 20;
            self.repeat(count / inner, &|p: &mut Prog| {
                p.repeat(inner, body);
            });
            return self.repeat(count % inner, body);
        }
        let start = self.ops.len();
        body(self);
        if count > 1 && self.ops.len() > start {
            let slot = self.slot();
            self.ops.push(Op::Loop { target: start as u32, slot, count: count as u32 });
        }
        self
    }

    /// `body`, then again while object `obj` has nothing to read (a zero-timeout poll between
    /// passes; at least one pass).
    pub(crate) fn while_empty(&mut self, obj: u32, body: &dyn Fn(&mut Prog)) -> &mut Self {
        let start = self.ops.len();
        body(self);
        assert!(self.ops.len() > start, "a polling loop needs a body");
        self.ops.push(Op::LoopWhileEmpty { target: start as u32, obj });
        self
    }

    /// `body` forever.
    pub(crate) fn forever(&mut self, body: &dyn Fn(&mut Prog)) -> &mut Self {
        let start = self.ops.len();
        body(self);
        assert!(self.ops.len() > start, "an endless loop needs a body");
        let slot = self.slot();
        self.ops.push(Op::Loop { target: start as u32, slot, count: u32::MAX });
        self
    }

    /// `body` `count` times, or forever when `count` is `None`.
    pub(crate) fn repeat_or_forever(&mut self, count: Option<u64>, body: &dyn Fn(&mut Prog)) -> &mut Self {
        match count {
            Some(n) => self.repeat(n, body),
            None => self.forever(body),
        }
    }

    /// The finished program as a task of `comm` in address space `mm`.
    pub(crate) fn task(mut self, comm: &str, mm: u32, spawned: bool) -> TaskSpec {
        if !matches!(self.ops.last(), Some(Op::Exit) | Some(Op::Loop { count: u32::MAX, .. })) {
            self.ops.push(Op::Exit);
        }
        TaskSpec {
            comm: comm.to_owned(),
            nice: 0,
            policy: Policy::Normal,
            slice_ns: None,
            cpus: None,
            start_ns: 0,
            timer_slack_ns: TIMER_SLACK_NS,
            ops: self.ops,
            nr_slots: self.slots,
            nr_timers: self.timers,
            poll_sets: Vec::new(),
            spawned,
            mm,
            cgroup: None,
            group: 0,
            kthread: false,
            wakee_flips: 0,
        }
    }
}

/// Offsets a task's object, task-spec, address-space and measurement references by `base`.
pub(crate) fn relocate(t: &mut TaskSpec, base: Base) {
    let (o, s, id) = (base.object, base.task, base.id);
    for op in &mut t.ops {
        match op {
            Op::Write { obj, .. } | Op::Read { obj, .. } | Op::FutexWait { obj } | Op::FutexWake { obj, .. } => {
                *obj += o;
            }
            Op::Spawn { spec } => *spec += s,
            Op::Mark { id: m } | Op::Count { id: m } => *m += id,
            Op::LatEnd { hist, .. } => *hist += id,
            _ => {}
        }
    }
    for set in &mut t.poll_sets {
        for obj in set {
            *obj += o;
        }
    }
    t.mm += base.mm;
}
