//! Plots as SVG, in the manner of the papers' figures: a figure against a
//! swept value as lines of points with error bars, or as bars when the
//! sweep has a single value there; the reference values (the physical
//! limit, the ideal) dashed, over each bar group when there are bars;
//! axes from 0 fitted to the data, with ticks and labels; a legend whose
//! every entry is drawn on the plot.
//!
//! Series take their colours from the Okabe–Ito palette, which readers
//! with the common colour-vision deficiencies can tell apart, and each a
//! marker shape of its own as well; the yellow gets a dark outline.
//! Every drawn mark and every legend entry names its series in
//! `data-series`, so that a reader (or a test) can pair them.
//!
//! Written by hand: the browser draws the text, so no font goes into the
//! binary.

use std::fmt::Write;

const WIDTH: f64 = 820.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 280.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 56.0;
/// Height of one line of the legend.
const LEGEND_LINE: f64 = 15.0;
/// Characters of a legend entry's line before it wraps.
const LEGEND_CHARS: usize = 40;
/// Most ticks an axis fitted by [`fit`] has past 0.
const MAX_TICKS: f64 = 7.0;

/// The Okabe–Ito colours, in the order series take them: blue, orange,
/// bluish green, vermilion, reddish purple, sky blue, yellow, black.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];
/// The palette's yellow, too light on white without an outline.
const YELLOW: &str = "#F0E442";
/// The outline of light marks.
const OUTLINE: &str = "#333333";
/// The reference lines' colours: the first black, the others grey.
const REFERENCE_COLOURS: [&str; 2] = ["#000000", "#777777"];
/// The reference lines' dashes, told apart from each other as well.
const REFERENCE_DASHES: [&str; 2] = ["7 4", "2 3"];
/// The colour of the legend's swatch for stopped runs' marks.
const STOPPED_SWATCH: &str = "#555555";
/// What the legend says of a stopped run's marks, unless the plot says.
pub const STOPPED_LABEL: &str = "stopped at its time limit: figure over the window";

/// How x values are placed.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Numbers on a linear scale from 0.
    Linear,
    /// The sweep's values, evenly spaced in this order (BERs with 0 among
    /// them, delays): a point's x is its value's index.
    Categories(Vec<String>),
}

/// How the series are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Points joined by lines (or dots alone, for series that say so);
    /// references as dashed lines.
    Lines,
    /// A bar per series at each category (the categories are groups);
    /// references as dashed segments across their group.
    Bars,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XY {
    pub x: f64,
    pub y: f64,
    /// Half the error bar (the spread of runs); 0 for none.
    pub err: f64,
    /// Whether runs behind it were stopped at their time limit: drawn
    /// hollow (a point) or hatched (a bar).
    pub stopped: bool,
}

