//! The guest's `/init`: a busybox shell script that mounts proc/sys/debugfs, applies the
//! variant (scheduler features, the preemption model, scheduler sysctls), optionally runs
//! `schedlab calibrate`, runs `schedlab native --json <workload>` for the warm-up and measured
//! repetitions with `/proc/schedstat` read around each measured one, then powers off.
//!
//! The agent reports on the second serial port (`/dev/ttyS1`, a file on the host): the kernel
//! writes its messages to the first (`console=ttyS0`), so a kernel warning printed in the
//! middle of a run can never split or corrupt a result line. Every agent line starts with
//! [`MARK`]; the first one (`begin`) also goes to the console, which times the boot.
//!
//! Feature writes patch kernel text (static keys, `sched_feat_set` in 6.12
//! `kernel/sched/debug.c` flips `sched_feat_keys[i]`), and so does a preemption-model switch
//! (`sched_dynamic_update` retargets static calls). Under multi-threaded TCG another vCPU can
//! still be executing a translated block that holds the temporary int3 of the text poke, and
//! the guest oopses; so every vCPU but 0 is taken offline around each such write and checked
//! to come back (the method of the ground truth in `data/ground-truth/qemu-2vcpu`).
//!
//! Sysctls are written after every hotplug: bringing a CPU online runs `rq_online_fair()` →
//! `update_sysctl()` (6.12 `kernel/sched/fair.c`), which recomputes `sysctl_sched_base_slice`
//! from the normalized value and would silently undo a `base_slice_ns` write made before.

/// Prefix of every line the host parses; kernel messages never start with it.
pub const MARK: &str = "@@SCHEDLAB";

/// The guest's ftrace buffer per vCPU for `compare --vm --trace`, KiB: a traced
/// `hackbench -p -g 1 -l 200` writes about 2 MB of events in all.
pub const TRACE_KB: u32 = 16384;

/// The guest's debugfs scheduler directory.
pub const SCHED_DEBUGFS: &str = "/sys/kernel/debug/sched";

/// A scheduler feature token as `/sys/kernel/debug/sched/features` accepts it
/// (`NAME` or `NO_NAME`, the names of the kernel's `features.h`).
pub fn valid_feature_token(t: &str) -> bool {
    !t.is_empty() && t.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// What the guest applies before its runs: already-validated tokens and values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// Feature tokens for `sched/features`, in order.
    pub features: Vec<String>,
    /// A model for `sched/preempt` (`none`, `voluntary`, `full`, `lazy`).
    pub preempt: Option<String>,
    /// `(file under sched/, decimal value)`, written in this order.
    pub sysctls: Vec<(String, String)>,
}

/// One boot's work.
#[derive(Clone, Debug, PartialEq)]
pub struct GuestPlan {
    pub settings: Settings,
    /// `schedlab calibrate` arguments (`--scale 0.2 --repetitions 3`); `None`: no calibration.
    pub calibrate: Option<Vec<String>>,
    /// Repetitions run first and not reported (beyond their exit status).
    pub warmup: u32,
    /// Measured repetitions.
    pub runs: u32,
    /// The workload command line for `schedlab native`.
    pub workload: Vec<String>,
    /// Run schedlab's built-in workers (`native --builtin`) even where the real tool is in the
    /// initramfs. schedlab forks every built-in worker itself and reads its `/proc/<tid>/sched`
    /// as a zombie before reaping it; a real tool forks and reaps its own workers, which
    /// `schedlab native` reads at their `exit`/`exit_group` with its seccomp exit trap
    /// (`native::exit_trap`), as exact, and with the ground truth's binary and command line.
    pub builtin: bool,
    /// Quiet the shell's `wakee_flips`, then take vCPUs 1..N-1 offline and back online, right
    /// before every run (warm-up and measured), from the shell that then starts the benchmark:
    /// the ground truth's harness replugged (`data/ground-truth/qemu-2vcpu`), and this decides
    /// the benchmark's starting `wakee_flips`. fork copies `wakee_flips` and
    /// `wakee_flip_decay_ts` (6.12 `dup_task_struct()`; `__sched_fork()` resets neither), and
    /// each fair task the hotplug wakes from the shell's context (`cpuhp/N` first) is a
    /// `record_wakee()` flip of the shell (6.12 `kernel/sched/fair.c`), so the benchmark starts
    /// with the shell's fresh flips, which decide how soon `wake_wide()` turns `wake_affine()`
    /// off. The agent's shell, busy with its own output, had 62-87 flips by then (measured with
    /// a BTF probe on `sched_waking`), and its hackbench tried `wake_affine()` at 28-40 % of its
    /// wakeups against the ground truth's 5 %; quieted first (`quiet_flips`, about 8 s), 3 %
    /// (docs/vm.md, "The launching shell's wakee_flips").
    pub replug: bool,
    /// Record the scheduler events ([`native::ftrace::EVENTS`]) of every measured run with
    /// ftrace in the guest's top-level tracefs, this many KiB of buffer per vCPU: the events
    /// are enabled once, with vCPUs 1..N-1 offline (enabling a tracepoint patches kernel
    /// text: its static key and static call), `tracing_on` is set around each measured run
    /// only, and the text leaves the guest gzipped and base64-encoded on the agent's port.
    pub trace_kb: Option<u32>,
    /// Start the benchmark in a session of its own (`setsid`), as a login shell starts a
    /// command: with `sched_autogroup_enabled` (Debian's default) the session is a task group
    /// of its own (an autogroup), the case of schedlab's `--autogroup on`. Otherwise it runs in
    /// init's session, the root task group, as the ground truth did.
    pub own_session: bool,
}

