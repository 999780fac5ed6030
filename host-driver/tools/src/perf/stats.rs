//! Latency statistics in perftest's shape (`ib_*_lat`'s t_min, t_max, t_typical, t_avg,
//! t_stdev, 99% and 99.9% percentiles), kept in an HdrHistogram of NIC cycles.
//!
//! The latency reports follow perftest's definition ([`LatencyHistogram::perftest_summary`],
//! after `print_report_lat` in perftest's src/perftest_parameters.c): the samples are sorted, the
//! two largest are set aside (perftest's `LAT_MEASURE_TAIL`), and over the `n` that remain
//! t_min is the smallest, t_typical the median (the mean of the two middle samples when `n` is
//! even), t_avg and t_stdev their mean and (population) standard deviation, and t_max, 99 % and
//! 99.9 % are the samples at 0-based ranks `n`, `⌈0.99·n⌉` and `⌈0.999·n⌉` of the full sorted
//! list (so t_max is the second largest sample). With 1 or 2 samples nothing is set aside and
//! the ranks stop at the largest. The per-stage breakdown uses [`LatencyHistogram::summary`],
//! every sample with nearest-rank percentiles.
use hdrhistogram::Histogram;
use rnic_contract::CORE_CLOCK_MHZ;
use serde::Serialize;

/// Significant decimal digits the histogram keeps: every value below 2^18 cycles (about 1 ms
/// at 250 MHz) is recorded exactly, larger ones to 1 part in 10^5.
const SIGFIG: u8 = 5;

