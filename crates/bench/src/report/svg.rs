//! Line plots as SVG, in the manner of the papers' figures: series of
//! points with error bars, reference lines (the physical limit, the
//! ideal) dashed, axes with ticks and labels, a legend. Written by hand:
//! the browser draws the text, so no font goes into the binary.

use std::fmt::Write;

const WIDTH: f64 = 820.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 280.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 56.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

/// How x values are placed.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Numbers on a linear scale from 0.
    Linear,
    /// The sweep's values, evenly spaced in this order (BERs with 0 among
    /// them, delays): a point's x is its value's index.
    Categories(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XY {
    pub x: f64,
    pub y: f64,
    /// Half the error bar (the spread of runs); 0 for none.
    pub err: f64,
}

impl XY {
    /// A point without an error bar.
    pub fn at(x: f64, y: f64) -> XY {
        XY { x, y, err: 0.0 }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<XY>,
    /// Points only, unjoined (the segments of a time-sequence graph).
    pub dots: bool,
}

impl Series {
    pub fn line(name: impl Into<String>, points: Vec<XY>) -> Series {
        Series {
            name: name.into(),
            points,
            dots: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_axis: XAxis,
    pub series: Vec<Series>,
    /// Dashed lines: the physical limit, the ideal.
    pub references: Vec<Series>,
}

impl Plot {
    pub fn svg(&self) -> String {
        let all = || self.series.iter().chain(&self.references).flat_map(|s| &s.points);
        let y_max = nice_ceiling(all().map(|p| p.y + p.err).fold(0.0, f64::max));
        let (x_min, x_max) = match &self.x_axis {
            XAxis::Linear => (0.0, nice_ceiling(all().map(|p| p.x).fold(0.0, f64::max))),
            XAxis::Categories(values) => (-0.5, values.len() as f64 - 0.5),
        };
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let sx = |x: f64| LEFT + (x - x_min) / (x_max - x_min).max(f64::MIN_POSITIVE) * plot_w;
        let sy = |y: f64| TOP + plot_h - y / y_max * plot_h;
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(out, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
        let _ = write!(
            out,
            r#"<text x="10" y="20" font-size="14" font-weight="bold">{}</text>"#,
            escape(&self.title)
        );
        // Axes, ticks, grid, labels.
        out.push_str(r#"<g class="axes" stroke="black">"#);
        let _ = write!(
            out,
            r#"<line x1="{LEFT}" y1="{0}" x2="{1}" y2="{0}"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{0}"/>"#,
            TOP + plot_h,
            LEFT + plot_w
        );
        out.push_str("</g>");
        out.push_str(r#"<g class="ticks" font-size="11">"#);
        let step = y_max / 5.0;
        for i in 0..=5 {
            let y = step * f64::from(i);
            let _ = write!(
                out,
                r##"<line x1="{LEFT}" y1="{0}" x2="{1}" y2="{0}" stroke="#ddd"/><text x="{2}" y="{3}" text-anchor="end">{4}</text>"##,
                sy(y),
                LEFT + plot_w,
                LEFT - 6.0,
                sy(y) + 4.0,
                tick(y)
            );
        }
        let x_ticks: Vec<(f64, String)> = match &self.x_axis {
            XAxis::Linear => (0..=5)
                .map(|i| x_max / 5.0 * f64::from(i))
                .map(|x| (x, tick(x)))
                .collect(),
            XAxis::Categories(values) => values
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64, v.clone()))
                .collect(),
        };
        for (x, label) in x_ticks {
            let _ = write!(
                out,
                r#"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="black"/><text x="{0}" y="{3}" text-anchor="middle">{4}</text>"#,
                sx(x),
                TOP + plot_h,
                TOP + plot_h + 5.0,
                TOP + plot_h + 18.0,
                escape(&label)
            );
        }
        out.push_str("</g>");
        let _ = write!(
            out,
            r#"<text class="x-label" x="{}" y="{}" text-anchor="middle">{}</text>"#,
            LEFT + plot_w / 2.0,
            HEIGHT - 14.0,
            escape(&self.x_label)
        );
        let _ = write!(
            out,
            r#"<text class="y-label" transform="translate(18 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
            TOP + plot_h / 2.0,
            escape(&self.y_label)
        );
        // References, dashed; then the data.
        let mut legend: Vec<(String, String, bool)> = Vec::new();
        for (i, reference) in self.references.iter().enumerate() {
            let colour = if i == 0 { "#000" } else { "#777" };
            out.push_str(r#"<g class="reference">"#);
            out.push_str(&polyline(&reference.points, colour, true, &sx, &sy));
            out.push_str("</g>");
            legend.push((reference.name.clone(), colour.to_owned(), true));
        }
        for (i, series) in self.series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            out.push_str(r#"<g class="data">"#);
            if !series.dots {
                out.push_str(&polyline(&series.points, colour, false, &sx, &sy));
            }
            let radius = if series.dots { 1.5 } else { 3.5 };
            for p in &series.points {
                if p.err > 0.0 {
                    let _ = write!(
                        out,
                        r#"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="{colour}"/>"#,
                        sx(p.x),
                        sy(p.y - p.err),
                        sy(p.y + p.err)
                    );
                }
                let _ = write!(
                    out,
                    r#"<circle cx="{}" cy="{}" r="{radius}" fill="{colour}"><title>{}: {}</title></circle>"#,
                    sx(p.x),
                    sy(p.y),
                    escape(&series.name),
                    tick(p.y)
                );
            }
            out.push_str("</g>");
            legend.push((series.name.clone(), colour.to_owned(), false));
        }
        out.push_str(r#"<g class="legend" font-size="11">"#);
        for (i, (name, colour, dashed)) in legend.iter().enumerate() {
            let y = TOP + 8.0 + 16.0 * i as f64;
            let x = WIDTH - RIGHT + 14.0;
            let dash = if *dashed { r#" stroke-dasharray="6 4""# } else { "" };
            let _ = write!(
                out,
                r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{colour}" stroke-width="2"{dash}/><text x="{}" y="{}">{}</text>"#,
                x + 22.0,
                x + 28.0,
                y + 4.0,
                escape(name)
            );
        }
        out.push_str("</g></svg>");
        out
    }
}

fn polyline(
    points: &[XY],
    colour: &str,
    dashed: bool,
    sx: &dyn Fn(f64) -> f64,
    sy: &dyn Fn(f64) -> f64,
) -> String {
    let coordinates: Vec<String> = points
        .iter()
        .map(|p| format!("{:.1},{:.1}", sx(p.x), sy(p.y)))
        .collect();
    let dash = if dashed { r#" stroke-dasharray="6 4""# } else { "" };
    format!(
        r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
        coordinates.join(" ")
    )
}

/// The smallest 1, 2 or 5 times a power of ten at or above `value` (1
/// for nothing to show).
fn nice_ceiling(value: f64) -> f64 {
    if value <= 0.0 || !value.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|&v| v >= value * 0.999_999)
        .unwrap_or(10.0 * power)
}

/// A tick's label: SI prefixes for large numbers.
fn tick(value: f64) -> String {
    let trimmed = |v: f64, suffix: &str| {
        let text = format!("{v:.2}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        format!("{text}{suffix}")
    };
    match value.abs() {
        v if v >= 1e9 => trimmed(value / 1e9, "G"),
        v if v >= 1e6 => trimmed(value / 1e6, "M"),
        v if v >= 1e3 => trimmed(value / 1e3, "k"),
        _ => trimmed(value, ""),
    }
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings_and_ticks_read_as_people_write_them() {
        assert_eq!(nice_ceiling(7.3e6), 1e7);
        assert_eq!(nice_ceiling(1.5), 2.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(tick(8e6), "8M");
        assert_eq!(tick(2.5e3), "2.5k");
        assert_eq!(tick(0.0), "0");
    }

    fn xy(x: f64, y: f64, err: f64) -> XY {
        XY { x, y, err }
    }

    #[test]
    fn a_plot_has_its_axes_its_data_and_its_reference() {
        let plot = Plot {
            title: "t <1>".into(),
            x_label: "RTT".into(),
            y_label: "goodput".into(),
            x_axis: XAxis::Categories(vec!["0ms".into(), "600ms".into()]),
            series: vec![Series::line("a", vec![xy(0.0, 1.0, 0.1), xy(1.0, 2.0, 0.0)])],
            references: vec![Series::line("limit", vec![xy(0.0, 3.0, 0.0), xy(1.0, 3.0, 0.0)])],
        };
        let svg = plot.svg();
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("t &lt;1&gt;"));
        assert!(svg.contains(r#"class="reference""#) && svg.contains("stroke-dasharray"));
        assert!(svg.contains(">600ms</text>"));
    }
}
