//! `/proc/schedstat` (`show_schedstat()` in `kernel/sched/stats.c`), decoded per version, and
//! the system-wide deltas around one run.
//!
//! Formats (Documentation/scheduler/sched-stats.rst): a `version N` line, a `timestamp` line,
//! then per CPU a `cpuN` line with 9 counters (yld_count, a legacy 0, sched_count,
//! sched_goidle, ttwu_count, ttwu_local, rq_cpu_time, run_delay, pcount) followed by one
//! `domainN` line per sched domain: the CPU mask, the `sched_balance_rq()` counters for each
//! of the three idle types, then alb_count/failed/pushed, three unused sbe and three unused
//! sbf fields, and ttwu_wake_remote, ttwu_move_affine, ttwu_move_balance.
//! - v15: idle types in the order CPU_IDLE, busy, newly idle; 8 counters each
//!   (count, balanced, failed, imbalance, gained, hot_gained, nobusyq, nobusyg).
//! - v16 (e.g. 6.12.117): the same fields, busy first (`enum cpu_idle_type`
//!   reordered: __CPU_NOT_IDLE, CPU_IDLE, CPU_NEWLY_IDLE).
//! - v17 (e.g. 7.3.4): the domain's name after `domainN`; 11 counters per idle type
//!   (lb_imbalance split into load, util, task and misfit).

/// The totals a snapshot is summed into: the model keeps the same ones (`sim::schedstat`).
pub use sim::schedstat::{Balance, Totals};

/// One snapshot: its version and the totals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub version: u32,
    pub totals: Totals,
}

