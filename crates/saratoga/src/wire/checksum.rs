//! The file checksum a METADATA frame may carry, and how to compute it.
//!
//! METADATA flags bits 28–31 give the type and bits 24–27 the checksum's
//! length in 32-bit words. The types and lengths are the drafts' (checked
//! against the drafts' author's implementation, charlesetsmith/saratoga,
//! `saratoga.json`: `csumtype` none 0, crc32 1, md5 2, sha1 3; `csumlen`
//! none 0, crc32 1, md5 4, sha1 5). CRC32 is the IEEE 802.3 polynomial
//! (the drafts say only "CRC32").

use md5::Digest as _;

use super::error::WireError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumKind {
    None = 0,
    Crc32 = 1,
    Md5 = 2,
    Sha1 = 3,
}

impl ChecksumKind {
    pub fn from_code(code: u8) -> Result<ChecksumKind, WireError> {
        Ok(match code {
            0 => ChecksumKind::None,
            1 => ChecksumKind::Crc32,
            2 => ChecksumKind::Md5,
            3 => ChecksumKind::Sha1,
            other => return Err(WireError::ChecksumType(other)),
        })
    }

    /// The length field's value: the checksum's size in 32-bit words.
    pub fn words(self) -> u8 {
        match self {
            ChecksumKind::None => 0,
            ChecksumKind::Crc32 => 1,
            ChecksumKind::Md5 => 4,
            ChecksumKind::Sha1 => 5,
        }
    }

    pub fn byte_len(self) -> usize {
        4 * usize::from(self.words())
    }

    pub fn is_none(self) -> bool {
        self == ChecksumKind::None
    }

    /// The names [`str::parse`] takes, one per kind, as a user writes them
    /// (`scps saratoga --checksum`).
    pub const NAMES: [&'static str; 4] = ["none", "crc32", "md5", "sha1"];
}

/// A checksum named by none of [`ChecksumKind::NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: not a checksum (none, crc32, md5 or sha1)")]
pub struct UnknownChecksum(pub String);

impl std::str::FromStr for ChecksumKind {
    type Err = UnknownChecksum;

    fn from_str(name: &str) -> Result<ChecksumKind, UnknownChecksum> {
        Ok(match name {
            "none" => ChecksumKind::None,
            "crc32" => ChecksumKind::Crc32,
            "md5" => ChecksumKind::Md5,
            "sha1" => ChecksumKind::Sha1,
            _ => return Err(UnknownChecksum(name.to_owned())),
        })
    }
}

/// A file's checksum as carried in METADATA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Checksum {
    None,
    Crc32(u32),
    Md5([u8; 16]),
    Sha1([u8; 20]),
}

impl Checksum {
    pub fn kind(&self) -> ChecksumKind {
        match self {
            Checksum::None => ChecksumKind::None,
            Checksum::Crc32(_) => ChecksumKind::Crc32,
            Checksum::Md5(_) => ChecksumKind::Md5,
            Checksum::Sha1(_) => ChecksumKind::Sha1,
        }
    }

    /// Reads a checksum of the given type and length (in words) from
    /// `bytes`, which hold exactly `words * 4` bytes.
    pub(crate) fn from_wire(kind: u8, words: u8, bytes: &[u8]) -> Result<Checksum, WireError> {
        let checksum_kind = ChecksumKind::from_code(kind)?;
        if checksum_kind.words() != words || bytes.len() != checksum_kind.byte_len() {
            return Err(WireError::ChecksumLength { kind, words });
        }
        Ok(match checksum_kind {
            ChecksumKind::None => Checksum::None,
            ChecksumKind::Crc32 => {
                Checksum::Crc32(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
            }
            ChecksumKind::Md5 => Checksum::Md5(
                bytes
                    .try_into()
                    .map_err(|_| WireError::ChecksumLength { kind, words })?,
            ),
            ChecksumKind::Sha1 => Checksum::Sha1(
                bytes
                    .try_into()
                    .map_err(|_| WireError::ChecksumLength { kind, words })?,
            ),
        })
    }

    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Checksum::None => Vec::new(),
            Checksum::Crc32(crc) => crc.to_be_bytes().to_vec(),
            Checksum::Md5(digest) => digest.to_vec(),
            Checksum::Sha1(digest) => digest.to_vec(),
        }
    }

    /// The checksum of `data` in one go.
    pub fn of(kind: ChecksumKind, data: &[u8]) -> Checksum {
        let mut hasher = Hasher::new(kind);
        hasher.update(data);
        hasher.finish()
    }
}

