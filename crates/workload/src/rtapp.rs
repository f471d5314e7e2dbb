//! Import of rt-app JSON workloads (scheduler-tools/rt-app, `doc/tutorial.txt`, HEAD 55cb0c0).
//!
//! An rt-app file describes threads as a loop over *phases*, each a loop over an ordered list
//! of *events*. The importer compiles every thread into a flat [`TaskSpec`] program:
//!
//! ```text
//! [Sleep delay]                          "delay" (µs), once, before the first phase
//! task_start:
//!   [SetNice n]                          a phase's "priority", when it changes the nice value
//!   phase_start:
//!     events…                            Run / Sleep / Timer / Yield, in document order
//!     [Loop phase_start × phase loop]    when the phase "loop" is not 1 (-1: forever)
//!   …next phases…
//! [Loop task_start × task loop]          when the task "loop" is not 1 (-1: forever)
//! Exit
//! ```
//!
//! # Supported subset
//!
//! * `global`: `duration` (s; -1 or 0 run until every thread exits, [`RtApp::duration_ns`] is
//!   then `None`) and `default_policy`. Accepted and ignored, because a simulation has no use
//!   for them: `calibration` (simulated CPUs need none), `logdir`, `log_basename`, `log_size`,
//!   `lock_pages`, `ftrace`, `gnuplot`, `pi_enabled`, `cumulative_slack`, `io_device`,
//!   `mem_buffer_size`, and the obsolete `frag` that rt-app's older examples still carry.
//!   Their types are still checked, as rt-app does.
//! * `resources`: the legacy resource table; rt-app creates resources on demand, so it is
//!   accepted and ignored.
//! * `tasks.<name>`: `instance` (0 creates no thread), `loop`, `delay` (µs), `policy`
//!   (`SCHED_OTHER`, `SCHED_BATCH`, `SCHED_IDLE`), `priority` (the nice value, -20..=19),
//!   `cpus`, `dl-runtime` (µs; the custom slice of a SCHED_OTHER/BATCH task since Linux 6.12,
//!   clamped by [`clamp_custom_slice`]), `phases`, or events directly for a single phase.
//!   `dl-period`, `dl-deadline` and the legacy `period`/`deadline` only matter to
//!   SCHED_DEADLINE and are checked and ignored.
//! * `phases.<name>`: `loop`, `priority` (a nice change at phase entry), events.
//! * Events: `run` and `runtime` (µs of CPU time; identical here because every simulated CPU
//!   has capacity 1024 and a fixed frequency), `sleep` (µs), `timer` (`ref`, `period` µs,
//!   `mode`), `yield`.
//!
//! Everything else is an error: unknown keys, events schedlab does not model yet (see
//! [`RtAppError::Unsupported`]), real-time policies, per-phase changes of policy, affinity or
//! slice, and values rt-app itself would reject or misread.
//!
//! # Parsing as rt-app does
//!
//! * rt-app reads files with json-c, which accepts `/* */` and `//` comments and trailing
//!   commas; rt-app's own examples use both, so the importer accepts them too.
//! * rt-app files are run through `workgen`, which keeps repeated keys (two `"run"` in one
//!   phase) by renaming them `run1`, `run2`…, and rt-app recognises events by prefix
//!   (`strncmp(key, "run", 3)`): `"run0"` and `"sleep_long"` are events. The importer keeps
//!   repeated keys in document order and matches event names by the same prefixes, so both
//!   spellings work. A repeated *property* (`"loop"` twice) is an error.
//! * In a task without `phases`, the task object is also its only phase: its `loop` is the
//!   phase loop and the task runs it once; without `loop` the task loops forever.
//! * Task-level `runtime` is also rt-app's legacy spelling of `dl-runtime`. In a task without
//!   `phases`, the first `"runtime"` event therefore also sets the custom slice when
//!   `dl-runtime` is absent or 0, exactly as rt-app asks the kernel to.
//!
//! # Approximations
//!
//! * Timers: rt-app shares a timer among all threads using the same `ref` (only refs starting
//!   with `unique` are per thread); here every task instance has its own timer per distinct
//!   `ref`. A ref's mode is `absolute` if any of its uses says so (it is a property of rt-app's
//!   timer resource); the default is `relative`, as in rt-app's parser. The first expiry is one
//!   period after the first use (see [`Op::Timer`]), where rt-app counts it from the thread's
//!   start (after `delay`).
//! * `delay` is a relative [`Op::Sleep`] from the task's creation at time 0; rt-app sleeps until
//!   an absolute time, which is the same thing when all threads start together.
//! * Thread names: `name` for one instance, `name-0`, `name-1`… for several, cut to 15 bytes as
//!   the kernel does for `comm`. (rt-app itself names every thread `name-<global index>`.)
//! * SCHED_IDLE: `sched_setattr()` applies neither the nice value nor the custom slice to a
//!   SCHED_IDLE task (`fair_policy()` excludes it), so such tasks get nice 0 and no slice.
//! * rt-app since commit 2ac2e0a (2026-03) passes `SCHED_FLAG_KEEP_PARAMS` when `dl-runtime`
//!   is 0, and the kernel then keeps the *current* nice value: with that rt-app, `priority`
//!   without `dl-runtime` has no effect on a real machine. The importer follows the
//!   documented meaning (priority = nice).

use std::cell::Cell;
use std::fmt;
use std::io;
use std::path::Path;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use sim::fair::Policy;
use sim::fair::entity::clamp_custom_slice;
use sim::program::{Op, TaskSpec};

/// A parsed rt-app workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtApp {
    /// `global.duration` converted to ns; `None` when absent, -1 or 0 (run until every thread
    /// has exited, or until the simulation's own time limit).
    pub duration_ns: Option<u64>,
    /// One program per thread, in document order (instances of a task are consecutive).
    pub tasks: Vec<TaskSpec>,
}

