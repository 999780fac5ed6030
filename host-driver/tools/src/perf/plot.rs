//! `rnic perf … --plot FILE.svg`: SVG charts of a run, drawn with the `plotters` crate.
//!
//! - A bandwidth sweep (`write`, `read`, `send` with `-a`): two panels against the message size
//!   on a log2 axis (2 B … 8 MiB), Gb/s above and millions of messages per second below, one
//!   mark per size run ([`bw_sweep_svg`]).
//! - A latency sweep (`write-lat`, `read-lat`, `send-lat` with `-a`): t_typical (the median) and
//!   the 99th percentile in µs against the message size, one mark per size for each
//!   ([`lat_sweep_svg`]).
//! - One latency run (without `-a`, every latency test including `atomic-lat`): its
//!   distribution, a histogram of the samples above (µs, 40 bins or one per half cycle, whichever
//!   is coarser) and their cumulative distribution below, with the median, 99 % and 99.9 %
//!   marked on it ([`lat_distribution_svg`]).
//!
//! µs are NIC cycles at the model clock ([`CORE_CLOCK_MHZ`]), as in the reports. The charts are
//! built in memory and written once the run is over; [`check_plot_path`] checks the file name
//! and its directory while the command line is parsed, before anything runs.
use std::fmt;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use rnic_contract::CORE_CLOCK_MHZ;

use super::stats::LatencySummary;

/// Width and height of a chart, SVG pixels.
const SIZE: (u32, u32) = (960, 720);

/// Bins of the latency histogram (at most; never narrower than half a cycle).
const BINS: usize = 40;

/// A chart could not be drawn or written.
#[derive(Debug)]
pub struct PlotError(String);

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlotError {}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for PlotError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        PlotError(format!("drawing the chart: {e}"))
    }
}

/// One size of a bandwidth sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BwPoint {
    /// Message size, bytes (a power of two).
    pub size: u64,
    /// Average bandwidth, Gb/s.
    pub gbps: f64,
    /// Message rate, millions of messages per second.
    pub mpps: f64,
}

/// One size of a latency sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatPoint {
    /// Message size, bytes (a power of two).
    pub size: u64,
    /// Median latency (perftest's t_typical), µs.
    pub typical_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
}

/// Checks a `--plot` value before anything runs: it names a `.svg` file (the only format drawn)
/// in an existing directory this process can create files in, and is not a directory. Used as
/// the option's clap value parser, so a bad value exits 2 naming `--plot`.
///
/// # Errors
/// A message saying what is wrong with the path.
pub fn check_plot_path(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    if !path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg")) {
        return Err(format!("the chart is an SVG file: the name must end in .svg, not {s:?}"));
    }
    if path.is_dir() {
        return Err(format!("{s} is a directory"));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(format!("no directory {} to write {s} into", dir.display()));
    }
    // A file created and removed in that directory proves the chart can be written there.
    tempfile::Builder::new()
        .prefix(".rnic-plot-")
        .tempfile_in(&dir)
        .map_err(|e| format!("cannot write into {}: {e}", dir.display()))?;
    if path.exists() {
        std::fs::OpenOptions::new().append(true).open(&path).map_err(|e| format!("cannot write {s}: {e}"))?;
    }
    Ok(path)
}

/// Writes `svg` to `path`.
///
/// # Errors
/// The file cannot be written.
pub fn write_svg(path: &Path, svg: &str) -> Result<(), PlotError> {
    std::fs::write(path, svg).map_err(|e| PlotError(format!("writing {}: {e}", path.display())))
}

/// A size as perftest's sweep names it: 2, 4, … 512, 1K, … 512K, 1M, … 8M.
fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

/// The message-size axis: bytes on a log2 scale, half a power of two of margin at each end,
/// a tick (and label) at each size run (every other one, or fewer, when they would crowd).
#[derive(Clone, Debug)]
struct SizeAxis {
    /// The sizes run, ascending.
    sizes: Vec<u64>,
    /// log2 of the axis' ends.
    lo: f64,
    hi: f64,
}

impl SizeAxis {
    fn new(sizes: &[u64]) -> Self {
        let mut sizes: Vec<u64> = sizes.iter().map(|&s| s.max(1)).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let (lo, hi) = match (sizes.first(), sizes.last()) {
            (Some(&a), Some(&b)) => ((a as f64).log2() - 0.5, (b as f64).log2() + 0.5),
            _ => (0.5, 1.5),
        };
        Self { sizes, lo, hi }
    }
}