/// Single-quotes `s` for the shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn quoted(words: &[impl AsRef<str>]) -> String {
    words.iter().map(|w| quote(w.as_ref())).collect::<Vec<_>>().join(" ")
}

/// The `/init` script for one boot.
pub fn init_script(plan: &GuestPlan) -> String {
    let s = &plan.settings;
    let mut apply = String::new();
    for f in &s.features {
        apply += &format!("setfeat {}\n", quote(f));
    }
    if let Some(p) = &s.preempt {
        apply += &format!("setpreempt {}\n", quote(p));
    }
    for (k, v) in &s.sysctls {
        apply += &format!("setsysctl {} {}\n", quote(k), quote(v));
    }
    let trace = match plan.trace_kb {
        None => "TRACE=\n".to_string(),
        Some(kb) => format!(
            r#"TRACE=1
T=/sys/kernel/debug/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T
[ -w $T/events/sched/sched_switch/enable ] || refuse "--trace: this kernel has no writable sched trace events under $T"
echo 0 > $T/tracing_on
echo {kb} > $T/buffer_size_kb || fail "--trace: $T/buffer_size_kb refused {kb}"
echo mono > $T/trace_clock || fail "--trace: no mono trace clock"
echo 0 > $T/options/overwrite
offline
for e in {events}; do
  echo 1 > $T/events/sched/$e/enable || fail "--trace: enabling sched/$e failed"
done
# The lag probes, where the kernel takes them (BTF tracepoint probes); without them the trace
# has no lag records, and the host says so.
LAGP=1
for p in {probes}; do
  echo "$p" >> $T/dynamic_events 2>/dev/null || LAGP=
done
[ -n "$LAGP" ] && echo 1 > $T/events/schedlab/enable 2>/dev/null || LAGP=
[ -n "$LAGP" ] || say note "--trace: this kernel took no lag probes (BTF tracepoint probes: CONFIG_PROBE_EVENTS_BTF_ARGS); the traces have no lag records"
online
"#,
            events = native::ftrace::EVENTS.join(" "),
            probes = quoted(native::ftrace::LAG_PROBES)
        ),
    };
    let calibrate = match &plan.calibrate {
        None => String::new(),
        Some(args) => format!(
            "schedlab calibrate {} -o /tmp/cost.toml > /tmp/cal.txt 2>&1 || fail \"schedlab calibrate failed: $(tr '\\n' ' ' < /tmp/cal.txt)\"\n\
             sed \"s/^/$M cost /\" /tmp/cost.toml >&3\n",
            quoted(args)
        ),
    };
    format!(
        r#"#!/bin/busybox sh
# schedlab vm guest agent (generated; see crates/vm/src/guest.rs)
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
# The loopback interface: netperf's and pgbench's connections go over 127.0.0.1, and no
# init brings it up here.
ip link set lo up
M={mark}
D={debugfs}
F=$D/features
C=/sys/devices/system/cpu
# The agent's channel: the second serial port (the kernel's messages stay on the first).
# (A failed redirection of `exec` ends the shell, hence the test first.)
OUT=/dev/console
[ -c /dev/ttyS1 ] && OUT=/dev/ttyS1
exec 3> $OUT
say() {{ echo "$M $*" >&3; }}
fail() {{ say error "$*"; say end; poweroff -f; }}
# What the user asked for and this kernel does not have.
refuse() {{ say refused "$*"; say end; poweroff -f; }}
echo "$M begin"
say begin
say release "$(uname -r)"
ALL=$(cat $C/online)
say online "$ALL"
[ -w $F ] || fail "$F is not writable (no CONFIG_SCHED_DEBUG or debugfs locked down)"
say default-features "$(cat $F)"
[ -r $D/preempt ] && say default-preempt "$(cat $D/preempt)"
# vCPUs 1..N-1 offline around a text-patching write, then back and all of them checked.
offline() {{
  for c in $C/cpu[0-9]*; do
    [ "${{c##*/cpu}}" = 0 ] && continue
    echo 0 > $c/online || fail "could not take ${{c##*/}} offline"
  done
}}
online() {{
  for c in $C/cpu[0-9]*; do
    [ "${{c##*/cpu}}" = 0 ] && continue
    echo 1 > $c/online || fail "could not bring ${{c##*/}} back online"
  done
  [ "$(cat $C/online)" = "$ALL" ] || fail "vCPUs did not come back: online $(cat $C/online), expected $ALL"
}}
setfeat() {{
  base=${{1#NO_}}
  grep -qw -e "$base" -e "NO_$base" $F || refuse "unknown feature $1 (this kernel has: $(cat $F))"
  offline
  echo "$1" > $F; rc=$?
  online
  [ $rc = 0 ] || fail "writing $1 to $F failed"
  grep -qw "$1" $F || fail "$1 did not stick: $(cat $F)"
}}
setpreempt() {{
  [ -w $D/preempt ] || refuse "preempt=$1: this kernel cannot switch its preemption model ($D/preempt is missing: no CONFIG_PREEMPT_DYNAMIC)"
  grep -qw "$1" $D/preempt || refuse "preempt=$1: this kernel offers $(cat $D/preempt) only"
  offline
  echo "$1" > $D/preempt; rc=$?
  online
  [ $rc = 0 ] || fail "preempt=$1: writing $D/preempt failed"
  grep -q "($1)" $D/preempt || fail "preempt=$1 did not stick: $(cat $D/preempt)"
}}
# Quiets the shell's wakee_flips before a run: record_wakee() halves a waker's flips when it wakes a
# task more than a second (HZ jiffies) after its last halving, and adds one only for a wakee other
# than its last, so seven writes a little over a second apart to a pipe with one reader take
# any count under 128 to 0 or 1 (kernel/sched/fair.c, 6.12 and 7.3 alike).
quiet_flips() {{
  mkfifo /tmp/quiet 2>/dev/null
  cat /tmp/quiet > /dev/null &
  q=$!
  exec 5> /tmp/quiet
  n=0
  while [ $n -lt 7 ]; do sleep 1.1; echo >&5; n=$((n + 1)); done
  exec 5>&-
  wait $q
}}
setsysctl() {{
  [ -e $D/$1 ] || refuse "$1=$2: this kernel has no $D/$1 (it has: $(ls $D | tr '\n' ' '))"
  echo "$2" > $D/$1 || fail "$1=$2: writing $D/$1 failed"
  [ "$(cat $D/$1)" = "$2" ] || fail "$1=$2 did not stick: $D/$1 reads $(cat $D/$1)"
}}
{apply}# The sched domains and LLCs the kernel built, for the host's check against the preset.
# domains/ is populated only while sched/verbose is on (update_sched_domain_debugfs()), so it
# is turned on for the reading and back to what it was.
V=$(cat $D/verbose 2>/dev/null)
[ "$V" = N ] && echo Y > $D/verbose
for d in $D/domains/cpu*/domain*; do
  [ -r $d/name ] && say sd-name "${{d#$D/domains/}}" "$(cat $d/name)"
done
[ "$V" = N ] && echo N > $D/verbose
sed -n -e 's/^\(cpu[0-9]*\) .*/\1/p' -e 's/^\(domain[0-9]*\) \([A-Z][A-Z]* \)\{{0,1\}}\([0-9a-f,]*\) .*/\1 \3/p' /proc/schedstat | sed "s/^/$M sd /" >&3
for c in $C/cpu[0-9]*; do
  [ -r $c/cache/index3/shared_cpu_list ] && say llc "${{c##*/cpu}}" "$(cat $c/cache/index3/shared_cpu_list)"
done
say features "$(cat $F)"
[ -r $D/preempt ] && say preempt "$(cat $D/preempt)"
for k in base_slice_ns migration_cost_ns nr_migrate tunable_scaling; do
  [ -r $D/$k ] && say sysctl $k "$(cat $D/$k)"
done
{trace}{calibrate}i=1
while [ $i -le {total} ]; do
  if [ $i -le {warmup} ]; then kind=warmup; else kind=run; fi
  # The ground truth's launch: a quiet shell, then a replug right before the benchmark (see
  # GuestPlan::replug); /proc/schedstat after it, since the hotplug rebuilds the sched domains
  # and with them their counters.
  [ {replug} = 1 ] && {{ quiet_flips; offline; online; }}
  cat /proc/schedstat > /tmp/ss0
  traced=0
  [ $kind = run ] && [ -n "$TRACE" ] && {{ echo > $T/trace; echo 1 > $T/tracing_on; traced=1; }}
  {launch}schedlab native --json {builtin}{argv} > /tmp/out.json 2> /tmp/err.txt
  rc=$?
  [ $traced = 1 ] && echo 0 > $T/tracing_on
  cat /proc/schedstat > /tmp/ss1
  sed "s/^/$M stderr $i /" /tmp/err.txt >&3
  say $kind $i rc $rc
  if [ $kind = run ]; then
    say json $i "$(tr -d '\n' < /tmp/out.json)"
    sed "s/^/$M schedstat $i before /" /tmp/ss0 >&3
    sed "s/^/$M schedstat $i after /" /tmp/ss1 >&3
    if [ $traced = 1 ]; then
      lost=0
      for n in $(sed -n -e 's/^overrun: //p' -e 's/^dropped events: //p' $T/per_cpu/cpu*/stats); do lost=$((lost + n)); done
      say trace-lost $i $lost
      gzip -c $T/trace | base64 | sed "s/^/$M trace $i /" >&3
    fi
  fi
  i=$((i + 1))
done
say end
poweroff -f
"#,
        mark = MARK,
        debugfs = SCHED_DEBUGFS,
        total = plan.warmup + plan.runs,
        warmup = plan.warmup,
        argv = quoted(&plan.workload),
        builtin = if plan.builtin { "--builtin " } else { "" },
        replug = u8::from(plan.replug),
        // The benchmark's task group is reported from its own process (`/proc/self/autogroup`
        // is empty for the root group) before it execs schedlab. A child of this
        // (non-interactive) shell leads no process group, so busybox's setsid calls setsid()
        // and execs in place, and the shell waits for the benchmark itself.
        launch = format_args!(
            "{}busybox sh -c 'echo \"$0 group $(cat /proc/self/autogroup 2>/dev/null)\" >&3; exec \"$@\"' \"$M\" ",
            if plan.own_session { "busybox setsid " } else { "" }
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked() {
        assert!(valid_feature_token("NO_WAKEUP_PREEMPTION"));
        assert!(!valid_feature_token("no_x"));
        assert!(!valid_feature_token("A;B"));
        assert!(!valid_feature_token(""));
    }

    fn plan() -> GuestPlan {
        GuestPlan {
            settings: Settings {
                features: vec!["NO_WAKEUP_PREEMPTION".into()],
                preempt: Some("full".into()),
                sysctls: vec![("base_slice_ns".into(), "3000000".into())],
            },
            calibrate: None,
            warmup: 1,
            runs: 3,
            workload: vec!["hackbench".into(), "-p".into(), "it's".into()],
            builtin: true,
            replug: true,
            trace_kb: None,
            own_session: false,
        }
    }

    /// `--session`: the benchmark is started by `setsid`, so it gets a session (and, with
    /// autogroup, a task group) of its own; by default it stays in init's.
    #[test]
    fn own_session_starts_the_benchmark_through_setsid() {
        let mut p = plan();
        let launch = "busybox sh -c 'echo \"$0 group $(cat /proc/self/autogroup 2>/dev/null)\" >&3; exec \"$@\"' \"$M\" \
                      schedlab native --json --builtin 'hackbench'";
        assert!(!init_script(&p).contains("setsid"));
        assert!(init_script(&p).contains(&format!("\n  {launch}")));
        p.own_session = true;
        assert!(init_script(&p).contains(&format!("\n  busybox setsid {launch}")));
    }

    #[test]
    fn script_quotes_the_workload_and_orders_the_writes() {
        let s = init_script(&plan());
        assert!(s.starts_with("#!/bin/busybox sh\n"));
        assert!(s.contains(r"schedlab native --json --builtin 'hackbench' '-p' 'it'\''s' >"));
        assert!(s.contains("-le 4 ]"), "1 warm-up + 3 runs");
        assert!(s.contains("-le 1 ]; then kind=warmup"));
        // Features and the preemption model (hotplug around them) before the sysctls.
        let feat = s.find("setfeat 'NO_WAKEUP_PREEMPTION'\n").unwrap();
        let pre = s.find("setpreempt 'full'\n").unwrap();
        let sys = s.find("setsysctl 'base_slice_ns' '3000000'\n").unwrap();
        assert!(feat < pre && pre < sys);
        assert!(!s.contains("schedlab calibrate"));
        // The quieting and the replug come right before the first /proc/schedstat read and the
        // benchmark.
        let replug =
            s.find("[ 1 = 1 ] && { quiet_flips; offline; online; }\n  cat /proc/schedstat > /tmp/ss0\n").unwrap();
        assert!(sys < replug && replug < s.find("schedlab native").unwrap());
        let mut p = plan();
        p.replug = false;
        assert!(init_script(&p).contains("[ 0 = 1 ] && { quiet_flips; offline; online; }"));
    }

    #[test]
    fn tracing_is_armed_offline_and_on_around_measured_runs_only() {
        let s = init_script(&plan());
        assert!(s.contains("TRACE=\n") && !s.contains("buffer_size_kb"));
        let mut p = plan();
        p.trace_kb = Some(4096);
        let s = init_script(&p);
        let (off, en, on) = (
            s.find("offline\nfor e in sched_switch").unwrap(),
            s.find("echo 1 > $T/events/sched/$e/enable").unwrap(),
            s.find("the traces have no lag records\"\nonline\n").unwrap(),
        );
        assert!(off < en && en < on, "events enabled with vCPUs 1..N-1 offline");
        // The lag probes too (adding a probe patches kernel text as an enable does).
        let probe = s.find("echo \"$p\" >> $T/dynamic_events").unwrap();
        let probes = s.find("'t:schedlab/schedlab_wakeup_lag sched_wakeup pid=p->pid vlag=p->se.vlag'").unwrap();
        assert!(en < probes && probes < probe && probe < on);
        assert!(s.contains("echo 1 > $T/events/schedlab/enable"));
        assert!(s.contains("echo 4096 > $T/buffer_size_kb") && s.contains("echo mono > $T/trace_clock"));
        // On after the replug and the schedstat read, off before the second read.
        let native = s.find("schedlab native").unwrap();
        let start = s.find("echo 1 > $T/tracing_on").unwrap();
        assert!(s.find("cat /proc/schedstat > /tmp/ss0").unwrap() < start && start < native);
        assert!(native < s.find("echo 0 > $T/tracing_on\n  cat /proc/schedstat > /tmp/ss1").unwrap());
        assert!(s.contains(r#"gzip -c $T/trace | base64 | sed "s/^/$M trace $i /" >&3"#));
    }

    #[test]
    fn calibration_is_asked_for() {
        let mut p = plan();
        p.calibrate = Some(vec!["--scale".into(), "0.2".into()]);
        let s = init_script(&p);
        let cal = s.find("schedlab calibrate '--scale' '0.2' -o /tmp/cost.toml").unwrap();
        assert!(cal < s.find("schedlab native").unwrap());
    }
}
