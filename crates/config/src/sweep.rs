//! Scenario files as sweeps: a TOML document whose `[sweep]` table maps
//! dotted keys to lists of values. Each combination of values (the first
//! axis varying slowest) is one point: the document with those keys set.
//! `--set KEY=VALUE` pins any key: a swept key becomes a one-value axis,
//! any other key takes the value, and a list value makes a new axis.

use toml::{Table, Value};

use crate::error::Error;

/// More points than anyone means to run: a typo, refused before it eats
/// the machine.
pub const MAX_POINTS: usize = 100_000;

/// A scenario document with its axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The document without its `[sweep]` table.
    pub base: Table,
    /// Dotted key and values, in file order.
    pub axes: Vec<(String, Vec<Value>)>,
}

/// One point of a sweep: the values of every axis, and the document.
#[derive(Debug, Clone, PartialEq)]
pub struct PointDocument {
    pub params: Vec<(String, Value)>,
    pub document: Table,
}

impl Sweep {
    /// Reads a scenario document; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Sweep, Error> {
        let mut base: Table = text
            .parse()
            .map_err(|e: toml::de::Error| Error::syntax(origin, text, &e))?;
        let mut axes = Vec::new();
        if let Some(sweep) = base.remove("sweep") {
            let Value::Table(sweep) = sweep else {
                return Err(Error::invalid(
                    "sweep",
                    "not a table",
                    "a table of dotted keys to lists of values",
                ));
            };
            for (key, values) in sweep {
                let Value::Array(values) = values else {
                    return Err(Error::invalid(format!("sweep.{key}"), values, "a list of values"));
                };
                if values.is_empty() {
                    return Err(Error::invalid(format!("sweep.{key}"), "[]", "at least one value"));
                }
                axes.push((key, values));
            }
        }
        Ok(Sweep { base, axes })
    }

    /// Pins `key` to `value` (see the module documentation).
    pub fn set(&mut self, key: &str, value: Value) -> Result<(), Error> {
        let values = match value {
            Value::Array(values) if values.is_empty() => {
                return Err(Error::invalid(key, "[]", "at least one value"));
            }
            Value::Array(values) => values,
            single => {
                if let Some(axis) = self.axes.iter_mut().find(|(k, _)| k == key) {
                    axis.1 = vec![single];
                    return Ok(());
                }
                return set_path(&mut self.base, key, single);
            }
        };
        match self.axes.iter_mut().find(|(k, _)| k == key) {
            Some(axis) => axis.1 = values,
            None => self.axes.push((key.to_owned(), values)),
        }
        Ok(())
    }

    /// Every point, the first axis varying slowest.
    pub fn points(&self) -> Result<Vec<PointDocument>, Error> {
        let total = self
            .axes
            .iter()
            .try_fold(1usize, |n, (_, values)| n.checked_mul(values.len()))
            .filter(|&n| n <= MAX_POINTS)
            .ok_or_else(|| {
                let sizes: Vec<String> = self
                    .axes
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", v.len()))
                    .collect();
                Error::invalid(
                    "sweep",
                    sizes.join(", "),
                    format!("at most {MAX_POINTS} points in all"),
                )
            })?;
        let mut points = Vec::with_capacity(total);
        for index in 0..total {
            let mut document = self.base.clone();
            let mut params = Vec::with_capacity(self.axes.len());
            let mut rest = index;
            let mut chosen = vec![0; self.axes.len()];
            for (slot, (_, values)) in chosen.iter_mut().zip(&self.axes).rev() {
                *slot = rest % values.len();
                rest /= values.len();
            }
            for ((key, values), &i) in self.axes.iter().zip(&chosen) {
                set_path(&mut document, key, values[i].clone())?;
                params.push((key.clone(), values[i].clone()));
            }
            points.push(PointDocument { params, document });
        }
        Ok(points)
    }
}

/// Parses the VALUE of `--set KEY=VALUE`: TOML if it reads as TOML (a
/// number, a boolean, a quoted string, a list), else the text as a string,
/// so that `120ms` needs no quotes.
pub fn parse_value(text: &str) -> Value {
    format!("v = {text}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(text.to_owned()))
}

/// Splits `KEY=VALUE`.
pub fn parse_assignment(text: &str) -> Result<(String, Value), Error> {
    const ALLOWED: &str = "KEY=VALUE with a dotted key, such as link.delay=120ms";
    let refuse = || Error::invalid("--set", format!("{text:?}"), ALLOWED);
    let (key, value) = text.split_once('=').ok_or_else(refuse)?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(refuse());
    }
    Ok((key.to_owned(), parse_value(value.trim())))
}

