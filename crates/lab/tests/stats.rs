//! The statistics against published values: R's `t.test` on Student's sleep data (Cushny &
//! Peebles), the three Welch examples of the Wikipedia article "Welch's t-test" (values to 3
//! significant digits there; the digits below are R's / SciPy's), and statrs' one-sample test.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use lab::stats::{Summary, TestKind, median, paired_t, quantile, welch_t};
use statrs::stats_tests::ttest_onesample::ttest_onesample;
use statrs::stats_tests::{Alternative, NaNPolicy};

/// `sleep$extra` for group 1 and group 2 (the same ten patients).
const SLEEP_1: [f64; 10] = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
const SLEEP_2: [f64; 10] = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// R: `t.test(sleep2, sleep1, paired = TRUE)`: t = 4.0621, df = 9, p-value = 0.002833.
#[test]
fn paired_t_on_the_sleep_data() {
    let t = paired_t(&SLEEP_1, &SLEEP_2).unwrap();
    assert_eq!(t.kind, TestKind::PairedT);
    assert_eq!(t.n, 10);
    assert!(close(t.mean_diff, 1.58, 1e-12), "{t:?}");
    assert!(close(t.t, 4.062127683382037, 1e-9), "{t:?}");
    assert_eq!(t.df, 9.0);
    assert!(close(t.p, 0.002832890197384273, 1e-9), "{t:?}");
    // Swapping the arms flips the sign only.
    let r = paired_t(&SLEEP_2, &SLEEP_1).unwrap();
    assert!(close(r.t, -t.t, 1e-12) && close(r.p, t.p, 1e-15));
}

/// The paired test is the one-sample test of the differences: statrs agrees.
#[test]
fn paired_t_matches_statrs_one_sample() {
    let d: Vec<f64> = SLEEP_1.iter().zip(SLEEP_2).map(|(a, b)| b - a).collect();
    let (t, p) = ttest_onesample(d, 0.0, Alternative::TwoSided, NaNPolicy::Error).unwrap();
    let ours = paired_t(&SLEEP_1, &SLEEP_2).unwrap();
    assert!(close(ours.t, t, 1e-12) && close(ours.p, p, 1e-12), "{ours:?} vs t={t} p={p}");
}

/// R: `t.test(sleep2, sleep1)` (Welch): t = 1.8608, df = 17.776, p-value = 0.07939.
#[test]
fn welch_on_the_sleep_data() {
    let t = welch_t(&SLEEP_1, &SLEEP_2).unwrap();
    assert_eq!(t.kind, TestKind::WelchT);
    assert!(close(t.t, 1.8608134674868526, 1e-9), "{t:?}");
    assert!(close(t.df, 17.776473516178488, 1e-9), "{t:?}");
    assert!(close(t.p, 0.0793941401873583, 1e-9), "{t:?}");
}

/// Wikipedia, "Welch's t-test", examples 1-3 (t, ν, p): (−2.46, 25.0, 0.021),
/// (−1.57, 9.9, 0.149), (−2.22, 24.5, 0.036).
#[test]
fn welch_on_the_textbook_examples() {
    // (A1, A2, t, ν, p)
    type Case<'a> = (&'a [f64], &'a [f64], f64, f64, f64);
    let cases: [Case; 3] = [
        (
            &[27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4],
            &[27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4],
            -2.455356398286006,
            24.988529290231416,
            0.021378001462866992,
        ),
        (
            &[17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8],
            &[
                21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5, 23.6, 21.5, 22.5,
                23.5, 21.5, 21.8,
            ],
            -1.5654335235985037,
            9.904741248650831,
            0.14884169660532817,
        ),
        (
            &[19.8, 20.4, 19.6, 17.8, 18.5, 18.9, 18.3, 18.9, 19.5, 22.0],
            &[
                28.2, 26.6, 20.1, 23.3, 25.2, 22.1, 17.7, 27.6, 20.6, 13.7, 23.2, 17.5, 20.6, 18.0, 23.9, 21.6, 24.3,
                20.4, 23.9, 13.3,
            ],
            -2.225512039969852,
            24.524634944257343,
            0.035484530830010394,
        ),
    ];
    for (i, (a1, a2, t, df, p)) in cases.into_iter().enumerate() {
        // The article's t is A1 − A2; welch_t(a, b) reports b − a.
        let r = welch_t(a2, a1).unwrap();
        assert!(close(r.t, t, 1e-9) && close(r.df, df, 1e-9) && close(r.p, p, 1e-9), "example {}: {r:?}", i + 1);
        assert_eq!(r.n, a1.len().min(a2.len()));
    }
}

/// Degenerate samples: a constant shift is certain, no shift is no evidence, too few values is
/// no test.
#[test]
fn degenerate_samples() {
    let t = paired_t(&[1.0, 2.0, 3.0], &[1.5, 2.5, 3.5]).unwrap();
    assert_eq!((t.p, t.t), (0.0, f64::INFINITY));
    let t = paired_t(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).unwrap();
    assert_eq!((t.p, t.t), (1.0, 0.0));
    assert!(paired_t(&[1.0], &[2.0]).is_none());
    assert!(paired_t(&[1.0, 2.0], &[2.0]).is_none());
    assert!(welch_t(&[1.0], &[2.0, 3.0]).is_none());
    let w = welch_t(&[5.0, 5.0, 5.0], &[5.0, 5.0, 5.0]).unwrap();
    assert_eq!(w.p, 1.0);
}

/// Medians, quartiles (type 7, R's default: `quantile(1:10)` = 1, 3.25, 5.5, 7.75, 10) and the
/// coefficient of variation.
#[test]
fn summaries() {
    let v: Vec<f64> = (1..=10).rev().map(f64::from).collect();
    let s = Summary::of(&v).unwrap();
    assert_eq!((s.n, s.min, s.q1, s.median, s.q3, s.max), (10, 1.0, 3.25, 5.5, 7.75, 10.0));
    assert_eq!(s.iqr(), 4.5);
    assert_eq!(s.mean, 5.5);
    // sd(1:10) = 3.02765; CoeffVar = 100 * sd / mean.
    assert!(close(s.stddev, 3.0276503540974917, 1e-12));
    assert!(close(s.stddev_pct, 100.0 * 3.0276503540974917 / 5.5, 1e-9));
    assert_eq!(median(&[2.0, 9.0, 4.0]), 4.0);
    assert_eq!(median(&[2.0, 9.0, 4.0, 1.0]), 3.0);
    assert_eq!(quantile(&[10.0, 20.0], 0.25), 12.5);
    let one = Summary::of(&[4.0]).unwrap();
    assert_eq!((one.median, one.q1, one.q3, one.stddev, one.stddev_pct), (4.0, 4.0, 4.0, 0.0, 0.0));
}
