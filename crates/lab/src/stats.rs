//! Summary statistics and the two t-tests the comparison tables use.
//!
//! - Quantiles interpolate linearly between order statistics (Hyndman & Fan type 7, R's and
//!   NumPy's default): `q(p) = x[h] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])` with `h = (n − 1)·p`
//!   over the sorted sample, 0-based. The median is `q(0.5)`, the IQR `q(0.75) − q(0.25)`.
//! - `%stddev` is the coefficient of variation, `100·s/x̄` with the sample standard deviation
//!   (n − 1), as mmtests prints it.
//! - [`paired_t`] is Student's paired t-test on per-seed differences (one-sample t-test of the
//!   differences against 0): the right test under common random numbers.
//! - [`welch_t`] is Welch's unequal-variances t-test, for samples that share no seeds.
//!
//! Both p-values are two-sided, from the Student t distribution of `statrs`.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Summary of one sample.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub q1: f64,
    pub q3: f64,
    /// Sample standard deviation (n − 1); 0 for fewer than two values.
    pub stddev: f64,
    /// Coefficient of variation in percent (`100·stddev/mean`); 0 when the mean is 0.
    pub stddev_pct: f64,
}

impl Summary {
    /// Summarises `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = mean(values);
        let stddev = stddev(values);
        Some(Summary {
            n: values.len(),
            mean,
            median: quantile_sorted(&sorted, 0.5),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            q1: quantile_sorted(&sorted, 0.25),
            q3: quantile_sorted(&sorted, 0.75),
            stddev,
            stddev_pct: if mean == 0.0 { 0.0 } else { 100.0 * stddev / mean.abs() },
        })
    }

    pub fn iqr(&self) -> f64 {
        self.q3 - self.q1
    }
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() { f64::NAN } else { values.iter().sum::<f64>() / values.len() as f64 }
}

/// Sample standard deviation (divides by n − 1); 0 for fewer than two values.
pub fn stddev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    (values.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (values.len() - 1) as f64).sqrt()
}

/// The median (mean of the two middle values for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

/// The type-7 quantile of `values` at `p` in [0, 1]; NaN when empty.
pub fn quantile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantile_sorted(&sorted, p)
}

fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Which test produced a p-value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    /// Paired t-test on per-seed differences (variant − base), seeds common to both arms.
    PairedT,
    /// Welch's two-sample t-test (the arms share fewer than 3 seeds).
    WelchT,
}

/// A two-sided t-test result.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TTest {
    pub kind: TestKind,
    /// Pairs (paired) or the smaller sample size (Welch).
    pub n: usize,
    /// Mean difference, second sample minus first (variant − base).
    pub mean_diff: f64,
    pub t: f64,
    pub df: f64,
    pub p: f64,
    /// The two-sided 95 % confidence interval of `mean_diff`: `mean_diff ± t(0.975, df)·se`
    /// (a point when the standard error is 0).
    pub ci95: [f64; 2],
}

/// Student's paired t-test of `after[i] − before[i]` against 0, two-sided. Needs at least two
/// pairs of equal-length samples.
///
/// When every difference is the same (zero variance), the test degenerates: p = 1 if the
/// differences are all zero, p = 0 otherwise (a deterministic simulator does produce exactly
/// constant shifts).
pub fn paired_t(before: &[f64], after: &[f64]) -> Option<TTest> {
    if before.len() != after.len() || before.len() < 2 {
        return None;
    }
    let d: Vec<f64> = before.iter().zip(after).map(|(b, a)| a - b).collect();
    let n = d.len();
    let mean_diff = mean(&d);
    let df = (n - 1) as f64;
    let se = stddev(&d) / (n as f64).sqrt();
    let (t, p) = t_and_p(mean_diff, se, df)?;
    let ci95 = ci95(mean_diff, se, df)?;
    Some(TTest { kind: TestKind::PairedT, n, mean_diff, t, df, p, ci95 })
}

/// Welch's t-test of `b` against `a` (t > 0 when b's mean is larger), two-sided, with the
/// Welch–Satterthwaite degrees of freedom (not rounded down). Needs two values in each sample.
pub fn welch_t(a: &[f64], b: &[f64]) -> Option<TTest> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (stddev(a).powi(2) / na, stddev(b).powi(2) / nb);
    let mean_diff = mean(b) - mean(a);
    let se = (va + vb).sqrt();
    let df =
        if va + vb == 0.0 { na + nb - 2.0 } else { (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0)) };
    let (t, p) = t_and_p(mean_diff, se, df)?;
    let ci95 = ci95(mean_diff, se, df)?;
    Some(TTest { kind: TestKind::WelchT, n: a.len().min(b.len()), mean_diff, t, df, p, ci95 })
}

/// t = diff/se and its two-sided p-value; a zero standard error gives t = ±∞, p = 0, or t = 0,
/// p = 1 when the difference is zero too.
fn t_and_p(diff: f64, se: f64, df: f64) -> Option<(f64, f64)> {
    if !diff.is_finite() || !se.is_finite() || df.is_nan() || df <= 0.0 {
        return None;
    }
    if se == 0.0 {
        return Some(if diff == 0.0 { (0.0, 1.0) } else { (diff.signum() * f64::INFINITY, 0.0) });
    }
    let t = diff / se;
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    // sf(|t|) rather than 1 − cdf(|t|): keeps small p-values exact.
    let p = (2.0 * dist.sf(t.abs())).min(1.0);
    Some((t, p))
}

/// `diff ± t(0.975, df)·se`, the two-sided 95 % interval of a t statistic's numerator.
fn ci95(diff: f64, se: f64, df: f64) -> Option<[f64; 2]> {
    if se == 0.0 {
        return Some([diff, diff]);
    }
    let half = StudentsT::new(0.0, 1.0, df).ok()?.inverse_cdf(0.975) * se;
    Some([diff - half, diff + half])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_interval_matches_r() {
        // R: t.test(c(2,4,3,5,6), c(1,2,3,4,5), paired = TRUE):
        // mean difference 1, t = 3.1623, df = 4, p = 0.03411, 95 % CI 0.122011 .. 1.877989
        // (1 -/+ qt(0.975, 4) * sqrt(0.5/5) = 1 -/+ 2.776445 * 0.3162278).
        let t = paired_t(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 3.0, 5.0, 6.0]).unwrap();
        assert!((t.t - 3.162278).abs() < 1e-5, "{t:?}");
        assert!((t.p - 0.03411).abs() < 1e-4, "{t:?}");
        assert!((t.ci95[0] - 0.122011).abs() < 1e-6 && (t.ci95[1] - 1.877989).abs() < 1e-6, "{t:?}");
        let same = paired_t(&[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0]).unwrap();
        assert_eq!((same.p, same.ci95), (0.0, [1.0, 1.0]));
    }

    #[test]
    fn quantiles_type_7() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        // R: quantile(1:10) → 1, 3.25, 5.5, 7.75, 10.
        let s = Summary::of(&v).unwrap();
        assert_eq!((s.min, s.q1, s.median, s.q3, s.max), (1.0, 3.25, 5.5, 7.75, 10.0));
        assert_eq!(s.iqr(), 4.5);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
        assert!(median(&[]).is_nan());
        assert!(Summary::of(&[]).is_none());
    }
}
