//! Draws the charts of docs/benchmarks.md (SVG, into `docs/charts/`) from the
//! figures the benches saved in `benches/results/`: `cargo bench --bench
//! charts`. It runs no bench itself: a whole run of the scale bench to ten
//! million entities takes an hour, so the figures are committed and the
//! charts redrawn from them.
//!
//! - `scale-latency.svg`: each single operation's p50 against the number of
//!   entities, redis-entity and hand-written code (`scale.json`);
//! - `scale-longest-call.svg`: the longest call the server ran in each phase
//!   against the number of entities, with the 10 ms and 50 ms bounds
//!   (`scale.json`);
//! - `workload-ratios.svg`: each workload step's ops/s against the
//!   hand-written code's (`workload.json`);
//! - `cluster.svg`: each step's ops/s on a 3-master cluster against one
//!   server (`cluster.json`).

use plotters::prelude::*;
use serde_json::Value;
use std::error::Error;
use std::path::Path;

type Res<T> = Result<T, Box<dyn Error>>;

/// A line of points (entities, value).
type Line = Vec<(f64, f64)>;

const OUT: &str = "docs/charts";
const RESULTS: &str = "benches/results";

fn main() -> Res<()> {
    std::fs::create_dir_all(OUT)?;
    let mut drawn = Vec::new();
    if let Some(scale) = read("scale.json")? {
        let sizes: Vec<f64> = numbers(&scale["sizes"]);
        let rows = scale_rows(&scale);
        scale_latency(&sizes, &rows)?;
        calls_by_size(
            &sizes,
            &rows,
            ": longest call ms",
            "scale-longest-call.svg",
            "The longest call the server ran, per phase (under 1 ms drawn at 1 ms)",
        )?;
        calls_by_size(
            &sizes,
            &rows,
            ": p99.9 call ms",
            "scale-p999-call.svg",
            "The 99.9th percentile of the calls of each phase (under 1 ms drawn at 1 ms)",
        )?;
        drawn.extend([
            "scale-latency.svg",
            "scale-longest-call.svg",
            "scale-p999-call.svg",
        ]);
    }
    if let Some(workload) = read("workload.json")? {
        let rows = pairs(&workload);
        // The floor rows compare two hand-written forms, and the near
        // cache's (a read from memory against a round trip: 17-40x) have a
        // table of their own: the chart is of redis-entity against the
        // hand-written code, step by step.
        let ratios: Vec<(String, f64)> = rows
            .iter()
            .filter(|(step, _, hand)| {
                *hand > 0.0 && !step.starts_with("floor") && !step.contains("near cache")
            })
            .map(|(step, re, hand)| (step.clone(), re / hand))
            .collect();
        bars(
            "workload-ratios.svg",
            "redis-entity ops/s / hand-written ops/s, per workload step",
            "ratio (1: as fast as hand-written redis-rs)",
            &ratios,
        )?;
        drawn.push("workload-ratios.svg");
    }
    if let Some(cluster) = read("cluster.json")? {
        let ratios: Vec<(String, f64)> = pairs(&cluster)
            .iter()
            .filter(|(_, one, _)| *one > 0.0)
            .map(|(step, one, cl)| (step.clone(), cl / one))
            .collect();
        bars(
            "cluster.svg",
            "3-master Redis Cluster ops/s / one server ops/s, per step",
            "ratio (1: as fast as one server)",
            &ratios,
        )?;
        drawn.push("cluster.svg");
    }
    for f in &drawn {
        println!("wrote {OUT}/{f}");
    }
    if drawn.is_empty() {
        println!("no figures in {RESULTS}/: run the benches first (docs/benchmarks.md)");
    }
    Ok(())
}

