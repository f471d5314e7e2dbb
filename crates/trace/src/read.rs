//! Reading ftrace text: the kernel's `trace` file, `trace-cmd report` output (whose sched
//! plugin prints `comm:pid [prio]` shapes), and schedlab's own traces.
//!
//! Only the scheduler events are decoded (`sched_switch`, `sched_waking`, `sched_wakeup`,
//! `sched_wakeup_new`, `sched_migrate_task`, `sched_process_fork`, `sched_process_exit`,
//! `hrtimer_expire_entry`, `reschedule_entry`, schedlab's `schedlab_wakeup_preempt` /
//! `schedlab_placement`, and the lag records `schedlab_wakeup_lag` / `schedlab_switch_lag` that
//! the model writes and a guest's probes record); other events are skipped.
//! Comment lines (`#`), blank lines and trace-cmd's `cpus=N`, `version = N` and `CPU ...`
//! lines are skipped too. Anything else that is not an event line is an error naming the line.
//!
//! Task names may contain spaces (`lto cgu.1-25497`): a value runs until the next ` key=`.
//!
//! The reader also checks what an analysis relies on, so that a damaged or edited trace is an
//! error naming its line rather than a report of zeros: CPU numbers below the `#P:`/`cpus=`
//! header's count (and below [`MAX_TRACE_CPUS`] without one); timestamps that never go
//! backwards (both the kernel's `trace` file and `trace-cmd report` merge the per-CPU buffers in
//! time order), so a reversed trace is refused; and a `prev_state` the kernel's `sched_switch`
//! format can print. (Whether a switch's `prev` is the task the CPU's last switch put there is
//! not checked: filtered captures, such as `native --trace`'s, legitimately break that chain.)

use std::io::{self, BufRead};

use thiserror::Error;

/// A task as an event names it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TaskId {
    pub comm: String,
    pub pid: u32,
    /// Kernel priority (120 + nice for fair tasks); 0 where the event does not carry it.
    pub prio: i32,
}

/// An entity's EEVDF state as `schedlab_wakeup_preempt` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct EevdfFields {
    pub vruntime: u64,
    pub deadline: u64,
    pub lag: i64,
    pub eligible: bool,
    pub slice: u64,
    pub vprot: u64,
    pub delayed: bool,
    pub buddy: bool,
}

/// A decoded scheduler event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Switch {
        prev: TaskId,
        /// As printed: `R`, `R+`, `S`, `D`, `I`, `X`, `Z`, `S|D`, ...
        prev_state: String,
        next: TaskId,
    },
    /// `target_cpu` is the task's CPU before selection (`task_cpu(p)`).
    Waking {
        task: TaskId,
        target_cpu: u32,
    },
    /// `target_cpu` is the CPU the task was queued on.
    Wakeup {
        task: TaskId,
        target_cpu: u32,
    },
    WakeupNew {
        task: TaskId,
        target_cpu: u32,
    },
    Migrate {
        task: TaskId,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    Fork {
        parent: TaskId,
        child: TaskId,
    },
    Exit {
        task: TaskId,
    },
    WakeupPreempt {
        curr: TaskId,
        wakee: TaskId,
        preempt: bool,
        reason: String,
        curr_state: EevdfFields,
        wakee_state: EevdfFields,
    },
    Placement {
        task: TaskId,
        prev_cpu: u32,
        target_cpu: u32,
        sync: bool,
        reason: String,
    },
    /// `hrtimer_expire_entry`: a high-resolution timer's callback starts on the record's CPU
    /// (`function=hrtick` is the slice-end timer, `tick_nohz_handler` / `tick_sched_timer` the
    /// tick).
    TimerExpire {
        function: String,
    },
    /// `reschedule_entry`: the reschedule IPI arrives on the record's CPU.
    ReschedIpi,
    /// `schedlab_wakeup_lag`: the `se->vlag` (virtual ns) a woken task carries, read right after
    /// its `sched_wakeup` (a BTF tracepoint probe in a real kernel, the model's own record).
    WakeupLag {
        pid: u32,
        vlag: i64,
    },
    /// `schedlab_switch_lag`: the switched-out task's `se->vlag` and `se->sched_delayed`, read
    /// right after its `sched_switch`.
    SwitchLag {
        prev_pid: u32,
        vlag: i64,
        delayed: bool,
    },
    /// `schedlab_waking_flips`: the `wakee_flips` a task being woken carries into
    /// `select_task_rq_fair()`, read at its `sched_waking` (a BTF tracepoint probe in a real
    /// kernel, the model's own record).
    WakingFlips {
        pid: u32,
        flips: u32,
    },
}