/// Parses one `/proc/schedstat` text (versions 15, 16, 17; others are an error naming them).
pub fn parse(lines: &[String]) -> Result<Snapshot, String> {
    let version: u32 = lines
        .iter()
        .find_map(|l| l.strip_prefix("version "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or("no `version` line")?;
    let (per_type, named, order) = match version {
        // Column position of busy, idle, newly idle.
        15 => (8, false, [1, 0, 2]),
        16 => (8, false, [0, 1, 2]),
        17 => (11, true, [0, 1, 2]),
        v => return Err(format!("schedstat version {v} is not decoded (15, 16 and 17 are)")),
    };
    // Within one idle type's group: count, balanced, failed, then (after the imbalance
    // fields) gained and hot_gained.
    let gained_at = if version >= 17 { 7 } else { 4 };
    let mut t = Totals::default();
    for l in lines {
        let w: Vec<&str> = l.split_whitespace().collect();
        let Some(first) = w.first() else { continue };
        let nums = |from: usize| -> Result<Vec<u64>, String> {
            w[from.min(w.len())..].iter().map(|x| x.parse::<u64>().map_err(|_| format!("`{x}` in `{l}`"))).collect()
        };
        if first.starts_with("cpu") {
            let n = nums(1)?;
            if n.len() < 6 {
                return Err(format!("short cpu line `{l}`"));
            }
            t.sched_count += n[2];
            t.sched_goidle += n[3];
            t.ttwu_count += n[4];
            t.ttwu_local += n[5];
        } else if first.starts_with("domain") {
            // domainN [name] cpumask counters...
            let n = nums(if named { 3 } else { 2 })?;
            let want = 3 * per_type + 12;
            if n.len() != want {
                return Err(format!("domain line with {} counters, version {version} has {want}: `{l}`", n.len()));
            }
            for (ty, &col) in order.iter().enumerate() {
                let g = &n[col * per_type..(col + 1) * per_type];
                let b = &mut t.balance[ty];
                b.count += g[0];
                b.balanced += g[1];
                b.failed += g[2];
                b.gained += g[gained_at];
                b.hot_gained += g[gained_at + 1];
            }
            let tail = &n[3 * per_type..];
            t.alb_pushed += tail[2];
            t.ttwu_wake_remote += tail[9];
            t.ttwu_move_affine += tail[10];
        }
    }
    Ok(Snapshot { version, totals: t })
}

/// `after - before`, counter by counter (wrapping: the counters are unsigned and only grow).
pub fn delta(before: &Snapshot, after: &Snapshot) -> Result<Totals, String> {
    if before.version != after.version {
        return Err("schedstat version changed between snapshots".into());
    }
    let (a, b) = (&after.totals, &before.totals);
    let mut balance = [Balance::default(); 3];
    for (i, x) in balance.iter_mut().enumerate() {
        let (p, q) = (a.balance[i], b.balance[i]);
        *x = Balance {
            count: p.count.wrapping_sub(q.count),
            balanced: p.balanced.wrapping_sub(q.balanced),
            failed: p.failed.wrapping_sub(q.failed),
            gained: p.gained.wrapping_sub(q.gained),
            hot_gained: p.hot_gained.wrapping_sub(q.hot_gained),
        };
    }
    Ok(Totals {
        sched_count: a.sched_count.wrapping_sub(b.sched_count),
        sched_goidle: a.sched_goidle.wrapping_sub(b.sched_goidle),
        ttwu_count: a.ttwu_count.wrapping_sub(b.ttwu_count),
        ttwu_local: a.ttwu_local.wrapping_sub(b.ttwu_local),
        balance,
        alb_pushed: a.alb_pushed.wrapping_sub(b.alb_pushed),
        ttwu_wake_remote: a.ttwu_wake_remote.wrapping_sub(b.ttwu_wake_remote),
        ttwu_move_affine: a.ttwu_move_affine.wrapping_sub(b.ttwu_move_affine),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Vec<String> {
        s.lines().map(String::from).collect()
    }

    /// A domain line: `per_type` counters per idle type, each group `k*10 + i`, then the tail.
    fn domain(prefix: &str, per_type: usize) -> String {
        let mut f: Vec<String> = (0..3).flat_map(|k| (0..per_type).map(move |i| (k * 100 + i).to_string())).collect();
        f.extend((1..=12).map(|i| (1000 + i).to_string()));
        format!("{prefix} {}", f.join(" "))
    }

    #[test]
    fn versions_are_decoded_with_their_columns() {
        let cpu = "cpu0 0 0 50 20 40 30 999 888 77\ncpu1 0 0 50 20 40 30 999 888 77\n";
        // v16: busy first, 8 per type: gained is field 4.
        let v16 = format!("version 16\ntimestamp 1\n{cpu}{}\n", domain("domain0 03", 8));
        let s = parse(&l(&v16)).unwrap();
        assert_eq!(s.version, 16);
        assert_eq!(
            (s.totals.sched_count, s.totals.sched_goidle, s.totals.ttwu_count, s.totals.ttwu_local),
            (100, 40, 80, 60)
        );
        assert_eq!(s.totals.balance[0], Balance { count: 0, balanced: 1, failed: 2, gained: 4, hot_gained: 5 });
        assert_eq!(s.totals.balance[2].count, 200);
        assert_eq!((s.totals.alb_pushed, s.totals.ttwu_wake_remote, s.totals.ttwu_move_affine), (1003, 1010, 1011));
        // v15: the idle group comes first.
        let v15 = format!("version 15\ntimestamp 1\n{cpu}{}\n", domain("domain0 03", 8));
        let s = parse(&l(&v15)).unwrap();
        assert_eq!((s.totals.balance[0].count, s.totals.balance[1].count), (100, 0));
        // v17: a name and 11 per type: gained is field 7.
        let v17 = format!("version 17\ntimestamp 1\n{cpu}{}\n", domain("domain0 MC 03", 11));
        let s = parse(&l(&v17)).unwrap();
        assert_eq!(
            s.totals.balance[1],
            Balance { count: 100, balanced: 101, failed: 102, gained: 107, hot_gained: 108 }
        );
        assert_eq!(s.totals.ttwu_move_affine, 1011);
        // A v16 line read as v17 is refused, not misread.
        let bad = format!("version 17\n{}\n", domain("domain0 MC 03", 8));
        assert!(parse(&l(&bad)).unwrap_err().contains("version 17 has 45"));
        assert!(parse(&l("version 18\n")).unwrap_err().contains("version 18"));
    }

    #[test]
    fn deltas_subtract() {
        let a = parse(&l("version 16\ncpu0 0 0 10 5 8 4 0 0 0\n")).unwrap();
        let b = parse(&l("version 16\ncpu0 0 0 25 6 18 9 0 0 0\n")).unwrap();
        let d = delta(&a, &b).unwrap();
        assert_eq!((d.sched_count, d.sched_goidle, d.ttwu_count, d.ttwu_local), (15, 1, 10, 5));
        assert_eq!(d.named()[0], ("sched_count", 15));
    }
}
