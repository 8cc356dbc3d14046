//! The configuration reference cannot drift from the schema: the `[tcp]`
//! table of docs/configuration.md is the one the keys' declarations
//! render (`SCPS_UPDATE_DOCS=1` writes it), and every key the `[link]`
//! table names is a key the schema accepts, and every key the schema
//! accepts is in its table. And every setting of the engine is either
//! written by a `[tcp]` key or listed with the reason it is not, so that
//! a new engine setting cannot be added without deciding how a user
//! reaches it.

use std::collections::BTreeSet;
use std::path::Path;

use scps_config::link::ChannelSpec;
use scps_config::tcp::{KEYS, SETTINGS_WITHOUT_KEY, TcpSpec};
use serde::de::{self, Deserialize, Deserializer, Visitor};

/// A deserializer that records the field names a derived `Deserialize`
/// asks for, and then refuses to go on: the schema's own list of keys.
struct FieldNames<'a>(&'a mut Vec<&'static str>);

#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stop after the field names")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        self.0.extend_from_slice(fields);
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

fn schema_keys<T: for<'de> Deserialize<'de>>() -> BTreeSet<String> {
    let mut names = Vec::new();
    let _ = T::deserialize(FieldNames(&mut names));
    names.into_iter().map(str::to_owned).collect()
}

/// The keys the section `[table]` names: the words in backquotes in the
/// first cell of each row of its table (a row may name several keys), and
/// the sub-tables its prose introduces as `[table.NAME]` or
/// `[[table.NAME]]`.
fn documented_keys(table: &str) -> BTreeSet<String> {
    let heading = format!("`[{table}]`");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with(&heading))
        .unwrap_or_else(|| panic!("docs/configuration.md has no section \"## {heading}\""));
    let mut keys = BTreeSet::new();
    let sub_table = format!("[{table}.");
    for (at, _) in section.match_indices(&sub_table) {
        let name = &section[at + sub_table.len()..];
        keys.insert(name[..name.find(']').unwrap_or(0)].to_owned());
    }
    for line in section.lines().take_while(|l| !l.starts_with("### ")) {
        let Some(first_cell) = line.strip_prefix('|').and_then(|l| l.split('|').next()) else {
            continue;
        };
        for (i, piece) in first_cell.split('`').enumerate() {
            if i % 2 == 1 {
                keys.insert(piece.to_owned());
            }
        }
    }
    keys
}

fn assert_same(section: &str, schema: &BTreeSet<String>, documented: &BTreeSet<String>) {
    let undocumented: Vec<_> = schema.difference(documented).collect();
    let unknown: Vec<_> = documented.difference(schema).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "docs/configuration.md's {section} table and the schema differ: keys the schema takes but the table \
         does not name: {undocumented:?}; keys the table names but the schema refuses: {unknown:?}"
    );
}

/// The rows of the table that follows `header` in `text`: from the header
/// line to the first line that is not a row, as a byte range.
fn table_at(text: &str, header: &str) -> std::ops::Range<usize> {
    let start = text
        .find(header)
        .unwrap_or_else(|| panic!("docs/configuration.md has no table headed {header:?}"));
    let length: usize = text[start..]
        .split_inclusive('\n')
        .take_while(|line| line.starts_with('|'))
        .map(str::len)
        .sum();
    start..start + length
}

#[test]
fn the_tcp_table_is_the_one_the_key_declarations_render() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let section = text
        .find("\n## `[tcp]`")
        .expect("docs/configuration.md has a `[tcp]` section");
    let rows = table_at(&text[section..], "| key | default | range | meaning |");
    let rows = section + rows.start..section + rows.end;
    let rendered = scps_config::tcp::reference_table();
    if text[rows.clone()] == rendered {
        return;
    }
    if std::env::var_os("SCPS_UPDATE_DOCS").is_some() {
        let updated = format!("{}{rendered}{}", &text[..rows.start], &text[rows.end..]);
        std::fs::write(&path, updated).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    panic!(
        "docs/configuration.md's [tcp] table differs from the keys declared in crates/config/src/tcp/keys.rs; \
         run `SCPS_UPDATE_DOCS=1 cargo test -p scps-config --test documented_keys` to write it:\n{rendered}"
    );
}

#[test]
fn the_link_table_names_every_key_of_the_schema_and_no_other() {
    assert_same("[link]", &schema_keys::<ChannelSpec>(), &documented_keys("link"));
}

/// The top-level field names of a `Debug` rendering of a struct: the
/// identifiers followed by `:` at the first level of braces.
fn debug_field_names(rendered: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut depth = 0usize;
    let mut word = String::new();
    let mut chars = rendered.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' => depth = depth.saturating_sub(1),
            ':' if depth == 1 && chars.peek() == Some(&' ') && !word.is_empty() => {
                names.insert(std::mem::take(&mut word));
            }
            c if depth == 1 && (c.is_ascii_alphanumeric() || c == '_') => word.push(c),
            _ => word.clear(),
        }
    }
    names
}

#[test]
fn every_engine_setting_has_a_key_or_a_reason_it_has_none() {
    let engine = debug_field_names(&format!("{:?}", scps_proto::Config::default()));
    assert!(
        engine.len() > 30,
        "read only {} engine settings: {engine:?}",
        engine.len()
    );
    let written: BTreeSet<&str> = KEYS.iter().flat_map(|key| key.settings.iter().copied()).collect();
    let mut faults = Vec::new();
    for setting in &engine {
        let excused = SETTINGS_WITHOUT_KEY.iter().any(|(s, _)| s == setting);
        match (written.contains(setting.as_str()), excused) {
            (true, false) | (false, true) => {}
            (false, false) => faults.push(format!(
                "engine setting `{setting}` has no [tcp] key and no reason"
            )),
            (true, true) => faults.push(format!(
                "engine setting `{setting}` has a [tcp] key but is listed as having none"
            )),
        }
    }
    for setting in written.iter().chain(SETTINGS_WITHOUT_KEY.iter().map(|(s, _)| s)) {
        if !engine.contains(*setting) {
            faults.push(format!("`{setting}` is listed here but is no engine setting"));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn the_readers_find_what_they_look_for() {
    assert_eq!(
        debug_field_names("Config { a: 1, b: Some(Inner { c: 2 }), d_e: [1, 2] }"),
        ["a", "b", "d_e"].map(str::to_owned).into()
    );
    assert!(schema_keys::<TcpSpec>().contains("snack_repeat"));
}
