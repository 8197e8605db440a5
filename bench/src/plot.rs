//! A log-log line chart as SVG, written by hand: the scale curve of
//! BENCHMARKS.md (seconds against tool count, one line per engine), with
//! no plotting dependency.

use std::fmt::Write as _;

/// One line of the chart.
pub struct Series {
    pub name: String,
    /// (x, y) points, both positive.
    pub points: Vec<(f64, f64)>,
}

/// A chart: a title and its lines.
pub struct Chart {
    pub title: String,
    pub series: Vec<Series>,
}

const COLORS: [&str; 6] = [
    "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e", "#8c564b",
];
// The canvas and the plot area's margins (the legend sits below it).
const W: f64 = 760.0;
const H: f64 = 460.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 150.0;

/// The decades that hold every value of `v`: (lowest, highest) exponents.
fn decades(v: impl Iterator<Item = f64>) -> (i32, i32) {
    let (lo, hi) = v.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    if lo > hi {
        return (0, 1);
    }
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    (a, b.max(a + 1))
}

/// A duration in seconds as an axis label.
fn label(exp: i32) -> String {
    match exp {
        e if e >= 0 => format!("{} s", 10f64.powi(e)),
        -1 => "100 ms".into(),
        -2 => "10 ms".into(),
        -3 => "1 ms".into(),
        -4 => "100 µs".into(),
        -5 => "10 µs".into(),
        -6 => "1 µs".into(),
        e => format!("1e{e} s"),
    }
}

/// The chart as an SVG document: x is a count (log), y seconds (log).
pub fn scale_svg(chart: &Chart) -> String {
    let pts = || chart.series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = decades(pts().map(|p| p.0));
    let (y0, y1) = decades(pts().map(|p| p.1));
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let sx = |x: f64| LEFT + (x.log10() - x0 as f64) / (x1 - x0) as f64 * pw;
    let sy = |y: f64| TOP + ph - (y.log10() - y0 as f64) / (y1 - y0) as f64 * ph;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        W / 2.0,
        escape(&chart.title)
    );
    for e in y0..=y1 {
        let y = sy(10f64.powi(e));
        let _ = writeln!(
            o,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0,
            label(e)
        );
    }
    for e in x0..=x1 {
        let x = sx(10f64.powi(e));
        let _ = writeln!(
            o,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + ph,
            TOP + ph + 16.0,
            10u64.pow(e.max(0) as u32)
        );
    }
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">tools in the set</text>"#,
        LEFT + pw / 2.0,
        TOP + ph + 34.0
    );
    let _ = writeln!(
        o,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
    );
    for (k, s) in chart.series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let path: Vec<String> = s
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        let _ = writeln!(
            o,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            path.join(" ")
        );
        for &(x, y) in &s.points {
            let _ = writeln!(
                o,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"/>"#,
                sx(x),
                sy(y)
            );
        }
        let ly = TOP + ph + 58.0 + k as f64 * 18.0;
        let _ = writeln!(
            o,
            r#"<line x1="{LEFT}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            LEFT + 24.0,
            LEFT + 30.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    o.push_str("</svg>\n");
    o
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_is_drawn_inside_the_frame() {
        let chart = Chart {
            title: "t <1>".into(),
            series: vec![
                Series {
                    name: "a".into(),
                    points: vec![(10.0, 0.002), (1000.0, 3.0)],
                },
                Series {
                    name: "b & c".into(),
                    points: vec![(100.0, 0.00005)],
                },
            ],
        };
        let svg = scale_svg(&chart);
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("t &lt;1&gt;") && svg.contains("b &amp; c"));
        for c in svg.lines().filter(|l| l.starts_with("<circle")) {
            let num = |k: &str| -> f64 {
                let rest = &c[c.find(k).unwrap() + k.len() + 2..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            };
            let (x, y) = (num("cx"), num("cy"));
            assert!((LEFT..=W - RIGHT).contains(&x), "{c}");
            assert!((TOP..=H - BOTTOM).contains(&y), "{c}");
        }
        // Decades: 10 to 1000 tools, 10 µs to 10 s.
        assert_eq!(decades([10.0, 1000.0].into_iter()), (1, 3));
        assert_eq!(decades([0.00005, 3.0].into_iter()), (-5, 1));
    }
}
