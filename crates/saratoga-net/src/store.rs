//! What a client's engine may touch here: the one file it puts, or the
//! one it gets, and nothing else. The engine answers any peer's REQUEST
//! and METADATA from its store; a client's must not serve the directory
//! of the file it sends, nor take files it did not ask for.

use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::UNIX_EPOCH;

use scps_saratoga::engine::{FileInfo, ListEntry, PartialId, Store, StoreError};

fn denied(name: &str) -> StoreError {
    StoreError::Denied(format!("{name} (a client serves nothing)"))
}

/// The file a put sends, opened once: the engine reads each DATA frame's
/// bytes from it at their offset (a `DiskStore` would resolve and open
/// the path again for every frame).
#[derive(Debug)]
pub struct SendFile {
    name: String,
    file: File,
    info: FileInfo,
}

impl SendFile {
    /// `path`, known to the engine as `name`: a regular file only. A
    /// device or FIFO has no size to announce (its metadata says 0) and
    /// may never end; it is opened without blocking (a FIFO's open would
    /// wait for a writer) and refused before anything is sent.
    pub fn open(path: &Path, name: &str) -> std::io::Result<SendFile> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(path)?;
        let metadata = file.metadata()?;
        if metadata.is_dir() {
            return Err(std::io::Error::other("is a directory: put sends one file"));
        }
        if !metadata.is_file() {
            return Err(std::io::Error::other(
                "is not a regular file (a device, FIFO or socket): put sends a file of known size",
            ));
        }
        let mtime = metadata
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        Ok(SendFile {
            name: name.to_owned(),
            file,
            info: FileInfo {
                size: metadata.len(),
                mtime,
                is_dir: false,
            },
        })
    }

    /// The file sent: what was read from it, not whatever its path names
    /// by the end.
    pub fn file(&self) -> &File {
        &self.file
    }

    fn check(&self, name: &str) -> Result<(), StoreError> {
        match name == self.name {
            true => Ok(()),
            false => Err(denied(name)),
        }
    }
}

impl Store for SendFile {
    fn info(&self, name: &str) -> Result<FileInfo, StoreError> {
        self.check(name)?;
        Ok(self.info)
    }

    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError> {
        self.check(name)?;
        let mut filled = 0;
        while filled < buf.len() {
            let read = self
                .file
                .read_at(&mut buf[filled..], offset + filled as u64)
                .map_err(|e| StoreError::Io(format!("{name}: {e}")))?;
            if read == 0 {
                break;
            }
            filled += read;
        }
        Ok(filled)
    }

    fn list(&self, dir: &str) -> Result<Vec<ListEntry>, StoreError> {
        Err(denied(dir))
    }

    fn delete(&mut self, name: &str) -> Result<(), StoreError> {
        Err(denied(name))
    }

    fn open_partial(&mut self, name: &str, _: &PartialId) -> Result<Vec<Range<u64>>, StoreError> {
        Err(denied(name))
    }

    fn write_partial(&mut self, name: &str, _: u64, _: &[u8]) -> Result<(), StoreError> {
        Err(denied(name))
    }

    fn read_partial(&self, name: &str, _: u64, _: &mut [u8]) -> Result<usize, StoreError> {
        Err(denied(name))
    }

    fn commit(&mut self, name: &str) -> Result<(), StoreError> {
        Err(denied(name))
    }

    fn discard_partial(&mut self, name: &str) -> Result<(), StoreError> {
        Err(denied(name))
    }
}

/// A store that may only receive one file (a get's), or nothing (ls, rm).
#[derive(Debug)]
pub struct ReceiveOnly<S> {
    inner: S,
    name: Option<String>,
}

impl<S: Store> ReceiveOnly<S> {
    /// Only `name` may be received into `inner`.
    pub fn file(inner: S, name: &str) -> ReceiveOnly<S> {
        ReceiveOnly {
            inner,
            name: Some(name.to_owned()),
        }
    }

