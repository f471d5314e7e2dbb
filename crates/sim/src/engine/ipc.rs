//! IPC system calls (pipes, sockets, futexes, poll, spawn and wait): placeholder until the
//! IPC objects land. `TaskSpec`s using these instructions are rejected by `Sim::new`.

use super::Sim;
use crate::program::Op;
use crate::task::{Step, TaskId};

impl Sim {
    /// Starts an IPC system call of `t`.
    pub(super) fn ipc_fetch(&mut self, _t: TaskId, op: &Op) -> Step {
        unreachable!("IPC instruction {op:?} reached the engine, but Sim::new rejects them")
    }

    /// Completes the IPC system call of `t` on `cpu`. Returns false if the CPU switched tasks.
    pub(super) fn ipc_complete(&mut self, _cpu: u32, _t: TaskId) -> bool {
        unreachable!("no IPC system call can be in progress")
    }
}
