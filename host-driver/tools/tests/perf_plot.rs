//! `rnic perf … --plot FILE.svg` as a user runs it: the SVG is well-formed XML (parsed by
//! roxmltree), has one mark per size run for each series, placed where the JSON report of the
//! same run puts it, and its axis labels; bad `--plot` values exit 2 naming the flag before
//! anything runs.
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs `rnic perf <args>`; (exit code, stdout, stderr).
fn rnic(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rnic")).arg("perf").args(args).output().expect("run rnic");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `rnic perf <args> --json --plot <svg>`: the JSON rows and the SVG's text.
fn run_with_plot(args: &[&str], svg: &Path) -> (Vec<Value>, String) {
    let mut all = args.to_vec();
    all.extend(["--json", "--plot", svg.to_str().unwrap()]);
    let (code, stdout, stderr) = rnic(&all);
    assert_eq!(code, Some(0), "rnic perf {all:?}: {stderr}\n{stdout}");
    let rows =
        stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    (rows, std::fs::read_to_string(svg).unwrap_or_else(|e| panic!("{}: {e}", svg.display())))
}

fn attr(n: roxmltree::Node<'_, '_>, name: &str) -> f64 {
    n.attribute(name).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no number {name} in {n:?}"))
}

/// The centres of the SVG's circles (the marks), in document order.
fn marks(doc: &roxmltree::Document<'_>) -> Vec<(f64, f64)> {
    doc.descendants().filter(|n| n.has_tag_name("circle")).map(|n| (attr(n, "cx"), attr(n, "cy"))).collect()
}

/// Every text of the SVG, without the white space around it.
fn texts(doc: &roxmltree::Document<'_>) -> Vec<String> {
    doc.descendants().filter(|n| n.has_tag_name("text")).filter_map(|n| n.text()).map(|t| t.trim().to_owned()).collect()
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("no number {k}: {v}"))
}

/// Marks at `cy` for `values` on one linear y axis: the line through the marks of the smallest
/// and the largest value puts every other mark within a pixel and a half, higher values higher
/// up (smaller cy).
fn assert_on_a_linear_axis(values: &[f64], cy: &[f64]) {
    assert_eq!(values.len(), cy.len());
    let lo = (0..values.len()).min_by(|&a, &b| values[a].total_cmp(&values[b])).unwrap();
    let hi = (0..values.len()).max_by(|&a, &b| values[a].total_cmp(&values[b])).unwrap();
    assert!(values[hi] > values[lo], "values do not vary: {values:?}");
    let slope = (cy[hi] - cy[lo]) / (values[hi] - values[lo]);
    assert!(slope < 0.0, "larger values must be drawn higher: {values:?} at {cy:?}");
    for (v, y) in values.iter().zip(cy) {
        let want = cy[lo] + (v - values[lo]) * slope;
        assert!((want - y).abs() <= 1.5, "value {v} drawn at y {y}, the axis puts it at {want}: {values:?} at {cy:?}");
    }
}

/// The x of the marks of sizes 2, 4, 8, …: increasing, one power of two always the same
/// distance (a log2 axis).
fn assert_log2_spacing(cx: &[f64]) {
    let step = cx[1] - cx[0];
    assert!(step > 10.0, "{cx:?}");
    for w in cx.windows(2) {
        assert!(((w[1] - w[0]) - step).abs() <= 1.0, "not evenly spaced per power of two: {cx:?}");
    }
}

/// `write -a --plot`: Gb/s and Mpps panels, one mark per size in each, at the reported rates.
#[test]
fn a_bandwidth_sweep_draws_gbps_and_mpps_per_size() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("bw.svg");
    let (rows, text) = run_with_plot(&["write", "-a", "--size-max", "4096", "--iters", "32"], &svg);
    assert_eq!(rows.len(), 12, "sizes 2 … 4096");
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let m = marks(&doc);
    assert_eq!(m.len(), 2 * rows.len(), "one mark per size in each panel: {m:?}");
    let (gbps, mpps) = m.split_at(rows.len());
    let cx: Vec<f64> = gbps.iter().map(|p| p.0).collect();
    assert_log2_spacing(&cx);
    assert_eq!(cx, mpps.iter().map(|p| p.0).collect::<Vec<_>>(), "both panels share the size axis");
    let col = |k: &str| rows.iter().map(|r| f(r, k)).collect::<Vec<f64>>();
    assert_on_a_linear_axis(&col("gbps"), &gbps.iter().map(|p| p.1).collect::<Vec<_>>());
    assert_on_a_linear_axis(&col("mpps"), &mpps.iter().map(|p| p.1).collect::<Vec<_>>());
    // The Mpps panel is below the Gb/s one.
    assert!(mpps.iter().map(|p| p.1).fold(f64::INFINITY, f64::min) > gbps.iter().map(|p| p.1).fold(0.0, f64::max));
    let t = texts(&doc);
    for want in
        ["Gb/s", "Mpps", "message size [bytes, log2 scale]", "rnic perf write -a: 1 QP, 32 messages per size, MTU 4096"]
    {
        assert!(t.iter().any(|x| x == want), "no text {want:?}: {t:?}");
    }
    // Ticks every other size when all twelve would crowd the axis.
    for label in ["2", "8", "2K"] {
        assert!(t.iter().any(|x| x == label), "no size label {label}: {t:?}");
    }
}

