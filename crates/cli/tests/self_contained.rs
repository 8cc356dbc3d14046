//! The repository stands alone: a reader who clones it has nothing else.
//! No comment, test, script or page may send them to a design note, a
//! scenario list or a wire-format digest that lives outside the
//! repository, nor to an issue tracker they cannot see. What the code
//! relies on is written into docs/ (architecture.md, scenarios.md,
//! spec/); a reference to a page there must name one that exists.

use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Directories that hold no text of ours: build output, git's own files,
/// and the fuzzers' generated inputs.
const SKIPPED_DIRECTORIES: &[&str] = &["target", ".git", "corpus", "artifacts", "coverage"];

/// The kinds of file a maintainer reads.
fn is_text_of_ours(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    matches!(
        extension,
        "rs" | "md" | "toml" | "sh" | "yml" | "yaml" | "txt" | "json" | "service"
    ) || name == "run"
}

fn texts(directory: &Path, found: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(directory).unwrap_or_else(|e| panic!("{}: {e}", directory.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !SKIPPED_DIRECTORIES.contains(&name) {
                texts(&path, found);
            }
        } else if is_text_of_ours(&path) && name != "Cargo.lock" {
            found.push(path);
        }
    }
}

/// Names of the documents kept beside the repository but not in it. Built
/// from pieces so that this file does not match itself.
fn outside_documents() -> Vec<String> {
    let mut names: Vec<String> = ["DESIGN", "SCENARIOS", "DEPENDENCIES"]
        .iter()
        .map(|n| format!("{n}.md"))
        .collect();
    names.push(format!("{}/", "../shared"));
    names.push(format!("{}/", "shared/spec"));
    names.push(format!("{}/", "seeds"));
    names
}

/// A tracker's number ("issue" then a number, with or without `#`,
/// singular or plural) sends a reader to a tracker they cannot see.
fn cites_an_issue_number(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let mut rest = lower.as_str();
    while let Some(at) = rest.find("issue") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + "issue".len()..];
        let after = after.strip_prefix('s').unwrap_or(after);
        let after = after.trim_start_matches([' ', '#']);
        let word_starts = before.is_none_or(|c| !c.is_ascii_alphanumeric());
        if word_starts && after.starts_with(|c: char| c.is_ascii_digit()) {
            return true;
        }
        rest = &rest[at + "issue".len()..];
    }
    false
}

/// Every Markdown page under a `spec/` directory a line mentions, so that
/// each can be checked to be a page of docs/spec/.
fn spec_pages(line: &str) -> Vec<&str> {
    let mut pages = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("spec/") {
        let tail = &rest[at + "spec/".len()..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
            .unwrap_or(tail.len());
        let name = tail[..end].trim_end_matches('.');
        if name.ends_with(".md") {
            pages.push(name);
        }
        rest = tail;
    }
    pages
}

/// The paths of the workspace's files a line names (`crates/node/src/lib.rs`,
/// a file or a directory): one that was moved or removed sends a reader
/// nowhere.
fn source_paths(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find("crates/") {
        let after = &rest[start..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_-./".contains(c)))
            .unwrap_or(after.len());
        let path = after[..end].trim_end_matches('.');
        // A pattern (`crates/*/Cargo.toml`) or a bare `crates/` names no
        // one file.
        if path.len() > "crates/".len() && !after[end..].starts_with('*') {
            found.push(path);
        }
        rest = &after[end..];
    }
    found
}

#[test]
fn nothing_cites_a_document_outside_the_repository_or_an_issue_number() {
    let root = repository();
    let mut files = Vec::new();
    texts(&root, &mut files);
    assert!(
        files.len() > 100,
        "the walk found only {} files under {}",
        files.len(),
        root.display()
    );
    let outside = outside_documents();
    let mut faults = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let shown = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        for (number, line) in text.lines().enumerate() {
            let place = format!("{shown}:{}", number + 1);
            for name in &outside {
                if line.contains(name.as_str()) {
                    faults.push(format!(
                        "{place}: cites {name}, which is not in the repository: {}",
                        line.trim()
                    ));
                }
            }
            if cites_an_issue_number(line) {
                faults.push(format!(
                    "{place}: cites an issue number; state the fact instead: {}",
                    line.trim()
                ));
            }
            // Prose only: code may name a path that is not there on
            // purpose (a test's example of a wrong list).
            let prose = shown.ends_with(".md")
                || line.trim_start().starts_with("//")
                || line.trim_start().starts_with('#');
            for source in source_paths(line).into_iter().filter(|_| prose) {
                if !root.join(source).exists() {
                    faults.push(format!("{place}: {source} does not exist: {}", line.trim()));
                }
            }
            for page in spec_pages(line) {
                if !root.join("docs/spec").join(page).is_file() {
                    faults.push(format!(
                        "{place}: spec/{page} is not a page of docs/spec/: {}",
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        faults.is_empty(),
        "{} citations a clone cannot follow:\n{}",
        faults.len(),
        faults.join("\n")
    );
}

#[test]
fn the_checks_recognise_what_they_look_for() {
    // Built from pieces, like the names above, so as not to match here.
    let issue = "issue";
    assert!(cites_an_issue_number(&format!("see {issue} 12 for why")));
    assert!(cites_an_issue_number(&format!("// {}ssue #7: the fix", 'I')));
    assert!(cites_an_issue_number(&format!("{issue}s 3 and 4")));
    assert!(!cites_an_issue_number("a known tissue 5 sample"));
    assert!(!cites_an_issue_number("the issue is that the window is small"));
    assert_eq!(
        spec_pages("see docs/spec/snack.md, and spec/compression.md."),
        ["snack.md", "compression.md"]
    );
    assert_eq!(
        source_paths(
            "in `crates/relay/src/routes.rs` (and crates/sim/src/apps/), every crates/*/Cargo.toml."
        ),
        ["crates/relay/src/routes.rs", "crates/sim/src/apps/"]
    );
    let note = format!("read {}.md first", "DESIGN");
    assert!(outside_documents().iter().any(|n| note.contains(n.as_str())));
}
