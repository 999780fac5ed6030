//! Latency statistics in perftest's shape (`ib_*_lat`'s t_min, t_max, t_typical, t_avg,
//! t_stdev, 99% and 99.9% percentiles), kept in an HdrHistogram of NIC cycles.
use hdrhistogram::Histogram;
use rnic_contract::CORE_CLOCK_MHZ;
use serde::Serialize;

/// Significant decimal digits the histogram keeps: every value below 2^18 cycles (about 1 ms
/// at 250 MHz) is recorded exactly, larger ones to 1 part in 10^5.
const SIGFIG: u8 = 5;

/// Samples of a latency, in NIC cycles (integers), with a `scale` applied when reported:
/// 1 for a one-way measure (READ: post to completion), 0.5 for a ping-pong round trip that is
/// reported as half (perftest's WRITE and SEND latency: `RTT / 2`).
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    scale: f64,
}

/// The summary of a [`LatencyHistogram`], in cycles (already scaled) and µs at
/// [`CORE_CLOCK_MHZ`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Samples recorded.
    pub samples: u64,
    /// Smallest sample, cycles.
    pub min: f64,
    /// Largest sample, cycles.
    pub max: f64,
    /// Median (perftest's t_typical), cycles: the smallest sample at or above half of them.
    pub typical: f64,
    /// Mean, cycles.
    pub avg: f64,
    /// Standard deviation (population), cycles.
    pub stdev: f64,
    /// 99th percentile, cycles: the smallest sample at or above 99 % of them.
    pub p99: f64,
    /// 99.9th percentile, cycles.
    pub p99_9: f64,
}

impl LatencySummary {
    /// `cycles` at [`CORE_CLOCK_MHZ`], in µs.
    pub fn us(cycles: f64) -> f64 {
        cycles / CORE_CLOCK_MHZ as f64
    }
}

/// The latency figures every latency report carries (`rnic perf *-lat`, in-process or one
/// side of a two-process run): perftest's columns in µs at [`CORE_CLOCK_MHZ`], the same
/// distribution in cycles, and the clock. Serialized flat into its report, with the keys
/// `t_min_us`, `t_max_us`, `t_typical_us`, `t_avg_us`, `t_stdev_us`, `p99_us`, `p99_9_us`,
/// `cycles` and `clock_mhz` (issue 15's JSON keys).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencyStats {
    /// Smallest latency, µs.
    pub t_min_us: f64,
    /// Largest latency, µs.
    pub t_max_us: f64,
    /// Median latency (perftest's t_typical), µs.
    pub t_typical_us: f64,
    /// Mean latency, µs.
    pub t_avg_us: f64,
    /// Standard deviation, µs.
    pub t_stdev_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p99_9_us: f64,
    /// The same distribution in NIC cycles.
    pub cycles: LatencySummary,
    /// Clock the µs figures use, MHz.
    pub clock_mhz: u64,
}

impl From<LatencySummary> for LatencyStats {
    /// The figures of `c` in µs at [`CORE_CLOCK_MHZ`] beside `c` itself.
    fn from(c: LatencySummary) -> Self {
        let us = LatencySummary::us;
        Self {
            t_min_us: us(c.min),
            t_max_us: us(c.max),
            t_typical_us: us(c.typical),
            t_avg_us: us(c.avg),
            t_stdev_us: us(c.stdev),
            p99_us: us(c.p99),
            p99_9_us: us(c.p99_9),
            cycles: c,
            clock_mhz: CORE_CLOCK_MHZ,
        }
    }
}

impl LatencyHistogram {
    /// An empty histogram whose samples are reported multiplied by `scale` (1.0 or 0.5).
    pub fn new(scale: f64) -> Self {
        // Auto-resizing: never refuses a value, whatever its size.
        let mut hist = Histogram::new(SIGFIG).unwrap_or_else(|_| unreachable!("5 significant digits are valid"));
        hist.auto(true);
        Self { hist, scale }
    }

    /// Records one sample of `cycles` (unscaled).
    pub fn record(&mut self, cycles: u64) {
        // Auto-resizing histograms accept every u64.
        let _ = self.hist.record(cycles);
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// No sample yet.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// Each distinct latency recorded and its number of samples, smallest first: (cycles,
    /// already scaled; samples). Values above 2^18 cycles stand for their bucket of the
    /// histogram (1 part in 10^5).
    pub fn counts(&self) -> Vec<(f64, u64)> {
        self.hist.iter_recorded().map(|v| (v.value_iterated_to() as f64 * self.scale, v.count_at_value())).collect()
    }

    /// The report's figures: [`Self::summary`] in µs and cycles.
    pub fn stats(&self) -> LatencyStats {
        self.summary().into()
    }

    /// The summary (all zero without samples).
    pub fn summary(&self) -> LatencySummary {
        if self.hist.is_empty() {
            return LatencySummary::default();
        }
        let s = self.scale;
        let q = |p: f64| self.hist.value_at_quantile(p) as f64 * s;
        LatencySummary {
            samples: self.hist.len(),
            min: self.hist.min() as f64 * s,
            max: self.hist.max() as f64 * s,
            typical: q(0.5),
            avg: self.hist.mean() * s,
            stdev: self.hist.stdev() * s,
            p99: q(0.99),
            p99_9: q(0.999),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_set() {
        let mut h = LatencyHistogram::new(1.0);
        for v in 1..=1000u64 {
            h.record(v);
        }
        let s = h.summary();
        assert_eq!((s.samples, s.min, s.max), (1000, 1.0, 1000.0));
        assert_eq!(s.typical, 500.0);
        assert_eq!(s.p99, 990.0);
        assert_eq!(s.p99_9, 999.0);
        assert!((s.avg - 500.5).abs() < 1e-9);
        assert!((s.stdev - 288.675).abs() < 0.01, "{}", s.stdev);
    }

    #[test]
    fn a_round_trip_is_reported_as_half_and_large_values_are_kept() {
        let mut h = LatencyHistogram::new(0.5);
        h.record(1001);
        h.record(3_000_000_001);
        let s = h.summary();
        assert_eq!(s.min, 500.5);
        assert!((s.max - 1_500_000_000.5).abs() / 1.5e9 < 1e-5, "{}", s.max);
        assert_eq!(LatencySummary::us(250.0), 1.0);
        assert_eq!(LatencyHistogram::new(1.0).summary(), LatencySummary::default());
    }
}
