//! TCP options: the standard ones (RFC 9293, RFC 7323, RFC 2018) and the
//! SCPS-TP ones (CCSDS 714.0-B-2 section 3.2; docs/spec/scps-tp-options.md).

use super::WireError;

/// Most option bytes a TCP header can carry (data offset 15 words).
pub const MAX_OPTIONS_LEN: usize = 40;

pub const KIND_EOL: u8 = 0;
pub const KIND_NOP: u8 = 1;
pub const KIND_MSS: u8 = 2;
pub const KIND_WINDOW_SCALE: u8 = 3;
pub const KIND_SACK_PERMITTED: u8 = 4;
pub const KIND_SACK: u8 = 5;
pub const KIND_TIMESTAMPS: u8 = 8;
pub const KIND_SCPS_CAPABILITIES: u8 = 20;
pub const KIND_SNACK: u8 = 21;
pub const KIND_RECORD_BOUNDARY: u8 = 22;
pub const KIND_CORRUPTION_EXPERIENCED: u8 = 23;

/// A short list of at most `N` items stored inline (options never carry many).
///
/// Two lists are equal when their items are (slots beyond the length are
/// not compared).
#[derive(Clone, Copy)]
pub struct OptionList<T: Copy + Default, const N: usize> {
    len: u8,
    items: [T; N],
}

impl<T: Copy + Default, const N: usize> Default for OptionList<T, N> {
    fn default() -> Self {
        OptionList {
            len: 0,
            items: [T::default(); N],
        }
    }
}

impl<T: Copy + Default + PartialEq, const N: usize> PartialEq for OptionList<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Default + Eq, const N: usize> Eq for OptionList<T, N> {}

impl<T: Copy + Default + std::fmt::Debug, const N: usize> std::fmt::Debug for OptionList<T, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<T: Copy + Default, const N: usize> OptionList<T, N> {
    pub const CAPACITY: usize = N;

    /// Appends `item`; returns false (and changes nothing) when full.
    pub fn push(&mut self, item: T) -> bool {
        let len = usize::from(self.len);
        if len == N {
            return false;
        }
        self.items[len] = item;
        self.len += 1;
        true
    }

    pub fn as_slice(&self) -> &[T] {
        &self.items[..usize::from(self.len)]
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn clear(&mut self) {
        self.len = 0;
        self.items = [T::default(); N];
    }
}

/// One SACK block (RFC 2018): `left` is the first sequence number received,
/// `right` the one after the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub left: u32,
    pub right: u32,
}

/// RFC 7323 timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timestamps {
    pub tsval: u32,
    pub tsecr: u32,
}

/// The SCPS capabilities option (kind 20, length 4), SYN and SYN-ACK only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScpsCapabilities {
    /// Best-effort transport service (bitmap 0x80).
    pub bets: bool,
    /// SNACK1 (0x40): the SNACK option of this implementation.
    pub snack1: bool,
    /// SNACK2 (0x20).
    pub snack2: bool,
    /// Header compression (0x10).
    pub compression: bool,
    /// Network-layer timestamps (0x08).
    pub net_timestamps: bool,
    /// The id this side puts in its compressed headers (1..=255), 0 when
    /// compression is not offered.
    pub connection_id: u8,
}

impl ScpsCapabilities {
    /// The bitmap byte; the three reserved low bits are zero.
    pub fn bitmap(&self) -> u8 {
        let mut bitmap = 0;
        for (set, bit) in [
            (self.bets, Self::BETS),
            (self.snack1, Self::SNACK1),
            (self.snack2, Self::SNACK2),
            (self.compression, Self::COMPRESSION),
            (self.net_timestamps, Self::NET_TIMESTAMPS),
        ] {
            if set {
                bitmap |= bit;
            }
        }
        bitmap
    }

    /// Decodes the bitmap byte, ignoring the reserved low bits.
    pub fn from_bitmap(bitmap: u8, connection_id: u8) -> Self {
        ScpsCapabilities {
            bets: bitmap & Self::BETS != 0,
            snack1: bitmap & Self::SNACK1 != 0,
            snack2: bitmap & Self::SNACK2 != 0,
            compression: bitmap & Self::COMPRESSION != 0,
            net_timestamps: bitmap & Self::NET_TIMESTAMPS != 0,
            connection_id,
        }
    }