/// The largest rt-app file the importer reads, in bytes.
pub const INPUT_BYTES_MAX: usize = 16 << 20;
/// The largest number of threads a file may create (the sum of all `instance` values).
pub const TASKS_MAX: usize = 1 << 16;
/// `timer_slack_ns` of a SCHED_OTHER/BATCH/IDLE thread (`init_task.timer_slack_ns`).
pub const TIMER_SLACK_NS: u64 = 50_000;
/// `TASK_COMM_LEN - 1`: the kernel keeps this many bytes of a thread name.
const COMM_BYTES_MAX: usize = 15;
const NSEC_PER_USEC: u64 = 1_000;
const NSEC_PER_SEC: u64 = 1_000_000_000;

/// Where in an rt-app file a semantic error is: the file, a position when known and the JSON
/// path of the offending key, e.g. `tasks.thread0.phases.p1.run`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The origin given to [`parse_rtapp`] (usually the file name).
    pub origin: String,
    /// 1-based line and byte column of the key, when the error is tied to one.
    pub line_column: Option<(usize, usize)>,
    /// Dot-separated path from the document root to the key.
    pub path: String,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_column {
            Some((line, column)) => write!(f, "{}:{line}:{column}: {}", self.origin, self.path),
            None => write!(f, "{}: {}", self.origin, self.path),
        }
    }
}

/// Text from the file as an error may quote it: control characters (a JSON `"\n"` in a key)
/// escaped, so the message stays one line.
fn one_line(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// Why an rt-app file could not be imported. Every message is a single line that starts with
/// the origin (and `line:column` when known).
#[derive(Debug, thiserror::Error)]
pub enum RtAppError {
    /// The file could not be read.
    #[error("{origin}: cannot read: {source}")]
    Io {
        /// The path as given.
        origin: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The text is not JSON, even with json-c's comments and trailing commas.
    #[error("{origin}:{line}:{column}: invalid JSON: {message}")]
    Syntax {
        /// The origin given to [`parse_rtapp`].
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based byte column.
        column: usize,
        /// What the JSON parser expected.
        message: String,
    },
    /// A key rt-app does not know at that place.
    #[error("{at}: unknown {what} `{key}` (expected {expected})")]
    Unknown {
        /// Where the key is.
        at: Box<Location>,
        /// What kind of key was expected, e.g. "task property or event".
        what: &'static str,
        /// The key.
        key: String,
        /// The keys accepted there.
        expected: &'static str,
    },
    /// Valid rt-app that schedlab cannot simulate yet (mutexes, condition variables, barriers,
    /// suspend/resume, semaphores, fork, memory and IO loops, real-time and deadline policies,
    /// uclamp, task groups, NUMA binding, per-phase policy/affinity/slice changes).
    #[error("{at}: {what} is not supported yet ({reason})")]
    Unsupported {
        /// Where the key is.
        at: Box<Location>,
        /// The feature, e.g. "event `lock`".
        what: String,
        /// Why, or what to use instead.
        reason: &'static str,
    },
    /// A value of the wrong type or out of range, a missing or repeated key, or a construct
    /// rt-app would misread.
    #[error("{at}: {message}")]
    Invalid {
        /// Where the value is.
        at: Box<Location>,
        /// What is wrong with it.
        message: String,
    },
}

impl RtAppError {
    /// The location of a semantic error (`None` for I/O and syntax errors).
    pub fn location(&self) -> Option<&Location> {
        match self {
            RtAppError::Unknown { at, .. } | RtAppError::Unsupported { at, .. } | RtAppError::Invalid { at, .. } => {
                Some(at.as_ref())
            }
            RtAppError::Io { .. } | RtAppError::Syntax { .. } => None,
        }
    }
}

/// Reads and imports an rt-app JSON file; errors name the file by `path`.
pub fn load_rtapp(path: &Path) -> Result<RtApp, RtAppError> {
    let origin = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => parse_rtapp(&text, &origin),
        Err(source) => Err(RtAppError::Io { origin, source }),
    }
}

/// Imports rt-app JSON `text`; `origin` (a file name or any label) starts every error message.
pub fn parse_rtapp(text: &str, origin: &str) -> Result<RtApp, RtAppError> {
    let cx = Cx { origin, text };
    if text.len() > INPUT_BYTES_MAX {
        let message = format!("the input is {} bytes; the limit is {INPUT_BYTES_MAX}", text.len());
        return Err(RtAppError::Invalid { at: cx.location("(document)", None), message });
    }
    let root = parse_json(text, origin)?;
    cx.app(&root)
}

// ---------------------------------------------------------------------------------------------
// JSON with json-c's leniency, keeping key order, repeated keys and key positions.

/// A JSON value. Objects are member lists, so order and repeated keys survive.
#[derive(Debug)]
enum Json {
    Null,
    Bool(bool),
    /// Any integer (serde_json hands them over as `i64` or `u64`).
    Int(i128),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<Member>),
}

#[derive(Debug)]
struct Member {
    key: String,
    /// Byte offset just past the key's closing quote.
    key_end: usize,
    value: Json,
}

impl Json {
    fn describe(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Int(_) => "an integer",
            Json::Float(_) => "a non-integer number",
            Json::Str(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

/// Parses `text` into a [`Json`] tree, accepting what json-c accepts beyond JSON (comments,
/// trailing commas) by blanking it out first.
///
/// serde_json does not report positions to a visitor, so it reads through [`CountingReader`],
/// which hands over one byte per call: after a key has been read, the count of bytes taken is
/// the offset just past its closing quote. Blanking keeps every byte offset and newline, so
/// positions in syntax errors and in [`Member::key_end`] refer to the original text.
fn parse_json(text: &str, origin: &str) -> Result<Json, RtAppError> {
    let relaxed = relax(text).map_err(|(offset, message)| {
        let (line, column) = line_column(text, offset);
        RtAppError::Syntax { origin: origin.to_owned(), line, column, message: message.to_owned() }
    })?;
    let taken = Cell::new(0);
    let reader = CountingReader { bytes: &relaxed, taken: &taken };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let parsed = JsonSeed { taken: &taken }.deserialize(&mut de).and_then(|root| {
        de.end()?;
        Ok(root)
    });
    parsed.map_err(|err| {
        let text = err.to_string();
        let message = match text.rfind(" at line ") {
            Some(cut) => text[..cut].to_owned(),
            None => text,
        };
        RtAppError::Syntax { origin: origin.to_owned(), line: err.line(), column: err.column(), message }
    })
}

/// Replaces comments and trailing commas by spaces (newlines are kept), so the result is
/// strict JSON with the same byte offsets. Errors are `(offset, message)`.
fn relax(text: &str) -> Result<Vec<u8>, (usize, &'static str)> {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    // The last comma seen, while only whitespace and comments follow it.
    let mut comma: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'"', _) => {
                comma = None;
                i = string_end(bytes, i);
                continue;
            }
            (b'/', Some(b'*')) => {
                let Some(len) = text[i + 2..].find("*/") else {
                    return Err((i, "unterminated /* comment"));
                };
                let end = i + 2 + len + 2;
                blank(&mut out[i..end]);
                i = end;
                continue;
            }
            (b'/', Some(b'/')) => {
                let end = text[i..].find('\n').map_or(bytes.len(), |len| i + len);
                blank(&mut out[i..end]);
                i = end;
                continue;
            }
            (b'}' | b']', _) => {
                if let Some(at) = comma.take() {
                    out[at] = b' ';
                }
            }
            (b',', _) => comma = Some(i),
            (b' ' | b'\t' | b'\n' | b'\r', _) => {}
            _ => comma = None,
        }
        i += 1;
    }
    Ok(out)
}