/// Sets the dotted `key` in `table`, creating tables on the way.
fn set_path(table: &mut Table, key: &str, value: Value) -> Result<(), Error> {
    let mut parts = key.split('.').peekable();
    let mut current = table;
    let mut walked = String::new();
    while let Some(part) = parts.next() {
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(part);
        if parts.peek().is_none() {
            current.insert(part.to_owned(), value);
            return Ok(());
        }
        let entry = current
            .entry(part.to_owned())
            .or_insert_with(|| Value::Table(Table::new()));
        current = match entry {
            Value::Table(t) => t,
            other => {
                return Err(Error::invalid(
                    walked,
                    other.clone(),
                    "a table, since a key goes below it",
                ));
            }
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"
name = "demo"
[link]
rate = "8Mbit"
delay = "300ms"
[sweep]
protocol = ["tcp-vj", "tcp-cubic"]
"link.ber" = [0, 1e-5]
"#;

    fn keys(points: &[PointDocument]) -> Vec<String> {
        points
            .iter()
            .map(|p| {
                p.params
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    }

    #[test]
    fn the_cartesian_product_with_the_first_axis_slowest() {
        let sweep = Sweep::parse(DOC, "demo.toml").unwrap();
        let points = sweep.points().unwrap();
        assert_eq!(
            keys(&points),
            [
                "protocol=\"tcp-vj\",link.ber=0",
                "protocol=\"tcp-vj\",link.ber=0.00001",
                "protocol=\"tcp-cubic\",link.ber=0",
                "protocol=\"tcp-cubic\",link.ber=0.00001",
            ]
        );
        let link = points[1].document["link"].as_table().unwrap();
        assert_eq!(link["ber"].as_float(), Some(1e-5));
        assert_eq!(link["rate"].as_str(), Some("8Mbit"));
        assert!(!points[1].document.contains_key("sweep"));
    }

    #[test]
    fn set_pins_axes_and_plain_keys_and_lists_make_axes() {
        let mut sweep = Sweep::parse(DOC, "demo.toml").unwrap();
        let (key, value) = parse_assignment("protocol=tcp-vj").unwrap();
        sweep.set(&key, value).unwrap();
        let (key, value) = parse_assignment("link.delay=120ms").unwrap();
        sweep.set(&key, value).unwrap();
        let (key, value) = parse_assignment("workload.bytes=[\"1MB\", \"2MB\"]").unwrap();
        sweep.set(&key, value).unwrap();
        let points = sweep.points().unwrap();
        assert_eq!(points.len(), 4, "1 protocol x 2 BER x 2 sizes");
        assert!(
            points
                .iter()
                .all(|p| p.document["link"]["delay"].as_str() == Some("120ms"))
        );
        assert_eq!(
            points[0].params[0],
            ("protocol".to_owned(), Value::String("tcp-vj".into()))
        );
    }

    #[test]
    fn absurdly_large_sweeps_are_refused() {
        let axis: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        let list = format!("[{}]", axis.join(","));
        let text = format!("[sweep]\na = {list}\nb = {list}\nc = {list}\n");
        let err = Sweep::parse(&text, "big.toml").unwrap().points().unwrap_err();
        assert_eq!(
            err.to_string(),
            "sweep = a: 100, b: 100, c: 100: at most 100000 points in all"
        );
    }

    #[test]
    fn values_are_toml_when_they_can_be_and_text_otherwise() {
        assert_eq!(parse_value("1e-5"), Value::Float(1e-5));
        assert_eq!(parse_value("true"), Value::Boolean(true));
        assert_eq!(parse_value("600ms"), Value::String("600ms".into()));
        assert_eq!(parse_value("\"a b\""), Value::String("a b".into()));
    }

    #[test]
    fn malformed_input_is_refused_with_the_key() {
        let err = parse_assignment("link.delay").unwrap_err();
        assert!(err.to_string().starts_with("--set = \"link.delay\""), "{err}");
        let err = Sweep::parse("[sweep]\nprotocol = \"tcp-vj\"", "x.toml").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("sweep.protocol = \"tcp-vj\": a list of values"),
            "{err}"
        );
        let err = Sweep::parse("name = ", "x.toml").unwrap_err();
        assert!(err.to_string().starts_with("x.toml: "), "{err}");
        let mut sweep = Sweep::parse("name = \"n\"", "x.toml").unwrap();
        let err = sweep.set("name.inner", Value::Integer(1)).unwrap_err();
        assert!(err.to_string().starts_with("name = \"n\": a table"), "{err}");
    }
}
