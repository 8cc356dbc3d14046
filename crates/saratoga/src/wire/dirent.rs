//! The directory entry: describes the file a METADATA frame announces, and
//! is the record a directory listing is made of.
//!
//! ```text
//! entry flags (16) | size (entry descriptor width) | mtime (32) | ctime (32) | name, NUL-terminated
//! ```
//!
//! Entry flags, bit 0 the most significant: 0 always 1; 6–7 properties
//! (0 file, 1 directory, 2 special file, 3 special directory); 8–9 the
//! entry's own descriptor size; the rest zero. The property and
//! descriptor positions are those of the drafts' author's implementation
//! (the drafts name the fields, not their bits).
//!
//! Times are seconds since 2000-01-01 00:00 UTC. Vallona writes Unix
//! seconds plus 946684800 instead; a receiver should not trust a peer's
//! times (docs/spec/saratoga.md, "The directory entry"), so they are
//! carried as read.

use super::error::WireError;
use super::flags::{Descriptor, Reader, put_name, put_value};

/// Seconds from the Unix epoch to 2000-01-01 00:00 UTC.
pub const EPOCH_2000_UNIX: u64 = 946_684_800;

/// Entry flags bits 6–7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    File = 0,
    Directory = 1,
    SpecialFile = 2,
    SpecialDirectory = 3,
}

impl EntryKind {
    fn from_bits(bits: u16) -> EntryKind {
        match bits & 3 {
            0 => EntryKind::File,
            1 => EntryKind::Directory,
            2 => EntryKind::SpecialFile,
            _ => EntryKind::SpecialDirectory,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub kind: EntryKind,
    /// The width `size` is written in.
    pub descriptor: Descriptor,
    pub size: u64,
    /// Seconds since 2000-01-01 00:00 UTC.
    pub mtime: u32,
    pub ctime: u32,
    pub name: String,
}

impl DirEntry {
    /// A plain file's entry, in the narrowest width that holds its size.
    pub fn file(name: &str, size: u64, mtime: u32) -> DirEntry {
        DirEntry {
            kind: EntryKind::File,
            descriptor: Descriptor::fitting(size),
            size,
            mtime,
            ctime: mtime,
            name: name.to_owned(),
        }
    }

    /// Seconds since 2000 from Unix seconds (0 before 2000, saturating
    /// after 2136).
    pub fn time_from_unix(unix_seconds: u64) -> u32 {
        u32::try_from(unix_seconds.saturating_sub(EPOCH_2000_UNIX)).unwrap_or(u32::MAX)
    }

    pub(crate) fn read(reader: &mut Reader<'_>) -> Result<DirEntry, WireError> {
        let flags = reader.u16("directory entry flags")?;
        if flags & 0x8000 == 0 {
            return Err(WireError::DirentFlags(flags));
        }
        let kind = EntryKind::from_bits(flags >> 8);
        let descriptor = Descriptor::from_code(((flags >> 6) & 3) as u8)?;
        let size = reader.value(descriptor, "directory entry size")?;
        let mtime = reader.u32("directory entry mtime")?;
        let ctime = reader.u32("directory entry ctime")?;
        let name = reader.name()?.to_owned();
        Ok(DirEntry {
            kind,
            descriptor,
            size,
            mtime,
            ctime,
            name,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let flags: u16 = 0x8000 | ((self.kind as u16) << 8) | ((self.descriptor.code() as u16) << 6);
        out.extend_from_slice(&flags.to_be_bytes());
        put_value(out, self.descriptor, self.size, "directory entry size")?;
        out.extend_from_slice(&self.mtime.to_be_bytes());
        out.extend_from_slice(&self.ctime.to_be_bytes());
        put_name(out, &self.name)
    }

    /// A directory listing: entries back to back (the contents of a
    /// directory transfer).
    pub fn parse_listing(bytes: &[u8]) -> Result<Vec<DirEntry>, WireError> {
        let mut reader = Reader::new(bytes);
        let mut entries = Vec::new();
        while reader.remaining() > 0 {
            entries.push(DirEntry::read(&mut reader)?);
        }
        Ok(entries)
    }

    pub fn emit_listing(entries: &[DirEntry], out: &mut Vec<u8>) -> Result<(), WireError> {
        entries.iter().try_for_each(|entry| entry.emit(out))
    }
}