    /// Bitmap bit of [`ScpsCapabilities::bets`].
    pub const BETS: u8 = 0x80;
    /// Bitmap bit of [`ScpsCapabilities::snack1`].
    pub const SNACK1: u8 = 0x40;
    /// Bitmap bit of [`ScpsCapabilities::snack2`].
    pub const SNACK2: u8 = 0x20;
    /// Bitmap bit of [`ScpsCapabilities::compression`].
    pub const COMPRESSION: u8 = 0x10;
    /// Bitmap bit of [`ScpsCapabilities::net_timestamps`].
    pub const NET_TIMESTAMPS: u8 = 0x08;
}

/// One SNACK hole (kind 21, length 6): both fields in units of the data
/// sender's maximum segment payload, the offset counted from the segment's
/// acknowledgment number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Snack {
    pub hole_offset: u16,
    pub hole_size: u16,
}

/// The options of one segment, decoded.
///
/// Unknown option kinds are skipped by their length when parsing. A kind-20
/// option longer than 4 bytes (the reference implementation's "extended
/// capability binding space") is accepted and ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    /// The shift count as received (RFC 7323 section 2.3 says values above
    /// 14 are treated as 14; that clamping is the connection's job).
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    pub sack_blocks: OptionList<SackBlock, 4>,
    pub timestamps: Option<Timestamps>,
    pub scps_capabilities: Option<ScpsCapabilities>,
    pub snacks: OptionList<Snack, 6>,
    pub record_boundary: bool,
    pub corruption_experienced: bool,
}

impl TcpOptions {
    /// Bytes [`TcpOptions::emit`] writes: the options packed in a fixed order
    /// (MSS, SACK-permitted, timestamps, window scale, SCPS capabilities,
    /// SACK, SNACK, record boundary, corruption experienced), then NOPs up
    /// to a multiple of 4.
    ///
    /// This may exceed [`MAX_OPTIONS_LEN`] (every field set at once does not
    /// fit a header); [`TcpOptions::emit`] refuses such a set.
    pub fn encoded_len(&self) -> usize {
        self.unpadded_len().next_multiple_of(4)
    }

    /// Sum of the option lengths, without padding.
    fn unpadded_len(&self) -> usize {
        let mut len = 0;
        if self.mss.is_some() {
            len += LEN_MSS;
        }
        if self.sack_permitted {
            len += LEN_SACK_PERMITTED;
        }
        if self.timestamps.is_some() {
            len += LEN_TIMESTAMPS;
        }
        if self.window_scale.is_some() {
            len += LEN_WINDOW_SCALE;
        }
        if self.scps_capabilities.is_some() {
            len += LEN_SCPS_CAPABILITIES;
        }
        if !self.sack_blocks.is_empty() {
            len += 2 + 8 * self.sack_blocks.len();
        }
        len += LEN_SNACK * self.snacks.len();
        if self.record_boundary {
            len += LEN_RECORD_BOUNDARY;
        }
        if self.corruption_experienced {
            len += LEN_CORRUPTION_EXPERIENCED;
        }
        len
    }

