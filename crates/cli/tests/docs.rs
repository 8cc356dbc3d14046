//! The examples in README.md and docs/ run as written: every complete
//! `scps sim` command of their code blocks, every example scenario file,
//! the emulator's example configuration, its timeline and the `ctl set`
//! examples applied to that configuration's link. README.md's headline
//! rows are those of the table docs/BENCHMARKS.md generates, and its crate
//! list is the workspace's.

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
fn the_simulator_commands_of_the_readme_and_the_usage_page_run() {
    let usage = sim_commands("docs/usage.md");
    assert!(!usage.is_empty(), "docs/usage.md shows `scps sim` commands");
    for args in sim_commands("README.md").iter().chain(&usage) {
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

    let examples: Vec<Vec<String>> = ["README.md", "docs/usage.md", "docs/configuration.md"]
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

/// The lines of `document` after the line `heading`, up to the next
/// heading of its level or above (outside code blocks).
fn section(document: &str, heading: &str) -> String {
    let text = read(document);
    let level = |line: &str| {
        let hashes = line.len() - line.trim_start_matches('#').len();
        (hashes > 0 && line[hashes..].starts_with(' ')).then_some(hashes)
    };
    let top = level(heading).expect("a Markdown heading");
    let mut lines = text.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "{document} has no heading {heading:?}");
    let mut in_block = false;
    lines
        .take_while(|line| {
            in_block ^= line.trim_start().starts_with("```");
            in_block || level(line).is_none_or(|n| n > top)
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// A command as a shell reads it: continuation lines joined, runs of
/// blanks made one.
fn one_line(command: &str) -> String {
    command
        .replace("\\\n", " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The header and rows of the Markdown table in `text`.
fn table_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|line| line.starts_with('|')).collect()
}

/// docs/BENCHMARKS.md's generated table after the `sh` block holding
/// `command` (benchmarks_doc.rs checks it is what the command prints).
fn generated_table(command: &str) -> Vec<String> {
    const BEGIN: &str = "<!-- the table below is what the command above prints; a test checks it -->";
    const END: &str = "<!-- end of the generated table -->";
    let text = read("docs/BENCHMARKS.md");
    text.split("```sh\n")
        .skip(1)
        .find_map(|chunk| {
            let (block, rest) = chunk.split_once("```\n")?;
            let table = rest.trim_start().strip_prefix(BEGIN)?.split(END).next()?;
            (one_line(block) == one_line(command))
                .then(|| table_lines(table).into_iter().map(str::to_owned).collect())
        })
        .unwrap_or_else(|| {
            panic!("docs/BENCHMARKS.md has no generated table after README.md's headline command: {command}")
        })
}

#[test]
fn the_readmes_headline_rows_are_those_of_the_generated_table() {
    let headline = section("README.md", "## Headline figure");
    let blocks = code_blocks(&headline);
    let (_, command) = blocks
        .iter()
        .find(|(info, _)| info == "sh")
        .expect("README.md's headline shows its command");
    let command = command.join("\n");
    let generated = generated_table(&command);
    let rows = table_lines(&headline);
    assert!(
        rows.len() >= 3,
        "README.md's headline shows a header, its rule and rows: {rows:?}"
    );
    assert_eq!(
        rows[..2],
        generated[..2],
        "README.md's headline table has the generated table's header"
    );
    for row in &rows[2..] {
        assert!(
            generated.iter().any(|g| g == row),
            "README.md's headline row is not in docs/BENCHMARKS.md's generated table for its command: {row}"
        );
    }
}

/// `(directory, package)` pairs: what README.md's crate list says, or
/// what the workspace holds.
type Crates = BTreeMap<String, String>;

/// The `crates/...` lines of the code block under README.md's "## Crates".
fn readme_crate_list() -> Crates {
    let blocks = code_blocks(&section("README.md", "## Crates"));
    let (_, lines) = blocks
        .first()
        .expect("README.md's \"## Crates\" has its list in a code block");
    let mut listed = Crates::new();
    for line in lines.iter().filter(|line| line.starts_with("crates/")) {
        let mut words = line.split_whitespace();
        let (Some(directory), Some(package)) = (words.next(), words.next()) else {
            panic!("README.md's crate list: {line:?} has no package name");
        };
        let again = listed.insert(directory.trim_end_matches('/').to_owned(), package.to_owned());
        assert!(again.is_none(), "README.md's crate list names {directory} twice");
    }
    listed
}

/// Every directory under crates/ with a Cargo.toml, and its package name.
fn workspace_crates() -> Crates {
    let mut found = Crates::new();
    for entry in std::fs::read_dir(repository().join("crates")).unwrap() {
        let directory = entry.unwrap().path();
        let manifest = directory.join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let table: toml::Table = text
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        let name = table["package"]["name"].as_str().unwrap().to_owned();
        let directory = directory.file_name().unwrap().to_string_lossy();
        found.insert(format!("crates/{directory}"), name);
    }
    found
}

/// What is wrong with `listed` as a list of `actual`: each crate missing,
/// each named that does not exist, each under another package name.
fn crate_list_problems(listed: &Crates, actual: &Crates) -> Vec<String> {
    let mut problems = Vec::new();
    for (directory, package) in actual {
        match listed.get(directory) {
            None => problems.push(format!("{directory} ({package}) is missing from README.md's crate list")),
            Some(named) if named != package => problems.push(format!(
                "README.md's crate list calls {directory} {named}, but its Cargo.toml names the package {package}"
            )),
            Some(_) => {}
        }
    }
    for (directory, package) in listed {
        if !actual.contains_key(directory) {
            problems.push(format!(
                "README.md's crate list names {directory} ({package}), which is no crate: there is no {directory}/Cargo.toml"
            ));
        }
    }
    problems
}

#[test]
fn the_readmes_crate_list_is_the_workspaces() {
    let actual = workspace_crates();
    assert!(actual.contains_key("crates/cli"), "{actual:?}");
    let problems = crate_list_problems(&readme_crate_list(), &actual);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_crate_list_check_names_the_missing_the_extra_and_the_misnamed_crate() {
    let crates = |pairs: &[(&str, &str)]| -> Crates {
        pairs
            .iter()
            .map(|(d, p)| (d.to_string(), p.to_string()))
            .collect()
    };
    let actual = crates(&[
        ("crates/bond", "scps-bond"),
        ("crates/cli", "scps"),
        ("crates/net", "scps-net"),
    ]);
    let listed = crates(&[
        ("crates/cli", "scps"),
        ("crates/net", "scps-nett"),
        ("crates/gone", "scps-gone"),
    ]);
    let problems = crate_list_problems(&listed, &actual);
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(
        problems[0].contains("crates/bond (scps-bond) is missing"),
        "{problems:?}"
    );
    assert!(problems[1].contains("calls crates/net scps-nett"), "{problems:?}");
    assert!(
        problems[2].contains("names crates/gone (scps-gone), which is no crate"),
        "{problems:?}"
    );
}
