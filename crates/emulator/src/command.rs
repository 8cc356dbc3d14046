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

/// Questions to the running emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Query {
    /// Counters per channel and direction, as JSON.
    Stats,
    /// The same in the Prometheus text format.
    Metrics,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_as_documented() {
        let set: Request = serde_json::from_str(
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
        let start: Request = serde_json::from_str(r#"{"op": "outage_start"}"#).unwrap();
        assert_eq!(start, Request::Change(Change::OutageStart { channel: None }));
        let stats: Request = serde_json::from_str(r#"{"op": "stats"}"#).unwrap();
        assert_eq!(stats, Request::Query(Query::Stats));
        assert!(serde_json::from_str::<Request>(r#"{"op": "reboot"}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"op": "outage_end", "chanel": 1}"#).is_err());
    }
}