impl Event {
    /// The event's name in the trace.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Switch { .. } => "sched_switch",
            Event::Waking { .. } => "sched_waking",
            Event::Wakeup { .. } => "sched_wakeup",
            Event::WakeupNew { .. } => "sched_wakeup_new",
            Event::Migrate { .. } => "sched_migrate_task",
            Event::Fork { .. } => "sched_process_fork",
            Event::Exit { .. } => "sched_process_exit",
            Event::WakeupPreempt { .. } => "schedlab_wakeup_preempt",
            Event::Placement { .. } => "schedlab_placement",
            Event::TimerExpire { .. } => "hrtimer_expire_entry",
            Event::ReschedIpi => "reschedule_entry",
            Event::WakeupLag { .. } => "schedlab_wakeup_lag",
            Event::SwitchLag { .. } => "schedlab_switch_lag",
            Event::WakingFlips { .. } => "schedlab_waking_flips",
        }
    }
}

/// One event line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// 1-based line number in the input.
    pub line: u64,
    pub ts_ns: u64,
    pub cpu: u32,
    /// The task current on `cpu` (the line's `comm-pid` prefix; `<idle>` is pid 0).
    pub comm: String,
    pub pid: u32,
    /// The latency flags' need-resched column is set (`N`, `n`, `p`, `L`, `l`, `B`, `b`: any
    /// of TIF_NEED_RESCHED, TIF_NEED_RESCHED_LAZY, PREEMPT_NEED_RESCHED; `.` is none); false
    /// when the line has no flags.
    pub need_resched: bool,
    pub event: Event,
}

/// Opens a trace file for [`read_ftrace_text`]: plain text, or gzip-compressed (by its magic
/// bytes, whatever the name), as the repository keeps its real-kernel traces.
pub fn open_trace(path: &std::path::Path) -> std::io::Result<Box<dyn BufRead>> {
    let mut file = std::io::BufReader::with_capacity(1 << 16, std::fs::File::open(path)?);
    let gz = file.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    Ok(if gz {
        Box::new(std::io::BufReader::with_capacity(1 << 16, flate2::bufread::MultiGzDecoder::new(file)))
    } else {
        Box::new(file)
    })
}

/// The most CPUs a trace may name: the largest `CONFIG_NR_CPUS` Linux builds with
/// (`NR_CPUS_RANGE_END` on x86-64 with `MAXSMP`). It bounds what a trace line can make the
/// analysis allocate.
pub const MAX_TRACE_CPUS: u32 = 8192;

/// A line that could not be read, with its 1-based number.
#[derive(Debug, Error)]
pub enum ParseError {
    #[error("line {line}: {message}")]
    Line { line: u64, message: String },
    /// The whole input held no scheduler event: nothing to analyse.
    #[error(
        "no scheduler events in {lines} lines (record sched_switch, sched_waking, sched_wakeup and sched_migrate_task)"
    )]
    Empty { lines: u64 },
    #[error("line {line}: {source}")]
    Io {
        line: u64,
        #[source]
        source: io::Error,
    },
}

impl ParseError {
    pub fn line(&self) -> u64 {
        match self {
            ParseError::Line { line, .. } | ParseError::Io { line, .. } => *line,
            ParseError::Empty { lines } => *lines,
        }
    }
}

/// Reads ftrace text as a stream of [`Record`]s. Memory holds one line at a time.
pub fn read_ftrace_text<R: BufRead>(reader: R) -> FtraceTextReader<R> {
    FtraceTextReader { reader, buf: Vec::new(), line: 0, nr_cpus: None, done: false, last_ts: None }
}

pub struct FtraceTextReader<R> {
    reader: R,
    buf: Vec<u8>,
    line: u64,
    nr_cpus: Option<u32>,
    done: bool,
    /// The latest timestamp so far and its line.
    last_ts: Option<(u64, u64)>,
}

impl<R> FtraceTextReader<R> {
    /// The CPU count a header announced (`#P:N` in the kernel's or schedlab's header,
    /// `cpus=N` in trace-cmd's), once read.
    pub fn nr_cpus(&self) -> Option<u32> {
        self.nr_cpus
    }

    /// Lines read so far.
    pub fn lines(&self) -> u64 {
        self.line
    }
}