/// `write-lat -a --plot`: t_typical and p99 against size, one mark per size each, on one axis.
#[test]
fn a_latency_sweep_draws_the_median_and_p99_per_size() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("lat.svg");
    let (rows, text) = run_with_plot(&["write-lat", "-a", "--size-max", "4096", "--iters", "20", "--no-stages"], &svg);
    assert_eq!(rows.len(), 12);
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    let m = marks(&doc);
    assert_eq!(m.len(), 2 * rows.len(), "a t_typical and a p99 mark per size: {m:?}");
    let (typical, p99) = m.split_at(rows.len());
    assert_log2_spacing(&typical.iter().map(|p| p.0).collect::<Vec<_>>());
    // Both series on the same µs axis.
    let values: Vec<f64> =
        rows.iter().map(|r| f(r, "t_typical_us")).chain(rows.iter().map(|r| f(r, "p99_us"))).collect();
    assert_on_a_linear_axis(&values, &m.iter().map(|p| p.1).collect::<Vec<_>>());
    assert_eq!(typical.iter().map(|p| p.0).collect::<Vec<_>>(), p99.iter().map(|p| p.0).collect::<Vec<_>>());
    let t = texts(&doc);
    for want in ["latency [µs]", "t_typical (median)", "99% percentile", "message size [bytes, log2 scale]"] {
        assert!(t.iter().any(|x| x == want), "no text {want:?}: {t:?}");
    }
}

/// `read-lat --plot` (no sweep): the distribution, a histogram with a bar per occupied bin and
/// the CDF with t_typical, 99 % and 99.9 % marked at the report's figures.
#[test]
fn one_latency_run_draws_its_distribution() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("dist.svg");
    let (rows, text) = run_with_plot(&["read-lat", "--iters", "200", "--no-stages"], &svg);
    let r = &rows[0];
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    assert_eq!(marks(&doc).len(), 3, "t_typical, 99% and 99.9%");
    let t = texts(&doc);
    for want in [
        format!("t_typical {:.3} µs", f(r, "t_typical_us")),
        format!("99% {:.3} µs", f(r, "p99_us")),
        format!("99.9% {:.3} µs", f(r, "p99_9_us")),
        "histogram of 200 samples".to_owned(),
        "cumulative distribution".to_owned(),
    ] {
        assert!(t.contains(&want), "no text {want:?}: {t:?}");
    }
    // The histogram's bars: blue, filled; at least one, at most one per bin.
    let bars = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill").is_some_and(|c| c.eq_ignore_ascii_case("#0000FF")))
        .count();
    assert!((1..=41).contains(&bars), "{bars} bars");
}

/// Bad `--plot` uses exit 2 naming the flag, before anything runs and without creating the file.
#[test]
fn bad_plot_arguments_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("never.svg");
    let svg = svg.to_str().unwrap();
    let missing = dir.path().join("no/such/dir/x.svg");
    let png = dir.path().join("x.png");
    for (args, want) in [
        (&["write", "--plot", svg][..], "add -a/--all"),
        (&["read", "--size", "64", "--plot", svg], "add -a/--all"),
        (&["atomic", "--plot", svg], "an atomic moves 8 bytes"),
        (&["write", "-a", "--plot", missing.to_str().unwrap()], "no directory"),
        (&["write-lat", "--plot", png.to_str().unwrap()], ".svg"),
        (&["write-lat", "--plot", dir.path().to_str().unwrap()], ".svg"),
        (&["write", "-a", "--plot", svg, "--device", "vfio-user:/nonexistent.sock"], "--plot"),
        (&["read-lat", "--plot", svg, "--device", "vfio-user:/nonexistent.sock"], "--plot"),
    ] {
        let (code, out, err) = rnic(args);
        assert_eq!(code, Some(2), "{args:?}: stdout {out} stderr {err}");
        assert!(err.contains("--plot") && err.contains(want), "{args:?}: {err}");
        assert!(!out.contains("#bytes"), "{args:?} ran: {out}");
        assert!(!Path::new(svg).exists(), "{args:?} wrote the chart");
    }
}