impl XY {
    /// A point without an error bar.
    pub fn at(x: f64, y: f64) -> XY {
        XY {
            x,
            y,
            err: 0.0,
            stopped: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<XY>,
    /// Points only, unjoined (the segments of a time-sequence graph).
    pub dots: bool,
    /// The colour and marker's index, so that a stack keeps its look
    /// across the panels of one figure; its place among the series when
    /// `None`.
    pub style: Option<usize>,
}

impl Series {
    pub fn line(name: impl Into<String>, points: Vec<XY>) -> Series {
        Series {
            name: name.into(),
            points,
            dots: false,
            style: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_axis: XAxis,
    pub kind: Kind,
    pub series: Vec<Series>,
    /// Dashed: the physical limit, the ideal.
    pub references: Vec<Series>,
    /// The least value the y axis reaches, so that the panels of one
    /// figure share their scale; the data's own when `None`.
    pub y_max: Option<f64>,
    /// What the legend says of the marks of runs stopped at their time
    /// limit (the entry shows when there is such a mark).
    pub stopped_label: String,
}

/// A mark's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
    Hexagon,
}

const SHAPES: [Shape; 6] = [
    Shape::Circle,
    Shape::Square,
    Shape::TriangleUp,
    Shape::Diamond,
    Shape::TriangleDown,
    Shape::Hexagon,
];

/// A series' look: its colour and its marker.
#[derive(Debug, Clone, Copy)]
struct Style {
    colour: &'static str,
    shape: Shape,
}

impl Style {
    fn of(index: usize) -> Style {
        Style {
            colour: PALETTE[index % PALETTE.len()],
            shape: SHAPES[index % SHAPES.len()],
        }
    }

    /// The outline a mark of this colour needs to show on white.
    fn outline(&self) -> &'static str {
        if self.colour == YELLOW {
            OUTLINE
        } else {
            self.colour
        }
    }
}

/// What a legend entry shows beside its text.
#[derive(Debug, Clone, Copy)]
enum Swatch {
    /// A dashed line (a reference).
    Dashed(&'static str, &'static str),
    /// A line with its marker (a series of points).
    Line(Style),
    /// A dot (a series of dots).
    Dot(Style),
    /// A filled box (a series of bars).
    Bar(Style),
    /// The mark of stopped runs: hollow, or hatched for bars.
    Stopped(Kind),
}

#[derive(Debug, Clone)]
struct Entry {
    id: String,
    name: String,
    colour: &'static str,
    swatch: Swatch,
}

/// A plot's coordinates: from data to the page.
struct Frame {
    x_min: f64,
    x_max: f64,
    y_end: f64,
    plot_w: f64,
    plot_h: f64,
}

impl Frame {
    fn sx(&self, x: f64) -> f64 {
        LEFT + (x - self.x_min) / (self.x_max - self.x_min).max(f64::MIN_POSITIVE) * self.plot_w
    }

    fn sy(&self, y: f64) -> f64 {
        TOP + self.plot_h - y / self.y_end * self.plot_h
    }
}

impl Plot {
    /// A plot of no series yet.
    pub fn new(kind: Kind, title: String, x_label: &str, y_label: &str, x_axis: XAxis) -> Plot {
        Plot {
            title,
            x_label: x_label.to_owned(),
            y_label: y_label.to_owned(),
            x_axis,
            kind,
            series: Vec::new(),
            references: Vec::new(),
            y_max: None,
            stopped_label: STOPPED_LABEL.to_owned(),
        }
    }

    /// The highest value the plot shows, error bars included.
    pub fn data_max(&self) -> f64 {
        self.series
            .iter()
            .chain(&self.references)
            .flat_map(|s| &s.points)
            .map(|p| p.y + p.err)
            .fold(0.0, f64::max)
    }

    /// The x axis' end and tick step (a linear axis), fitted to the data.
    pub fn x_fit(&self) -> (f64, f64) {
        let x_max = self
            .series
            .iter()
            .flat_map(|s| &s.points)
            .map(|p| p.x)
            .fold(0.0, f64::max);
        fit(x_max)
    }

    /// The y axis' end and tick step, fitted to the data (or to the
    /// figure's shared maximum).
    pub fn y_fit(&self) -> (f64, f64) {
        fit(self.data_max().max(self.y_max.unwrap_or(0.0)))
    }

    fn style(&self, index: usize) -> Style {
        Style::of(self.series[index].style.unwrap_or(index))
    }

    fn any_stopped(&self) -> bool {
        self.series.iter().flat_map(|s| &s.points).any(|p| p.stopped)
    }

    /// The legend's entries: the references, the series, and the stopped
    /// runs' mark if there is one.
    fn legend(&self) -> Vec<Entry> {
        let mut entries = Vec::new();
        for (i, reference) in self.references.iter().enumerate() {
            let (colour, dash) = reference_look(i);
            entries.push(Entry {
                id: format!("reference-{i}"),
                name: reference.name.clone(),
                colour,
                swatch: Swatch::Dashed(colour, dash),
            });
        }
        for (i, series) in self.series.iter().enumerate() {
            let style = self.style(i);
            let swatch = match (self.kind, series.dots) {
                (Kind::Bars, _) => Swatch::Bar(style),
                (Kind::Lines, true) => Swatch::Dot(style),
                (Kind::Lines, false) => Swatch::Line(style),
            };
            entries.push(Entry {
                id: format!("series-{i}"),
                name: series.name.clone(),
                colour: style.colour,
                swatch,
            });
        }
        if self.any_stopped() {
            entries.push(Entry {
                id: "stopped".to_owned(),
                name: self.stopped_label.clone(),
                colour: STOPPED_SWATCH,
                swatch: Swatch::Stopped(self.kind),
            });
        }
        entries
    }

    pub fn svg(&self) -> String {
        let legend = self.legend();
        let legend_lines: usize = legend.iter().map(|e| wrap(&e.name).len()).sum();
        let height = HEIGHT.max(TOP + 16.0 + (legend_lines + legend.len()) as f64 * LEGEND_LINE);
        let (y_end, y_step) = self.y_fit();
        let x_ticks: Vec<(f64, String)>;
        let (x_min, x_max) = match &self.x_axis {
            XAxis::Linear => {
                let (end, step) = self.x_fit();
                x_ticks = ticks(end, step).into_iter().map(|x| (x, tick(x))).collect();
                (0.0, end)
            }
            XAxis::Categories(values) => {
                x_ticks = values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i as f64, v.clone()))
                    .collect();
                (-0.5, values.len() as f64 - 0.5)
            }
        };
        let frame = Frame {
            x_min,
            x_max,
            y_end,
            plot_w: WIDTH - LEFT - RIGHT,
            plot_h: HEIGHT - TOP - BOTTOM,
        };
        let (plot_w, plot_h) = (frame.plot_w, frame.plot_h);
        let kind = match self.kind {
            Kind::Lines => "lines",
            Kind::Bars => "bars",
        };
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" data-kind="{kind}" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(out, r#"<rect width="{WIDTH}" height="{height}" fill="white"/>"#);
        out.push_str(&self.hatches());
        let _ = write!(
            out,
            r#"<text class="title" x="10" y="20" font-size="14" font-weight="bold">{}</text>"#,
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
        out.push_str(r#"<g class="ticks y-ticks" font-size="11">"#);
        for y in ticks(y_end, y_step) {
            let _ = write!(
                out,
                r##"<line x1="{LEFT}" y1="{0}" x2="{1}" y2="{0}" stroke="#ddd"/><text x="{2}" y="{3}" text-anchor="end">{4}</text>"##,
                frame.sy(y),
                LEFT + plot_w,
                LEFT - 6.0,
                frame.sy(y) + 4.0,
                tick(y)
            );
        }
        out.push_str("</g>");
        out.push_str(r#"<g class="ticks x-ticks" font-size="11">"#);
        for (x, label) in x_ticks {
            let _ = write!(
                out,
                r#"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="black"/><text x="{0}" y="{3}" text-anchor="middle">{4}</text>"#,
                frame.sx(x),
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
        match self.kind {
            Kind::Lines => {
                self.draw_lines(&mut out, &frame);
                self.draw_line_references(&mut out, &frame);
            }
            Kind::Bars => {
                self.draw_bars(&mut out, &frame);
                self.draw_bar_references(&mut out, &frame);
            }
        }
        self.draw_legend(&mut out, &legend);
        out.push_str("</svg>");
        out
    }

    /// The hatch patterns of stopped bars, one per colour they use (ids
    /// of this plot's own, for many plots share a page).
    fn hatches(&self) -> String {
        if self.kind != Kind::Bars || !self.any_stopped() {
            return String::new();
        }
        let mut colours: Vec<&str> = vec![STOPPED_SWATCH];
        for (i, series) in self.series.iter().enumerate() {
            if series.points.iter().any(|p| p.stopped) {
                colours.push(self.style(i).colour);
            }
        }
        colours.dedup();
        let mut out = String::from("<defs>");
        for colour in colours {
            let _ = write!(
                out,
                r#"<pattern id="{}" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="6" height="6" fill="{colour}" fill-opacity="0.18"/><line x1="0" y1="0" x2="0" y2="6" stroke="{colour}" stroke-width="2.5"/></pattern>"#,
                self.hatch_id(colour)
            );
        }
        out.push_str("</defs>");
        out
    }

    fn hatch_id(&self, colour: &str) -> String {
        format!(
            "hatch-{:016x}-{}",
            fnv(&self.title),
            colour.trim_start_matches('#')
        )
    }

    fn draw_lines(&self, out: &mut String, frame: &Frame) {
        for (i, series) in self.series.iter().enumerate() {
            let style = self.style(i);
            let id = format!("series-{i}");
            let _ = write!(out, r#"<g class="data" data-series="{id}">"#);
            if !series.dots && series.points.len() >= 2 {
                if style.colour == YELLOW {
                    out.push_str(&polyline(&series.points, OUTLINE, 4.0, None, &id, frame));
                }
                out.push_str(&polyline(&series.points, style.colour, 2.0, None, &id, frame));
            }
            for p in &series.points {
                if p.err > 0.0 {
                    out.push_str(&error_bar(frame.sx(p.x), p, style.outline(), frame));
                }
                let (x, y) = (frame.sx(p.x), frame.sy(p.y));
                let what = format!("{}: {}{}", series.name, tick(p.y), stopped_note(p));
                let ids = if p.stopped {
                    format!("{id} stopped")
                } else {
                    id.clone()
                };
                let size = if series.dots { 1.6 } else { 4.5 };
                let shape = if series.dots { Shape::Circle } else { style.shape };
                out.push_str(&marker(shape, x, y, size, style, p.stopped, &ids, &what));
            }
            out.push_str("</g>");
        }
    }

    /// The references as dashed lines; one of a single value as a
    /// segment across its category (or across the plot, on a linear
    /// axis), for a line needs two points.
    fn draw_line_references(&self, out: &mut String, frame: &Frame) {
        for (i, reference) in self.references.iter().enumerate() {
            let (colour, dash) = reference_look(i);
            let id = format!("reference-{i}");
            let _ = write!(out, r#"<g class="reference" data-series="{id}">"#);
            match reference.points.as_slice() {
                [] => {}
                [only] => {
                    let (from, to) = match self.x_axis {
                        XAxis::Linear => (frame.x_min, frame.x_max),
                        XAxis::Categories(_) => (only.x - 0.45, only.x + 0.45),
                    };
                    out.push_str(&segment(
                        from,
                        to,
                        only.y,
                        colour,
                        dash,
                        &id,
                        &reference.name,
                        frame,
                    ));
                }
                points => out.push_str(&polyline(points, colour, 2.0, Some(dash), &id, frame)),
            }
            out.push_str("</g>");
        }
    }

    fn draw_bars(&self, out: &mut String, frame: &Frame) {
        let count = self.series.len().max(1) as f64;
        let slot = 0.8 / count;
        let width = frame.sx(slot * 0.85) - frame.sx(0.0);
        for (i, series) in self.series.iter().enumerate() {
            let style = self.style(i);
            let id = format!("series-{i}");
            let _ = write!(out, r#"<g class="data" data-series="{id}">"#);
            for p in &series.points {
                let left = frame.sx(p.x - 0.4 + slot * i as f64 + slot * 0.075);
                let (top, bottom) = (frame.sy(p.y.max(0.0)), frame.sy(0.0));
                let fill = if p.stopped {
                    format!("url(#{})", self.hatch_id(style.colour))
                } else {
                    style.colour.to_owned()
                };
                let ids = if p.stopped {
                    format!("{id} stopped")
                } else {
                    id.clone()
                };
                let _ = write!(
                    out,
                    r#"<rect class="mark bar" data-series="{ids}" x="{left:.1}" y="{top:.1}" width="{width:.1}" height="{:.1}" fill="{fill}" stroke="{}" stroke-width="1.5"><title>{}</title></rect>"#,
                    (bottom - top).max(0.5),
                    style.outline(),
                    escape(&format!("{}: {}{}", series.name, tick(p.y), stopped_note(p)))
                );
                if p.err > 0.0 {
                    out.push_str(&error_bar(left + width / 2.0, p, OUTLINE, frame));
                }
                if width >= 30.0 {
                    // Above the bar, or inside its top when a reference's
                    // segment would strike it through there.
                    let above = frame.sy(p.y + p.err) - 3.0;
                    let struck = self
                        .references
                        .iter()
                        .flat_map(|r| &r.points)
                        .any(|r| (r.x - p.x).abs() < 0.5 && (frame.sy(r.y) - (above - 3.0)).abs() < 8.0);
                    let (y, fill) = match (struck, p.stopped) {
                        (true, false) if style.colour != YELLOW => (top + 11.0, "white"),
                        (true, _) => (top + 11.0, "black"),
                        (false, _) => (above, "black"),
                    };
                    let _ = write!(
                        out,
                        r#"<text class="value" x="{:.1}" y="{y:.1}" text-anchor="middle" font-size="9" fill="{fill}">{}</text>"#,
                        left + width / 2.0,
                        tick(p.y)
                    );
                }
            }
            out.push_str("</g>");
        }
    }

    /// The references as dashed segments across their group of bars.
    fn draw_bar_references(&self, out: &mut String, frame: &Frame) {
        for (i, reference) in self.references.iter().enumerate() {
            let (colour, dash) = reference_look(i);
            let id = format!("reference-{i}");
            let _ = write!(out, r#"<g class="reference" data-series="{id}">"#);
            for p in &reference.points {
                out.push_str(&segment(
                    p.x - 0.45,
                    p.x + 0.45,
                    p.y,
                    colour,
                    dash,
                    &id,
                    &reference.name,
                    frame,
                ));
            }
            out.push_str("</g>");
        }
    }

    fn draw_legend(&self, out: &mut String, legend: &[Entry]) {
        out.push_str(r#"<g class="legend" font-size="11">"#);
        let x = WIDTH - RIGHT + 14.0;
        let mut y = TOP + 8.0;
        for entry in legend {
            let _ = write!(
                out,
                r#"<g class="legend-item" data-series="{}" data-colour="{}">"#,
                entry.id, entry.colour
            );
            let middle = x + 11.0;
            match entry.swatch {
                Swatch::Dashed(colour, dash) => {
                    let _ = write!(
                        out,
                        r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>"#,
                        x + 22.0
                    );
                }
                Swatch::Line(style) => {
                    let _ = write!(
                        out,
                        r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="2"/>"#,
                        x + 22.0,
                        style.outline()
                    );
                    out.push_str(&marker(style.shape, middle, y, 4.5, style, false, "", ""));
                }
                Swatch::Dot(style) => {
                    out.push_str(&marker(Shape::Circle, middle, y, 3.0, style, false, "", ""));
                }
                Swatch::Bar(style) => {
                    let _ = write!(
                        out,
                        r#"<rect x="{}" y="{}" width="14" height="10" fill="{}" stroke="{}"/>"#,
                        middle - 7.0,
                        y - 5.0,
                        style.colour,
                        style.outline()
                    );
                }
                Swatch::Stopped(Kind::Bars) => {
                    let _ = write!(
                        out,
                        r#"<rect x="{}" y="{}" width="14" height="10" fill="url(#{})" stroke="{STOPPED_SWATCH}"/>"#,
                        middle - 7.0,
                        y - 5.0,
                        self.hatch_id(STOPPED_SWATCH)
                    );
                }
                Swatch::Stopped(Kind::Lines) => {
                    let grey = Style {
                        colour: STOPPED_SWATCH,
                        shape: Shape::Circle,
                    };
                    out.push_str(&marker(Shape::Circle, middle, y, 4.5, grey, true, "", ""));
                }
            }
            let lines = wrap(&entry.name);
            let _ = write!(out, r#"<text x="{}" y="{}">"#, x + 28.0, y + 4.0);
            for (i, line) in lines.iter().enumerate() {
                let dy = if i == 0 { 0.0 } else { LEGEND_LINE };
                // A line but the last ends with the space it was broken at,
                // so that the entry's text reads whole.
                let space = if i + 1 < lines.len() { " " } else { "" };
                let _ = write!(
                    out,
                    r#"<tspan x="{}" dy="{dy}">{}{space}</tspan>"#,
                    x + 28.0,
                    escape(line)
                );
            }
            out.push_str("</text></g>");
            y += LEGEND_LINE * (lines.len() as f64) + 4.0;
        }
        out.push_str("</g>");
    }
}

/// The colour and dash of the `index`th reference.
fn reference_look(index: usize) -> (&'static str, &'static str) {
    let i = index.min(REFERENCE_COLOURS.len() - 1);
    (REFERENCE_COLOURS[i], REFERENCE_DASHES[i])
}

/// What a point's tooltip adds for a stopped run.
fn stopped_note(p: &XY) -> &'static str {
    if p.stopped {
        " (stopped at its time limit: over the window)"
    } else {
        ""
    }
}

/// A mark of `shape` centred at (`x`, `y`), `size` its half width;
/// hollow (white inside) for a stopped run's.
#[allow(clippy::too_many_arguments)]
fn marker(
    shape: Shape,
    x: f64,
    y: f64,
    size: f64,
    style: Style,
    hollow: bool,
    ids: &str,
    what: &str,
) -> String {
    let fill = if hollow { "white" } else { style.colour };
    let stroke_width = if hollow { 2.0 } else { 1.0 };
    let (class, data) = if ids.is_empty() {
        (String::new(), String::new())
    } else {
        (r#" class="mark""#.to_owned(), format!(r#" data-series="{ids}""#))
    };
    let paint = format!(
        r#"fill="{fill}" stroke="{}" stroke-width="{stroke_width}""#,
        style.outline()
    );
    let title = if what.is_empty() {
        String::new()
    } else {
        format!("<title>{}</title>", escape(what))
    };
    let polygon = |points: &[(f64, f64)]| {
        let points: Vec<String> = points
            .iter()
            .map(|(dx, dy)| format!("{:.1},{:.1}", x + dx * size, y + dy * size))
            .collect();
        format!(
            r#"<polygon{class}{data} points="{}" {paint}>{title}</polygon>"#,
            points.join(" ")
        )
    };
    match shape {
        Shape::Circle => {
            format!(r#"<circle{class}{data} cx="{x:.1}" cy="{y:.1}" r="{size}" {paint}>{title}</circle>"#)
        }
        Shape::Square => polygon(&[(-0.85, -0.85), (0.85, -0.85), (0.85, 0.85), (-0.85, 0.85)]),
        Shape::TriangleUp => polygon(&[(0.0, -1.1), (1.0, 0.75), (-1.0, 0.75)]),
        Shape::Diamond => polygon(&[(0.0, -1.15), (1.0, 0.0), (0.0, 1.15), (-1.0, 0.0)]),
        Shape::TriangleDown => polygon(&[(0.0, 1.1), (1.0, -0.75), (-1.0, -0.75)]),
        Shape::Hexagon => polygon(&[
            (-0.5, -0.9),
            (0.5, -0.9),
            (1.0, 0.0),
            (0.5, 0.9),
            (-0.5, 0.9),
            (-1.0, 0.0),
        ]),
    }
}

/// The error bar of `p`, with its caps, at `x` on the page.
fn error_bar(x: f64, p: &XY, colour: &str, frame: &Frame) -> String {
    let (low, high) = (frame.sy((p.y - p.err).max(0.0)), frame.sy(p.y + p.err));
    format!(
        r#"<path d="M{x:.1},{low:.1}V{high:.1}M{:.1},{low:.1}H{:.1}M{:.1},{high:.1}H{:.1}" stroke="{colour}" fill="none"/>"#,
        x - 3.0,
        x + 3.0,
        x - 3.0,
        x + 3.0
    )
}

fn polyline(points: &[XY], colour: &str, width: f64, dash: Option<&str>, id: &str, frame: &Frame) -> String {
    let coordinates: Vec<String> = points
        .iter()
        .map(|p| format!("{:.1},{:.1}", frame.sx(p.x), frame.sy(p.y)))
        .collect();
    let dash = dash.map_or(String::new(), |d| format!(r#" stroke-dasharray="{d}""#));
    format!(
        r#"<polyline class="mark" data-series="{id}" points="{}" fill="none" stroke="{colour}" stroke-width="{width}"{dash}/>"#,
        coordinates.join(" ")
    )
}

/// A dashed horizontal segment at `y` from `from` to `to` (data units).
#[allow(clippy::too_many_arguments)]
fn segment(
    from: f64,
    to: f64,
    y: f64,
    colour: &str,
    dash: &str,
    id: &str,
    name: &str,
    frame: &Frame,
) -> String {
    let value = tick(y);
    let (x1, x2, y) = (frame.sx(from), frame.sx(to), frame.sy(y));
    format!(
        r#"<line class="mark" data-series="{id}" x1="{x1:.1}" y1="{y:.1}" x2="{x2:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="2.5" stroke-dasharray="{dash}"><title>{}</title></line>"#,
        escape(&format!("{name}: {value}"))
    )
}

/// A legend entry's text in lines of at most [`LEGEND_CHARS`] (a word
/// longer than that stands alone).
fn wrap(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= LEGEND_CHARS => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// A 64-bit FNV-1a hash, for ids of a plot's own.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// An axis from 0 that shows `max`: its end and its tick step. The step
/// is 1, 2 or 5 times a power of ten, the smallest that needs at most
/// seven ticks past 0, and the end is the first tick at or above `max`:
/// 23 s of data gives an axis to 25 s in steps of 5, not one to 50. Nothing
/// to show gives 0 to 1.
pub fn fit(max: f64) -> (f64, f64) {
    if max <= 0.0 || !max.is_finite() {
        return (1.0, 0.2);
    }
    let power = 10f64.powf(max.log10().floor());
    let steps = [0.1, 1.0, 10.0]
        .into_iter()
        .flat_map(|scale| [1.0, 2.0, 5.0].map(|m| m * scale * power));
    for step in steps {
        let count = (max / step * (1.0 - 1e-9)).ceil().max(1.0);
        if count <= MAX_TICKS {
            return (count * step, step);
        }
    }
    (10.0 * power, 10.0 * power)
}

/// The ticks of an axis from 0 to `end` in steps of `step`.
fn ticks(end: f64, step: f64) -> Vec<f64> {
    let count = (end / step).round() as u32;
    (0..=count).map(|i| step * f64::from(i)).collect()
}

/// A tick's label: SI prefixes for large numbers.
pub fn tick(value: f64) -> String {
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
    fn an_axis_ends_at_the_first_nice_tick_above_its_data() {
        assert_eq!(fit(23.0), (25.0, 5.0), "23 s of data: to 25 s, not 50");
        assert_eq!(fit(60.2), (70.0, 10.0));
        assert_eq!(fit(7.72e6), (8e6, 2e6));
        assert_eq!(fit(6.85e6), (7e6, 1e6));
        assert_eq!(fit(10.0), (10.0, 2.0));
        assert_eq!(fit(0.95), (1.0, 0.2));
        assert_eq!(fit(0.0), (1.0, 0.2));
        assert_eq!(fit(f64::NAN), (1.0, 0.2));
        for max in [0.013, 1.0, 3.3, 17.0, 99.0, 101.0, 4.2e5, 9.9e9] {
            let (end, step) = fit(max);
            assert!(end >= max, "{max}: the axis shows it ({end})");
            assert!(end - max < step, "{max}: ends within a tick ({end}, {step})");
            assert!(end / step <= MAX_TICKS + 1e-9, "{max}: few ticks ({end}, {step})");
        }
    }

    #[test]
    fn ticks_read_as_people_write_them() {
        assert_eq!(tick(8e6), "8M");
        assert_eq!(tick(2.5e3), "2.5k");
        assert_eq!(tick(0.0), "0");
        assert_eq!(ticks(25.0, 5.0), [0.0, 5.0, 10.0, 15.0, 20.0, 25.0]);
    }

    fn xy(x: f64, y: f64, err: f64) -> XY {
        XY {
            x,
            y,
            err,
            stopped: false,
        }
    }

    fn plot(kind: Kind, categories: &[&str]) -> Plot {
        Plot::new(
            kind,
            "t <1>".into(),
            "RTT",
            "goodput",
            XAxis::Categories(categories.iter().map(|c| c.to_string()).collect()),
        )
    }

    /// The ids of the marks drawn outside the legend, and those of the
    /// legend's entries.
    fn ids(svg: &str) -> (Vec<String>, Vec<String>) {
        let (drawing, legend) = svg.split_once(r#"<g class="legend""#).expect("a legend");
        let find = |text: &str, after: &str| -> Vec<String> {
            text.split(after)
                .skip(1)
                .map(|rest| rest[..rest.find('"').unwrap()].to_owned())
                .collect()
        };
        (
            find(drawing, r#"class="mark" data-series=""#)
                .into_iter()
                .chain(find(drawing, r#"class="mark bar" data-series=""#))
                .flat_map(|ids| ids.split(' ').map(str::to_owned).collect::<Vec<_>>())
                .collect(),
            find(legend, r#"class="legend-item" data-series=""#),
        )
    }

    #[test]
    fn a_line_plot_draws_its_axes_its_data_and_every_legend_entry() {
        let mut plot = plot(Kind::Lines, &["0ms", "600ms"]);
        plot.series = vec![Series::line("a", vec![xy(0.0, 1.0, 0.1), xy(1.0, 2.0, 0.0)])];
        plot.references = vec![
            Series::line("limit", vec![xy(0.0, 3.0, 0.0), xy(1.0, 3.0, 0.0)]),
            Series::line("ideal", vec![xy(1.0, 2.5, 0.0)]),
        ];
        let svg = plot.svg();
        assert_eq!(svg.matches("<circle").count(), 3, "two points and the swatch");
        assert!(svg.contains("t &lt;1&gt;"));
        assert!(svg.contains(r#"class="reference""#) && svg.contains("stroke-dasharray"));
        assert!(svg.contains(">600ms</text>"));
        let (drawn, legend) = ids(&svg);
        assert_eq!(legend, ["reference-0", "reference-1", "series-0"]);
        for id in &legend {
            assert!(drawn.contains(id), "{id} drawn: {drawn:?}");
        }
        assert!(!svg.contains("stopped"), "no stopped run, no entry for one");
    }

    #[test]
    fn bars_draw_one_bar_per_series_and_the_reference_over_each_group() {
        let mut plot = plot(Kind::Bars, &["BER 0", "BER 1e-5"]);
        let mut stopped = xy(1.0, 1.5e6, 0.0);
        stopped.stopped = true;
        plot.series = vec![
            Series::line("cubic", vec![xy(0.0, 5e6, 0.0), stopped]),
            Series::line("rate", vec![xy(0.0, 7e6, 0.0), xy(1.0, 6e6, 2e5)]),
        ];
        plot.references = vec![Series::line(
            "physical limit",
            vec![xy(0.0, 7.7e6, 0.0), xy(1.0, 6.85e6, 0.0)],
        )];
        plot.stopped_label = "stopped at its time limit: goodput over the window".into();
        let svg = plot.svg();
        assert_eq!(svg.matches(r#"class="mark bar""#).count(), 4);
        assert_eq!(
            svg.matches(r#"<line class="mark" data-series="reference-0""#)
                .count(),
            2,
            "the limit over each group"
        );
        let (drawn, legend) = ids(&svg);
        assert_eq!(legend, ["reference-0", "series-0", "series-1", "stopped"]);
        for id in &legend {
            assert!(drawn.contains(id), "{id} drawn: {drawn:?}");
        }
        assert_eq!(
            svg.matches(r#"data-series="series-0 stopped""#).count(),
            1,
            "only the stopped run's bar is marked"
        );
        assert!(svg.contains("fill=\"url(#hatch-"), "hatched");
        assert!(
            svg.contains(">stopped at its time limit: goodput over </tspan>")
                && svg.contains(">the window</tspan>"),
            "the stopped runs' entry says what their bars are"
        );
        // The axis fits the limit, the highest value: 7.7M in steps of 1M.
        assert!(svg.contains(">8M</text>") && !svg.contains(">9M</text>"));
    }

    #[test]
    fn series_take_distinct_colour_blind_safe_colours_and_shapes() {
        let mut plot = plot(Kind::Lines, &["a", "b"]);
        plot.series = (0..6)
            .map(|i| Series::line(format!("s{i}"), vec![xy(0.0, 1.0, 0.0), xy(1.0, 2.0, 0.0)]))
            .collect();
        let legend = plot.legend();
        let colours: Vec<&str> = legend.iter().map(|e| e.colour).collect();
        for (i, colour) in colours.iter().enumerate() {
            assert!(PALETTE.contains(colour));
            assert!(!colours[..i].contains(colour), "{colour} once");
        }
        let shapes: Vec<Shape> = (0..6).map(|i| plot.style(i).shape).collect();
        for (i, shape) in shapes.iter().enumerate() {
            assert!(!shapes[..i].contains(shape), "{shape:?} once");
        }
        // A series' style, when it has one, is kept whatever its place.
        plot.series[0].style = Some(3);
        assert_eq!(plot.style(0).colour, PALETTE[3]);
    }

    #[test]
    fn long_legend_entries_wrap_and_the_plot_grows_to_hold_them() {
        assert_eq!(
            wrap("stopped at its time limit: goodput over the window"),
            ["stopped at its time limit: goodput over", "the window"]
        );
        let mut plot = plot(Kind::Lines, &["a", "b"]);
        plot.series = (0..30)
            .map(|i| Series::line(format!("s{i}"), vec![xy(0.0, 1.0, 0.0), xy(1.0, 2.0, 0.0)]))
            .collect();
        let svg = plot.svg();
        let height: f64 = svg
            .split("height=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(height > HEIGHT, "{height}");
    }
}