impl<R: BufRead> Iterator for FtraceTextReader<R> {
    type Item = Result<Record, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(ParseError::Io { line: self.line + 1, source: e }));
                }
            }
            self.line += 1;
            // ftrace text never holds a NUL byte; a Perfetto protobuf (what `--trace
            // FILE.pftrace` writes) or other binary data does.
            if self.buf.contains(&0) {
                self.done = true;
                let message = "binary data, not ftrace text (a Perfetto trace? this reads the text form: \
                               `--trace FILE.txt`, or the kernel's tracing/trace file)"
                    .to_string();
                return Some(Err(ParseError::Line { line: self.line, message }));
            }
            let text = String::from_utf8_lossy(&self.buf);
            let text = text.trim_end_matches(['\n', '\r']);
            let line = self.line;
            if let Some(n) = header_cpus(text) {
                if !(1..=MAX_TRACE_CPUS).contains(&n) {
                    self.done = true;
                    let message = format!("the header's CPU count {n} is outside 1..={MAX_TRACE_CPUS}");
                    return Some(Err(ParseError::Line { line, message }));
                }
                self.nr_cpus = Some(n);
                continue;
            }
            let parsed = parse_line(text).map(|parsed| {
                parsed.map(|(ts_ns, cpu, comm, pid, need_resched, event)| Record {
                    line,
                    ts_ns,
                    cpu,
                    comm: comm.to_string(),
                    pid,
                    need_resched,
                    event,
                })
            });
            let result = parsed.and_then(|record| match record {
                None => Ok(None),
                Some(record) => self.check(&record).map(|()| Some(record)),
            });
            match result {
                Ok(None) => continue,
                Ok(Some(record)) => return Some(Ok(record)),
                Err(message) => {
                    self.done = true;
                    return Some(Err(ParseError::Line { line, message }));
                }
            }
        }
        None
    }
}

impl<R> FtraceTextReader<R> {
    /// The checks of the module documentation, on one decoded record.
    fn check(&mut self, r: &Record) -> Result<(), String> {
        let limit = self.nr_cpus.unwrap_or(MAX_TRACE_CPUS);
        let bound = match self.nr_cpus {
            Some(n) => format!("the header says #P:{n}"),
            None => format!("at most {MAX_TRACE_CPUS} CPUs"),
        };
        let cpus: &[(&str, u32)] = match &r.event {
            Event::Waking { target_cpu, .. }
            | Event::Wakeup { target_cpu, .. }
            | Event::WakeupNew { target_cpu, .. } => &[("CPU", r.cpu), ("target_cpu", *target_cpu)],
            Event::Migrate { orig_cpu, dest_cpu, .. } => {
                &[("CPU", r.cpu), ("orig_cpu", *orig_cpu), ("dest_cpu", *dest_cpu)]
            }
            Event::Placement { prev_cpu, target_cpu, .. } => {
                &[("CPU", r.cpu), ("prev_cpu", *prev_cpu), ("target_cpu", *target_cpu)]
            }
            _ => &[("CPU", r.cpu)],
        };
        if let Some((what, cpu)) = cpus.iter().find(|(_, cpu)| *cpu >= limit) {
            let what = if *what == "CPU" { format!("CPU [{cpu}]") } else { format!("{} {what}={cpu}", r.event.name()) };
            return Err(format!("{what} does not exist ({bound})"));
        }
        if let Some((last, at)) = self.last_ts
            && r.ts_ns < last
        {
            return Err(format!(
                "timestamp {} goes back before {} of line {at}; the trace must be in time order",
                secs(r.ts_ns),
                secs(last)
            ));
        }
        self.last_ts = Some((r.ts_ns, r.line));
        if let Event::Switch { prev_state, .. } = &r.event
            && !valid_prev_state(prev_state)
        {
            return Err(format!(
                "sched_switch: unknown prev_state `{prev_state}` (expected R, R+ or |-joined S D T t X Z P I, optionally +)"
            ));
        }
        Ok(())
    }
}