/// The offset just past the string that opens at `start`, or the end of the input.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

fn blank(bytes: &mut [u8]) {
    for b in bytes.iter_mut().filter(|b| **b != b'\n') {
        *b = b' ';
    }
}

/// An `io::Read` over a byte slice that gives one byte per call and counts them in `taken`.
struct CountingReader<'a> {
    bytes: &'a [u8],
    taken: &'a Cell<usize>,
}

impl io::Read for CountingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let at = self.taken.get();
        match (self.bytes.get(at), buf.first_mut()) {
            (Some(&byte), Some(slot)) => {
                *slot = byte;
                self.taken.set(at + 1);
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

#[derive(Clone, Copy)]
struct JsonSeed<'a> {
    taken: &'a Cell<usize>,
}

impl<'de> DeserializeSeed<'de> for JsonSeed<'_> {
    type Value = Json;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for JsonSeed<'_> {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Int(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Int(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let key_end = self.taken.get();
            let value = map.next_value_seed(self)?;
            members.push(Member { key, key_end, value });
        }
        Ok(Json::Object(members))
    }
}

/// 1-based line and byte column of `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |nl| nl + 1);
    (line, offset - line_start + 1)
}

/// The offset of the opening quote of the key whose closing quote is at `end - 1`: the first
/// quote before it that is not escaped (preceded by an even number of backslashes).
fn key_start(bytes: &[u8], end: usize) -> usize {
    if end == 0 || bytes.get(end - 1) != Some(&b'"') {
        return end;
    }
    let mut i = end - 1;
    while i > 0 {
        i -= 1;
        if bytes[i] == b'"' {
            let backslashes = bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count();
            if backslashes % 2 == 0 {
                return i;
            }
        }
    }
    end
}

// ---------------------------------------------------------------------------------------------
// rt-app semantics.

/// Keys whose meaning is fixed by rt-app, and the events it recognises by prefix
/// (`events[]` and `parse_task_event_data()` in `src/rt-app_parse_config.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventKind {
    Run,
    Runtime,
    Sleep,
    Timer,
    Yield,
    Unsupported(&'static str, &'static str),
}

/// Prefixes in matching order: `runtime` before `run`, `memrun` before `mem`.
const EVENT_PREFIXES: &[(&str, EventKind)] = &[
    ("runtime", EventKind::Runtime),
    ("run", EventKind::Run),
    ("sleep", EventKind::Sleep),
    ("timer", EventKind::Timer),
    ("yield", EventKind::Yield),
    ("lock", EventKind::Unsupported("lock", "mutexes are not modelled")),
    ("unlock", EventKind::Unsupported("unlock", "mutexes are not modelled")),
    ("wait", EventKind::Unsupported("wait", "condition variables are not modelled")),
    ("signal", EventKind::Unsupported("signal", "condition variables are not modelled")),
    ("broad", EventKind::Unsupported("broad", "condition variables are not modelled")),
    ("sync", EventKind::Unsupported("sync", "condition variables are not modelled")),
    ("barrier", EventKind::Unsupported("barrier", "barriers are not modelled")),
    ("suspend", EventKind::Unsupported("suspend", "suspend/resume wakeups are not modelled")),
    ("resume", EventKind::Unsupported("resume", "suspend/resume wakeups are not modelled")),
    ("sem_post", EventKind::Unsupported("sem_post", "semaphores are not modelled")),
    ("sem_wait", EventKind::Unsupported("sem_wait", "semaphores are not modelled")),
    ("fork", EventKind::Unsupported("fork", "threads are all created at start")),
    ("memrun", EventKind::Unsupported("memrun", "memory-bound loops are not modelled")),
    ("mem", EventKind::Unsupported("mem", "memory-bound loops are not modelled")),
    ("iorun", EventKind::Unsupported("iorun", "IO-bound loops are not modelled")),
];

fn event_kind(key: &str) -> Option<EventKind> {
    EVENT_PREFIXES.iter().find(|(prefix, _)| key.starts_with(prefix)).map(|&(_, kind)| kind)
}

const ROOT_KEYS: &str = "global, tasks, resources";
const GLOBAL_KEYS: &str = "duration, calibration, default_policy, pi_enabled, lock_pages, \
    logdir, log_basename, log_size, ftrace, gnuplot, io_device, mem_buffer_size, \
    cumulative_slack, frag";
const TASK_KEYS: &str = "instance, loop, delay, policy, priority, cpus, taskgroup, dl-runtime, \
    dl-period, dl-deadline, phases, or an event (run, runtime, sleep, timer, yield, …)";
const PHASE_KEYS: &str = "loop, priority, or an event (run, runtime, sleep, timer, yield, …)";
const TIMER_KEYS: &str = "ref, period, mode";

/// How often a loop body runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Repeat {
    Times(u32),
    Forever,
}

#[derive(Debug)]
enum Event {
    Run { ns: u64 },
    Sleep { ns: u64 },
    Timer { name: String, period_ns: u64, absolute: bool },
    Yield,
}