/// Largest samples perftest sets aside before its statistics (its `LAT_MEASURE_TAIL`).
const PERFTEST_TAIL: u64 = 2;

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

    /// The report's figures: [`Self::perftest_summary`] in µs and cycles.
    pub fn stats(&self) -> LatencyStats {
        self.perftest_summary().into()
    }

    /// The summary by perftest's definition (see the module documentation): the two largest
    /// samples set aside, the median of an even count the mean of its two middle samples,
    /// t_max, 99 % and 99.9 % at ranks `n`, `⌈0.99·n⌉`, `⌈0.999·n⌉`. `samples` counts every
    /// sample. All zero without samples.
    pub fn perftest_summary(&self) -> LatencySummary {
        let all = self.hist.len();
        if all == 0 {
            return LatencySummary::default();
        }
        // (value, samples at or below it), ascending.
        let mut cum = Vec::new();
        let mut seen = 0u64;
        for v in self.hist.iter_recorded() {
            seen += v.count_at_value();
            cum.push((v.value_iterated_to() as f64 * self.scale, seen));
        }
        // The sample at 0-based rank k of the sorted list (the largest past the end).
        let at = |k: u64| cum[cum.partition_point(|&(_, c)| c <= k).min(cum.len() - 1)].0;
        let n = if all > PERFTEST_TAIL { all - PERFTEST_TAIL } else { all };
        let rank = |q: f64| ((n as f64 * q).ceil() as u64).min(all - 1);
        let typical = if n % 2 == 0 { (at(n / 2 - 1) + at(n / 2)) / 2.0 } else { at(n / 2) };
        // The n smallest as (value, how many of them), for their mean and standard deviation.
        let mut prev = 0u64;
        let kept: Vec<(f64, f64)> = cum
            .iter()
            .map_while(|&(v, c)| {
                let k = c.min(n).saturating_sub(prev);
                prev = c;
                (k > 0).then_some((v, k as f64))
            })
            .collect();
        let avg = kept.iter().map(|&(v, k)| v * k).sum::<f64>() / n as f64;
        let var = kept.iter().map(|&(v, k)| k * (v - avg) * (v - avg)).sum::<f64>() / n as f64;
        LatencySummary {
            samples: all,
            min: at(0),
            max: at(n.min(all - 1)),
            typical,
            avg,
            stdev: var.sqrt(),
            p99: at(rank(0.99)),
            p99_9: at(rank(0.999)),
        }
    }

    /// The summary of every sample, percentiles by nearest rank: the median and `p`-th
    /// percentile are the smallest samples at or above half and `p` % of them (all zero without
    /// samples).
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

    fn perftest_of(scale: f64, samples: &[u64]) -> LatencySummary {
        let mut h = LatencyHistogram::new(scale);
        samples.iter().for_each(|&v| h.record(v));
        h.perftest_summary()
    }

    /// perftest's `print_report_lat` on known sets, worked by hand: sort, set the two largest
    /// aside (n = N − 2), median of the n, t_max = sorted[n], 99 % = sorted[⌈0.99·n⌉], 99.9 % =
    /// sorted[⌈0.999·n⌉], mean and standard deviation over the n.
    #[test]
    fn perftest_percentiles_of_known_sets() {
        // 1 ..= 1000: n = 998; median (sorted[498] + sorted[499]) / 2 = (499 + 500) / 2; t_max
        // sorted[998] = 999; 99 % sorted[⌈988.02⌉ = 989] = 990; 99.9 % sorted[⌈997.002⌉ = 998]
        // = 999; the mean of 1 ..= 998 is 499.5, its deviation √((998² − 1) / 12).
        let s = perftest_of(1.0, &(1..=1000).collect::<Vec<_>>());
        assert_eq!((s.samples, s.min, s.max), (1000, 1.0, 999.0));
        assert_eq!((s.typical, s.p99, s.p99_9), (499.5, 990.0, 999.0));
        assert!((s.avg - 499.5).abs() < 1e-9, "{}", s.avg);
        assert!((s.stdev - ((998.0f64 * 998.0 - 1.0) / 12.0).sqrt()).abs() < 1e-6, "{}", s.stdev);

        // An odd n with two outliers: 1 3 5 7 9 | 100 200 (N = 7, n = 5). The median is
        // sorted[2] = 5; t_max, 99 % and 99.9 % are sorted[5] = 100 (⌈4.95⌉ = ⌈4.995⌉ = 5); the
        // 200 never shows; mean 5, deviation √8.
        let s = perftest_of(1.0, &[5, 3, 9, 1, 7, 200, 100]);
        assert_eq!((s.min, s.typical, s.max, s.p99, s.p99_9), (1.0, 5.0, 100.0, 100.0, 100.0));
        assert_eq!(s.avg, 5.0);
        assert!((s.stdev - 8f64.sqrt()).abs() < 1e-12, "{}", s.stdev);

        // Repeated values: 990 × 100 then 10 × 500 (n = 998): 99 % is sorted[989] = 100, 99.9 %
        // and t_max sorted[998] = 500; the mean of the 998 kept is (990·100 + 8·500) / 998.
        let mut v = vec![100u64; 990];
        v.extend([500; 10]);
        let s = perftest_of(1.0, &v);
        assert_eq!((s.typical, s.p99, s.p99_9, s.max), (100.0, 100.0, 500.0, 500.0));
        assert!((s.avg - 103_000.0 / 998.0).abs() < 1e-9, "{}", s.avg);

        // Round trips reported halved: 600 602 604 606 cycles are 300 … 303; n = 2, median
        // (300 + 301) / 2, t_max and 99 % sorted[2] = 302.
        let s = perftest_of(0.5, &[606, 600, 604, 602]);
        assert_eq!((s.min, s.typical, s.max, s.p99, s.p99_9), (300.0, 300.5, 302.0, 302.0, 302.0));

        // One or two samples: nothing is set aside (perftest would have none left).
        let s = perftest_of(1.0, &[10, 20]);
        assert_eq!((s.min, s.typical, s.max, s.p99, s.avg), (10.0, 15.0, 20.0, 20.0, 15.0));
        let s = perftest_of(1.0, &[42]);
        assert_eq!((s.samples, s.min, s.typical, s.max, s.p99_9, s.stdev), (1, 42.0, 42.0, 42.0, 42.0, 0.0));
        assert_eq!(LatencyHistogram::new(1.0).perftest_summary(), LatencySummary::default());
        // The report's figures are these, in µs at 250 MHz.
        let mut h = LatencyHistogram::new(1.0);
        [250, 500, 750, 1000, 1250].iter().for_each(|&c| h.record(c));
        let st = h.stats();
        assert_eq!((st.t_min_us, st.t_typical_us, st.t_max_us, st.cycles), (1.0, 2.0, 4.0, h.perftest_summary()));
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