fn secs(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// What `sched_switch` prints for `prev_state` (include/trace/events/sched.h): `R` when no
/// state bit is set, else the set bits' letters joined by `|` (left-over bits in hex), then
/// `+` when the task was preempted. `K`, `W`, `N` and `x` are the letters of older kernels.
fn valid_prev_state(state: &str) -> bool {
    let flags = state.strip_suffix('+').unwrap_or(state);
    flags == "R"
        || (!flags.is_empty()
            && flags.split('|').all(|f| {
                matches!(f, "S" | "D" | "T" | "t" | "X" | "Z" | "P" | "I" | "K" | "W" | "N" | "x")
                    || f.strip_prefix("0x").is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
            }))
}

/// `#P:N` in a comment, or trace-cmd's `cpus=N` line.
fn header_cpus(line: &str) -> Option<u32> {
    if let Some(rest) = line.strip_prefix("cpus=") {
        return rest.trim().parse().ok();
    }
    if line.starts_with('#')
        && let Some(i) = line.find("#P:")
    {
        let digits: String = line[i + 3..].chars().take_while(|c| c.is_ascii_digit()).collect();
        return digits.parse().ok();
    }
    None
}

fn is_skipped(line: &str) -> bool {
    let t = line.trim_start();
    // `=> function` lines are the frames of a `stacktrace` trigger's or option's record.
    t.is_empty() || t.starts_with('#') || t.starts_with("version") || t.starts_with("CPU") || t.starts_with("=> ")
}

fn excerpt(s: &str) -> String {
    // Control characters escaped, so that the message stays one line of text.
    let mut e: String =
        s.chars().take(80).flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] }).collect();
    if e.len() < s.len() {
        e.push_str("...");
    }
    e
}

type Parsed<'a> = (u64, u32, &'a str, u32, bool, Event);

/// Splits an event line into its prefix fields and decodes the event; `Ok(None)` for lines
/// and events that are skipped.
fn parse_line(line: &str) -> Result<Option<Parsed<'_>>, String> {
    if is_skipped(line) {
        return Ok(None);
    }
    let not_event = || format!("not an ftrace event line: `{}`", excerpt(line));
    // The CPU column: the first `[digits]` preceded by `comm-pid` (and maybe a `(tgid)`).
    let mut found = None;
    for (i, _) in line.match_indices('[') {
        let Some(close) = line[i + 1..].find(']') else { break };
        let digits = &line[i + 1..i + 1 + close];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let mut left = line[..i].trim_end();
        if left.ends_with(')')
            && let Some(open) = left.rfind('(')
        {
            left = left[..open].trim_end();
        }
        let Some((comm, pid)) = left.rsplit_once('-') else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        let cpu: u32 = digits.parse().map_err(|_| format!("bad CPU `{digits}`"))?;
        found = Some((comm.trim_start(), pid, cpu, &line[i + 1 + close + 1..]));
        break;
    }
    let Some((comm, pid, cpu, rest)) = found else { return Err(not_event()) };
    // Optional latency flags, then `secs.frac:`.
    let mut rest = rest.trim_start();
    let mut ts = None;
    let mut need_resched = false;
    for _ in 0..2 {
        let (tok, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if let Some(t) = tok.strip_suffix(':')
            && let Some(ns) = parse_ts(t)
        {
            ts = Some(ns);
            rest = after.trim_start();
            break;
        }
        // The latency flags (`d..2.`): irqs-off, need-resched, hardirq/softirq, ...
        need_resched = tok.len() >= 4 && tok.as_bytes()[1] != b'.';
        rest = after.trim_start();
    }
    let Some(ts_ns) = ts else { return Err(format!("no timestamp in `{}`", excerpt(line))) };
    // The event name, then `: ` and its fields. Other tracers print other bodies after the
    // timestamp: syscall events `sys_read(fd: 3, ...)` and `sys_read -> 0x64`
    // (kernel/trace/trace_syscalls.c), the function tracer `pipe_read <-vfs_read`, the head of
    // a stack record `<stack trace>` (a `stacktrace` trigger, `options/stacktrace`); those lines
    // are events too, just not scheduler ones, and are skipped.
    if rest.starts_with("<stack trace>") || rest.starts_with("<user stack trace>") {
        return Ok(None);
    }
    let name_len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    if name_len == 0 {
        return Err(not_event());
    }
    let (name, after) = rest.split_at(name_len);
    let Some(args) = after.strip_prefix(':') else { return Ok(None) };
    let args = args.trim();
    let event = match name {
        "sched_switch" => switch(args),
        "sched_waking" => wakeup(args).map(|(task, target_cpu)| Event::Waking { task, target_cpu }),
        "sched_wakeup" => wakeup(args).map(|(task, target_cpu)| Event::Wakeup { task, target_cpu }),
        "sched_wakeup_new" => wakeup(args).map(|(task, target_cpu)| Event::WakeupNew { task, target_cpu }),
        "sched_migrate_task" => migrate(args),
        "sched_process_fork" => fork(args),
        "sched_process_exit" => exit(args),
        "schedlab_wakeup_preempt" => wakeup_preempt(args),
        "schedlab_placement" => placement(args),
        "hrtimer_expire_entry" => {
            Fields::new(args).str("function").map(|f| Event::TimerExpire { function: f.to_string() })
        }
        "reschedule_entry" => Ok(Event::ReschedIpi),
        "schedlab_wakeup_lag" => wakeup_lag(args),
        "schedlab_switch_lag" => switch_lag(args),
        "schedlab_waking_flips" => waking_flips(args),
        _ => return Ok(None),
    };
    let event = event.map_err(|e| format!("{name}: {e}"))?;
    Ok(Some((ts_ns, cpu, comm, pid, need_resched, event)))
}