#[derive(Debug)]
struct Phase {
    /// The path of the phase object, for errors found while compiling.
    path: String,
    key_end: Option<usize>,
    nice: Option<i32>,
    repeat: Repeat,
    events: Vec<Event>,
}

#[derive(Debug)]
struct Task {
    name: String,
    path: String,
    key_end: usize,
    instances: usize,
    policy: Policy,
    nice: i32,
    slice_ns: Option<u64>,
    cpus: Option<Vec<u32>>,
    /// `taskgroup`: the thread's cgroup.
    taskgroup: Option<String>,
    delay_ns: u64,
    repeat: Repeat,
    phases: Vec<Phase>,
}

/// The scheduling attributes a task keeps for its whole life, which phases must respect.
#[derive(Clone, Copy, Debug)]
struct Sched {
    policy: Policy,
    slice_ns: Option<u64>,
}

/// The error context: the origin for messages and the text for positions.
struct Cx<'a> {
    origin: &'a str,
    text: &'a str,
}

/// The members of a task object: properties, events, and the first `"runtime"` (an event
/// that rt-app also reads as the legacy spelling of `dl-runtime`).
struct TaskKeys<'j> {
    props: Props<'j>,
    events: Vec<&'j Member>,
    legacy_runtime: Option<&'j Member>,
}

/// The keys of one object that have a fixed meaning, each at most once.
struct Props<'j> {
    found: Vec<&'j Member>,
}

impl<'j> Props<'j> {
    fn get(&self, key: &str) -> Option<&'j Member> {
        self.found.iter().copied().find(|m| m.key == key)
    }
}

fn join(parent: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-+@#:/".contains(&b));
    let key = if plain { key.to_owned() } else { format!("{key:?}") };
    if parent.is_empty() { key } else { format!("{parent}.{key}") }
}

