//! The simulator's tables in docs/BENCHMARKS.md cannot drift from the
//! code: each table that follows a `scps bench ... --markdown` command
//! (between the markers below) is what that command prints today, bit for
//! bit (the simulator is deterministic). When the engine changes a
//! figure, `SCPS_UPDATE_BENCHMARKS=1 cargo test -p scps --test
//! benchmarks_doc -- --ignored` writes the new tables in, for the change
//! to show them (the check runs in the slower tier).

use std::process::Command;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/BENCHMARKS.md");
const FENCE: &str = "```sh\n";
const BEGIN: &str = "<!-- the table below is what the command above prints; a test checks it -->\n";
const END: &str = "<!-- end of the generated table -->\n";

/// A command's words, as a shell splits them: quotes group, a backslash
/// before a newline joins lines.
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\\') if chars.peek() == Some(&'\n') => {
                chars.next();
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (_, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The first command of a shell block: its first line and those a
/// backslash joins to it.
fn first_command(block: &str) -> &str {
    let mut end = 0;
    for line in block.split_inclusive('\n') {
        end += line.len();
        if !line.trim_end().ends_with('\\') {
            break;
        }
    }
    block[..end].trim()
}

/// What the command prints, run from the repository's top (where the
/// documents' paths start) with a directory of its own.
fn table_of(command: &str, out: &std::path::Path) -> String {
    let words = words(command);
    assert_eq!(words[..2], ["scps", "bench"], "{command}");
    assert!(words.iter().any(|w| w == "--markdown"), "{command}: --markdown");
    let output = Command::new(env!("CARGO_BIN_EXE_scps"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .args(&words[1..])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    // 1: some runs failed, which the table shows; 2: the command could
    // not run.
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{command}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
#[ignore = "slower tier: reruns the simulator benchmarks of docs/BENCHMARKS.md, ~80 s"]
fn the_simulator_tables_of_benchmarks_md_are_what_the_code_prints() {
    let doc = std::fs::read_to_string(DOC).unwrap();
    let mut updated = String::new();
    let mut rest = doc.as_str();
    let mut stale = Vec::new();
    let mut checked = 0;
    let dir = std::env::temp_dir().join(format!("scps-benchmarks-doc-{}", std::process::id()));
    while let Some(at) = rest.find(BEGIN) {
        let (before, after) = rest.split_at(at);
        let fence = before
            .rfind(FENCE)
            .expect("a command before each generated table")
            + FENCE.len();
        let block = &before[fence
            ..before[fence..]
                .find("```")
                .map_or(before.len(), |end| fence + end)];
        let command = first_command(block);
        let end = after.find(END).expect("an end marker after each generated table");
        let committed = &after[BEGIN.len()..end];
        let fresh = table_of(command, &dir.join(checked.to_string()));
        if fresh != committed {
            stale.push(format!("{command}\n--- committed\n{committed}--- today\n{fresh}"));
        }
        updated.push_str(before);
        updated.push_str(BEGIN);
        updated.push_str(&fresh);
        rest = &after[end..];
        checked += 1;
    }
    updated.push_str(rest);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(checked >= 3, "the generated tables were found ({checked})");
    if std::env::var_os("SCPS_UPDATE_BENCHMARKS").is_some() {
        std::fs::write(DOC, updated).unwrap();
        return;
    }
    assert!(
        stale.is_empty(),
        "docs/BENCHMARKS.md differs from what the code prints (SCPS_UPDATE_BENCHMARKS=1 rewrites it):\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_first_command_of_a_block_is_the_one_checked() {
    assert_eq!(
        first_command("scps bench a \\\n  --markdown\ncargo test -p x\n"),
        "scps bench a \\\n  --markdown"
    );
}

#[test]
fn commands_split_as_a_shell_splits_them() {
    assert_eq!(
        words("scps bench x --set 'protocol=[\"a\", \"b\"]' \\\n  --set \"link.ber=[0, 1e-5]\" --markdown"),
        [
            "scps",
            "bench",
            "x",
            "--set",
            "protocol=[\"a\", \"b\"]",
            "--set",
            "link.ber=[0, 1e-5]",
            "--markdown"
        ]
    );
}