/// `secs.frac` (any number of decimals, kept to the nanosecond) or a bare integer (raw
/// counter clocks), in ns.
fn parse_ts(t: &str) -> Option<u64> {
    let (secs, frac) = t.split_once('.').unwrap_or((t, ""));
    if secs.is_empty() || !secs.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    if !t.contains('.') {
        return Some(secs);
    }
    let mut ns = 0u64;
    for i in 0..9 {
        ns = ns * 10 + frac.as_bytes().get(i).map_or(0, |b| (b - b'0') as u64);
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// `key=value` fields; a token without `=` continues the previous value (names with spaces).
struct Fields<'a> {
    args: &'a str,
    kv: Vec<(&'a str, usize, usize)>,
}

impl<'a> Fields<'a> {
    fn new(args: &'a str) -> Self {
        let mut kv: Vec<(&'a str, usize, usize)> = Vec::new();
        let mut pos = 0;
        for tok in args.split(' ') {
            let start = pos;
            pos += tok.len() + 1;
            if tok.is_empty() || tok == "==>" {
                continue;
            }
            match tok.split_once('=') {
                Some((k, _)) if !k.is_empty() => kv.push((k, start + k.len() + 1, start + tok.len())),
                _ => {
                    if let Some(last) = kv.last_mut() {
                        last.2 = start + tok.len();
                    }
                }
            }
        }
        Fields { args, kv }
    }

    fn str(&self, key: &str) -> Result<&'a str, String> {
        self.kv
            .iter()
            .find(|(k, ..)| *k == key)
            .map(|&(_, s, e)| &self.args[s..e])
            .ok_or_else(|| format!("missing field `{key}`"))
    }

    fn num<T: std::str::FromStr>(&self, key: &str) -> Result<T, String> {
        let v = self.str(key)?;
        v.parse().map_err(|_| format!("field `{key}`: `{v}` is not a number"))
    }

    /// A virtual time, printed signed (or unsigned), as the kernel's u64.
    fn vtime(&self, key: &str) -> Result<u64, String> {
        let v = self.str(key)?;
        v.parse::<u64>()
            .or_else(|_| v.parse::<i64>().map(|n| n as u64))
            .map_err(|_| format!("field `{key}`: `{v}` is not a number"))
    }

    fn flag(&self, key: &str) -> Result<bool, String> {
        match self.str(key)? {
            "0" | "false" => Ok(false),
            "1" | "true" => Ok(true),
            v => Err(format!("field `{key}`: `{v}` is not 0 or 1")),
        }
    }

    fn task(&self, comm: &str, pid: &str, prio: Option<&str>) -> Result<TaskId, String> {
        Ok(TaskId {
            comm: self.str(comm)?.to_string(),
            pid: self.num(pid)?,
            prio: match prio {
                Some(k) => self.num(k)?,
                None => 0,
            },
        })
    }

    fn eevdf(&self, who: &str) -> Result<EevdfFields, String> {
        let k = |f: &str| format!("{who}_{f}");
        Ok(EevdfFields {
            vruntime: self.vtime(&k("vruntime"))?,
            deadline: self.vtime(&k("deadline"))?,
            lag: self.num(&k("lag"))?,
            eligible: self.flag(&k("eligible"))?,
            slice: self.num(&k("slice"))?,
            vprot: self.vtime(&k("vprot"))?,
            delayed: self.flag(&k("delayed"))?,
            buddy: self.flag(&k("buddy"))?,
        })
    }
}

/// trace-cmd's sched plugin shape: `comm:pid [prio]`.
fn plugin_task(s: &str) -> Result<TaskId, String> {
    let s = s.trim();
    let (head, prio) = match s.rfind(" [") {
        Some(i) if s.ends_with(']') => (&s[..i], Some(&s[i + 2..s.len() - 1])),
        _ => (s, None),
    };
    let (comm, pid) = head.rsplit_once(':').ok_or_else(|| format!("`{head}` is not comm:pid"))?;
    Ok(TaskId {
        comm: comm.to_string(),
        pid: pid.parse().map_err(|_| format!("bad pid `{pid}`"))?,
        prio: match prio {
            Some(p) => p.parse().map_err(|_| format!("bad prio `{p}`"))?,
            None => 0,
        },
    })
}

fn switch(args: &str) -> Result<Event, String> {
    if args.starts_with("prev_comm=") {
        let f = Fields::new(args);
        return Ok(Event::Switch {
            prev: f.task("prev_comm", "prev_pid", Some("prev_prio"))?,
            prev_state: f.str("prev_state")?.to_string(),
            next: f.task("next_comm", "next_pid", Some("next_prio"))?,
        });
    }
    // trace-cmd: `prev_comm:prev_pid [prio] STATE ==> next_comm:next_pid [prio]`.
    let (left, right) = args.split_once(" ==> ").ok_or("no ` ==> `")?;
    let (left, state) = left.trim_end().rsplit_once(' ').ok_or("no prev_state")?;
    Ok(Event::Switch { prev: plugin_task(left)?, prev_state: state.to_string(), next: plugin_task(right)? })
}

fn wakeup(args: &str) -> Result<(TaskId, u32), String> {
    if args.starts_with("comm=") {
        let f = Fields::new(args);
        return Ok((f.task("comm", "pid", Some("prio"))?, f.num("target_cpu")?));
    }
    // trace-cmd: `comm:pid [prio] [success=1] CPU:003`.
    let (head, cpu) = args.rsplit_once(" CPU:").ok_or("no target_cpu")?;
    let head = head.split(" success=").next().unwrap_or(head);
    Ok((plugin_task(head)?, cpu.trim().parse().map_err(|_| format!("bad CPU `{cpu}`"))?))
}

fn migrate(args: &str) -> Result<Event, String> {
    let f = Fields::new(args);
    Ok(Event::Migrate {
        task: f.task("comm", "pid", Some("prio"))?,
        orig_cpu: f.num("orig_cpu")?,
        dest_cpu: f.num("dest_cpu")?,
    })
}

fn fork(args: &str) -> Result<Event, String> {
    let f = Fields::new(args);
    Ok(Event::Fork { parent: f.task("comm", "pid", None)?, child: f.task("child_comm", "child_pid", None)? })
}

fn exit(args: &str) -> Result<Event, String> {
    let f = Fields::new(args);
    Ok(Event::Exit { task: f.task("comm", "pid", Some("prio"))? })
}

fn wakeup_preempt(args: &str) -> Result<Event, String> {
    let f = Fields::new(args);
    Ok(Event::WakeupPreempt {
        curr: f.task("curr_comm", "curr_pid", None)?,
        wakee: f.task("wakee_comm", "wakee_pid", None)?,
        preempt: f.flag("preempt")?,
        reason: f.str("reason")?.to_string(),
        curr_state: f.eevdf("curr")?,
        wakee_state: f.eevdf("wakee")?,
    })
}

// A probe's record starts with its location, `(__probestub_sched_wakeup+0x4/0x10)`, which has
// no `=` and is passed over.
fn wakeup_lag(args: &str) -> Result<Event, String> {
    let f = Fields::new(args);
    Ok(Event::WakeupLag { pid: f.num("pid")?, vlag: f.num("vlag")? })
}

fn waking_flips(args: &str) -> Result<Event, String> {
    let f = Fields::new(args);
    Ok(Event::WakingFlips { pid: f.num("pid")?, flips: f.num("flips")? })
}

fn switch_lag(args: &str) -> Result<Event, String> {
    let f = Fields::new(args);
    Ok(Event::SwitchLag { prev_pid: f.num("prev_pid")?, vlag: f.num("prev_vlag")?, delayed: f.flag("prev_delayed")? })
}

fn placement(args: &str) -> Result<Event, String> {
    let f = Fields::new(args);
    Ok(Event::Placement {
        task: f.task("comm", "pid", Some("prio"))?,
        prev_cpu: f.num("prev_cpu")?,
        target_cpu: f.num("target_cpu")?,
        sync: f.flag("sync")?,
        reason: f.str("reason")?.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Record {
        let mut r = read_ftrace_text(line.as_bytes());
        r.next().expect("a record").expect("parses")
    }

    #[test]
    fn binary_input_is_named_as_such_in_one_line() {
        let mut bytes = b"\n".to_vec();
        bytes.extend([0x12, 0x00, 0x08, 0x96, 0x01, b'\n']);
        let e = read_ftrace_text(&bytes[..]).next().unwrap().unwrap_err();
        assert!(e.to_string().starts_with("line 2: binary data, not ftrace text"), "{e}");
        let e = read_ftrace_text(&b"bad\x07line\twith tab\n"[..]).next().unwrap().unwrap_err();
        assert_eq!(e.to_string(), "line 1: not an ftrace event line: `bad\\u{7}line\\twith tab`");
    }

    #[test]
    fn open_trace_reads_plain_and_gzip_files() {
        use std::io::{Read, Write};
        let dir = std::env::temp_dir().join(format!("schedtrace-open-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let text = "  a-1 [000] d..2.  1.000000: sched_waking: comm=b pid=2 prio=120 target_cpu=000\n";
        let plain = dir.join("t.txt");
        std::fs::write(&plain, text).expect("write");
        let gz = dir.join("t.txt.gz");
        let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).expect("create"), Default::default());
        enc.write_all(text.as_bytes()).expect("compress");
        enc.finish().expect("finish");
        for p in [&plain, &gz] {
            let mut back = String::new();
            open_trace(p).expect("opens").read_to_string(&mut back).expect("reads");
            assert_eq!(back, text, "{}", p.display());
        }
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn kernel_switch_with_spaces_in_names() {
        let r =
            one("       lto cgu.1-25497   [001] d..2.  2843.744400: sched_switch: prev_comm=lto cgu.1 prev_pid=25497 \
             prev_prio=120 prev_state=R ==> next_comm=bash next_pid=25704 next_prio=120\n");
        assert_eq!((r.comm.as_str(), r.pid, r.cpu, r.ts_ns), ("lto cgu.1", 25497, 1, 2_843_744_400_000));
        let Event::Switch { prev, prev_state, next } = r.event else { panic!() };
        assert_eq!(prev, TaskId { comm: "lto cgu.1".into(), pid: 25497, prio: 120 });
        assert_eq!(prev_state, "R");
        assert_eq!(next, TaskId { comm: "bash".into(), pid: 25704, prio: 120 });
    }

    #[test]
    fn trace_cmd_plugin_shapes() {
        let r = one(
            "            bash-25699 [000] 2843.743568: sched_switch:         bash:25699 [120] S ==> swapper/0:0 [120]",
        );
        let Event::Switch { prev, prev_state, next } = r.event else { panic!() };
        assert_eq!((prev.pid, prev_state.as_str(), next.comm.as_str(), next.pid), (25699, "S", "swapper/0", 0));
        let r =
            one("  <idle>-0     [001] d.h2.   10.000001: sched_wakeup:         kworker/1:2:77 [120] success=1 CPU:001");
        assert_eq!(
            r.event,
            Event::Wakeup { task: TaskId { comm: "kworker/1:2".into(), pid: 77, prio: 120 }, target_cpu: 1 }
        );
        assert_eq!(r.ts_ns, 10_000_001_000);
    }

    #[test]
    fn tgid_column_and_nanosecond_timestamps() {
        let r = one(
            "           <...>-77    (   70) [003] ....   316.196720123: sched_process_exit: comm=x pid=77 prio=120 group_dead=true",
        );
        assert_eq!((r.comm.as_str(), r.pid, r.cpu, r.ts_ns), ("<...>", 77, 3, 316_196_720_123));
    }

    /// Lines of a real 7.3.4 guest trace with syscall events and the function tracer on: not
    /// scheduler events, skipped, while the scheduler events between them are read.
    #[test]
    fn syscall_and_function_tracer_lines_are_skipped() {
        let text = "# tracer: nop\n\
            \x20      hackbench-245     [000] .....    22.210272: sys_read -> 0x64\n\
            \x20      hackbench-245     [000] .....    22.210275: sys_read(fd: 0x4d, buf: 0x7f9d0c45bde0, count: 0x64)\n\
            \x20      hackbench-245     [000] .....    22.210276: pipe_read <-vfs_read\n\
            \x20      hackbench-245     [000] d..2.    22.210318: sched_switch: prev_comm=hackbench prev_pid=245 \
            prev_prio=120 prev_state=S ==> next_comm=hackbench next_pid=244 next_prio=120\n";
        let recs: Vec<Record> = read_ftrace_text(text.as_bytes()).map(|r| r.unwrap()).collect();
        assert_eq!(recs.len(), 1);
        assert_eq!((recs[0].pid, recs[0].ts_ns), (245, 22_210_318_000));
    }

    #[test]
    fn stack_trace_records_are_skipped() {
        // A `stacktrace if prev_state == 2` trigger on sched_switch, as ftrace prints it.
        let text = "# tracer: nop\n\
            \x20      hackbench-159     [000] d..2.     3.951258: sched_switch: prev_comm=hackbench prev_pid=159 \
            prev_prio=120 prev_state=D ==> next_comm=hackbench next_pid=132 next_prio=120\n\
            \x20      hackbench-159     [000] d..3.     3.951259: <stack trace>\n\
            \x20=> __traceiter_sched_switch\n\
            \x20=> __schedule\n\
            \x20=> schedule_preempt_disabled\n\
            \x20=> __mutex_lock.constprop.0\n\
            \x20      hackbench-132     [000] d..2.     3.951280: sched_switch: prev_comm=hackbench prev_pid=132 \
            prev_prio=120 prev_state=S ==> next_comm=hackbench next_pid=162 next_prio=120\n";
        let recs: Vec<Record> = read_ftrace_text(text.as_bytes()).map(|r| r.unwrap()).collect();
        assert_eq!(recs.iter().map(|r| r.pid).collect::<Vec<_>>(), [159, 132]);
    }

    #[test]
    fn errors_name_the_line() {
        let text = "# tracer: nop\n#P:2 x\ngarbage here\n";
        let mut r = read_ftrace_text(text.as_bytes());
        let e = r.next().unwrap().unwrap_err();
        assert_eq!(e.line(), 3);
        assert!(e.to_string().starts_with("line 3: not an ftrace event line"), "{e}");
        let text = "  a-1 [000] ..... 1.000000: sched_switch: prev_comm=a prev_pid=x prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n";
        let e = read_ftrace_text(text.as_bytes()).next().unwrap().unwrap_err();
        assert_eq!(e.to_string(), "line 1: sched_switch: field `prev_pid`: `x` is not a number");
    }

    #[test]
    fn other_events_are_skipped() {
        let text = "  a-1 [000] ..... 1.000000: irq_handler_entry: irq=1 name=x\ncpus=4\n";
        let mut r = read_ftrace_text(text.as_bytes());
        assert!(r.next().is_none());
        assert_eq!(r.nr_cpus(), Some(4));
    }

    fn first_error(text: &str) -> String {
        match read_ftrace_text(text.as_bytes()).find_map(Result::err) {
            Some(e) => e.to_string(),
            None => panic!("no error in {text}"),
        }
    }

    const SW: &str =
        "sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120";

    /// A CPU number the header rules out, or beyond any kernel, is an error at its line (the
    /// analysis would otherwise size per-CPU tables by it).
    #[test]
    fn cpus_beyond_the_header_or_any_kernel_are_refused() {
        let e = first_error(&format!("#P:2\n  a-1 [002] ..... 1.000000: {SW}\n"));
        assert_eq!(e, "line 2: CPU [2] does not exist (the header says #P:2)");
        let e = first_error(&format!("  a-1 [2147483648] ..... 1.000000: {SW}\n"));
        assert_eq!(e, "line 1: CPU [2147483648] does not exist (at most 8192 CPUs)");
        let e = first_error("#P:4\n  a-1 [000] ..... 1.0: sched_waking: comm=b pid=2 prio=120 target_cpu=007\n");
        assert_eq!(e, "line 2: sched_waking target_cpu=7 does not exist (the header says #P:4)");
        assert!(first_error("# entries #P:0\n").starts_with("line 1: the header's CPU count 0"));
    }

    #[test]
    fn timestamps_going_backwards_are_refused() {
        let text = format!("  a-1 [000] ..... 2.000000: {SW}\n  b-2 [001] ..... 1.500000: {SW}\n");
        assert_eq!(
            first_error(&text),
            "line 2: timestamp 1.500000000 goes back before 2.000000000 of line 1; the trace must be in time order"
        );
    }

    #[test]
    fn prev_state_must_be_one_the_kernel_prints() {
        for good in ["R", "R+", "S", "D", "S|D", "I", "X", "Z", "T", "t", "P", "D+", "S|0x400"] {
            assert!(valid_prev_state(good), "{good}");
        }
        for bad in ["", "Q", "R|S", "S|", "+", "sleeping", "0x", "R++"] {
            assert!(!valid_prev_state(bad), "{bad}");
        }
        let text = SW.replace("prev_state=S", "prev_state=Q");
        assert!(first_error(&format!("  a-1 [000] ..... 1.0: {text}\n")).contains("unknown prev_state `Q`"));
    }
}
