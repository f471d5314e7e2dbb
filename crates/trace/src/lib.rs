//! schedlab's trace formats.
//!
//! - [`FtraceTextWriter`]: the text the kernel prints in `/sys/kernel/debug/tracing/trace`
//!   (header, `comm-pid [cpu] flags ts: event: fields` lines with the kernel's `TP_printk`
//!   formats), plus two schedlab lines (`schedlab_wakeup_preempt`, `schedlab_placement`) that
//!   say why a wakeup preempted or not and where a wakee was placed. ui.perfetto.dev opens it.
//! - [`PerfettoWriter`]: a Perfetto protobuf trace (`.pftrace`): ftrace event bundles for the
//!   scheduler tracepoints, counter tracks (per-CPU `nr_running` and V, per-task lag) and
//!   instant events for the decision records. Encoded with a hand-declared subset of
//!   `perfetto_trace.proto` ([`proto`]).
//! - [`read_ftrace_text`]: a streaming reader for real kernel ftrace text (the `trace` file or
//!   `trace-cmd report`) and for schedlab's own output.
//! - [`Analyzer`] / [`Analysis`]: the `run --json` counters recomputed from a trace, and a
//!   `perf sched latency`-style table.
//!
//! Writers implement [`sim::trace::TraceSink`], stream to any `Write` (wrap files in a
//! `BufWriter`), and hold memory bounded by the number of CPUs and tasks, not by trace length.
//! The same events give the same bytes.

mod analysis;
mod current;
mod file;
mod names;
mod perfetto;
pub mod proto;
mod read;
mod text;

pub use analysis::{Analysis, Analyzer, Filter, LagHistogram, PreemptCause, ReasonCount, TaskAnalysis, analyze};
pub use file::{SharedSink, TraceFile, TraceFormat, UnknownFormat};
pub use names::select_reason_name;
pub use perfetto::{PerfettoOptions, PerfettoWriter};
pub use read::{EevdfFields, Event, FtraceTextReader, ParseError, Record, TaskId, open_trace, read_ftrace_text};
pub use text::{FtraceTextWriter, Precision, TextOptions, TraceHeader};
