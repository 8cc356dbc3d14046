//! The gateway's secrets on disk (its private key, made by `scps gateway
//! keygen`; the SOCKS5 server's passwords): readable by their owner alone
//! (mode 0600, as an ssh or WireGuard key), and refused at start if anyone
//! else may read or change them.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use scps_secure::{KeyError, PrivateKey, PublicKey};

/// Bytes a secret file may hold at most.
const MAX_FILE_BYTES: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    #[error(
        "{path} is readable or writable by others (mode {mode:04o}): a secret must be its owner's \
         alone (chmod 600 {path})"
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error("{path} is not a secret's file (a regular file of at most {MAX_FILE_BYTES} bytes)")]
    NotASecretFile { path: PathBuf },
    #[error("{path} holds no private key: {error} (make one with `scps gateway keygen {path}`)")]
    Malformed { path: PathBuf, error: KeyError },
    #[error("{path} exists: a new key is never written over an old one (remove it first)")]
    Exists { path: PathBuf },
    #[error("cannot make a key: {0}")]
    Generate(KeyError),
}

/// Reads the secret in `path`, refusing a file others may read or write.
pub fn read_secret(path: &Path) -> Result<String, KeyFileError> {
    let io = |error| KeyFileError::Io {
        path: path.to_owned(),
        error,
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if !metadata.is_file() || metadata.len() > MAX_FILE_BYTES {
        return Err(KeyFileError::NotASecretFile {
            path: path.to_owned(),
        });
    }
    let mode = metadata.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyFileError::Exposed {
            path: path.to_owned(),
            mode,
        });
    }
    std::fs::read_to_string(path).map_err(io)
}

/// Reads the private key in `path`, refusing a file others may read or
/// write.
pub fn read_private_key(path: &Path) -> Result<PrivateKey, KeyFileError> {
    let text = read_secret(path)?;
    // The key is the first line that is not a comment.
    let key = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#'))
        .unwrap_or_default();
    PrivateKey::from_base64(key).map_err(|error| KeyFileError::Malformed {
        path: path.to_owned(),
        error,
    })
}

/// Makes a new private key in `path` (created with mode 0600, never over
/// an existing file) and returns its public key, for the far gateway's
/// configuration.
pub fn keygen(path: &Path) -> Result<PublicKey, KeyFileError> {
    let key = PrivateKey::generate().map_err(KeyFileError::Generate)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => KeyFileError::Exists {
                path: path.to_owned(),
            },
            _ => KeyFileError::Io {
                path: path.to_owned(),
                error,
            },
        })?;
    // The process's umask may have taken bits away, never added them; set
    // the mode whatever it was.
    let written = file
        .set_permissions(std::fs::Permissions::from_mode(0o600))
        .and_then(|()| writeln!(file, "{}", key.to_base64()))
        .and_then(|()| file.sync_all());
    written.map_err(|error| KeyFileError::Io {
        path: path.to_owned(),
        error,
    })?;
    Ok(key.public_key())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("scps-keys-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("gw.key")
    }

    #[test]
    fn a_key_made_by_keygen_is_its_owners_alone_and_reads_back() {
        let path = scratch("made");
        let public = keygen(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(read_private_key(&path).unwrap().public_key(), public);
        assert!(
            matches!(keygen(&path), Err(KeyFileError::Exists { .. })),
            "never over an old key"
        );
        assert_eq!(read_private_key(&path).unwrap().public_key(), public);
    }

    #[test]
    fn exposed_missing_and_malformed_key_files_are_refused_with_what_to_do() {
        let path = scratch("bad");
        keygen(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let exposed = read_private_key(&path).unwrap_err().to_string();
        assert!(
            exposed.contains("mode 0644") && exposed.contains("chmod 600"),
            "{exposed}"
        );
        std::fs::write(&path, "# comment\nnot a key\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let malformed = read_private_key(&path).unwrap_err().to_string();
        assert!(
            malformed.contains("holds no private key") && malformed.contains("keygen"),
            "{malformed}"
        );
        let missing = read_private_key(&path.with_extension("none"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("No such file"), "{missing}");
        let dir = read_private_key(path.parent().unwrap()).unwrap_err();
        assert!(matches!(dir, KeyFileError::NotASecretFile { .. }));
    }
}