/// A results file, if the bench that writes it has run.
fn read(name: &str) -> Res<Option<Value>> {
    let path = Path::new(RESULTS).join(name);
    if !path.exists() {
        return Ok(None);
    }
    Ok(Some(serde_json::from_str(&std::fs::read_to_string(path)?)?))
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// The scale bench's rows: name, a value (or none) per size.
fn scale_rows(scale: &Value) -> Vec<(String, Vec<Option<f64>>)> {
    let Some(rows) = scale["rows"].as_array() else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(|r| {
            let name = r.get(0)?.as_str()?.to_owned();
            let vals = r.get(1)?.as_array()?.iter().map(Value::as_f64).collect();
            Some((name, vals))
        })
        .collect()
}

/// The workload and cluster benches' rows: step, first side, second side.
fn pairs(results: &Value) -> Vec<(String, f64, f64)> {
    let Some(rows) = results["rows"].as_array() else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(|r| {
            Some((
                r.get(0)?.as_str()?.to_owned(),
                r.get(1)?.as_f64()?,
                r.get(2)?.as_f64()?,
            ))
        })
        .collect()
}

/// The points of a scale row, at the sizes where it has a value above 0
/// (a log axis has no 0).
fn points(sizes: &[f64], vals: &[Option<f64>]) -> Vec<(f64, f64)> {
    sizes
        .iter()
        .zip(vals)
        .filter_map(|(n, v)| v.filter(|v| *v > 0.0).map(|v| (*n, v)))
        .collect()
}

fn size_label(n: &f64) -> String {
    match *n {
        n if n >= 1e6 => format!("{}M", n / 1e6),
        n if n >= 1e3 => format!("{}k", n / 1e3),
        n => format!("{n}"),
    }
}

/// Each single operation's p50, both sides, against the number of entities.
fn scale_latency(sizes: &[f64], rows: &[(String, Vec<Option<f64>>)]) -> Res<()> {
    let ops: Vec<(&str, Line, Line)> = rows
        .iter()
        .filter_map(|(name, vals)| {
            let op = name.strip_suffix(" p50 µs (re)")?;
            let hand = rows
                .iter()
                .find(|(n, _)| *n == format!("{op} p50 µs (hand)"))?;
            Some((op, points(sizes, vals), points(sizes, &hand.1)))
        })
        .filter(|(_, re, hand)| !re.is_empty() && !hand.is_empty())
        .collect();
    let values = || {
        ops.iter()
            .flat_map(|(_, a, b)| a.iter().chain(b).map(|p| p.1))
    };
    let top = values().fold(1.0, f64::max);
    let bottom = values().fold(f64::MAX, f64::min).min(top);
    let path = Path::new(OUT).join("scale-latency.svg");
    let root = SVGBackend::new(&path, (960, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let (lo, hi) = x_range(sizes);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "p50 latency per operation against entities (solid: redis-entity, dashed: hand-written)",
            ("sans-serif", 17),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), (bottom / 1.5..top * 1.5).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("entities")
        .y_desc("µs")
        .x_label_formatter(&size_label)
        .draw()?;
    for (i, (op, re, hand)) in ops.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(re.clone(), color.stroke_width(2)))?
            .label(*op)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart.draw_series(re.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
        chart.draw_series(DashedLineSeries::new(
            hand.clone(),
            6,
            4,
            color.stroke_width(1),
        ))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// A figure of each phase's calls (the rows ending in `suffix`) against
/// the number of entities, into `file`.
fn calls_by_size(
    sizes: &[f64],
    rows: &[(String, Vec<Option<f64>>)],
    suffix: &str,
    file: &str,
    title: &str,
) -> Res<()> {
    let phases: Vec<(&str, Line)> = rows
        .iter()
        .filter_map(|(name, vals)| {
            let phase = name.strip_suffix(suffix)?;
            // Under 1 ms the slow log has nothing: drawn at 1 ms.
            let pts: Vec<(f64, f64)> = sizes
                .iter()
                .zip(vals)
                .filter_map(|(n, v)| v.map(|v| (*n, v.max(1.0))))
                .collect();
            (!pts.is_empty()).then_some((phase, pts))
        })
        .collect();
    let path = Path::new(OUT).join(file);
    let root = SVGBackend::new(&path, (1100, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    // Room on the right for the legend, clear of the largest size's points.
    let (lo, hi) = x_range(sizes);
    let largest = hi / 1.5;
    let hi = hi * 12.0;
    let label = |x: &f64| {
        if *x > largest * 1.01 {
            String::new()
        } else {
            size_label(x)
        }
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), (0.8..100.0).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("entities")
        .y_desc("ms")
        .x_label_formatter(&label)
        .draw()?;
    for (bound, label) in [(10.0, "10 ms (p99.9 bound)"), (50.0, "50 ms (any call)")] {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(lo, bound), (hi, bound)],
                8,
                4,
                RED.stroke_width(1),
            ))?
            .label(label)
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED));
    }
    for (i, (phase, pts)) in phases.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(*phase)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 11))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// The x range of the sizes, a little wider on both sides.
fn x_range(sizes: &[f64]) -> (f64, f64) {
    let lo = sizes.iter().copied().fold(f64::MAX, f64::min).max(1.0);
    let hi = sizes.iter().copied().fold(1.0, f64::max);
    (lo / 1.5, hi * 1.5)
}

/// A horizontal bar per step, its ratio, with a line at 1.
fn bars(file: &str, title: &str, desc: &str, ratios: &[(String, f64)]) -> Res<()> {
    let n = ratios.len() as i32;
    let top = ratios.iter().map(|r| r.1).fold(1.2, f64::max) * 1.1;
    let path = Path::new(OUT).join(file);
    let height = 80 + 22 * ratios.len() as u32;
    let root = SVGBackend::new(&path, (1060, height.max(240))).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(440)
        .build_cartesian_2d(0.0..top, (0..n).into_segmented())?;
    let names: Vec<String> = ratios.iter().map(|r| r.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(ratios.len().max(1))
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => usize::try_from(n - 1 - *i)
                .ok()
                .and_then(|i| names.get(i))
                .cloned()
                .unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc(desc)
        .draw()?;
    // The first step at the top.
    chart.draw_series(ratios.iter().enumerate().map(|(i, (_, r))| {
        let i = n - 1 - i as i32;
        let color = if *r >= 0.95 { GREEN } else { BLUE };
        let mut bar = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (*r, SegmentValue::Exact(i + 1)),
            ],
            color.mix(0.6).filled(),
        );
        bar.set_margin(3, 3, 0, 0);
        bar
    }))?;
    chart.draw_series(DashedLineSeries::new(
        vec![(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
        6,
        4,
        BLACK.stroke_width(1),
    ))?;
    root.present()?;
    Ok(())
}
