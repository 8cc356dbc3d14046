//! Configuration errors: every one names what was wrong and what is
//! allowed, and nothing runs until there are none.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The file is not valid TOML.
    #[error("{origin}: {message}")]
    Syntax { origin: String, message: String },
    /// A key has a value that is not allowed.
    #[error("{key} = {value}: {allowed}")]
    Invalid {
        key: String,
        value: String,
        allowed: String,
    },
    /// A key the schema does not have, or a value of the wrong kind, as
    /// the deserializer reports it.
    #[error("{key}: {message}")]
    Schema { key: String, message: String },
    /// A scenario name that is neither built in nor a file.
    #[error("no scenario {name:?}: not a built-in scenario ({known}) and no such file")]
    UnknownScenario { name: String, known: String },
    /// A point of the sweep failed; says which.
    #[error("at {point}: {error}")]
    AtPoint { point: String, error: Box<Error> },
    /// An error in a configuration file; names the file.
    #[error("{origin}: {error}")]
    InFile { origin: String, error: Box<Error> },
}

impl Error {
    /// `text`, the file `origin`, is not valid TOML: says where (line and
    /// column) and what, naming the key of a duplicate key.
    pub fn syntax(origin: &str, text: &str, error: &toml::de::Error) -> Error {
        let message = error.message().trim_end();
        let message = match error.span() {
            Some(span) => {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |at| at + 1) + 1;
                let what = text.get(span).unwrap_or("").trim();
                if message == "duplicate key" && !what.is_empty() && !what.contains('\n') {
                    format!("line {line}, column {column}: duplicate key `{what}`")
                } else {
                    format!("line {line}, column {column}: {message}")
                }
            }
            None => message.to_owned(),
        };
        Error::Syntax {
            origin: origin.to_owned(),
            message,
        }
    }

    /// Names the file `origin` in the error, unless it already does.
    pub fn in_file(self, origin: &str) -> Error {
        match &self {
            Error::Syntax { origin: named, .. } | Error::InFile { origin: named, .. } if named == origin => {
                self
            }
            _ => Error::InFile {
                origin: origin.to_owned(),
                error: Box::new(self),
            },
        }
    }

    pub fn invalid(key: impl Into<String>, value: impl fmt::Display, allowed: impl Into<String>) -> Error {
        Error::Invalid {
            key: key.into(),
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }
}

/// Reads a configuration table into its schema `T`; an error names the key
/// (its full path) and says what the key allows, in the words of this
/// project rather than of the deserializer's Rust types.
pub fn deserialize<T: serde::de::DeserializeOwned>(table: toml::Table) -> Result<T, Error> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let key = match e.path().to_string() {
            // The path of the document itself, for a missing top-level key.
            root if root == "." => "top level".to_owned(),
            key => key,
        };
        // The deserializer appends where it was ("in `link`"): the key
        // already says so.
        let message = e.into_inner().to_string();
        let message = message.lines().next().unwrap_or_default();
        Error::Schema {
            key,
            message: integer_ranges_in_words(message),
        }
    })
}

/// Replaces a Rust integer type the deserializer names ("expected u16")
/// with the range it stands for.
fn integer_ranges_in_words(message: &str) -> String {
    const RANGES: [(&str, &str); 8] = [
        ("u8", "0 to 255"),
        ("u16", "0 to 65535"),
        ("u32", "0 to 4294967295"),
        ("u64", "0 to 18446744073709551615"),
        ("usize", "0 to 18446744073709551615"),
        ("i32", "-2147483648 to 2147483647"),
        ("i64", "-9223372036854775808 to 9223372036854775807"),
        ("f64", "a number"),
    ];
    for (rust_type, range) in RANGES {
        if let Some(before) = message.strip_suffix(&format!("expected {rust_type}")) {
            let allowed = match rust_type {
                "f64" => range.to_owned(),
                _ => format!("an integer from {range}"),
            };
            return format!("{before}expected {allowed}");
        }
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // only deserialized, to provoke its errors
    struct Sample {
        name: String,
        small: Option<u16>,
    }

    fn error(text: &str) -> String {
        deserialize::<Sample>(text.parse().unwrap())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn schema_errors_name_the_key_and_the_range_in_words() {
        assert_eq!(
            error("name = \"x\"\nsmall = 70000"),
            "small: invalid value: integer `70000`, expected an integer from 0 to 65535"
        );
        assert_eq!(error("small = 1"), "top level: missing field `name`");
        assert_eq!(
            error("name = 3"),
            "name: invalid type: integer `3`, expected a string"
        );
    }

    fn syntax(text: &str) -> String {
        let error = text.parse::<toml::Table>().unwrap_err();
        Error::syntax("a.toml", text, &error).to_string()
    }

    #[test]
    fn a_syntax_error_says_where_and_a_duplicate_key_is_named() {
        assert_eq!(
            syntax("[link]\nrate = \"1Mbit\"\nrate = \"2Mbit\"\n"),
            "a.toml: line 3, column 1: duplicate key `rate`"
        );
        assert_eq!(
            syntax("[link]\nrtt = \"1s\"\n[link]\n"),
            "a.toml: line 3, column 2: duplicate key `link`"
        );
        let missing = syntax("seed = 1\nrate\n");
        assert!(missing.starts_with("a.toml: line 2, column 5: "), "{missing}");
    }

    #[test]
    fn a_file_is_named_once() {
        let inner = Error::invalid("link.mtu", 20, "576 to 65535 bytes");
        let named = inner.in_file("a.toml").in_file("a.toml");
        assert_eq!(named.to_string(), "a.toml: link.mtu = 20: 576 to 65535 bytes");
        let syntax = Error::Syntax {
            origin: "a.toml".into(),
            message: "expected `=`".into(),
        };
        assert_eq!(syntax.in_file("a.toml").to_string(), "a.toml: expected `=`");
    }
}