impl Cx<'_> {
    fn location(&self, path: &str, key_end: Option<usize>) -> Box<Location> {
        let line_column = key_end.map(|end| {
            let start = key_start(self.text.as_bytes(), end);
            line_column(self.text, start)
        });
        Box::new(Location { origin: self.origin.to_owned(), line_column, path: path.to_owned() })
    }

    fn invalid(&self, path: &str, key_end: Option<usize>, message: String) -> RtAppError {
        RtAppError::Invalid { at: self.location(path, key_end), message: one_line(&message) }
    }

    fn unsupported(&self, path: &str, m: &Member, what: String, reason: &'static str) -> RtAppError {
        RtAppError::Unsupported { at: self.location(path, Some(m.key_end)), what: one_line(&what), reason }
    }

    fn unknown(&self, path: &str, m: &Member, what: &'static str, expected: &'static str) -> RtAppError {
        let at = self.location(path, Some(m.key_end));
        RtAppError::Unknown { at, what, key: one_line(&m.key), expected }
    }

    fn wrong_type(&self, path: &str, m: &Member, expected: &str) -> RtAppError {
        let message = format!("expected {expected}, found {}", m.value.describe());
        self.invalid(path, Some(m.key_end), message)
    }

    /// Records `m` as a property of `props`, rejecting a second occurrence.
    fn once<'j>(&self, props: &mut Props<'j>, path: &str, m: &'j Member) -> Result<(), RtAppError> {
        if let Some(first) = props.get(&m.key) {
            let (line, _) = line_column(self.text, key_start(self.text.as_bytes(), first.key_end));
            let message = format!("`{}` is repeated (first at line {line})", m.key);
            return Err(self.invalid(path, Some(m.key_end), message));
        }
        props.found.push(m);
        Ok(())
    }

    fn object<'j>(&self, path: &str, m: &'j Member) -> Result<&'j [Member], RtAppError> {
        match &m.value {
            Json::Object(members) => Ok(members),
            _ => Err(self.wrong_type(path, m, "an object")),
        }
    }

    fn string<'j>(&self, path: &str, m: &'j Member) -> Result<&'j str, RtAppError> {
        match &m.value {
            Json::Str(s) => Ok(s),
            _ => Err(self.wrong_type(path, m, "a string")),
        }
    }

    fn boolean(&self, path: &str, m: &Member) -> Result<bool, RtAppError> {
        match m.value {
            Json::Bool(b) => Ok(b),
            _ => Err(self.wrong_type(path, m, "a boolean")),
        }
    }

    /// An integer in rt-app's range: it reads every number with `json_object_get_int()`.
    fn int(&self, path: &str, m: &Member) -> Result<i32, RtAppError> {
        match m.value {
            Json::Int(v) => i32::try_from(v).map_err(|_| {
                let message = format!("{v} does not fit rt-app's 32-bit integers");
                self.invalid(path, Some(m.key_end), message)
            }),
            _ => Err(self.wrong_type(path, m, "an integer")),
        }
    }

    fn int_in(&self, path: &str, m: &Member, lo: i32, hi: i32, what: &str) -> Result<i32, RtAppError> {
        let v = self.int(path, m)?;
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(self.invalid(path, Some(m.key_end), format!("{what} must be in {lo}..={hi}, found {v}")))
        }
    }

    /// A duration in µs (a non-negative integer), converted to ns.
    fn micros(&self, path: &str, m: &Member) -> Result<u64, RtAppError> {
        match m.value {
            Json::Int(_) => {
                let us = self.int_in(path, m, 0, i32::MAX, "a duration in µs")?;
                Ok(u64::from(us.unsigned_abs()) * NSEC_PER_USEC)
            }
            Json::Float(v) => {
                let message = format!("a duration in µs must be an integer, found {v}");
                Err(self.invalid(path, Some(m.key_end), message))
            }
            _ => Err(self.wrong_type(path, m, "a duration in µs (an integer)")),
        }
    }

    fn policy(&self, path: &str, m: &Member) -> Result<Policy, RtAppError> {
        match self.string(path, m)? {
            "SCHED_OTHER" => Ok(Policy::Normal),
            "SCHED_BATCH" => Ok(Policy::Batch),
            "SCHED_IDLE" => Ok(Policy::Idle),
            name @ ("SCHED_FIFO" | "SCHED_RR" | "SCHED_DEADLINE") => {
                Err(self.unsupported(path, m, format!("policy `{name}`"), "schedlab simulates the fair class only"))
            }
            name => {
                let message = format!("unknown policy `{name}` (expected SCHED_OTHER, SCHED_BATCH or SCHED_IDLE)");
                Err(self.invalid(path, Some(m.key_end), message))
            }
        }
    }

    // -- document and global ------------------------------------------------------------------

    fn app(&self, root: &Json) -> Result<RtApp, RtAppError> {
        let Json::Object(members) = root else {
            let message = format!("the document must be an object, found {}", root.describe());
            return Err(self.invalid("(document)", None, message));
        };
        let mut props = Props { found: Vec::new() };
        for m in members {
            match m.key.as_str() {
                "global" | "tasks" | "resources" => self.once(&mut props, &m.key, m)?,
                _ => return Err(self.unknown(&join("", &m.key), m, "top-level key", ROOT_KEYS)),
            }
        }
        // rt-app parses `global` first whatever the order: tasks need its default policy.
        let (duration_ns, default_policy) = match props.get("global") {
            Some(m) => self.global(m)?,
            None => (None, Policy::Normal),
        };
        if let Some(m) = props.get("resources") {
            self.object("resources", m)?;
        }
        let Some(tasks) = props.get("tasks") else {
            return Err(self.invalid("tasks", None, "missing: rt-app needs a `tasks` object".into()));
        };
        let defs = self.object("tasks", tasks)?;
        if defs.is_empty() {
            return Err(self.invalid("tasks", Some(tasks.key_end), "no tasks are defined".into()));
        }
        let mut specs = Vec::new();
        for (i, def) in defs.iter().enumerate() {
            let path = join("tasks", &def.key);
            if let Some(first) = defs[..i].iter().find(|d| d.key == def.key) {
                let (line, _) = line_column(self.text, key_start(self.text.as_bytes(), first.key_end));
                let message = format!("task `{}` is defined twice (first at line {line})", def.key);
                return Err(self.invalid(&path, Some(def.key_end), message));
            }
            let task = self.task(&path, def, default_policy)?;
            if specs.len() + task.instances > TASKS_MAX {
                let message = format!("the file creates more than {TASKS_MAX} threads");
                return Err(self.invalid(&join(&path, "instance"), Some(def.key_end), message));
            }
            self.compile(&task, &mut specs)?;
        }
        Ok(RtApp { duration_ns, tasks: specs })
    }

    fn global(&self, global: &Member) -> Result<(Option<u64>, Policy), RtAppError> {
        let mut duration_ns = None;
        let mut policy = Policy::Normal;
        let mut props = Props { found: Vec::new() };
        for m in self.object("global", global)? {
            let path = join("global", &m.key);
            self.once(&mut props, &path, m)?;
            match m.key.as_str() {
                "duration" => {
                    let s = self.int_in(&path, m, -1, i32::MAX, "the duration in s (-1: none)")?;
                    // rt-app stops the threads only when `duration > 0`.
                    duration_ns = (s > 0).then(|| u64::from(s.unsigned_abs()) * NSEC_PER_SEC);
                }
                "default_policy" => policy = self.policy(&path, m)?,
                "calibration" => self.calibration(&path, m)?,
                "pi_enabled" | "lock_pages" | "gnuplot" | "cumulative_slack" => {
                    self.boolean(&path, m)?;
                }
                "logdir" | "log_basename" | "io_device" => {
                    self.string(&path, m)?;
                }
                "mem_buffer_size" => {
                    self.int_in(&path, m, 0, i32::MAX, "the buffer size")?;
                }
                // Read by rt-app before 2014 and still in its Android examples; now ignored.
                "frag" => {
                    self.int(&path, m)?;
                }
                "log_size" | "ftrace" => match (&m.key[..], &m.value) {
                    (_, Json::Str(_)) | ("log_size", Json::Int(_)) | ("ftrace", Json::Bool(_)) => {}
                    ("log_size", _) => {
                        return Err(self.wrong_type(&path, m, "a string or an integer"));
                    }
                    _ => return Err(self.wrong_type(&path, m, "a string or a boolean")),
                },
                _ => return Err(self.unknown(&path, m, "global setting", GLOBAL_KEYS)),
            }
        }
        Ok((duration_ns, policy))
    }

    /// `calibration`: ns per loop (an integer) or `"CPU<n>"`. Accepted and ignored.
    fn calibration(&self, path: &str, m: &Member) -> Result<(), RtAppError> {
        match &m.value {
            Json::Int(_) => self.int_in(path, m, 0, i32::MAX, "ns per loop").map(drop),
            Json::Str(s) if s.strip_prefix("CPU").is_some_and(|n| n.parse::<u32>().is_ok()) => Ok(()),
            Json::Str(s) => {
                let message = format!("expected \"CPU<n>\" or ns per loop, found {s:?}");
                Err(self.invalid(path, Some(m.key_end), message))
            }
            _ => Err(self.wrong_type(path, m, "\"CPU<n>\" or an integer")),
        }
    }

    // -- tasks and phases ---------------------------------------------------------------------

    fn task(&self, path: &str, def: &Member, default_policy: Policy) -> Result<Task, RtAppError> {
        if def.key.is_empty() {
            let message = "a task name must not be empty".to_owned();
            return Err(self.invalid(path, Some(def.key_end), message));
        }
        let keys = self.task_keys(path, def)?;
        let key = |k: &str| keys.props.get(k).map(|m| (join(path, k), m));
        let policy = match key("policy") {
            Some((at, m)) => self.policy(&at, m)?,
            None => default_policy,
        };
        let nice = match key("priority") {
            Some((at, m)) => self.int_in(&at, m, -20, 19, "a nice value")?,
            None => 0,
        };
        for k in ["dl-period", "dl-deadline", "period", "deadline"] {
            if let Some((at, m)) = key(k) {
                self.micros(&at, m)?;
            }
        }
        let mut runtime_ns = match key("dl-runtime") {
            Some((at, m)) => self.micros(&at, m)?,
            None => 0,
        };
        if runtime_ns == 0
            && let Some(m) = keys.legacy_runtime
        {
            // rt-app's legacy grammar: a task-level "runtime" is also `dl-runtime`. In a task
            // with phases it is only that, so it must be an integer on its own.
            runtime_ns = self.micros(&join(path, "runtime"), m)?;
        }
        let instances = match key("instance") {
            Some((at, m)) => self.int_in(&at, m, 0, i32::MAX, "the number of instances")?,
            None => 1,
        };
        let delay_ns = match key("delay") {
            Some((at, m)) => self.micros(&at, m)?,
            None => 0,
        };
        let cpus = match key("cpus") {
            Some((at, m)) => Some(self.cpus(&at, m)?),
            None => None,
        };
        let taskgroup = match key("taskgroup") {
            Some((at, m)) => Some(self.taskgroup(&at, m)?),
            None => None,
        };
        // sched_setattr() applies neither nice nor slice to SCHED_IDLE (fair_policy()).
        let fair = policy != Policy::Idle;
        let sched = Sched { policy, slice_ns: (fair && runtime_ns > 0).then(|| clamp_custom_slice(runtime_ns)) };
        let (repeat, phases) = self.task_body(path, def, &keys, sched)?;
        Ok(Task {
            name: def.key.clone(),
            path: path.to_owned(),
            key_end: def.key_end,
            instances: instances.unsigned_abs() as usize,
            policy,
            nice: if fair { nice } else { 0 },
            slice_ns: sched.slice_ns,
            cpus,
            taskgroup,
            delay_ns,
            repeat,
            phases,
        })
    }

    /// `taskgroup`: a cgroup path of the cpu controller, starting with `/` (rt-app creates it
    /// and moves the thread in). `/` itself is the root group.
    fn taskgroup(&self, path: &str, m: &Member) -> Result<String, RtAppError> {
        let s = self.string(path, m)?;
        if !s.starts_with('/') || s.len() > 1 && s[1..].split('/').any(str::is_empty) {
            let message = format!("expected a cgroup path such as \"/tg1\" or \"/a/b\", found {s:?}");
            return Err(self.invalid(path, Some(m.key_end), message));
        }
        Ok(s.to_owned())
    }

    /// Sorts the members of a task object into properties and events.
    fn task_keys<'j>(&self, path: &str, def: &'j Member) -> Result<TaskKeys<'j>, RtAppError> {
        let mut keys = TaskKeys { props: Props { found: Vec::new() }, events: Vec::new(), legacy_runtime: None };
        for m in self.object(path, def)? {
            let at = join(path, &m.key);
            match m.key.as_str() {
                "instance" | "loop" | "delay" | "policy" | "priority" | "cpus" | "dl-runtime" | "dl-period"
                | "dl-deadline" | "period" | "deadline" | "phases" | "taskgroup" => {
                    self.once(&mut keys.props, &at, m)?
                }
                "util_min" | "util_max" | "nodes_membind" => {
                    let what = format!("`{}`", m.key);
                    return Err(self.unsupported(&at, m, what, UNMODELLED_ATTR));
                }
                key if event_kind(key).is_some() => {
                    if key == "runtime" && keys.legacy_runtime.is_none() {
                        keys.legacy_runtime = Some(m);
                    }
                    keys.events.push(m);
                }
                _ => return Err(self.unknown(&at, m, "task property or event", TASK_KEYS)),
            }
        }
        Ok(keys)
    }

    /// The task loop and the phases: from `phases`, or the task object as its only phase.
    fn task_body(
        &self,
        path: &str,
        def: &Member,
        keys: &TaskKeys<'_>,
        sched: Sched,
    ) -> Result<(Repeat, Vec<Phase>), RtAppError> {
        let loop_member = keys.props.get("loop").map(|m| (join(path, "loop"), m));
        if let Some(phases) = keys.props.get("phases") {
            let is_legacy = |e: &Member| keys.legacy_runtime.is_some_and(|l| std::ptr::eq(e, l));
            if let Some(stray) = keys.events.iter().find(|e| !is_legacy(e)) {
                let message = "rt-app ignores events next to `phases`; move them into a phase";
                let at = join(path, &stray.key);
                return Err(self.invalid(&at, Some(stray.key_end), message.into()));
            }
            let repeat = match &loop_member {
                Some((at, m)) => self.task_loop(at, m)?,
                None => Repeat::Forever,
            };
            return Ok((repeat, self.phases(&join(path, "phases"), phases, sched)?));
        }
        // The task object is its only phase: `loop` is that phase's loop, run once; without
        // `loop` the phase runs once per pass and the task loops forever.
        let (phase_repeat, repeat) = match &loop_member {
            Some((at, m)) => (self.phase_loop(at, m)?, Repeat::Times(1)),
            None => (Repeat::Times(1), Repeat::Forever),
        };
        let phase = Phase {
            path: path.to_owned(),
            key_end: Some(def.key_end),
            nice: None,
            repeat: phase_repeat,
            events: self.events(path, &keys.events, def)?,
        };
        Ok((repeat, vec![phase]))
    }

    fn cpus(&self, path: &str, m: &Member) -> Result<Vec<u32>, RtAppError> {
        let Json::Array(items) = &m.value else {
            return Err(self.wrong_type(path, m, "an array of CPU numbers"));
        };
        let mut cpus = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Json::Int(v) if (0..=i128::from(i32::MAX)).contains(v) => cpus.push(*v as u32),
                other => {
                    let message = format!(
                        "cpus[{i}]: expected a CPU number, found {}",
                        match other {
                            Json::Int(v) => v.to_string(),
                            other => other.describe().to_owned(),
                        }
                    );
                    return Err(self.invalid(path, Some(m.key_end), message));
                }
            }
        }
        if cpus.is_empty() {
            return Err(self.invalid(path, Some(m.key_end), "the CPU list is empty".into()));
        }
        // rt-app builds a cpu_set_t, so order and repeats do not matter.
        cpus.sort_unstable();
        cpus.dedup();
        Ok(cpus)
    }

    /// A task-level `loop`: -1 is forever, 0 runs no phase (only `delay`).
    fn task_loop(&self, path: &str, m: &Member) -> Result<Repeat, RtAppError> {
        match self.int_in(path, m, -1, i32::MAX, "a loop count (-1: forever)")? {
            -1 => Ok(Repeat::Forever),
            n => Ok(Repeat::Times(n.unsigned_abs())),
        }
    }

    /// A phase-level `loop`: -1 is forever. rt-app also loops forever on 0 (it tests
    /// `++count == loop`), which is surely a mistake in the file, so 0 is an error.
    fn phase_loop(&self, path: &str, m: &Member) -> Result<Repeat, RtAppError> {
        match self.int(path, m)? {
            -1 => Ok(Repeat::Forever),
            n @ 1.. => Ok(Repeat::Times(n.unsigned_abs())),
            n => {
                let message = format!(
                    "a phase loop count must be at least 1 or -1 (forever), found {n} (rt-app would loop forever)"
                );
                Err(self.invalid(path, Some(m.key_end), message))
            }
        }
    }

    fn phases(&self, path: &str, m: &Member, sched: Sched) -> Result<Vec<Phase>, RtAppError> {
        let members = self.object(path, m)?;
        if members.is_empty() {
            return Err(self.invalid(path, Some(m.key_end), "`phases` is empty".into()));
        }
        // Repeated phase names are kept in order, like repeated events (workgen renames them).
        members.iter().map(|p| self.phase(&join(path, &p.key), p, sched)).collect()
    }

    fn phase(&self, path: &str, def: &Member, sched: Sched) -> Result<Phase, RtAppError> {
        let mut props = Props { found: Vec::new() };
        let mut events = Vec::new();
        for m in self.object(path, def)? {
            let at = join(path, &m.key);
            match m.key.as_str() {
                "loop" | "priority" => self.once(&mut props, &at, m)?,
                "policy" | "cpus" | "dl-runtime" | "dl-period" | "dl-deadline" => {
                    let what = format!("per-phase `{}`", m.key);
                    return Err(self.unsupported(&at, m, what, PER_PHASE));
                }
                "taskgroup" => {
                    let what = "per-phase `taskgroup`".to_owned();
                    return Err(self.unsupported(&at, m, what, PER_PHASE));
                }
                "util_min" | "util_max" | "nodes_membind" => {
                    return Err(self.unsupported(&at, m, format!("`{}`", m.key), UNMODELLED_ATTR));
                }
                key if event_kind(key).is_some() => events.push(m),
                _ => return Err(self.unknown(&at, m, "phase property or event", PHASE_KEYS)),
            }
        }
        let repeat = match props.get("loop") {
            Some(m) => self.phase_loop(&join(path, "loop"), m)?,
            None => Repeat::Times(1),
        };
        let nice = match props.get("priority") {
            None => None,
            Some(m) => {
                let at = join(path, "priority");
                let nice = self.int_in(&at, m, -20, 19, "a nice value")?;
                if sched.slice_ns.is_some() {
                    let what = "per-phase `priority` in a task with `dl-runtime`".to_owned();
                    return Err(self.unsupported(&at, m, what, PHASE_NICE_WITH_SLICE));
                }
                // A SCHED_IDLE task ignores nice values (see `task`).
                (sched.policy != Policy::Idle).then_some(nice)
            }
        };
        Ok(Phase {
            path: path.to_owned(),
            key_end: Some(def.key_end),
            nice,
            repeat,
            events: self.events(path, &events, def)?,
        })
    }

    fn events(&self, path: &str, members: &[&Member], owner: &Member) -> Result<Vec<Event>, RtAppError> {
        if members.is_empty() {
            let message = "no events: rt-app needs at least one event (run, sleep, timer, …)";
            return Err(self.invalid(path, Some(owner.key_end), message.into()));
        }
        members.iter().map(|m| self.event(&join(path, &m.key), m)).collect()
    }

    fn event(&self, path: &str, m: &Member) -> Result<Event, RtAppError> {
        let Some(kind) = event_kind(&m.key) else {
            unreachable!("events are selected by event_kind()");
        };
        match kind {
            EventKind::Run | EventKind::Runtime => Ok(Event::Run { ns: self.micros(path, m)? }),
            EventKind::Sleep => Ok(Event::Sleep { ns: self.micros(path, m)? }),
            EventKind::Yield => Ok(Event::Yield),
            EventKind::Timer => self.timer(path, m),
            EventKind::Unsupported(name, reason) => Err(self.unsupported(path, m, format!("event `{name}`"), reason)),
        }
    }

    fn timer(&self, path: &str, def: &Member) -> Result<Event, RtAppError> {
        let mut props = Props { found: Vec::new() };
        for m in self.object(path, def)? {
            let at = join(path, &m.key);
            match m.key.as_str() {
                "ref" | "period" | "mode" => self.once(&mut props, &at, m)?,
                _ => return Err(self.unknown(&at, m, "timer field", TIMER_KEYS)),
            }
        }
        let name = match props.get("ref") {
            Some(m) => self.string(&join(path, "ref"), m)?.to_owned(),
            None => "unknown".to_owned(), // rt-app's default
        };
        let period_ns = match props.get("period") {
            Some(m) => self.micros(&join(path, "period"), m)?,
            None => 0,
        };
        if period_ns == 0 {
            let message = "a timer needs a period > 0 µs".to_owned();
            return Err(self.invalid(path, Some(def.key_end), message));
        }
        let absolute = match props.get("mode") {
            Some(m) => match self.string(&join(path, "mode"), m)? {
                "absolute" => true,
                "relative" => false,
                other => {
                    let message = format!("unknown timer mode `{other}` (expected relative or absolute)");
                    return Err(self.invalid(&join(path, "mode"), Some(m.key_end), message));
                }
            },
            None => false,
        };
        Ok(Event::Timer { name, period_ns, absolute })
    }

    // -- compilation --------------------------------------------------------------------------

    /// Compiles `task` and appends one [`TaskSpec`] per instance to `specs`.
    fn compile(&self, task: &Task, specs: &mut Vec<TaskSpec>) -> Result<(), RtAppError> {
        let program = self.program(task)?;
        for i in 0..task.instances {
            let comm = if task.instances > 1 { format!("{}-{i}", task.name) } else { task.name.clone() };
            let spec = TaskSpec {
                comm: truncate_comm(comm),
                nice: task.nice,
                policy: task.policy,
                slice_ns: task.slice_ns,
                cpus: task.cpus.clone(),
                start_ns: 0,
                timer_slack_ns: TIMER_SLACK_NS,
                ops: program.ops.clone(),
                nr_slots: program.nr_slots,
                nr_timers: program.nr_timers,
                poll_sets: Vec::new(),
                spawned: false,
                // rt-app runs every task as a thread of one process.
                mm: 0,
                cgroup: task.taskgroup.clone().filter(|g| g != "/"),
                group: 0,
                kthread: false,
                wakee_flips: 0,
            };
            if let Err(message) = spec.validate() {
                return Err(self.invalid(&task.path, Some(task.key_end), message));
            }
            specs.push(spec);
        }
        Ok(())
    }

    fn program(&self, task: &Task) -> Result<Program, RtAppError> {
        let timers = timer_table(task);
        let Ok(nr_timers) = u16::try_from(timers.len()) else {
            let message = format!("more than {} timers in one task", u16::MAX);
            return Err(self.invalid(&task.path, Some(task.key_end), message));
        };
        let mut program = Program { ops: Vec::new(), nr_slots: 0, nr_timers };
        if task.delay_ns > 0 {
            program.ops.push(Op::Sleep { ns: task.delay_ns });
        }
        if task.repeat == Repeat::Times(0) {
            program.ops.push(Op::Exit);
            return Ok(program);
        }
        let task_start = program.ops.len();
        // The nice value at the start of a pass over the phases, if it is the same for every
        // pass. Knowing it avoids a SetNice to the current value: the kernel returns early for
        // one, while the simulator would still reweight the task.
        let end_nice = task.phases.iter().rev().find_map(|p| p.nice).unwrap_or(task.nice);
        let same_each_pass = task.repeat == Repeat::Times(1) || end_nice == task.nice;
        let mut nice = same_each_pass.then_some(task.nice);
        for phase in &task.phases {
            if let Some(n) = phase.nice {
                if nice != Some(n) {
                    program.ops.push(Op::SetNice { nice: n });
                }
                nice = Some(n);
            }
            let phase_start = program.ops.len();
            program.ops.extend(phase.events.iter().map(|event| event_op(event, &timers)));
            self.close_loop(&mut program, phase_start, phase.repeat, &phase.path, phase.key_end)?;
        }
        self.close_loop(&mut program, task_start, task.repeat, &task.path, Some(task.key_end))?;
        program.ops.push(Op::Exit);
        Ok(program)
    }

    /// Ends the loop body that starts at op `start` with a Loop op on a fresh counter, unless
    /// it runs once. A forever loop whose body takes no time at all (only `run: 0`) is an
    /// error: the simulated clock could never get past it.
    fn close_loop(
        &self,
        program: &mut Program,
        start: usize,
        repeat: Repeat,
        path: &str,
        key_end: Option<usize>,
    ) -> Result<(), RtAppError> {
        let count = match repeat {
            Repeat::Times(1) => return Ok(()),
            Repeat::Times(n) => n,
            Repeat::Forever => u32::MAX,
        };
        let takes_time = |op: &Op| !matches!(op, Op::Run { ns: 0 } | Op::Loop { .. });
        if repeat == Repeat::Forever && !program.ops[start..].iter().any(takes_time) {
            let message = "this loops forever without using any time (every event is `run: 0`)";
            return Err(self.invalid(path, key_end, message.into()));
        }
        let slot = program.nr_slots;
        let Some(nr_slots) = slot.checked_add(1) else {
            let message = format!("more than {} loops in one task", u16::MAX);
            return Err(self.invalid(path, key_end, message));
        };
        let Ok(target) = u32::try_from(start) else {
            return Err(self.invalid(path, key_end, format!("a task program longer than {} operations", u32::MAX)));
        };
        program.ops.push(Op::Loop { target, slot, count });
        program.nr_slots = nr_slots;
        Ok(())
    }
}

