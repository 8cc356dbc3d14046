//! What a client's engine may touch here: the one file it puts, or the
//! one it gets, and nothing else. The engine answers any peer's REQUEST
//! and METADATA from its store; a client's must not serve the directory
//! of the file it sends, nor take files it did not ask for.

use std::ops::Range;

use scps_saratoga::engine::{FileInfo, ListEntry, Store, StoreError};

#[derive(Debug)]
pub struct OneFile<S> {
    inner: S,
    /// The store name that may be read (a put's) or received (a get's);
    /// none for ls and rm, which need no file here.
    name: Option<String>,
    receive: bool,
}

impl<S: Store> OneFile<S> {
    /// Only `name` may be read from `inner`.
    pub fn reading(inner: S, name: &str) -> OneFile<S> {
        OneFile {
            inner,
            name: Some(name.to_owned()),
            receive: false,
        }
    }

    /// Only `name` may be received into `inner`.
    pub fn receiving(inner: S, name: &str) -> OneFile<S> {
        OneFile {
            inner,
            name: Some(name.to_owned()),
            receive: true,
        }
    }

    /// Nothing may be read or received.
    pub fn nothing(inner: S) -> OneFile<S> {
        OneFile {
            inner,
            name: None,
            receive: false,
        }
    }

    fn check(&self, name: &str, receive: bool) -> Result<(), StoreError> {
        if self.name.as_deref() == Some(name) && receive == self.receive {
            Ok(())
        } else {
            Err(StoreError::Denied(format!("{name} (a client serves nothing)")))
        }
    }
}

impl<S: Store> Store for OneFile<S> {
    fn info(&self, name: &str) -> Result<FileInfo, StoreError> {
        self.check(name, false)?;
        self.inner.info(name)
    }

    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError> {
        self.check(name, false)?;
        self.inner.read_at(name, offset, buf)
    }

    fn list(&self, dir: &str) -> Result<Vec<ListEntry>, StoreError> {
        Err(StoreError::Denied(format!("{dir} (a client serves nothing)")))
    }

    fn delete(&mut self, name: &str) -> Result<(), StoreError> {
        Err(StoreError::Denied(format!("{name} (a client serves nothing)")))
    }

    fn open_partial(&mut self, name: &str, size: u64) -> Result<Vec<Range<u64>>, StoreError> {
        self.check(name, true)?;
        self.inner.open_partial(name, size)
    }

    fn write_partial(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        self.check(name, true)?;
        self.inner.write_partial(name, offset, data)
    }

    fn read_partial(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError> {
        self.check(name, true)?;
        self.inner.read_partial(name, offset, buf)
    }

    fn commit(&mut self, name: &str) -> Result<(), StoreError> {
        self.check(name, true)?;
        self.inner.commit(name)
    }

    fn discard_partial(&mut self, name: &str) -> Result<(), StoreError> {
        self.check(name, true)?;
        self.inner.discard_partial(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scps_saratoga::engine::MemoryStore;

    #[test]
    fn only_the_one_file_is_read_or_received() {
        let mut memory = MemoryStore::new();
        memory.insert("sent", b"abc".to_vec(), 0);
        memory.insert("other", b"secret".to_vec(), 0);
        let mut reading = OneFile::reading(memory.clone(), "sent");
        assert_eq!(reading.info("sent").map(|i| i.size), Ok(3));
        assert!(matches!(reading.info("other"), Err(StoreError::Denied(_))));
        assert!(matches!(reading.list(""), Err(StoreError::Denied(_))));
        assert!(matches!(reading.delete("sent"), Err(StoreError::Denied(_))));
        assert!(matches!(
            reading.open_partial("sent", 1),
            Err(StoreError::Denied(_))
        ));

        let mut receiving = OneFile::receiving(memory, "got");
        assert!(matches!(receiving.info("other"), Err(StoreError::Denied(_))));
        assert!(matches!(
            receiving.open_partial("x", 1),
            Err(StoreError::Denied(_))
        ));
        receiving.open_partial("got", 2).unwrap();
        receiving.write_partial("got", 0, b"hi").unwrap();
        receiving.commit("got").unwrap();
        assert!(matches!(
            OneFile::nothing(MemoryStore::new()).info(""),
            Err(StoreError::Denied(_))
        ));
    }
}