    /// Writes the options into `buf` and returns [`TcpOptions::encoded_len`].
    /// Fails with [`WireError::OptionsTooLong`] beyond 40 bytes.
    ///
    /// Fails with [`WireError::BufferTooSmall`] when `buf` is shorter than
    /// [`TcpOptions::encoded_len`]; bytes of `buf` beyond it are untouched.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let len = self.encoded_len();
        if len > MAX_OPTIONS_LEN {
            return Err(WireError::OptionsTooLong(len));
        }
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or(WireError::BufferTooSmall {
            needed: len,
            available,
        })?;
        let mut w = Writer { buf: out, pos: 0 };
        if let Some(mss) = self.mss {
            w.put(&[KIND_MSS, LEN_MSS as u8]);
            w.put(&mss.to_be_bytes());
        }
        if self.sack_permitted {
            w.put(&[KIND_SACK_PERMITTED, LEN_SACK_PERMITTED as u8]);
        }
        if let Some(ts) = self.timestamps {
            w.put(&[KIND_TIMESTAMPS, LEN_TIMESTAMPS as u8]);
            w.put(&ts.tsval.to_be_bytes());
            w.put(&ts.tsecr.to_be_bytes());
        }
        if let Some(shift) = self.window_scale {
            w.put(&[KIND_WINDOW_SCALE, LEN_WINDOW_SCALE as u8, shift]);
        }
        if let Some(caps) = self.scps_capabilities {
            w.put(&[
                KIND_SCPS_CAPABILITIES,
                LEN_SCPS_CAPABILITIES as u8,
                caps.bitmap(),
                caps.connection_id,
            ]);
        }
        if !self.sack_blocks.is_empty() {
            // At most 4 blocks, so the length is at most 34.
            w.put(&[KIND_SACK, (2 + 8 * self.sack_blocks.len()) as u8]);
            for block in self.sack_blocks.as_slice() {
                w.put(&block.left.to_be_bytes());
                w.put(&block.right.to_be_bytes());
            }
        }
        for snack in self.snacks.as_slice() {
            w.put(&[KIND_SNACK, LEN_SNACK as u8]);
            w.put(&snack.hole_offset.to_be_bytes());
            w.put(&snack.hole_size.to_be_bytes());
        }
        if self.record_boundary {
            w.put(&[KIND_RECORD_BOUNDARY, LEN_RECORD_BOUNDARY as u8]);
        }
        if self.corruption_experienced {
            w.put(&[KIND_CORRUPTION_EXPERIENCED, LEN_CORRUPTION_EXPERIENCED as u8]);
        }
        while w.pos < len {
            w.put(&[KIND_NOP]);
        }
        Ok(len)
    }

    /// Parses the option bytes of a header (between the fixed 20 bytes and
    /// the data offset).
    ///
    /// RFC 9293 section 3.2: end-of-option-list ends the list (whatever
    /// follows it is ignored); no-operation is one byte; every other kind
    /// has a length byte counting the kind and length bytes.
    ///
    /// - A length below 2 gives [`WireError::BadOptionLength`]; a length
    ///   running past `bytes` (or a missing length byte) gives
    ///   [`WireError::OptionOverrun`].
    /// - A known kind with a length its format does not allow gives
    ///   [`WireError::BadOptionLength`] (MSS 4, window scale 3,
    ///   SACK-permitted 2, SACK 2 + 8n with n in 1..=4, timestamps 10, SCPS
    ///   capabilities 4 or more, SNACK 6, record boundary 2, corruption
    ///   experienced 2).
    /// - Unknown kinds, and kind 20 longer than 4 bytes, are skipped.
    /// - A repeated option replaces the earlier one (the last one wins; a
    ///   repeated SACK option replaces all earlier blocks), except SNACK,
    ///   of which every occurrence is one hole: the first
    ///   [`OptionList::CAPACITY`] are kept, later ones dropped silently.
    pub fn parse(bytes: &[u8]) -> Result<TcpOptions, WireError> {
        let mut opts = TcpOptions::default();
        let mut rest = bytes;
        while let [kind, after_kind @ ..] = rest {
            let kind = *kind;
            match kind {
                KIND_EOL => break,
                KIND_NOP => {
                    rest = after_kind;
                    continue;
                }
                _ => {}
            }
            let [len, ..] = after_kind else {
                return Err(WireError::OptionOverrun { kind });
            };
            let len = *len;
            if len < 2 {
                return Err(WireError::BadOptionLength { kind, len });
            }
            let Some((option, after)) = rest.split_at_checked(usize::from(len)) else {
                return Err(WireError::OptionOverrun { kind });
            };
            rest = after;
            let data = option.get(2..).unwrap_or_default();
            let bad_len = WireError::BadOptionLength { kind, len };
            match kind {
                KIND_MSS => {
                    let [a, b] = *data else { return Err(bad_len) };
                    opts.mss = Some(u16::from_be_bytes([a, b]));
                }
                KIND_WINDOW_SCALE => {
                    let [shift] = *data else { return Err(bad_len) };
                    opts.window_scale = Some(shift);
                }
                KIND_SACK_PERMITTED => {
                    if !data.is_empty() {
                        return Err(bad_len);
                    }
                    opts.sack_permitted = true;
                }
                KIND_SACK => {
                    let (blocks, tail) = data.as_chunks::<8>();
                    if !tail.is_empty() || blocks.is_empty() || blocks.len() > 4 {
                        return Err(bad_len);
                    }
                    opts.sack_blocks.clear();
                    for block in blocks {
                        let [l0, l1, l2, l3, r0, r1, r2, r3] = *block;
                        opts.sack_blocks.push(SackBlock {
                            left: u32::from_be_bytes([l0, l1, l2, l3]),
                            right: u32::from_be_bytes([r0, r1, r2, r3]),
                        });
                    }
                }
                KIND_TIMESTAMPS => {
                    let [v0, v1, v2, v3, e0, e1, e2, e3] = *data else {
                        return Err(bad_len);
                    };
                    opts.timestamps = Some(Timestamps {
                        tsval: u32::from_be_bytes([v0, v1, v2, v3]),
                        tsecr: u32::from_be_bytes([e0, e1, e2, e3]),
                    });
                }
                KIND_SCPS_CAPABILITIES => match *data {
                    [bitmap, connection_id] => {
                        opts.scps_capabilities = Some(ScpsCapabilities::from_bitmap(bitmap, connection_id));
                    }
                    // The reference implementation's extended capability
                    // binding space (CCSDS 714.0-B-2 3.2.5): accepted and ignored.
                    [_, _, _, ..] => {}
                    _ => return Err(bad_len),
                },
                KIND_SNACK => {
                    let [o0, o1, s0, s1] = *data else {
                        return Err(bad_len);
                    };
                    // Beyond the capacity the hole is dropped (documented above).
                    let _ = opts.snacks.push(Snack {
                        hole_offset: u16::from_be_bytes([o0, o1]),
                        hole_size: u16::from_be_bytes([s0, s1]),
                    });
                }
                KIND_RECORD_BOUNDARY => {
                    if !data.is_empty() {
                        return Err(bad_len);
                    }
                    opts.record_boundary = true;
                }
                KIND_CORRUPTION_EXPERIENCED => {
                    if !data.is_empty() {
                        return Err(bad_len);
                    }
                    opts.corruption_experienced = true;
                }
                _ => {} // unknown: skipped by its length
            }
        }
        Ok(opts)
    }
}