/// A compiled program and its counter and timer counts.
struct Program {
    ops: Vec<Op>,
    nr_slots: u16,
    nr_timers: u16,
}

fn event_op(event: &Event, timers: &[(&str, bool)]) -> Op {
    match *event {
        Event::Run { ns } => Op::Run { ns },
        Event::Sleep { ns } => Op::Sleep { ns },
        Event::Yield => Op::Yield,
        Event::Timer { ref name, period_ns, .. } => {
            let slot = timers.iter().position(|(n, _)| n == name);
            #[allow(clippy::expect_used, reason = "timer_table() lists every timer an event names")]
            let slot = slot.expect("timer_table() lists every ref");
            // timer_table() has at most u16::MAX entries (checked in `program`).
            Op::Timer { slot: slot as u16, period_ns, absolute: timers[slot].1 }
        }
    }
}

const PER_PHASE: &str = "a task's policy, affinity and slice are fixed for its life in schedlab; \
    set them at task level";
const PHASE_NICE_WITH_SLICE: &str = "rt-app either resets the slice at such a nice change \
    (before its commit 2ac2e0a) or ignores the change (since), and neither is modelled";
const UNMODELLED_ATTR: &str = "uclamp and NUMA binding are not modelled";

/// The distinct timer refs of `task` in order of first use, each with its mode: absolute if
/// any use asks for it (rt-app keeps the mode in the shared timer resource).
fn timer_table(task: &Task) -> Vec<(&str, bool)> {
    let mut timers: Vec<(&str, bool)> = Vec::new();
    for event in task.phases.iter().flat_map(|p| &p.events) {
        if let Event::Timer { name, absolute, .. } = event {
            match timers.iter_mut().find(|(n, _)| n == name) {
                Some(entry) => entry.1 |= absolute,
                None => timers.push((name, *absolute)),
            }
        }
    }
    timers
}

/// Keeps at most 15 bytes, as the kernel does for `comm`, without splitting a character.
fn truncate_comm(mut comm: String) -> String {
    if comm.len() > COMM_BYTES_MAX {
        let mut cut = COMM_BYTES_MAX;
        while !comm.is_char_boundary(cut) {
            cut -= 1;
        }
        comm.truncate(cut);
    }
    comm
}
