//! `CompressedRepr::parse` and `Decompressor::reconstruct` on arbitrary
//! bytes, with a decompressor context also drawn from the input. What
//! parses re-emits and parses back (checksum verified) the same; a verified
//! parse equals the unverified one; a rebuilt TCP segment fits a TCP header
//! and goes through a fresh compressor/decompressor pair unchanged.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};
use std::num::NonZeroU8;

use libfuzzer_sys::fuzz_target;
use scps_proto::wire::{
    CompressedRepr, Compressor, Decompressor, MAX_OPTIONS_LEN, TcpFlags, TcpOptions, TcpRepr, Timestamps,
};

const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
const DST: IpAddr = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 2));

/// A context from the first 16 input bytes: connection id, ISN, and an
/// observed uncompressed segment (with or without ACK and timestamps).
fn context(head: &[u8; 16]) -> Decompressor {
    let [id, flags, i0, i1, i2, i3, w0, w1, a0, a1, a2, a3, t0, t1, t2, t3] = *head;
    let conn_id = NonZeroU8::new(id).unwrap_or(NonZeroU8::MIN);
    let isn = u32::from_be_bytes([i0, i1, i2, i3]);
    let mut d = Decompressor::new(conn_id, 1000, 2000, isn);
    if flags & 1 != 0 {
        let mut options = TcpOptions::default();
        if flags & 2 != 0 {
            let ts = u32::from_be_bytes([t0, t1, t2, t3]);
            options.timestamps = Some(Timestamps { tsval: ts, tsecr: !ts });
        }
        d.observe(&TcpRepr {
            src_port: 1000,
            dst_port: 2000,
            seq: isn,
            ack: u32::from_be_bytes([a0, a1, a2, a3]),
            flags: if flags & 4 != 0 { TcpFlags::ACK } else { TcpFlags::empty() },
            window: u16::from_be_bytes([w0, w1]),
            urgent: 0,
            options,
            payload: &[],
        });
    }
    d
}

fuzz_target!(|data: &[u8]| {
    let Some((head, segment)) = data.split_first_chunk::<16>() else {
        return;
    };
    let mut d = context(head);
    let verified = CompressedRepr::parse(segment, SRC, DST, true);
    let unverified = CompressedRepr::parse(segment, SRC, DST, false);
    if let Ok(repr) = verified {
        assert_eq!(unverified, Ok(repr));
    }
    let _ = d.decompress(segment, SRC, DST);
    let Ok(repr) = unverified else {
        return;
    };
    let mut again = vec![0u8; repr.segment_len().expect("a parsed header re-emits")];
    assert_eq!(repr.emit(&mut again, SRC, DST), Ok(again.len()));
    assert_eq!(CompressedRepr::parse(&again, SRC, DST, true), Ok(repr));

    let Ok(tcp) = d.reconstruct(&repr) else {
        return;
    };
    assert!(tcp.options.encoded_len() <= MAX_OPTIONS_LEN);
    let mut c = Compressor::new(NonZeroU8::MIN, 0);
    let mut fresh = Decompressor::new(NonZeroU8::MIN, tcp.src_port, tcp.dst_port, 0);
    let compressed = c.compress(&tcp, false).expect("a rebuilt segment compresses");
    assert_eq!(fresh.reconstruct(&compressed), Ok(tcp));
});