const LEN_MSS: usize = 4;
const LEN_WINDOW_SCALE: usize = 3;
const LEN_SACK_PERMITTED: usize = 2;
const LEN_TIMESTAMPS: usize = 10;
const LEN_SCPS_CAPABILITIES: usize = 4;
const LEN_SNACK: usize = 6;
const LEN_RECORD_BOUNDARY: usize = 2;
const LEN_CORRUPTION_EXPERIENCED: usize = 2;

/// Sequential writer over a buffer already checked to be long enough.
struct Writer<'b> {
    buf: &'b mut [u8],
    pos: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let end = self.pos.saturating_add(bytes.len());
        if let Some(dst) = self.buf.get_mut(self.pos..end) {
            dst.copy_from_slice(bytes);
        }
        self.pos = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The options of a real Linux 6.x SYN (captured on loopback): MSS 65495,
    /// SACK-permitted, timestamps, NOP, window scale 10.
    const LINUX_SYN_OPTIONS: [u8; 20] = [
        0x02, 0x04, 0xff, 0xd7, 0x04, 0x02, 0x08, 0x0a, 0x8e, 0x62, 0xaa, 0x5a, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x03, 0x03, 0x0a,
    ];

    fn linux_syn_options() -> TcpOptions {
        TcpOptions {
            mss: Some(65495),
            window_scale: Some(10),
            sack_permitted: true,
            timestamps: Some(Timestamps {
                tsval: 0x8e62_aa5a,
                tsecr: 0,
            }),
            ..TcpOptions::default()
        }
    }

    fn emit_vec(opts: &TcpOptions) -> Vec<u8> {
        let mut buf = [0xeeu8; 64];
        let n = opts.emit(&mut buf).unwrap();
        assert_eq!(n, opts.encoded_len());
        assert_eq!(n % 4, 0);
        // Nothing written past the options.
        assert!(buf[n..].iter().all(|&b| b == 0xee));
        buf[..n].to_vec()
    }

    fn bad_len(kind: u8, len: u8) -> Result<TcpOptions, WireError> {
        Err(WireError::BadOptionLength { kind, len })
    }

    #[test]
    fn parses_linux_syn_options() {
        assert_eq!(TcpOptions::parse(&LINUX_SYN_OPTIONS), Ok(linux_syn_options()));
    }

    #[test]
    fn emits_linux_syn_options_in_fixed_order() {
        // MSS, SACK-permitted, timestamps, window scale, then one NOP.
        let expected = [
            0x02, 0x04, 0xff, 0xd7, 0x04, 0x02, 0x08, 0x0a, 0x8e, 0x62, 0xaa, 0x5a, 0x00, 0x00, 0x00, 0x00,
            0x03, 0x03, 0x0a, 0x01,
        ];
        assert_eq!(emit_vec(&linux_syn_options()), expected);
        assert_eq!(TcpOptions::parse(&expected), Ok(linux_syn_options()));
    }

    #[test]
    fn empty_options() {
        assert_eq!(TcpOptions::parse(&[]), Ok(TcpOptions::default()));
        assert_eq!(TcpOptions::default().encoded_len(), 0);
        assert_eq!(emit_vec(&TcpOptions::default()), Vec::<u8>::new());
        assert_eq!(TcpOptions::parse(&[1, 1, 1, 1]), Ok(TcpOptions::default()));
    }

    #[test]
    fn every_option_in_order_with_exact_bytes() {
        let mut opts = TcpOptions {
            mss: Some(0x0102),
            scps_capabilities: Some(ScpsCapabilities {
                snack1: true,
                connection_id: 9,
                ..Default::default()
            }),
            record_boundary: true,
            corruption_experienced: true,
            ..TcpOptions::default()
        };
        opts.sack_blocks.push(SackBlock {
            left: 0x1111_2222,
            right: 0x3333_4444,
        });
        opts.snacks.push(Snack {
            hole_offset: 0x0a0b,
            hole_size: 0x0c0d,
        });
        let expected = [
            2, 4, 0x01, 0x02, // MSS
            20, 4, 0x40, 9, // SCPS capabilities
            5, 10, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44, // SACK
            21, 6, 0x0a, 0x0b, 0x0c, 0x0d, // SNACK
            22, 2, // record boundary
            23, 2, // corruption experienced
        ];
        assert_eq!(opts.encoded_len(), 28);
        assert_eq!(emit_vec(&opts), expected);
        assert_eq!(TcpOptions::parse(&expected), Ok(opts));
    }

    #[test]
    fn padding_to_multiple_of_four() {
        let cases: [(TcpOptions, usize); 4] = [
            (
                TcpOptions {
                    window_scale: Some(7),
                    ..Default::default()
                },
                4,
            ),
            (
                TcpOptions {
                    sack_permitted: true,
                    ..Default::default()
                },
                4,
            ),
            (
                TcpOptions {
                    timestamps: Some(Timestamps::default()),
                    ..Default::default()
                },
                12,
            ),
            (
                TcpOptions {
                    mss: Some(1),
                    record_boundary: true,
                    window_scale: Some(0),
                    ..Default::default()
                },
                12,
            ),
        ];
        for (opts, len) in cases {
            assert_eq!(opts.encoded_len(), len, "{opts:?}");
            let bytes = emit_vec(&opts);
            assert_eq!(TcpOptions::parse(&bytes), Ok(opts));
        }
        let ws = emit_vec(&TcpOptions {
            window_scale: Some(7),
            ..Default::default()
        });
        assert_eq!(ws, [3, 3, 7, 1]);
    }

    #[test]
    fn scps_capability_bits() {
        let bit = |f: fn(&mut ScpsCapabilities)| {
            let mut caps = ScpsCapabilities::default();
            f(&mut caps);
            caps.bitmap()
        };
        assert_eq!(bit(|c| c.bets = true), 0x80);
        assert_eq!(bit(|c| c.snack1 = true), 0x40);
        assert_eq!(bit(|c| c.snack2 = true), 0x20);
        assert_eq!(bit(|c| c.compression = true), 0x10);
        assert_eq!(bit(|c| c.net_timestamps = true), 0x08);
        assert_eq!(ScpsCapabilities::default().bitmap(), 0);
        for bitmap in 0..=255u8 {
            let caps = ScpsCapabilities::from_bitmap(bitmap, 77);
            assert_eq!(caps.bitmap(), bitmap & 0xf8, "bitmap {bitmap:#x}");
            assert_eq!(caps.connection_id, 77);
        }
        let reference_impl = ScpsCapabilities::from_bitmap(0x40, 0);
        assert_eq!(
            reference_impl,
            ScpsCapabilities {
                snack1: true,
                ..Default::default()
            }
        );
    }

    #[test]
    fn parses_scps_capabilities_ignoring_reserved_bits() {
        let opts = TcpOptions::parse(&[20, 4, 0xc8 | 0x07, 200]).unwrap();
        assert_eq!(
            opts.scps_capabilities,
            Some(ScpsCapabilities {
                bets: true,
                snack1: true,
                snack2: false,
                compression: false,
                net_timestamps: true,
                connection_id: 200,
            })
        );
        let all = ScpsCapabilities::from_bitmap(0xff, 1);
        let bytes = emit_vec(&TcpOptions {
            scps_capabilities: Some(all),
            ..Default::default()
        });
        assert_eq!(bytes, [20, 4, 0xf8, 1]);
    }

    #[test]
    fn extended_scps_capabilities_are_ignored() {
        // Kind 20 of length 8 (the RI's extended binding space), then MSS.
        let bytes = [20, 8, 0xff, 0xff, 1, 2, 3, 4, 2, 4, 0x05, 0xb4];
        let opts = TcpOptions::parse(&bytes).unwrap();
        assert_eq!(opts.scps_capabilities, None);
        assert_eq!(opts.mss, Some(1460));
        // It does not erase a standard kind-20 option seen before it.
        let bytes = [20, 4, 0x40, 3, 20, 6, 0, 0, 0, 0];
        let opts = TcpOptions::parse(&bytes).unwrap();
        assert_eq!(
            opts.scps_capabilities,
            Some(ScpsCapabilities::from_bitmap(0x40, 3))
        );
        // A long kind 20 still must fit the option bytes.
        assert_eq!(
            TcpOptions::parse(&[20, 8, 0, 0]),
            Err(WireError::OptionOverrun { kind: 20 })
        );
    }

    #[test]
    fn parses_snack_big_endian() {
        let opts = TcpOptions::parse(&[21, 6, 0x01, 0x02, 0xa0, 0xb0, 1, 1]).unwrap();
        assert_eq!(
            opts.snacks.as_slice(),
            [Snack {
                hole_offset: 0x0102,
                hole_size: 0xa0b0,
            }]
        );
    }

    #[test]
    fn several_snacks_keep_order_and_extra_ones_are_dropped() {
        let mut bytes = Vec::new();
        for i in 0..8u8 {
            bytes.extend_from_slice(&[21, 6, 0, i, 0, 100 + i]);
        }
        let opts = TcpOptions::parse(&bytes).unwrap();
        assert_eq!(opts.snacks.len(), 6);
        for (i, snack) in opts.snacks.as_slice().iter().enumerate() {
            assert_eq!(snack.hole_offset, i as u16);
            assert_eq!(snack.hole_size, 100 + i as u16);
        }
        // Six SNACKs exactly fill 36 bytes, which a header can carry.
        let six = TcpOptions {
            snacks: opts.snacks,
            ..Default::default()
        };
        assert_eq!(six.encoded_len(), 36);
        assert_eq!(emit_vec(&six), bytes[..36]);
    }

    #[test]
    fn record_boundary_and_corruption_experienced() {
        let opts = TcpOptions::parse(&[22, 2, 23, 2]).unwrap();
        assert!(opts.record_boundary);
        assert!(opts.corruption_experienced);
        let opts = TcpOptions::parse(&[23, 2, 1, 1]).unwrap();
        assert!(!opts.record_boundary);
        assert!(opts.corruption_experienced);
    }

    #[test]
    fn sack_blocks() {
        let mut bytes = vec![5, 34];
        for i in 0..8u32 {
            bytes.extend_from_slice(&(i * 1000 + 1).to_be_bytes());
        }
        let opts = TcpOptions::parse(&bytes).unwrap();
        let blocks: Vec<_> = opts.sack_blocks.as_slice().to_vec();
        assert_eq!(
            blocks,
            [
                SackBlock { left: 1, right: 1001 },
                SackBlock {
                    left: 2001,
                    right: 3001
                },
                SackBlock {
                    left: 4001,
                    right: 5001
                },
                SackBlock {
                    left: 6001,
                    right: 7001
                },
            ]
        );
        let one = TcpOptions::parse(&[5, 10, 0, 0, 0, 1, 0, 0, 0, 2]).unwrap();
        assert_eq!(one.sack_blocks.as_slice(), [SackBlock { left: 1, right: 2 }]);
    }

    #[test]
    fn unknown_kinds_are_skipped() {
        // Kind 30 (MPTCP) length 5, kind 254 (experimental) length 2, then MSS.
        let bytes = [30, 5, 9, 9, 9, 254, 2, 2, 4, 0x02, 0x18];
        let opts = TcpOptions::parse(&bytes).unwrap();
        assert_eq!(
            opts,
            TcpOptions {
                mss: Some(536),
                ..Default::default()
            }
        );
    }

    #[test]
    fn end_of_list_stops_parsing() {
        // Whatever follows EOL (here an invalid option) is ignored.
        let opts = TcpOptions::parse(&[2, 4, 0, 100, 0, 2, 1, 0xff]).unwrap();
        assert_eq!(opts.mss, Some(100));
        assert_eq!(TcpOptions::parse(&[0, 5, 0]), Ok(TcpOptions::default()));
    }

    #[test]
    fn duplicate_options_last_one_wins() {
        let opts = TcpOptions::parse(&[
            2, 4, 0, 1, 2, 4, 0, 2, 3, 3, 1, 3, 3, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 1, 8, 10, 0, 0, 0, 2, 0, 0,
            0, 2,
        ])
        .unwrap();
        assert_eq!(opts.mss, Some(2));
        assert_eq!(opts.window_scale, Some(2));
        assert_eq!(opts.timestamps, Some(Timestamps { tsval: 2, tsecr: 2 }));
        let opts = TcpOptions::parse(&[
            5, 18, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 5, 10, 0, 0, 0, 9, 0, 0, 0, 10,
        ])
        .unwrap();
        assert_eq!(opts.sack_blocks.as_slice(), [SackBlock { left: 9, right: 10 }]);
        let opts = TcpOptions::parse(&[20, 4, 0x80, 1, 20, 4, 0x10, 2]).unwrap();
        assert_eq!(
            opts.scps_capabilities,
            Some(ScpsCapabilities::from_bitmap(0x10, 2))
        );
    }

    #[test]
    fn length_below_two_is_rejected() {
        assert_eq!(TcpOptions::parse(&[2, 1, 0, 0]), bad_len(2, 1));
        assert_eq!(TcpOptions::parse(&[99, 0, 0, 0]), bad_len(99, 0));
        assert_eq!(TcpOptions::parse(&[1, 1, 21, 1]), bad_len(21, 1));
    }

    #[test]
    fn option_running_past_the_end_is_rejected() {
        assert_eq!(
            TcpOptions::parse(&[2, 4, 5]),
            Err(WireError::OptionOverrun { kind: 2 })
        );
        assert_eq!(
            TcpOptions::parse(&[1, 8]),
            Err(WireError::OptionOverrun { kind: 8 })
        );
        assert_eq!(
            TcpOptions::parse(&[99, 40, 0, 0]),
            Err(WireError::OptionOverrun { kind: 99 })
        );
        // A Linux SYN cut one byte short.
        assert_eq!(
            TcpOptions::parse(&LINUX_SYN_OPTIONS[..19]),
            Err(WireError::OptionOverrun { kind: 3 })
        );
    }

    #[test]
    fn known_kinds_with_wrong_length_are_rejected() {
        let cases: &[(u8, u8)] = &[
            (KIND_MSS, 3),
            (KIND_MSS, 5),
            (KIND_WINDOW_SCALE, 2),
            (KIND_WINDOW_SCALE, 4),
            (KIND_SACK_PERMITTED, 3),
            (KIND_SACK, 2),
            (KIND_SACK, 9),
            (KIND_SACK, 11),
            (KIND_SACK, 42),
            (KIND_TIMESTAMPS, 8),
            (KIND_TIMESTAMPS, 12),
            (KIND_SCPS_CAPABILITIES, 2),
            (KIND_SCPS_CAPABILITIES, 3),
            (KIND_SNACK, 4),
            (KIND_SNACK, 8),
            (KIND_RECORD_BOUNDARY, 3),
            (KIND_CORRUPTION_EXPERIENCED, 4),
        ];
        for &(kind, len) in cases {
            let mut bytes = vec![kind, len];
            bytes.resize(usize::from(len), 0);
            bytes.extend_from_slice(&[1, 1]);
            assert_eq!(
                TcpOptions::parse(&bytes),
                bad_len(kind, len),
                "kind {kind} len {len}"
            );
        }
    }

    #[test]
    fn emit_refuses_more_than_40_bytes() {
        let mut opts = linux_syn_options(); // 19 bytes
        opts.scps_capabilities = Some(ScpsCapabilities::default()); // 23
        for i in 0..2 {
            opts.sack_blocks.push(SackBlock {
                left: i,
                right: i + 1,
            }); // 41
        }
        assert_eq!(opts.encoded_len(), 44);
        let mut buf = [0u8; 64];
        assert_eq!(opts.emit(&mut buf), Err(WireError::OptionsTooLong(44)));
        assert_eq!(buf, [0u8; 64]);
        opts.scps_capabilities = None; // 37 -> 40
        assert_eq!(opts.encoded_len(), 40);
        let bytes = emit_vec(&opts);
        assert_eq!(TcpOptions::parse(&bytes), Ok(opts));
    }

    #[test]
    fn emit_needs_room() {
        let opts = linux_syn_options();
        let mut buf = [0u8; 19];
        assert_eq!(
            opts.emit(&mut buf),
            Err(WireError::BufferTooSmall {
                needed: 20,
                available: 19,
            })
        );
    }

    #[test]
    fn option_list_equality_ignores_unused_slots() {
        let mut a = OptionList::<SackBlock, 4>::default();
        a.push(SackBlock { left: 1, right: 2 });
        a.push(SackBlock { left: 3, right: 4 });
        a.clear();
        a.push(SackBlock { left: 5, right: 6 });
        let mut b = OptionList::<SackBlock, 4>::default();
        b.push(SackBlock { left: 5, right: 6 });
        assert_eq!(a, b);
        b.push(SackBlock::default());
        assert_ne!(a, b);
        // The same through a repeated SACK option, which replaces the blocks.
        let opts = TcpOptions::parse(&[
            5, 18, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 5, 10, 0, 0, 0, 5, 0, 0, 0, 6,
        ])
        .unwrap();
        assert_eq!(opts.sack_blocks, a);
    }

    #[test]
    fn option_list_capacity() {
        let mut list = OptionList::<Snack, 6>::default();
        assert!(list.is_empty());
        for _ in 0..6 {
            assert!(list.push(Snack::default()));
        }
        assert!(!list.push(Snack::default()));
        assert_eq!(list.len(), OptionList::<Snack, 6>::CAPACITY);
        list.clear();
        assert!(list.is_empty());
    }
}
