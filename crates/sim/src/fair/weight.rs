//! Load weights and the wall-to-virtual time conversion (kernel/sched/core.c, fair.c, sched.h
//! v7.3.4).

/// `SCHED_FIXEDPOINT_SHIFT`: 64-bit kernels carry 10 extra bits of weight resolution.
pub const SCHED_FIXEDPOINT_SHIFT: u32 = 10;
/// `NICE_0_LOAD` on 64-bit: `1024 << 10`.
pub const NICE_0_LOAD: u64 = 1 << 20;
/// `WEIGHT_IDLEPRIO`: the weight of a SCHED_IDLE task, before scaling.
pub const WEIGHT_IDLEPRIO: u64 = 3;

/// `sched_prio_to_weight[]` (kernel/sched/core.c), nice -20 .. +19.
pub const SCHED_PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, // -20
    29154, 23254, 18705, 14949, 11916, // -15
    9548, 7620, 6100, 4904, 3906, // -10
    3121, 2501, 1991, 1586, 1277, // -5
    1024, 820, 655, 526, 423, // 0
    335, 272, 215, 172, 137, // 5
    110, 87, 70, 56, 45, // 10
    36, 29, 23, 18, 15, // 15
];

/// `sched_prio_to_wmult[]` (kernel/sched/core.c): `2^32 / weight`, for the multiply-shift form.
pub const SCHED_PRIO_TO_WMULT: [u64; 40] = [
    48388, 59856, 76040, 92818, 118348, 147320, 184698, 229616, 287308, 360437, 449829, 563644, 704093, 875809,
    1099582, 1376151, 1717300, 2157191, 2708050, 3363326, 4194304, 5237765, 6557202, 8165337, 10153587, 12820798,
    15790321, 19976592, 24970740, 31350126, 39045157, 49367440, 61356676, 76695844, 95443717, 119304647, 148102320,
    186737708, 238609294, 286331153,
];

/// `scale_load()` (kernel/sched/sched.h v7.3.4).
pub const fn scale_load(w: u64) -> u64 {
    w << SCHED_FIXEDPOINT_SHIFT
}

/// `scale_load_down()` (kernel/sched/sched.h v7.3.4): never below 2 for a non-zero weight.
pub const fn scale_load_down(w: u64) -> u64 {
    if w == 0 {
        0
    } else {
        let d = w >> SCHED_FIXEDPOINT_SHIFT;
        if d < 2 { 2 } else { d }
    }
}

/// The scaled load weight of a SCHED_NORMAL/BATCH task at `nice` (`set_load_weight()`, core.c).
pub fn nice_to_weight(nice: i32) -> u64 {
    assert!((-20..=19).contains(&nice), "nice {nice} out of range");
    scale_load(SCHED_PRIO_TO_WEIGHT[(nice + 20) as usize])
}

/// The inverse weight of `nice` for the multiply-shift `__calc_delta` (pre-7.x, 32-bit).
pub fn nice_to_wmult(nice: i32) -> u64 {
    SCHED_PRIO_TO_WMULT[(nice + 20) as usize]
}

/// How `calc_delta_fair` divides: 7.2+ 64-bit kernels divide exactly; 6.12 and 32-bit kernels
/// use the multiply-shift with a precomputed inverse (results differ by at most 1 ns per call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CalcDelta {
    Div,
    MulShift,
}

/// `calc_delta_fair()` (kernel/sched/fair.c v7.3.4): wall ns to virtual ns for weight `w`.
///
/// The kernel forms `delta * NICE_0_LOAD` in u64; u128 is identical for every delta below 2^44 ns,
/// which all call sites respect.
#[inline]
pub fn calc_delta_fair(delta: u64, w: u64, mode: CalcDelta) -> u64 {
    if w == NICE_0_LOAD {
        return delta;
    }
    match mode {
        CalcDelta::Div => mul_div(delta, NICE_0_LOAD, w),
        CalcDelta::MulShift => calc_delta_mulshift(delta, NICE_0_LOAD, w),
    }
}

/// `a * b / c`, truncating: in u64 where the product fits (as the kernel computes it; a u128
/// division is a library call), in u128 otherwise. The same value either way.
#[inline]
pub fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => (u128::from(a) * u128::from(b) / u128::from(c)) as u64,
    }
}

/// `__calc_delta()` multiply-shift form (kernel/sched/fair.c v6.12): `delta * weight / lw`.
pub fn calc_delta_mulshift(delta: u64, weight: u64, lw: u64) -> u64 {
    let lw_down = scale_load_down(lw);
    let inv: u64 = if lw_down >= 0xFFFF_FFFF {
        1
    } else if lw_down == 0 {
        0xFFFF_FFFF
    } else {
        // The kernel caches sched_prio_to_wmult[] for task weights; for those weights the
        // table equals 2^32/w rounded as below, except where the table was rounded by hand.
        prio_wmult(lw_down).unwrap_or(0xFFFF_FFFF / lw_down)
    };
    let mut fact = scale_load_down(weight);
    let mut shift: u32 = 32;
    // fact_hi handling of __calc_delta: shrink until the 32-bit factor times inv fits 64 bits.
    let mut fact_hi = fact >> 32;
    if fact_hi != 0 {
        let fs = 64 - fact_hi.leading_zeros();
        shift -= fs;
        fact >>= fs;
    }
    fact = fact.wrapping_mul(inv);
    fact_hi = fact >> 32;
    if fact_hi != 0 {
        let fs = 64 - fact_hi.leading_zeros();
        shift -= fs;
        fact >>= fs;
    }
    ((u128::from(delta) * u128::from(fact)) >> shift) as u64
}

fn prio_wmult(w_down: u64) -> Option<u64> {
    SCHED_PRIO_TO_WEIGHT.iter().position(|&w| w == w_down).map(|i| SCHED_PRIO_TO_WMULT[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec §3.18 example 1: vslice by nice for the 2.8 ms base slice.
    #[test]
    fn vslice_by_nice() {
        let d = 2_800_000;
        assert_eq!(calc_delta_fair(d, nice_to_weight(0), CalcDelta::Div), 2_800_000);
        assert_eq!(calc_delta_fair(d, nice_to_weight(1), CalcDelta::Div), 3_496_585);
        assert_eq!(calc_delta_fair(d, nice_to_weight(-1), CalcDelta::Div), 2_245_262);
        assert_eq!(calc_delta_fair(d, nice_to_weight(-3), CalcDelta::Div), 1_440_080);
    }

    #[test]
    fn mulshift_within_one_ns_of_division() {
        for nice in -20..=19 {
            for d in [1u64, 999, 700_000, 2_800_000, 4_000_000, 123_456_789] {
                let w = nice_to_weight(nice);
                let a = calc_delta_fair(d, w, CalcDelta::Div);
                let b = calc_delta_fair(d, w, CalcDelta::MulShift);
                assert!(a.abs_diff(b) <= 1 + a / 1_000_000, "nice {nice} d {d}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn scale_load_down_floors_at_two() {
        assert_eq!(scale_load_down(0), 0);
        assert_eq!(scale_load_down(1), 2);
        assert_eq!(scale_load_down(scale_load(15)), 15);
        assert_eq!(nice_to_weight(0), NICE_0_LOAD);
    }
}
