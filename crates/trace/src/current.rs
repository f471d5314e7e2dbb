//! Which task is `current` on each CPU, followed from `sched_switch`: the task a trace line
//! is attributed to (its `comm-pid` prefix, or `FtraceEvent.pid`).

use sim::trace::{TaskRef, TraceEvent};

/// `TASK_COMM_LEN - 1`: the kernel keeps 15 bytes of a task's name.
pub const COMM_MAX: usize = 15;

/// `comm` cut to what the kernel would store (15 bytes, on a character boundary).
pub fn kernel_comm(comm: &str) -> &str {
    if comm.len() <= COMM_MAX {
        return comm;
    }
    let mut end = COMM_MAX;
    while !comm.is_char_boundary(end) {
        end -= 1;
    }
    &comm[..end]
}

/// The running task of each CPU; idle (pid 0) until a switch says otherwise.
#[derive(Debug, Default)]
pub struct CurrentTasks {
    cpus: Vec<(u32, String)>,
}

impl CurrentTasks {
    fn slot(&mut self, cpu: u32) -> &mut (u32, String) {
        let i = cpu as usize;
        if i >= self.cpus.len() {
            self.cpus.resize_with(i + 1, || (0, String::new()));
        }
        &mut self.cpus[i]
    }

    /// The task an event on `cpu` is recorded under: for a switch, the previous task (the
    /// tracepoint fires before the context switch).
    pub fn before(&mut self, cpu: u32, ev: &TraceEvent<'_>) -> (u32, &str) {
        if let TraceEvent::Switch { prev, .. } = ev {
            // Trust the event over what was followed: they agree unless the trace started
            // mid-run.
            self.set(cpu, prev);
        }
        let (pid, comm) = self.slot(cpu);
        (*pid, comm.as_str())
    }

    /// Follow a switch after its line is written.
    pub fn after(&mut self, cpu: u32, ev: &TraceEvent<'_>) {
        if let TraceEvent::Switch { next, .. } = ev {
            self.set(cpu, next);
        }
    }

    fn set(&mut self, cpu: u32, t: &TaskRef<'_>) {
        let slot = self.slot(cpu);
        slot.0 = t.pid;
        slot.1.clear();
        slot.1.push_str(kernel_comm(t.comm));
    }
}
