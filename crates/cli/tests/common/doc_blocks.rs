//! The fenced blocks of the repository's documents, found at test time by
//! a heading or a text just before them, and the commands they hold: the
//! tests that run the docs as written run whatever the documents say now.

use std::path::{Path, PathBuf};

/// The repository's top directory.
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One fenced block of a document.
#[derive(Debug, Clone)]
pub struct Block {
    /// The document, as the repository names it (`docs/saratoga.md`).
    pub document: String,
    /// The line of its opening fence (from 1).
    pub line: usize,
    /// Its info string (`sh`, `text`, or empty).
    pub info: String,
    /// Its lines, each with the fence's indentation removed, and the line
    /// of the document it is on.
    pub lines: Vec<(usize, String)>,
}

/// One command of a block: a line, or lines joined by a trailing `\`.
#[derive(Debug, Clone)]
pub struct DocCommand {
    /// Where it starts, `docs/saratoga.md:131`.
    pub at: String,
    /// Its text as written (continuation lines kept as they are).
    pub text: String,
}

impl Block {
    /// Where the block starts, `README.md:43`.
    pub fn at(&self) -> String {
        format!("{}:{}", self.document, self.line)
    }

    /// Its text as written, one line after another.
    pub fn text(&self) -> String {
        let lines: Vec<&str> = self.lines.iter().map(|(_, line)| line.as_str()).collect();
        lines.join("\n") + "\n"
    }

    /// Its commands: blank lines and comment lines left out, a line ending
    /// with `\` joined with the next.
    pub fn commands(&self) -> Vec<DocCommand> {
        let mut commands = Vec::new();
        let mut open: Option<DocCommand> = None;
        for (number, line) in &self.lines {
            let command = match open.take() {
                Some(mut command) => {
                    command.text.push('\n');
                    command.text.push_str(line);
                    command
                }
                None if line.trim().is_empty() || line.trim_start().starts_with('#') => continue,
                None => DocCommand {
                    at: format!("{}:{number}", self.document),
                    text: line.clone(),
                },
            };
            if line.trim_end().ends_with('\\') {
                open = Some(command);
            } else {
                commands.push(command);
            }
        }
        commands.extend(open);
        commands
    }
}

/// The text of `document` (a path in the repository).
pub fn read(document: &str) -> String {
    std::fs::read_to_string(repository().join(document)).unwrap_or_else(|e| panic!("{document}: {e}"))
}

/// Every fenced block of `document`'s `markdown`.
pub fn blocks(document: &str, markdown: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<(Block, usize)> = None;
    for (index, line) in markdown.lines().enumerate() {
        let number = index + 1;
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match (trimmed.strip_prefix("```"), open.take()) {
            (Some(info), None) => {
                let block = Block {
                    document: document.to_owned(),
                    line: number,
                    info: info.trim().to_owned(),
                    lines: Vec::new(),
                };
                open = Some((block, indent));
            }
            (Some(_), Some((block, _))) => found.push(block),
            (None, Some((mut block, fence_indent))) => {
                let kept = line.len() - line.trim_start_matches(' ').len();
                block
                    .lines
                    .push((number, line[kept.min(fence_indent)..].to_owned()));
                open = Some((block, fence_indent));
            }
            (None, None) => {}
        }
    }
    found
}

/// The `nth` (from 0) block whose info string is `info` after the first
/// line of `document` that contains `marker` (a heading, or a phrase of
/// the paragraph before the block); the test fails naming both if there
/// is none.
pub fn block_after(document: &str, marker: &str, info: &str, nth: usize) -> Block {
    let markdown = read(document);
    let Some(at) = markdown.lines().position(|line| line.contains(marker)) else {
        panic!("{document} no longer has a line containing {marker:?}: the test must follow the document");
    };
    blocks(document, &markdown)
        .into_iter()
        .filter(|block| block.line > at + 1 && block.info == info)
        .nth(nth)
        .unwrap_or_else(|| {
            panic!(
                "{document} has no {} block {info:?} after line {} ({marker:?})",
                nth + 1,
                at + 1
            )
        })
}

/// The words of a simple shell command as `sh` splits them: single and
/// double quotes and backslashes honoured, a comment dropped. Operators
/// (`|`, `&&`, `;`) come out as words of their own when written apart.
pub fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let quoted: String = chars.by_ref().take_while(|&c| c != '\'').collect();
                word.get_or_insert_with(String::new).push_str(&quoted);
            }
            '"' => {
                let current = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => current.extend(chars.next()),
                        c => current.push(c),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(c) => word.get_or_insert_with(String::new).push(c),
            },
            '#' if word.is_none() => break,
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_split_as_sh_splits_them() {
        assert_eq!(
            shell_words("scps saratoga get '[2001:db8::7]:7542:a b' --x \"q\\\"\" # note"),
            ["scps", "saratoga", "get", "[2001:db8::7]:7542:a b", "--x", "q\""]
        );
        assert_eq!(shell_words("a \\\n  b ''"), ["a", "b", ""]);
    }

    #[test]
    fn commands_join_continuation_lines_and_skip_comments() {
        let markdown = "# T\n\n  ```sh\n  # c\n  a \\\n    b\n\n  c\n  ```\n";
        let block = &blocks("d.md", markdown)[0];
        assert_eq!(block.line, 3);
        let commands = block.commands();
        assert_eq!(commands.len(), 2);
        assert_eq!(commands[0].text, "a \\\n  b");
        assert_eq!(commands[0].at, "d.md:5");
        assert_eq!(commands[1].text, "c");
    }
}
