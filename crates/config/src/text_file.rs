//! Reading a configuration file a user names, within a size no
//! configuration comes near: `--config /dev/zero` (or a log given by
//! mistake) is an error naming the limit, not gigabytes of memory.

use std::io::Read;
use std::path::Path;

/// The most a configuration or scenario file may hold. The largest we ship
/// is a few kilobytes; a generated one with thousands of routes is still
/// far below this.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The text of the file at `path`, if it holds at most
/// [`MAX_CONFIG_BYTES`] of UTF-8. Pipes and process substitutions work as
/// files do; they are read up to the limit.
pub fn read_config_text(path: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "more than {} MiB: not a configuration file",
                MAX_CONFIG_BYTES >> 20
            ),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_refused_at_the_limit() {
        let error = read_config_text(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("more than 16 MiB"), "{error}");
    }

    #[test]
    fn a_file_within_the_limit_is_read_whole() {
        let path = std::env::temp_dir().join(format!("scps-config-text-{}.toml", std::process::id()));
        std::fs::write(&path, "[link]\nrate = \"8Mbit\"\n").unwrap();
        let text = read_config_text(&path);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(text.unwrap(), "[link]\nrate = \"8Mbit\"\n");
    }
}
