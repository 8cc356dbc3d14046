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
}

impl Error {
    pub fn invalid(key: impl Into<String>, value: impl fmt::Display, allowed: impl Into<String>) -> Error {
        Error::Invalid {
            key: key.into(),
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }
}
