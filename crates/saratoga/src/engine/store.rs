//! Where files come from and go to: the engine reads and writes through a
//! [`Store`], so it never touches a file system itself.
//!
//! A file being received is a *partial* file: written at offsets as DATA
//! arrives, remembered with the ranges it holds (so a receiver restarted
//! mid-transfer resumes from it), and made visible under its name only
//! when [`Store::commit`] is called after it is complete and verified.
//!
//! A partial is resumed only for the same file: the same size, mtime and
//! checksum ([`PartialId`]), and a checksum there is. A name and a size
//! alone would merge another file's bytes into it, which only a checksum
//! can catch, and only at the end; a transfer without one cannot tell, so
//! it always starts afresh.
//!
//! Names are relative, `/`-separated paths; [`safe_name`] refuses the ones
//! a store must never be asked for.

use std::collections::BTreeMap;
use std::ops::Range;

use super::ranges::RangeSet;
use crate::wire::{Checksum, ChecksumKind, Hasher};

/// What a store knows of a file or directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo {
    pub size: u64,
    /// Unix seconds.
    pub mtime: u64,
    pub is_dir: bool,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    /// The entry's name within its directory.
    pub name: String,
    pub info: FileInfo,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("no such file or directory: {0}")]
    NotFound(String),
    #[error("access denied: {0}")]
    Denied(String),
    #[error("too big: {0}")]
    TooBig(String),
    /// The file system (or the user's quota) is full.
    #[error("no space left: {0}")]
    NoSpace(String),
    #[error("{0}")]
    Io(String),
}

/// The file a partial is of, as its METADATA announced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartialId {
    pub size: u64,
    /// Seconds since 2000, as the METADATA carries it.
    pub mtime: u32,
    pub checksum: Checksum,
}

impl PartialId {
    /// Whether a partial of `stored` may be resumed for this file.
    pub fn resumes(&self, stored: &PartialId) -> bool {
        self == stored && !self.checksum.kind().is_none()
    }
}

/// The file operations the engine needs.
pub trait Store {
    fn info(&self, name: &str) -> Result<FileInfo, StoreError>;
    /// Reads from `offset` into `buf`; fewer bytes only at the end of the file.
    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError>;
    fn list(&self, dir: &str) -> Result<Vec<ListEntry>, StoreError>;
    fn delete(&mut self, name: &str) -> Result<(), StoreError>;

