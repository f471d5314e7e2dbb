//! A one-token pipe ring: N processes connected by N pipes pass one token around, R rounds.
//!
//! This is the `ring8` workload of the real-kernel ground truth (8 processes, 500 rounds, so
//! 4000 token passes) and the shape of lmbench's `lat_ctx` ring without lmbench's timing loop
//! around it: process 0 writes pipe 0 and reads pipe N−1; process i reads pipe i−1 and writes
//! pipe i. Every process is its own address space, as `fork()` makes them. Process 0 marks the
//! start before forking the others and the end after reaping them.

use sim::ipc::ObjectSpec;
use sim::program::{Op, TaskSpec};

use crate::bench::prog::Prog;

/// Mark ids of the ring's start and end.
pub const MARK_START: u16 = 0;
/// See [`MARK_START`].
pub const MARK_END: u16 = 1;
/// Task name of every ring process.
pub const COMM: &str = "pipe-ring";

/// The ring's tasks (task 0 forks the others) and its N pipes. `procs` must be at least 2.
pub fn pipe_ring(procs: u32, rounds: u64, token_bytes: u32) -> Result<(Vec<TaskSpec>, Vec<ObjectSpec>), String> {
    if !(2..=4096).contains(&procs) {
        return Err(format!("a pipe ring needs 2..=4096 processes, got {procs}"));
    }
    let objects = vec![ObjectSpec::Pipe { slots: crate::bench::hackbench::PIPE_SLOTS }; procs as usize];
    let mut leader = Prog::new();
    leader.op(Op::Mark { id: MARK_START });
    for spec in 1..procs {
        leader.op(Op::Spawn { spec });
    }
    leader.repeat(rounds, &|p| {
        p.op(Op::Write { obj: 0, bytes: token_bytes }).op(Op::Read { obj: procs - 1, bytes: token_bytes, exact: true });
    });
    leader.op(Op::WaitChildren).op(Op::Mark { id: MARK_END });
    let mut tasks = vec![leader.task(COMM, 0, false)];
    for i in 1..procs {
        let mut member = Prog::new();
        member.repeat(rounds, &|p| {
            p.op(Op::Read { obj: i - 1, bytes: token_bytes, exact: true }).op(Op::Write { obj: i, bytes: token_bytes });
        });
        tasks.push(member.task(COMM, i, true));
    }
    Ok((tasks, objects))
}