impl Ranged for SizeAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = u64;

    fn map(&self, value: &u64, limit: (i32, i32)) -> i32 {
        let x = ((*value).max(1) as f64).log2();
        let f = (x - self.lo) / (self.hi - self.lo);
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<u64> {
        let n = hint.max_num_points().max(1);
        let step = self.sizes.len().div_ceil(n).max(1);
        self.sizes.iter().copied().step_by(step).collect()
    }

    fn range(&self) -> std::ops::Range<u64> {
        self.lo.exp2().ceil() as u64..self.hi.exp2().floor() as u64
    }
}

fn size_of(bytes: &u64) -> String {
    size_label(*bytes)
}

/// 0 ..= a little above the largest value (1 when there is none above 0).
fn y_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let max = values.filter(|v| v.is_finite()).fold(0.0, f64::max);
    0.0..if max > 0.0 { max * 1.1 } else { 1.0 }
}

/// One panel of a sweep: the series `(size, value)` as a line with a filled circle per size.
fn sweep_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    sizes: &[u64],
    series: &[(&str, RGBColor, Vec<f64>)],
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(SizeAxis::new(sizes), y_range(series.iter().flat_map(|s| s.2.iter().copied())))?;
    chart
        .configure_mesh()
        .x_desc("message size [bytes, log2 scale]")
        .y_desc(y_desc)
        .x_label_formatter(&size_of)
        .draw()?;
    for (k, (name, color, values)) in series.iter().enumerate() {
        let pts: Vec<(u64, f64)> = sizes.iter().zip(values).map(|(&s, &v)| (s, v)).collect();
        let color = *color;
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        // The first series' marks filled, the others' rings around them: equal values (a
        // narrow latency distribution) still show both.
        let style = if k == 0 { color.filled() } else { color.stroke_width(2) };
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, if k == 0 { 4 } else { 7 }, style)))?;
    }
    if series.len() > 1 {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    Ok(())
}

/// The chart of a bandwidth sweep: Gb/s (upper panel) and Mpps (lower panel) against the
/// message size, one mark per point in each. `title` names the test (e.g. "rnic perf write -a").
///
/// # Errors
/// Drawing errors (none expected for finite values).
pub fn bw_sweep_svg(title: &str, points: &[BwPoint]) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 26))?;
        let (upper, lower) = root.split_vertically(SIZE.1 / 2 - 20);
        let sizes: Vec<u64> = points.iter().map(|p| p.size).collect();
        let gbps = points.iter().map(|p| p.gbps).collect();
        let mpps = points.iter().map(|p| p.mpps).collect();
        sweep_panel(&upper, "bandwidth", "Gb/s", &sizes, &[("Gb/s", BLUE, gbps)])?;
        sweep_panel(&lower, "message rate", "Mpps", &sizes, &[("Mpps", RED, mpps)])?;
        root.present()?;
    }
    Ok(svg)
}

/// The chart of a latency sweep: t_typical (median) and the 99th percentile in µs against the
/// message size, one mark per point for each.
///
/// # Errors
/// Drawing errors (none expected for finite values).
pub fn lat_sweep_svg(title: &str, points: &[LatPoint]) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 26))?;
        let sizes: Vec<u64> = points.iter().map(|p| p.size).collect();
        sweep_panel(
            &root,
            &format!("latency at {CORE_CLOCK_MHZ} MHz"),
            "latency [µs]",
            &sizes,
            &[
                ("t_typical (median)", BLUE, points.iter().map(|p| p.typical_us).collect()),
                ("99% percentile", RED, points.iter().map(|p| p.p99_us).collect()),
            ],
        )?;
        root.present()?;
    }
    Ok(svg)
}

