//! Changes to a running link, as the control socket receives them and as
//! a trace file lists them (one JSON object per line).
//!
//! ```json
//! {"op": "set", "channel": 0, "direction": "forward", "keys": {"rate": "2Mbit", "ber": "1e-6"}}
//! {"op": "outage_start", "channel": 1}
//! {"op": "outage_end", "channel": 1}
//! ```
//!
//! `channel` absent means every channel; `direction` absent means both.
//! `keys` are those of `[link]` (dotted for tables, e.g. `shaper.rate`),
//! with values as written in a configuration file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which direction of a circuit a change applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Directions {
    /// Side a to side b.
    Forward,
    /// Side b to side a.
    Return,
    /// Both.
    #[default]
    Both,
}

impl Directions {
    /// The names [`str::parse`] takes, as `scps emulate ctl set
    /// --direction` does.
    pub const NAMES: [&'static str; 3] = ["forward", "return", "both"];
}

impl std::str::FromStr for Directions {
    type Err = String;

    fn from_str(name: &str) -> Result<Directions, String> {
        match name {
            "forward" => Ok(Directions::Forward),
            "return" => Ok(Directions::Return),
            "both" => Ok(Directions::Both),
            _ => Err(format!("{name:?}: not a direction (forward, return or both)")),
        }
    }
}

/// A change to the running link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Change {
    /// New values for link keys.
    Set {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        channel: Option<usize>,
        #[serde(default)]
        direction: Directions,
        #[serde(deserialize_with = "unique_keys")]
        keys: BTreeMap<String, String>,
    },
    /// Drop the call: the channel is down both ways until `outage_end`.
    OutageStart {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        channel: Option<usize>,
    },
    /// Bring the call back.
    OutageEnd {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        channel: Option<usize>,
    },
}

/// What the control socket accepts: a change, or a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Request {
    Change(Change),
    Query(Query),
}

impl Request {
    /// Reads a request line. Chooses between a change and a question by
    /// its `op` first, so that an error says what is wrong with that kind
    /// of request (an unknown field, a key given twice) rather than that
    /// the line matched no kind at all.
    pub fn from_json(line: &str) -> Result<Request, serde_json::Error> {
        // Read from the text each time: a parsed JSON value would already
        // have settled a key given twice.
        #[derive(Deserialize)]
        struct Op {
            op: String,
        }
        let Op { op } = serde_json::from_str(line)?;
        if matches!(op.as_str(), "stats" | "metrics") {
            serde_json::from_str(line).map(Request::Query)
        } else {
            serde_json::from_str(line).map(Request::Change)
        }
    }
}

/// Questions to the running emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Query {
    /// Counters per channel and direction, as JSON.
    Stats,
    /// The same in the Prometheus text format.
    Metrics,
}

/// A `KEY=VALUE` of [`keys_from_pairs`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    #[error("{0:?}: expected KEY=VALUE, such as rate=2Mbit")]
    NotAPair(String),
    #[error("{key} is given twice ({earlier:?} and {later:?}): give each key once")]
    Twice {
        key: String,
        earlier: String,
        later: String,
    },
}

/// The `keys` of a [`Change::Set`] from `KEY=VALUE` pairs as a user writes
/// them (`scps emulate ctl set rate=2Mbit delay=300ms`), each key once;
/// spaces around a key or a value are not part of it.
pub fn keys_from_pairs(pairs: &[String]) -> Result<BTreeMap<String, String>, PairError> {
    let mut keys = BTreeMap::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(PairError::NotAPair(pair.clone()));
        };
        let (key, value) = (key.trim(), value.trim());
        if let Some(earlier) = keys.insert(key.to_owned(), value.to_owned()) {
            return Err(PairError::Twice {
                key: key.to_owned(),
                earlier,
                later: value.to_owned(),
            });
        }
    }
    Ok(keys)
}

/// The `keys` of a change, refusing a key given twice (which JSON readers
/// otherwise settle silently, keeping one of the values).
fn unique_keys<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    struct UniqueKeys;
    impl<'de> serde::de::Visitor<'de> for UniqueKeys {
        type Value = BTreeMap<String, String>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object of link keys and their values as text")
        }

        fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            let mut keys = BTreeMap::new();
            while let Some((key, value)) = map.next_entry::<String, String>()? {
                if keys.contains_key(&key) {
                    return Err(serde::de::Error::custom(format_args!(
                        "{key} is given twice: give each key once"
                    )));
                }
                keys.insert(key, value);
            }
            Ok(keys)
        }
    }
    deserializer.deserialize_map(UniqueKeys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(texts: &[&str]) -> Result<BTreeMap<String, String>, PairError> {
        keys_from_pairs(&texts.iter().map(|t| t.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn pairs_give_trimmed_keys_and_values() {
        let keys = pairs(&["rate=2Mbit", " delay = 300ms ", "shaper.rate=1e6=x"]).unwrap();
        assert_eq!(
            keys.into_iter().collect::<Vec<_>>(),
            [
                ("delay".to_owned(), "300ms".to_owned()),
                ("rate".to_owned(), "2Mbit".to_owned()),
                ("shaper.rate".to_owned(), "1e6=x".to_owned())
            ]
        );
    }

    #[test]
    fn a_pair_without_equals_or_a_key_given_twice_is_refused() {
        assert_eq!(
            pairs(&["rate=1Mbit", "rate"]).unwrap_err().to_string(),
            "\"rate\": expected KEY=VALUE, such as rate=2Mbit"
        );
        assert_eq!(
            pairs(&["rate=1Mbit", "delay=1s", "rate =2Mbit"])
                .unwrap_err()
                .to_string(),
            "rate is given twice (\"1Mbit\" and \"2Mbit\"): give each key once"
        );
    }

    #[test]
    fn directions_read_by_name() {
        let read: Vec<_> = Directions::NAMES.iter().map(|name| name.parse()).collect();
        assert_eq!(
            read,
            [
                Ok(Directions::Forward),
                Ok(Directions::Return),
                Ok(Directions::Both)
            ]
        );
        assert_eq!(
            "up".parse::<Directions>(),
            Err("\"up\": not a direction (forward, return or both)".to_owned())
        );
    }

    #[test]
    fn requests_read_as_documented() {
        let set = Request::from_json(
            r#"{"op": "set", "channel": 0, "direction": "forward", "keys": {"rate": "2Mbit"}}"#,
        )
        .unwrap();
        let Request::Change(Change::Set {
            channel,
            direction,
            keys,
        }) = set
        else {
            panic!("{set:?}")
        };
        assert_eq!(
            (channel, direction, keys["rate"].as_str()),
            (Some(0), Directions::Forward, "2Mbit")
        );
        let start = Request::from_json(r#"{"op": "outage_start"}"#).unwrap();
        assert_eq!(start, Request::Change(Change::OutageStart { channel: None }));
        let stats = Request::from_json(r#"{"op": "stats"}"#).unwrap();
        assert_eq!(stats, Request::Query(Query::Stats));
        assert!(Request::from_json(r#"{"op": "reboot"}"#).is_err());
    }

    #[test]
    fn a_key_given_twice_is_refused() {
        let twice = r#"{"op": "set", "keys": {"rate": "2Mbit", "rate": "1Mbit"}}"#;
        let err = Request::from_json(twice).unwrap_err().to_string();
        assert!(err.contains("rate is given twice"), "{err}");
        let typo = Request::from_json(r#"{"op": "outage_end", "chanel": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(typo.contains("unknown field `chanel`"), "{typo}");
    }
}
