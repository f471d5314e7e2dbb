//! Reading the run-wide latency histograms.
//!
//! `sim::stats::LatencyHistogram` exposes p50/p90/p99/max and the sample count. Tools that print
//! other quantiles (schbench's p20 and p99.9, its `min=`) get them through [`Quantiles`], which
//! falls back to the nearest bound the histogram offers: p20 → p50 (an upper bound), p99.9 →
//! max (an upper bound), min → 0 ("unknown"). When the histogram type gains
//! `value_at_quantile`/`min`, only this file changes.

use sim::stats::LatencyHistogram;

/// Quantiles of a latency histogram, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Quantiles {
    pub(crate) count: u64,
    pub(crate) p50: u64,
    pub(crate) p90: u64,
    pub(crate) p99: u64,
    pub(crate) max: u64,
}

impl Quantiles {
    pub(crate) fn of(h: Option<&LatencyHistogram>) -> Quantiles {
        let Some(h) = h else { return Quantiles::default() };
        let p = h.percentiles();
        Quantiles { count: p.count, p50: p.p50, p90: p.p90, p99: p.p99, max: p.max }
    }

    /// The value at percentile `pct` (0–100), exact for 50, 90, 99 and 100.
    pub(crate) fn at(&self, pct: f64) -> u64 {
        if pct <= 50.0 {
            self.p50
        } else if pct <= 90.0 {
            self.p90
        } else if pct <= 99.0 {
            self.p99
        } else {
            self.max
        }
    }

    /// The smallest sample, when known (0 otherwise).
    pub(crate) fn min(&self) -> u64 {
        0
    }
}