/// Computes a checksum piece by piece.
#[derive(Debug, Clone)]
pub struct Hasher(HasherState);

#[derive(Clone)]
enum HasherState {
    None,
    Crc32(crc32fast::Hasher),
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
}

impl std::fmt::Debug for HasherState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HasherState::None => "None",
            HasherState::Crc32(_) => "Crc32",
            HasherState::Md5(_) => "Md5",
            HasherState::Sha1(_) => "Sha1",
        })
    }
}

impl Hasher {
    pub fn new(kind: ChecksumKind) -> Hasher {
        Hasher(match kind {
            ChecksumKind::None => HasherState::None,
            ChecksumKind::Crc32 => HasherState::Crc32(crc32fast::Hasher::new()),
            ChecksumKind::Md5 => HasherState::Md5(md5::Md5::new()),
            ChecksumKind::Sha1 => HasherState::Sha1(sha1::Sha1::new()),
        })
    }

    pub fn update(&mut self, data: &[u8]) {
        match &mut self.0 {
            HasherState::None => {}
            HasherState::Crc32(h) => h.update(data),
            HasherState::Md5(h) => h.update(data),
            HasherState::Sha1(h) => h.update(data),
        }
    }

    pub fn finish(self) -> Checksum {
        match self.0 {
            HasherState::None => Checksum::None,
            HasherState::Crc32(h) => Checksum::Crc32(h.finalize()),
            HasherState::Md5(h) => Checksum::Md5(h.finalize().into()),
            HasherState::Sha1(h) => Checksum::Sha1(h.finalize().into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_reads_as_its_kind_and_nothing_else_does() {
        let kinds: Vec<_> = ChecksumKind::NAMES.iter().map(|name| name.parse()).collect();
        assert_eq!(
            kinds,
            [
                Ok(ChecksumKind::None),
                Ok(ChecksumKind::Crc32),
                Ok(ChecksumKind::Md5),
                Ok(ChecksumKind::Sha1)
            ]
        );
        let refused = "MD5".parse::<ChecksumKind>().unwrap_err();
        assert_eq!(
            refused.to_string(),
            "\"MD5\": not a checksum (none, crc32, md5 or sha1)"
        );
    }

    #[test]
    fn checksums_of_known_text() {
        // Published test vectors for "abc".
        assert_eq!(
            Checksum::of(ChecksumKind::Crc32, b"abc"),
            Checksum::Crc32(0x3524_41c2)
        );
        let Checksum::Md5(md5) = Checksum::of(ChecksumKind::Md5, b"abc") else {
            panic!("MD5 expected")
        };
        assert_eq!(md5[..4], [0x90, 0x01, 0x50, 0x98]);
        let Checksum::Sha1(sha1) = Checksum::of(ChecksumKind::Sha1, b"abc") else {
            panic!("SHA-1 expected")
        };
        assert_eq!(sha1[..4], [0xa9, 0x99, 0x3e, 0x36]);
        assert_eq!(Checksum::of(ChecksumKind::None, b"abc"), Checksum::None);
        let mut hasher = Hasher::new(ChecksumKind::Sha1);
        hasher.update(b"a");
        hasher.update(b"bc");
        assert_eq!(hasher.finish(), Checksum::Sha1(sha1));
    }

    #[test]
    fn lengths_are_in_words() {
        for kind in [
            ChecksumKind::None,
            ChecksumKind::Crc32,
            ChecksumKind::Md5,
            ChecksumKind::Sha1,
        ] {
            let checksum = Checksum::of(kind, b"x");
            assert_eq!(checksum.bytes().len(), kind.byte_len());
            assert_eq!(
                Checksum::from_wire(kind as u8, kind.words(), &checksum.bytes()),
                Ok(checksum)
            );
        }
        assert_eq!(
            Checksum::from_wire(2, 5, &[0; 20]),
            Err(WireError::ChecksumLength { kind: 2, words: 5 })
        );
        assert_eq!(
            Checksum::from_wire(7, 1, &[0; 4]),
            Err(WireError::ChecksumType(7))
        );
    }
}
