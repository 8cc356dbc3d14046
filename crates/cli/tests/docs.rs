//! The examples in README.md and docs/ run as written: every complete
//! `scps sim` command of their code blocks, every example scenario file,
//! the emulator's example configuration, its timeline and the `ctl set`
//! examples applied to that configuration's link.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use scps_emulator::{Change, Directions, EmulatorConfig, LinkState, Timeline};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(document: &str) -> String {
    std::fs::read_to_string(repository().join(document)).unwrap_or_else(|e| panic!("{document}: {e}"))
}

/// The fenced code blocks of a Markdown text: (info string, lines).
fn code_blocks(markdown: &str) -> Vec<(String, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in markdown.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (fence, open.take()) {
            (Some(info), None) => open = Some((info.trim().to_owned(), Vec::new())),
            (Some(_), Some(block)) => blocks.push(block),
            (None, Some((info, mut lines))) => {
                lines.push(line.to_owned());
                open = Some((info, lines));
            }
            (None, None) => {}
        }
    }
    blocks
}

/// The words of a shell command line, single quotes honoured, a trailing
/// comment dropped.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => quoted = !quoted,
            '#' if !quoted && word.is_empty() => break,
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// The arguments after `scps` of the `scps sim` commands in `document`'s
/// code blocks that are complete (a usage line with placeholders such as
/// SCENARIO or KEY=VALUE is not a command).
fn sim_commands(document: &str) -> Vec<Vec<String>> {
    let is_placeholder = |word: &str| word.chars().any(|c| c.is_ascii_uppercase()) && !word.contains('=');
    code_blocks(&read(document))
        .into_iter()
        .flat_map(|(_, lines)| lines)
        .filter_map(|line| {
            let words = shell_words(&line);
            // `scps ...`, or `cargo run ... -- ...` as the README starts it.
            let start = match words.first()?.as_str() {
                "scps" => 0,
                "cargo" => words.iter().position(|w| w == "--")?,
                _ => return None,
            };
            let args = words[start + 1..].to_vec();
            (args.first().map(String::as_str) == Some("sim")).then_some(args)
        })
        .filter(|args| {
            !args
                .iter()
                .any(|word| is_placeholder(word) || word.starts_with('['))
        })
        .collect()
}

fn run_sim(args: &[String]) {
    let output = Command::new(env!("CARGO_BIN_EXE_scps"))
        .args(args)
        .current_dir(repository())
        .output()
        .expect("scps runs");
    assert!(
        output.status.success(),
        "scps {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_readmes_simulator_commands_run() {
    let commands = sim_commands("README.md");
    assert!(!commands.is_empty(), "the README shows its main command");
    for args in &commands {
        run_sim(args);
    }
}

#[test]
fn every_example_scenario_runs() {
    let mut examples: Vec<PathBuf> = std::fs::read_dir(repository().join("docs/examples"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    examples.sort();
    assert!(!examples.is_empty());
    for path in examples {
        run_sim(&["sim".to_owned(), path.display().to_string()]);
    }
}

/// `KEY=VALUE` words of a `ctl set` example, as the command line reads them.
fn set_change(words: &[String]) -> Change {
    let keys: BTreeMap<String, String> = words
        .iter()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert!(!keys.is_empty(), "{words:?}");
    Change::Set {
        channel: None,
        direction: Directions::Both,
        keys,
    }
}

/// The `set ... KEY=VALUE...` examples of the emulator's control, in code
/// blocks and in backquoted table cells.
fn ctl_set_examples(document: &str) -> Vec<Vec<String>> {
    let text = read(document);
    let in_blocks = code_blocks(&text)
        .into_iter()
        .flat_map(|(_, lines)| lines)
        .filter(|line| line.contains("scps emulate ctl") && line.contains(" set "))
        .map(|line| shell_words(&line));
    let in_cells = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.contains('=') && span.split_whitespace().all(|w| w.contains('=')))
        .filter(|span| span.contains("shaper.") || span.starts_with("rate="))
        .map(shell_words);
    in_blocks.chain(in_cells).collect()
}

#[test]
fn the_emulators_example_configuration_timeline_and_ctl_examples_are_accepted() {
    let configuration = read("docs/configuration.md");
    let blocks = code_blocks(&configuration);
    let (_, toml) = blocks
        .iter()
        .find(|(info, lines)| info == "toml" && lines.iter().any(|l| l == "[emulate]"))
        .expect("docs/configuration.md has an emulator configuration");
    let config = EmulatorConfig::from_text(&toml.join("\n"), "docs/configuration.md").unwrap();
    let mut link = LinkState::new(&config).unwrap();

    let (_, timeline) = blocks
        .iter()
        .find(|(info, _)| info == "json")
        .expect("docs/configuration.md has a timeline");
    let timeline = Timeline::parse(&timeline.join("\n"), "docs/configuration.md").unwrap();
    timeline.check(&link).unwrap();

    let examples: Vec<Vec<String>> = ["README.md", "docs/configuration.md"]
        .iter()
        .flat_map(|document| ctl_set_examples(document))
        .collect();
    assert!(examples.len() >= 2, "{examples:?}");
    for words in examples {
        link.apply(Duration::ZERO, &set_change(&words))
            .unwrap_or_else(|e| panic!("ctl {}: {e}", words.join(" ")));
    }
}

/// docs/gateway.md's configuration for facing a standard SCPS gateway, as
/// written, is one `scps gateway --check` accepts (the slower tier's
/// crates/cli/tests/gateway_compression.rs runs it, with the testbed's
/// interfaces and prefixes, against a peer configured as such a gateway).
#[test]
fn the_gateway_guide_s_configuration_facing_a_standard_scps_gateway_is_accepted() {
    let guide = read("docs/gateway.md");
    let section = guide
        .split("### Facing a standard SCPS gateway")
        .nth(1)
        .expect("docs/gateway.md has its section \"Facing a standard SCPS gateway\"");
    let (_, lines) = code_blocks(section)
        .into_iter()
        .find(|(info, _)| info == "toml")
        .expect("the section shows a configuration");
    let file = std::env::temp_dir().join(format!("scps-docs-facing-ri-{}.toml", std::process::id()));
    std::fs::write(&file, lines.join("\n")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_scps"))
        .args(["gateway", "--check", "--config"])
        .arg(&file)
        .output()
        .expect("scps runs");
    let _ = std::fs::remove_file(&file);
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
