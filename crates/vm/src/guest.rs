//! The guest's `/init`: a busybox shell script that mounts proc/sys/debugfs, applies the
//! variant's scheduler features, runs `schedlab native --json <workload>` once per repetition
//! and prints everything on the serial console as `@@SCHEDLAB` lines, then powers off.
//!
//! Feature writes patch kernel text (static keys, `sched_feat_set` in 6.12
//! `kernel/sched/debug.c` flips `sched_feat_keys[i]`). Under multi-threaded TCG another vCPU
//! can still be executing a translated block that holds the temporary int3 of the text poke,
//! and the guest oopses; so every vCPU but 0 is taken offline around each write and checked
//! to come back (the method of the ground truth in `shared/ground-truth/qemu-2vcpu`).

/// Prefix of every line the host parses; kernel messages never start with it.
pub const MARK: &str = "@@SCHEDLAB";

/// A scheduler feature token as `/sys/kernel/debug/sched/features` accepts it
/// (`NAME` or `NO_NAME`, the names of the kernel's `features.h`).
pub fn valid_feature_token(t: &str) -> bool {
    !t.is_empty() && t.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Single-quotes `s` for the shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The `/init` script for one boot. `features` are already-validated tokens.
pub fn init_script(features: &[String], runs: u32, workload: &[String]) -> String {
    let argv: Vec<String> = workload.iter().map(|a| quote(a)).collect();
    let feats: Vec<String> = features.iter().map(|f| quote(f)).collect();
    format!(
        r#"#!/bin/busybox sh
# schedlab vm guest agent (generated; see crates/vm/src/guest.rs)
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
M={mark}
F=/sys/kernel/debug/sched/features
C=/sys/devices/system/cpu
fail() {{ echo "$M error $*"; echo "$M end"; poweroff -f; }}
echo "$M begin"
echo "$M release $(uname -r)"
ALL=$(cat $C/online)
echo "$M online $ALL"
[ -w $F ] || fail "$F is not writable (no CONFIG_SCHED_DEBUG or debugfs locked down)"
echo "$M default-features $(cat $F)"
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
  grep -qw -e "$base" -e "NO_$base" $F || fail "unknown feature $1 (this kernel has: $(cat $F))"
  offline
  echo "$1" > $F; rc=$?
  online
  [ $rc = 0 ] || fail "writing $1 to $F failed"
  grep -qw "$1" $F || fail "$1 did not stick: $(cat $F)"
}}
{setfeats}echo "$M features $(cat $F)"
i=1
while [ $i -le {runs} ]; do
  schedlab native --json {argv} > /tmp/out.json 2> /tmp/err.txt
  rc=$?
  echo "$M run $i rc $rc"
  sed "s/^/$M stderr $i /" /tmp/err.txt
  echo "$M json $i $(tr -d '\n' < /tmp/out.json)"
  i=$((i + 1))
done
echo "$M end"
poweroff -f
"#,
        mark = MARK,
        setfeats = if feats.is_empty() {
            String::new()
        } else {
            format!("for f in {}; do setfeat \"$f\"; done\n", feats.join(" "))
        },
        runs = runs,
        argv = argv.join(" "),
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

    #[test]
    fn script_quotes_the_workload_and_lists_features() {
        let s = init_script(&["NO_WAKEUP_PREEMPTION".into()], 3, &["hackbench".into(), "-p".into(), "it's".into()]);
        assert!(s.contains("for f in 'NO_WAKEUP_PREEMPTION'; do setfeat"));
        assert!(s.contains(r"schedlab native --json 'hackbench' '-p' 'it'\''s' >"));
        assert!(s.contains("-le 3 ]"));
        assert!(s.starts_with("#!/bin/busybox sh\n"));
    }
}