    /// Nothing may be read or received.
    pub fn nothing(inner: S) -> ReceiveOnly<S> {
        ReceiveOnly { inner, name: None }
    }

    fn check(&self, name: &str) -> Result<(), StoreError> {
        match self.name.as_deref() == Some(name) {
            true => Ok(()),
            false => Err(denied(name)),
        }
    }
}

impl<S: Store> Store for ReceiveOnly<S> {
    fn info(&self, name: &str) -> Result<FileInfo, StoreError> {
        Err(denied(name))
    }

    fn read_at(&self, name: &str, _: u64, _: &mut [u8]) -> Result<usize, StoreError> {
        Err(denied(name))
    }

    fn list(&self, dir: &str) -> Result<Vec<ListEntry>, StoreError> {
        Err(denied(dir))
    }

    fn delete(&mut self, name: &str) -> Result<(), StoreError> {
        Err(denied(name))
    }

    fn open_partial(&mut self, name: &str, id: &PartialId) -> Result<Vec<Range<u64>>, StoreError> {
        self.check(name)?;
        self.inner.open_partial(name, id)
    }

    fn write_partial(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        self.check(name)?;
        self.inner.write_partial(name, offset, data)
    }

    fn read_partial(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError> {
        self.check(name)?;
        self.inner.read_partial(name, offset, buf)
    }

    fn commit(&mut self, name: &str) -> Result<(), StoreError> {
        self.check(name)?;
        self.inner.commit(name)
    }

    fn discard_partial(&mut self, name: &str) -> Result<(), StoreError> {
        self.check(name)?;
        self.inner.discard_partial(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scps_saratoga::engine::MemoryStore;

    #[test]
    fn a_put_reads_only_its_file() {
        let path = std::env::temp_dir().join(format!("scps-sendfile-{}", std::process::id()));
        std::fs::write(&path, b"abcdef").unwrap();
        let mut store = SendFile::open(&path, "sent").unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(store.info("sent").map(|i| i.size), Ok(6));
        let mut buf = [0; 8];
        assert_eq!(store.read_at("sent", 2, &mut buf), Ok(4));
        assert_eq!(&buf[..4], b"cdef");
        assert!(matches!(store.info("other"), Err(StoreError::Denied(_))));
        assert!(matches!(store.list(""), Err(StoreError::Denied(_))));
        assert!(matches!(store.delete("sent"), Err(StoreError::Denied(_))));
        assert!(matches!(
            store.open_partial("sent", &partial(1)),
            Err(StoreError::Denied(_))
        ));
        assert!(SendFile::open(&std::env::temp_dir(), "d").is_err());
    }

    /// A partial file's identity as a METADATA of `size` bytes gives it.
    fn partial(size: u64) -> PartialId {
        PartialId {
            size,
            mtime: 0,
            checksum: scps_saratoga::wire::Checksum::None,
        }
    }

    #[test]
    fn a_get_receives_only_its_file() {
        let mut memory = MemoryStore::new();
        memory.insert("other", b"secret".to_vec(), 0);
        let mut receiving = ReceiveOnly::file(memory, "got");
        assert!(matches!(receiving.info("other"), Err(StoreError::Denied(_))));
        assert!(matches!(receiving.delete("other"), Err(StoreError::Denied(_))));
        assert!(matches!(
            receiving.open_partial("x", &partial(1)),
            Err(StoreError::Denied(_))
        ));
        receiving.open_partial("got", &partial(2)).unwrap();
        receiving.write_partial("got", 0, b"hi").unwrap();
        receiving.commit("got").unwrap();
        let mut nothing = ReceiveOnly::nothing(MemoryStore::new());
        assert!(matches!(nothing.info(""), Err(StoreError::Denied(_))));
        assert!(matches!(
            nothing.open_partial("", &partial(1)),
            Err(StoreError::Denied(_))
        ));
    }
}
