//! A hand-declared subset of Perfetto's `perfetto_trace.proto` (package `perfetto.protos`),
//! enough to write and read back schedlab traces. Field numbers are Perfetto's:
//!
//! - `trace.proto`: `Trace.packet = 1`.
//! - `trace_packet.proto`: `timestamp = 8`, `trusted_packet_sequence_id = 10`,
//!   `sequence_flags = 13`, `ftrace_events = 1`, `track_event = 11`, `track_descriptor = 60`.
//! - `ftrace/ftrace_event_bundle.proto`: `cpu = 1`, `event = 2`.
//! - `ftrace/ftrace_event.proto`: `timestamp = 1`, `pid = 2`, `sched_switch = 4`,
//!   `sched_wakeup = 17`, `sched_waking = 20`, `sched_wakeup_new = 114`,
//!   `sched_process_exit = 238`, `sched_process_fork = 239`, `sched_migrate_task = 491`.
//! - `ftrace/sched.proto`: the `Sched*FtraceEvent` messages below.
//! - `track_event/track_descriptor.proto`: `uuid = 1`, `name = 2`, `parent_uuid = 5`,
//!   `counter = 8`; `counter_descriptor.proto`: `unit = 3`.
//! - `track_event/track_event.proto`: `type = 9`, `track_uuid = 11`, `name = 23`,
//!   `counter_value = 30`, `debug_annotations = 4`; `debug_annotation.proto`: `name = 10`,
//!   `bool_value = 2`, `uint_value = 3`, `int_value = 4`, `string_value = 6`.
//!
//! Members of Perfetto `oneof`s that schedlab writes at most one of are declared as plain
//! optional fields: the wire format is the same.

use prost::Message;

/// `perfetto.protos.Trace`: a file is this message, i.e. a sequence of `packet` fields.
#[derive(Clone, PartialEq, Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `TracePacket.sequence_flags`: `SEQ_INCREMENTAL_STATE_CLEARED`.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;

#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "1")]
    pub ftrace_events: Option<FtraceEventBundle>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FtraceEventBundle {
    #[prost(uint32, optional, tag = "1")]
    pub cpu: Option<u32>,
    #[prost(message, repeated, tag = "2")]
    pub event: Vec<FtraceEvent>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FtraceEvent {
    #[prost(uint64, optional, tag = "1")]
    pub timestamp: Option<u64>,
    /// The task current on the CPU when the event was recorded.
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    #[prost(oneof = "ftrace_event::Event", tags = "4, 17, 20, 114, 238, 239, 491")]
    pub event: Option<ftrace_event::Event>,
}

pub mod ftrace_event {
    use super::*;

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Event {
        #[prost(message, tag = "4")]
        SchedSwitch(SchedSwitchFtraceEvent),
        #[prost(message, tag = "17")]
        SchedWakeup(SchedWakeupFtraceEvent),
        #[prost(message, tag = "20")]
        SchedWaking(SchedWakeupFtraceEvent),
        #[prost(message, tag = "114")]
        SchedWakeupNew(SchedWakeupFtraceEvent),
        #[prost(message, tag = "238")]
        SchedProcessExit(SchedProcessExitFtraceEvent),
        #[prost(message, tag = "239")]
        SchedProcessFork(SchedProcessForkFtraceEvent),
        #[prost(message, tag = "491")]
        SchedMigrateTask(SchedMigrateTaskFtraceEvent),
    }
}

/// `prev_state` bits of `SchedSwitchFtraceEvent` (kernel `TASK_REPORT` encoding): 0 is
/// running (`R`).
pub mod task_state {
    pub const RUNNING: i64 = 0;
    pub const INTERRUPTIBLE: i64 = 0x01;
    pub const UNINTERRUPTIBLE: i64 = 0x02;
    pub const EXIT_DEAD: i64 = 0x10;
}

#[derive(Clone, PartialEq, Message)]
pub struct SchedSwitchFtraceEvent {
    #[prost(string, optional, tag = "1")]
    pub prev_comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub prev_pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prev_prio: Option<i32>,
    #[prost(int64, optional, tag = "4")]
    pub prev_state: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub next_comm: Option<String>,
    #[prost(int32, optional, tag = "6")]
    pub next_pid: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    pub next_prio: Option<i32>,
}

/// `SchedWakeupFtraceEvent`; `SchedWakingFtraceEvent` and `SchedWakeupNewFtraceEvent` have the
/// same fields and numbers.
#[derive(Clone, PartialEq, Message)]
pub struct SchedWakeupFtraceEvent {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub success: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub target_cpu: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchedProcessExitFtraceEvent {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub tgid: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub prio: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchedProcessForkFtraceEvent {
    #[prost(string, optional, tag = "1")]
    pub parent_comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub parent_pid: Option<i32>,
    #[prost(string, optional, tag = "3")]
    pub child_comm: Option<String>,
    #[prost(int32, optional, tag = "4")]
    pub child_pid: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchedMigrateTaskFtraceEvent {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub orig_cpu: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub dest_cpu: Option<i32>,
}

/// `CounterDescriptor.Unit`.
pub mod unit {
    pub const TIME_NS: i32 = 1;
    pub const COUNT: i32 = 2;
}

#[derive(Clone, PartialEq, Message)]
pub struct CounterDescriptor {
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `TrackEvent.Type`.
pub mod track_event_type {
    pub const INSTANT: i32 = 3;
    pub const COUNTER: i32 = 4;
}

#[derive(Clone, PartialEq, Message)]
pub struct TrackEvent {
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DebugAnnotation {
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    #[prost(bool, optional, tag = "2")]
    pub bool_value: Option<bool>,
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
}

impl DebugAnnotation {
    pub fn uint(name: &str, v: u64) -> Self {
        DebugAnnotation { name: Some(name.into()), uint_value: Some(v), ..Default::default() }
    }
    pub fn int(name: &str, v: i64) -> Self {
        DebugAnnotation { name: Some(name.into()), int_value: Some(v), ..Default::default() }
    }
    pub fn bool(name: &str, v: bool) -> Self {
        DebugAnnotation { name: Some(name.into()), bool_value: Some(v), ..Default::default() }
    }
    pub fn string(name: &str, v: String) -> Self {
        DebugAnnotation { name: Some(name.into()), string_value: Some(v), ..Default::default() }
    }
}
