//! Static keys: Curve25519 key pairs, written as standard base64 (44
//! characters, as WireGuard's), so that an operator moves public keys
//! between configurations the way they already do.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use snow::resolvers::{CryptoResolver, DefaultResolver};

/// Bytes of a Curve25519 key, private or public.
pub const KEY_LEN: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("not base64 ({0})")]
    NotBase64(String),
    #[error("{0} bytes once decoded: a key is {KEY_LEN} bytes (44 characters of base64)")]
    WrongLength(usize),
    #[error("the system's random source failed: {0}")]
    Random(String),
}

/// A gateway's private key. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateKey([u8; KEY_LEN]);

/// A gateway's public key, which the far gateway's configuration names.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey([u8; KEY_LEN]);

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PrivateKey(public {})", self.public_key())
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&STANDARD.encode(self.0))
    }
}

fn decode(text: &str) -> Result<[u8; KEY_LEN], KeyError> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| KeyError::NotBase64(e.to_string()))?;
    bytes
        .as_slice()
        .try_into()
        .map_err(|_| KeyError::WrongLength(bytes.len()))
}

impl PrivateKey {
    /// A new key from the system's random source.
    pub fn generate() -> Result<PrivateKey, KeyError> {
        let builder = snow::Builder::new(crate::noise_params());
        let pair = builder
            .generate_keypair()
            .map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(PrivateKey(
            pair.private
                .as_slice()
                .try_into()
                .map_err(|_| KeyError::WrongLength(pair.private.len()))?,
        ))
    }

    pub fn from_base64(text: &str) -> Result<PrivateKey, KeyError> {
        decode(text).map(PrivateKey)
    }

    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }

    pub fn public_key(&self) -> PublicKey {
        let mut dh = DefaultResolver
            .resolve_dh(&snow::params::DHChoice::Curve25519)
            .expect("snow's default resolver has Curve25519");
        dh.set(&self.0);
        let mut public = [0; KEY_LEN];
        public.copy_from_slice(dh.pubkey());
        PublicKey(public)
    }

    pub(crate) fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

impl PublicKey {
    pub fn from_base64(text: &str) -> Result<PublicKey, KeyError> {
        decode(text).map(PublicKey)
    }

    pub(crate) fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_base64_and_the_public_key_follows_the_private() {
        let key = PrivateKey::generate().unwrap();
        let text = key.to_base64();
        assert_eq!(text.len(), 44);
        let again = PrivateKey::from_base64(&format!("  {text}\n")).unwrap();
        assert_eq!(again, key);
        assert_eq!(again.public_key(), key.public_key());
        let public = PublicKey::from_base64(&key.public_key().to_string()).unwrap();
        assert_eq!(public, key.public_key());
        assert_ne!(PrivateKey::generate().unwrap().public_key(), public);
        assert!(!format!("{key:?}").contains(&text), "Debug hides the key");
    }

    #[test]
    fn the_public_key_of_a_known_private_key_is_x25519s() {
        // RFC 7748 6.1: Alice's private and public keys.
        let private: [u8; 32] = [
            0x77, 0x07, 0x6d, 0x0a, 0x73, 0x18, 0xa5, 0x7d, 0x3c, 0x16, 0xc1, 0x72, 0x51, 0xb2, 0x66, 0x45,
            0xdf, 0x4c, 0x2f, 0x87, 0xeb, 0xc0, 0x99, 0x2a, 0xb1, 0x77, 0xfb, 0xa5, 0x1d, 0xb9, 0x2c, 0x2a,
        ];
        let public: [u8; 32] = [
            0x85, 0x20, 0xf0, 0x09, 0x89, 0x30, 0xa7, 0x54, 0x74, 0x8b, 0x7d, 0xdc, 0xb4, 0x3e, 0xf7, 0x5a,
            0x0d, 0xbf, 0x3a, 0x0d, 0x26, 0x38, 0x1a, 0xf4, 0xeb, 0xa4, 0xa9, 0x8e, 0xaa, 0x9b, 0x4e, 0x6a,
        ];
        assert_eq!(PrivateKey(private).public_key(), PublicKey(public));
    }

    #[test]
    fn bad_keys_say_what_is_wrong() {
        assert!(matches!(
            PublicKey::from_base64("not base64!"),
            Err(KeyError::NotBase64(_))
        ));
        assert_eq!(PublicKey::from_base64("AAAA"), Err(KeyError::WrongLength(3)));
    }
}