/// The chart of one latency run's distribution: `counts` are (latency in cycles, samples) for
/// each distinct latency, as [`super::stats::LatencyHistogram::counts`] gives them, and `s` their
/// summary. Upper panel: a histogram (samples per bin, µs); lower panel: the cumulative
/// fraction of samples at or below each latency, with t_typical, 99 % and 99.9 % marked.
///
/// # Errors
/// Drawing errors; no samples.
pub fn lat_distribution_svg(title: &str, counts: &[(f64, u64)], s: &LatencySummary) -> Result<String, PlotError> {
    let total: u64 = counts.iter().map(|c| c.1).sum();
    if total == 0 {
        return Err(PlotError("no latency sample to draw".into()));
    }
    let us = LatencySummary::us;
    let (min, max) = (us(s.min), us(s.max));
    // Never narrower than half a cycle: the samples are whole (or halved) cycles.
    let width = ((max - min) / BINS as f64).max(us(0.5));
    let bins = (((max - min) / width).floor() as usize + 1).min(BINS + 1);
    let mut hist = vec![0u64; bins];
    for &(c, n) in counts {
        let k = (((us(c) - min) / width).floor() as usize).min(bins - 1);
        hist[k] += n;
    }
    let x_range = (min - width)..(min + (bins as f64 + 1.0) * width);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 26))?;
        let (upper, lower) = root.split_vertically(SIZE.1 / 2 - 20);
        // Counts on a log scale, so that a bin of one sample in the tail shows beside thousands.
        let top = hist.iter().copied().max().unwrap_or(1) as f64;
        let mut chart = ChartBuilder::on(&upper)
            .caption(format!("histogram of {total} samples"), ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range.clone(), (0.5..top * 2.0).log_scale())?;
        chart.configure_mesh().x_desc("latency [µs]").y_desc("samples (log scale)").draw()?;
        chart.draw_series(hist.iter().enumerate().filter(|(_, &n)| n > 0).map(|(k, &n)| {
            let x0 = min + k as f64 * width;
            Rectangle::new([(x0, 0.5), (x0 + width, n as f64)], BLUE.mix(0.6).filled())
        }))?;

        let mut chart = ChartBuilder::on(&lower)
            .caption("cumulative distribution", ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range, 0.0..1.05)?;
        chart.configure_mesh().x_desc("latency [µs]").y_desc("fraction of samples ≤ x").draw()?;
        // A step at each distinct latency.
        let mut steps = vec![(min - width, 0.0)];
        let mut seen = 0u64;
        for &(c, n) in counts {
            let before = seen as f64 / total as f64;
            seen += n;
            steps.push((us(c), before));
            steps.push((us(c), seen as f64 / total as f64));
        }
        steps.push((max + width, 1.0));
        chart.draw_series(LineSeries::new(steps, BLUE.stroke_width(2)))?;
        // The percentiles, each a mark with its label below and to the right (99 % lower than
        // 99.9 %, which often sit on the same spot).
        let marks = [("t_typical", s.typical, 0.5, 6), ("99%", s.p99, 0.99, 26), ("99.9%", s.p99_9, 0.999, 6)];
        chart.draw_series(marks.iter().map(|&(name, c, q, dy)| {
            EmptyElement::at((us(c), q))
                + Circle::new((0, 0), 5, RED.filled())
                + Text::new(format!("{name} {:.3} µs", us(c)), (10, dy), ("sans-serif", 16).into_font().color(&RED))
        }))?;
        root.present()?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_labelled_as_perftest_names_them() {
        let l: Vec<String> = [2, 512, 1024, 65536, 1 << 20, 8 << 20].iter().map(|&b| size_label(b)).collect();
        assert_eq!(l, ["2", "512", "1K", "64K", "1M", "8M"]);
        assert_eq!(size_of(&1024), "1K");
    }

    #[test]
    fn plot_paths_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("a.svg");
        assert_eq!(check_plot_path(ok.to_str().unwrap()).unwrap(), ok);
        assert!(!ok.exists(), "checking creates nothing");
        assert!(check_plot_path(dir.path().join("a.png").to_str().unwrap()).unwrap_err().contains(".svg"));
        let missing = dir.path().join("no/such/dir/a.svg");
        assert!(check_plot_path(missing.to_str().unwrap()).unwrap_err().contains("no directory"));
        let d = dir.path().join("d.svg");
        std::fs::create_dir(&d).unwrap();
        assert!(check_plot_path(d.to_str().unwrap()).unwrap_err().contains("is a directory"));
    }

    #[test]
    fn a_distribution_needs_samples() {
        assert!(lat_distribution_svg("t", &[], &LatencySummary::default()).is_err());
    }
}