    /// Opens the partial file for `name`, to be the file `id`, and
    /// returns the ranges it already holds: none unless
    /// [`PartialId::resumes`] the one stored (any other is discarded).
    fn open_partial(&mut self, name: &str, id: &PartialId) -> Result<Vec<Range<u64>>, StoreError>;
    fn write_partial(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<(), StoreError>;
    fn read_partial(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError>;
    /// Makes the complete partial file visible under `name`.
    fn commit(&mut self, name: &str) -> Result<(), StoreError>;
    fn discard_partial(&mut self, name: &str) -> Result<(), StoreError>;
    /// A receive of `name` ended without its file: the partial file is
    /// closed and kept (a later transfer of the same file resumes it).
    /// Nothing to do for a store that holds no open files.
    fn close_partial(&mut self, _name: &str) {}
}

/// `name` made relative and checked: no empty, `.` or `..` components,
/// no NUL, no backslash. A leading `/` is dropped (names are relative to
/// the store). `None` for a name a store must refuse.
pub fn safe_name(name: &str) -> Option<String> {
    let trimmed = name.trim_start_matches('/');
    if name.contains('\0') || name.contains('\\') {
        return None;
    }
    let mut parts = Vec::new();
    for part in trimmed.split('/') {
        match part {
            "" => {}
            "." | ".." => return None,
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// The checksum of `size` bytes read with `read(offset, buf)`.
pub(crate) fn checksum_of(
    kind: ChecksumKind,
    size: u64,
    mut read: impl FnMut(u64, &mut [u8]) -> Result<usize, StoreError>,
) -> Result<Checksum, StoreError> {
    if kind.is_none() {
        return Ok(Checksum::None);
    }
    let mut hasher = Hasher::new(kind);
    let mut buf = vec![0; 64 * 1024];
    let mut offset = 0;
    while offset < size {
        let want = buf
            .len()
            .min(usize::try_from(size - offset).unwrap_or(usize::MAX));
        let read = read(offset, &mut buf[..want])?;
        if read == 0 {
            return Err(StoreError::Io(format!("ends at {offset} of {size} bytes")));
        }
        hasher.update(&buf[..read]);
        offset += read as u64;
    }
    Ok(hasher.finish())
}

/// A store in memory, for tests and the simulator. It refuses to receive
/// a file larger than [`MemoryStore::MAX_FILE`], and a partial file takes
/// memory as its bytes arrive, not as its size is announced.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    files: BTreeMap<String, (Vec<u8>, u64)>,
    partials: BTreeMap<String, MemoryPartial>,
    /// Names that exist but may not be read or deleted.
    denied: Vec<String>,
    /// The bytes files and partial files may hold in all, like a disk's
    /// size (none: unbounded).
    room: Option<u64>,
}

#[derive(Debug, Clone)]
struct MemoryPartial {
    id: PartialId,
    /// The bytes up to the last written; the rest of `id.size` reads as 0.
    contents: Vec<u8>,
    have: RangeSet,
}

impl MemoryStore {
    pub const MAX_FILE: u64 = 1 << 30;

    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    pub fn insert(&mut self, name: &str, contents: Vec<u8>, mtime: u64) {
        self.files.insert(name.to_owned(), (contents, mtime));
    }

    pub fn contents(&self, name: &str) -> Option<&[u8]> {
        self.files.get(name).map(|(contents, _)| contents.as_slice())
    }

    /// Holds at most `bytes` in all, files and partial files alike; a
    /// write past it fails as on a full disk.
    pub fn with_room(bytes: u64) -> MemoryStore {
        MemoryStore {
            room: Some(bytes),
            ..MemoryStore::default()
        }
    }

    /// The bytes files and partial files hold.
    pub fn used(&self) -> u64 {
        let files: usize = self.files.values().map(|(contents, _)| contents.len()).sum();
        let partials: usize = self.partials.values().map(|p| p.contents.len()).sum();
        (files + partials) as u64
    }

    /// Makes `name` refuse every access.
    pub fn deny(&mut self, name: &str) {
        self.denied.push(name.to_owned());
    }

    /// The ranges a partial file holds, if there is one.
    pub fn partial_ranges(&self, name: &str) -> Option<Vec<Range<u64>>> {
        self.partials.get(name).map(|p| p.have.iter().collect())
    }

    fn check(&self, name: &str) -> Result<(), StoreError> {
        if self.denied.iter().any(|d| d == name) {
            return Err(StoreError::Denied(name.to_owned()));
        }
        Ok(())
    }

    fn partial(&self, name: &str) -> Result<&MemoryPartial, StoreError> {
        self.partials
            .get(name)
            .ok_or_else(|| StoreError::NotFound(name.to_owned()))
    }

    fn is_dir(&self, name: &str) -> bool {
        name.is_empty() || {
            let prefix = format!("{name}/");
            self.files.keys().any(|k| k.starts_with(&prefix))
        }
    }
}

fn read_slice(contents: &[u8], offset: u64, buf: &mut [u8]) -> usize {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(contents.len());
    let len = buf.len().min(contents.len() - start);
    buf[..len].copy_from_slice(&contents[start..start + len]);
    len
}

impl Store for MemoryStore {
    fn info(&self, name: &str) -> Result<FileInfo, StoreError> {
        self.check(name)?;
        if let Some((contents, mtime)) = self.files.get(name) {
            return Ok(FileInfo {
                size: contents.len() as u64,
                mtime: *mtime,
                is_dir: false,
            });
        }
        if self.is_dir(name) {
            return Ok(FileInfo {
                size: 0,
                mtime: 0,
                is_dir: true,
            });
        }
        Err(StoreError::NotFound(name.to_owned()))
    }

    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError> {
        self.check(name)?;
        let (contents, _) = self
            .files
            .get(name)
            .ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
        Ok(read_slice(contents, offset, buf))
    }

    fn list(&self, dir: &str) -> Result<Vec<ListEntry>, StoreError> {
        self.check(dir)?;
        if !self.is_dir(dir) {
            return Err(StoreError::NotFound(dir.to_owned()));
        }
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut entries: BTreeMap<String, FileInfo> = BTreeMap::new();
        for (name, (contents, mtime)) in &self.files {
            let Some(rest) = name.strip_prefix(&prefix) else {
                continue;
            };
            match rest.split_once('/') {
                Some((sub, _)) => {
                    entries.insert(
                        sub.to_owned(),
                        FileInfo {
                            size: 0,
                            mtime: 0,
                            is_dir: true,
                        },
                    );
                }
                None => {
                    entries.insert(
                        rest.to_owned(),
                        FileInfo {
                            size: contents.len() as u64,
                            mtime: *mtime,
                            is_dir: false,
                        },
                    );
                }
            }
        }
        Ok(entries
            .into_iter()
            .map(|(name, info)| ListEntry { name, info })
            .collect())
    }

    fn delete(&mut self, name: &str) -> Result<(), StoreError> {
        self.check(name)?;
        self.files
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| StoreError::NotFound(name.to_owned()))
    }

    fn open_partial(&mut self, name: &str, id: &PartialId) -> Result<Vec<Range<u64>>, StoreError> {
        self.check(name)?;
        if id.size > MemoryStore::MAX_FILE {
            return Err(StoreError::TooBig(name.to_owned()));
        }
        if let Some(partial) = self.partials.get(name)
            && id.resumes(&partial.id)
        {
            return Ok(partial.have.iter().collect());
        }
        let fresh = MemoryPartial {
            id: *id,
            contents: Vec::new(),
            have: RangeSet::new(),
        };
        self.partials.insert(name.to_owned(), fresh);
        Ok(Vec::new())
    }

    fn write_partial(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        let partial = self
            .partials
            .get_mut(name)
            .ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
        let end = offset.saturating_add(data.len() as u64);
        if end > partial.id.size {
            return Err(StoreError::TooBig(name.to_owned()));
        }
        // Within MAX_FILE, so within usize.
        let (from, to) = (offset as usize, end as usize);
        let growth = to.saturating_sub(partial.contents.len()) as u64;
        if let Some(room) = self.room
            && self.used() + growth > room
        {
            return Err(StoreError::NoSpace(format!("{name}: {room} bytes in all")));
        }
        let partial = self
            .partials
            .get_mut(name)
            .ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
        if partial.contents.len() < to {
            partial.contents.resize(to, 0);
        }
        partial.contents[from..to].copy_from_slice(data);
        partial.have.insert(offset..end);
        Ok(())
    }

    fn read_partial(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError> {
        let partial = self.partial(name)?;
        let len = buf
            .len()
            .min(usize::try_from(partial.id.size.saturating_sub(offset)).unwrap_or(usize::MAX));
        let read = read_slice(&partial.contents, offset, &mut buf[..len]);
        buf[read..len].fill(0);
        Ok(len)
    }

    fn commit(&mut self, name: &str) -> Result<(), StoreError> {
        let mut partial = self
            .partials
            .remove(name)
            .ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
        partial.contents.resize(partial.id.size as usize, 0);
        self.files.insert(name.to_owned(), (partial.contents, 0));
        Ok(())
    }

    fn discard_partial(&mut self, name: &str) -> Result<(), StoreError> {
        self.partials.remove(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_relative_and_checked() {
        assert_eq!(safe_name("a/b.txt").as_deref(), Some("a/b.txt"));
        assert_eq!(safe_name("/home/x/f").as_deref(), Some("home/x/f"));
        assert_eq!(safe_name("a//b/").as_deref(), Some("a/b"));
        assert_eq!(safe_name("").as_deref(), Some(""));
        assert_eq!(safe_name("../etc/passwd"), None);
        assert_eq!(safe_name("a/./b"), None);
        assert_eq!(safe_name("a\\b"), None);
    }

    /// One range, as `open_partial` returns it.
    fn only(range: Range<u64>) -> Result<Vec<Range<u64>>, StoreError> {
        Ok(vec![range])
    }

    /// The id of a file of `size` bytes whose checksum is that of `tag`.
    fn id(size: u64, tag: &[u8]) -> PartialId {
        PartialId {
            size,
            mtime: 7,
            checksum: Checksum::of(ChecksumKind::Crc32, tag),
        }
    }

    #[test]
    fn a_partial_file_appears_only_when_committed() {
        let mut store = MemoryStore::new();
        assert_eq!(store.open_partial("f", &id(6, b"f")), Ok(vec![]));
        store.write_partial("f", 3, b"def").unwrap();
        assert!(store.info("f").is_err());
        let resume = store.open_partial("f", &id(6, b"f")).unwrap();
        assert_eq!(resume.first(), Some(&(3..6)), "resume info");
        assert_eq!(resume.len(), 1);
        assert_eq!(
            store.write_partial("f", 5, b"xy"),
            Err(StoreError::TooBig("f".into()))
        );
        store.write_partial("f", 0, b"abc").unwrap();
        let mut buf = [0; 6];
        assert_eq!(store.read_partial("f", 0, &mut buf), Ok(6));
        store.commit("f").unwrap();
        assert_eq!(store.contents("f"), Some(&b"abcdef"[..]));
        store.discard_partial("g").unwrap();
        assert_eq!(store.partial_ranges("g"), None);
        assert_eq!(
            store.open_partial("huge", &id(u64::MAX, b"")),
            Err(StoreError::TooBig("huge".into()))
        );
        // A gigabyte announced takes what arrives, not a gigabyte.
        store
            .open_partial("big", &id(MemoryStore::MAX_FILE, b""))
            .unwrap();
        store.write_partial("big", 10, b"x").unwrap();
        assert!(store.partials["big"].contents.capacity() <= 64);
        let mut tail = [1; 4];
        assert_eq!(
            store.read_partial("big", MemoryStore::MAX_FILE - 2, &mut tail),
            Ok(2)
        );
        assert_eq!(tail, [0, 0, 1, 1]);
    }

    #[test]
    fn a_partial_is_resumed_only_for_the_same_file_with_a_checksum() {
        let mut store = MemoryStore::new();
        let same = id(4, b"one");
        let others = [
            id(5, b"one"),
            id(4, b"two"),
            PartialId { mtime: 8, ..same },
            PartialId {
                checksum: Checksum::None,
                ..same
            },
        ];
        for other in others {
            store.open_partial("g", &same).unwrap();
            store.write_partial("g", 0, b"ab").unwrap();
            assert_eq!(store.open_partial("g", &same), only(0..2));
            assert_eq!(store.open_partial("g", &other), Ok(vec![]), "{other:?}");
            assert_eq!(store.open_partial("g", &same), Ok(vec![]), "the old one is gone");
        }
        let none = others[3];
        store.open_partial("n", &none).unwrap();
        store.write_partial("n", 0, b"ab").unwrap();
        assert_eq!(store.open_partial("n", &none), Ok(vec![]), "no checksum: afresh");
    }

    #[test]
    fn listing_shows_files_and_subdirectories() {
        let mut store = MemoryStore::new();
        store.insert("d/a", vec![1; 3], 5);
        store.insert("d/s/b", vec![], 0);
        store.insert("top", vec![], 0);
        let names: Vec<_> = store
            .list("d")
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.info.is_dir))
            .collect();
        assert_eq!(names, [("a".to_owned(), false), ("s".to_owned(), true)]);
        assert_eq!(store.list("").unwrap().len(), 2);
        assert!(matches!(store.list("nope"), Err(StoreError::NotFound(_))));
        assert!(store.info("d").unwrap().is_dir);
        store.deny("top");
        assert!(matches!(store.delete("top"), Err(StoreError::Denied(_))));
        assert!(matches!(store.delete("gone"), Err(StoreError::NotFound(_))));
        store.delete("d/a").unwrap();
    }
}
