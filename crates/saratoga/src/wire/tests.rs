//! Frames against layouts written by hand from docs/spec/saratoga.md, every
//! error reached, and build-then-parse at every descriptor size.

use super::*;
use proptest::prelude::*;

fn bytes(frame: &Frame<'_>) -> Vec<u8> {
    frame.to_bytes().expect("frame writes")
}

/// A STATUS after four DATA frames of 1420 bytes arrived, the fifth
/// (5680..7100) was lost and the sixth, at 7100, asked for status.
fn status_after_a_lost_fifth_frame() -> Status {
    Status {
        descriptor: Descriptor::D32,
        session: 7,
        timestamp: None,
        metadata_received: true,
        all_holes: true,
        voluntary: false,
        error: ErrorCode::SUCCESS,
        progress: progress_to_wire(4 * 1420),
        in_response_to: 7100,
        holes: vec![Hole::from_range(5680..7100).unwrap()],
    }
}

const STATUS_BYTES: [u8; 24] = [
    0x24, 0x40, 0x00, 0x00, // 001 00100 | 01 (32-bit) | no flags | error 0
    0x00, 0x00, 0x00, 0x07, // session
    0x00, 0x00, 0x16, 0x2f, // progress 5679: the last byte of 4 × 1420
    0x00, 0x00, 0x1b, 0xbc, // in response to the frame at 7100
    0x00, 0x00, 0x16, 0x30, // hole start 5680
    0x00, 0x00, 0x1b, 0xbb, // hole end 7099, inclusive
];

#[test]
fn a_status_has_inclusive_offsets() {
    let status = status_after_a_lost_fifth_frame();
    assert_eq!(status.progress, 5679);
    assert_eq!(status.holes[0].range(), 5680..7100);
    assert_eq!(bytes(&Frame::Status(status.clone())), STATUS_BYTES);
    assert_eq!(Status::parse(&STATUS_BYTES), Ok(status.clone()));
    assert_eq!(progress_from_wire(status.progress, Some(5680)), 5680);
    assert_eq!(progress_from_wire(0, Some(0)), 0, "nothing received");
    assert_eq!(progress_from_wire(0, None), 1, "one byte received");
}

#[test]
fn a_vallona_status_with_four_stray_bytes_reads_as_without() {
    let mut vallona = STATUS_BYTES.to_vec();
    vallona.extend([0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(Status::parse(&vallona), Ok(status_after_a_lost_fifth_frame()));
    // Stray bytes after no hole at all, and in a 64-bit STATUS.
    let mut empty = Status {
        holes: Vec::new(),
        descriptor: Descriptor::D64,
        ..status_after_a_lost_fifth_frame()
    };
    let mut wire = bytes(&Frame::Status(empty.clone()));
    wire.extend([0; 4]);
    assert_eq!(Status::parse(&wire), Ok(empty.clone()));
    empty.voluntary = true;
    empty.metadata_received = false;
    empty.all_holes = false;
    empty.error = ErrorCode::FILE_NOT_FOUND;
    let wire = bytes(&Frame::Status(empty.clone()));
    assert_eq!(
        wire[..4],
        [0x24, 0x87, 0x00, 0x04],
        "64-bit, bits 13, 14, 15, error 4"
    );
    assert_eq!(Status::parse(&wire), Ok(empty));
}

#[test]
fn a_16_bit_vallona_status_drops_stray_bytes_that_cannot_be_a_hole() {
    let status = Status {
        descriptor: Descriptor::D16,
        ..status_after_a_lost_fifth_frame()
    };
    let wire = bytes(&Frame::Status(status.clone()));
    // At 16 bits, 4 stray bytes make a whole pair: reversed, before the
    // hole listed, inside the progress (no hole listed), or zeros.
    for stray in [[0xde, 0xad, 0xbe, 0xef], [0x10, 0x00, 0x10, 0x01], [0, 0, 0, 0]] {
        let mut vallona = wire.clone();
        vallona.extend(stray);
        assert_eq!(Status::parse(&vallona), Ok(status.clone()), "{stray:?}");
        let mut no_hole = bytes(&Frame::Status(Status {
            holes: Vec::new(),
            ..status.clone()
        }));
        no_hole.extend(stray);
        assert_eq!(Status::parse(&no_hole).map(|s| s.holes), Ok(vec![]), "{stray:?}");
    }
    // A pair out of order that is not the last is malformed.
    let mut twisted = status.clone();
    twisted.holes = vec![
        Hole {
            start: 9000,
            end: 9001,
        },
        Hole {
            start: 6000,
            end: 6001,
        },
    ];
    let mut wire = bytes(&Frame::Status(twisted));
    wire.extend([0, 0, 0, 0]);
    assert_eq!(Status::parse(&wire).map_err(|e| e.cause()), Err("hole_order"));
}

#[test]
fn a_metadata_as_vallona_sends_it() {
    // Vallona names the file by the sender's full path and writes Unix
    // time plus 946684800 (2023-11-14 22:13:20 UTC, shifted the wrong way).
    let name = b"/home/sat/outbox/image-0042.raw";
    let mut wire = vec![
        0x22, 0x40, 0x00, 0x00, // 001 00010 | 32-bit | file, in progress | no checksum
        0x00, 0x00, 0x00, 0x2a, // session 42
        0x80, 0x40, // entry flags: always-1 bit, a file, 32-bit size
        0x00, 0x00, 0x16, 0x30, // size 5680
        0x9d, 0xc1, 0x34, 0x80, // mtime: 1700000000 + 946684800
        0x9d, 0xc1, 0x34, 0x80, // ctime
    ];
    wire.extend_from_slice(name);
    wire.push(0);
    let metadata = Metadata::parse(&wire).unwrap();
    assert_eq!(
        metadata,
        Metadata {
            descriptor: Descriptor::D32,
            transfer_type: TransferType::File,
            terminated: false,
            udp_lite: false,
            session: 42,
            checksum: Checksum::None,
            entry: DirEntry {
                kind: EntryKind::File,
                descriptor: Descriptor::D32,
                size: 5680,
                mtime: 2_646_684_800,
                ctime: 2_646_684_800,
                name: "/home/sat/outbox/image-0042.raw".into(),
            },
        }
    );
    assert_eq!(bytes(&Frame::Metadata(metadata)), wire);
}

#[test]
fn a_metadata_with_a_checksum_and_a_16_bit_entry() {
    let checksum = Checksum::of(ChecksumKind::Md5, b"hello");
    let metadata = Metadata {
        descriptor: Descriptor::D16,
        transfer_type: TransferType::File,
        terminated: false,
        udp_lite: false,
        session: 1,
        checksum,
        entry: DirEntry::file("a", 5, DirEntry::time_from_unix(EPOCH_2000_UNIX + 60)),
    };
    let wire = bytes(&Frame::Metadata(metadata.clone()));
    assert_eq!(wire[..4], [0x22, 0x00, 0x00, 0x42], "MD5: 4 words, type 2");
    assert_eq!(wire[8..24], checksum.bytes()[..]);
    assert_eq!(wire[24..26], [0x80, 0x00], "a file, 16-bit size");
    assert_eq!(wire[26..28], [0, 5]);
    assert_eq!(wire[28..32], [0, 0, 0, 60]);
    assert_eq!(wire[36..], *b"a\0");
    assert_eq!(Metadata::parse(&wire), Ok(metadata));
}

#[test]
fn a_data_frame_has_the_documented_layout() {
    let data = Data {
        descriptor: Descriptor::D32,
        transfer_type: TransferType::File,
        request_status: true,
        end_of_data: true,
        session: 7,
        timestamp: None,
        offset: 5680,
        payload: b"xyz",
    };
    let wire = bytes(&Frame::Data(data));
    assert_eq!(
        wire,
        [
            0x23, 0x41, 0x80, 0x00, // 001 00011 | 32-bit, bit 15 request status | bit 16 end of data
            0, 0, 0, 7, // session
            0, 0, 0x16, 0x30, // offset 5680
            b'x', b'y', b'z',
        ]
    );
    assert_eq!(Data::parse(&wire), Ok(data));
    assert_eq!(Data::header_len(Descriptor::D32, false), 12);
    let with_timestamp = Data {
        timestamp: Some([9; TIMESTAMP_LEN]),
        payload: b"",
        ..data
    };
    let wire = bytes(&Frame::Data(with_timestamp));
    assert_eq!(wire.len(), Data::header_len(Descriptor::D32, true));
    assert_eq!(wire[1], 0x49, "bit 12: timestamp");
    assert_eq!(Data::parse(&wire), Ok(with_timestamp));
}

#[test]
fn a_request_has_the_documented_layout() {
    let request = Request::new(RequestType::Get, 0x0102_0304, "dir/f.txt");
    let wire = bytes(&Frame::Request(request.clone()));
    let mut expected = vec![0x21, 0x40, 0x00, 0x01, 1, 2, 3, 4];
    expected.extend_from_slice(b"dir/f.txt\0");
    assert_eq!(wire, expected);
    assert_eq!(Request::parse(&wire), Ok(request));
    let listing = Request::new(RequestType::GetDir, 9, "");
    let wire = bytes(&Frame::Request(listing.clone()));
    assert_eq!(wire[..4], [0x21, 0x41, 0x00, 0x06], "bit 15 directory, type 6");
    let mut with_auth = wire.clone();
    with_auth.extend([1, 2, 3]);
    let parsed = Request::parse(&with_auth).unwrap();
    assert_eq!(parsed.auth, [1, 2, 3]);
    assert_eq!(
        Request {
            auth: Vec::new(),
            ..parsed
        },
        listing
    );
}

#[test]
fn a_beacon_has_the_documented_layout() {
    let beacon = Beacon {
        descriptor: Descriptor::D64,
        bundles: false,
        streaming: false,
        tx_willing: Willing::Yes,
        rx_willing: Willing::Capable,
        udp_lite: false,
        free_space: Some((Descriptor::D32, 1_000_000)),
        endpoint: "192.0.2.1 4242".into(),
    };
    let wire = bytes(&Frame::Beacon(beacon.clone()));
    // 64-bit | tx-willing 11, rx-willing 10 | free space, 32-bit | free space 1000000
    let mut expected = vec![0x20, 0x8e, 0x50, 0x00, 0x00, 0x0f, 0x42, 0x40];
    expected.extend_from_slice(b"192.0.2.1 4242");
    assert_eq!(wire, expected);
    assert_eq!(Beacon::parse(&wire), Ok(beacon.clone()));
    let mut with_nul = wire.clone();
    with_nul.push(0);
    assert_eq!(Beacon::parse(&with_nul), Ok(beacon));
}

#[test]
fn a_listing_is_entries_back_to_back() {
    let entries = vec![
        DirEntry::file("a.txt", 3, 1),
        DirEntry {
            kind: EntryKind::Directory,
            ..DirEntry::file("sub", 0, 2)
        },
        DirEntry::file("big", 1 << 40, 3),
    ];
    let mut wire = Vec::new();
    DirEntry::emit_listing(&entries, &mut wire).unwrap();
    assert_eq!(wire[..2], [0x80, 0x00]);
    assert_eq!(DirEntry::parse_listing(&wire), Ok(entries.clone()));
    assert_eq!(
        wire[18..20],
        [0x81, 0x00],
        "the second (after 18 bytes) is a directory"
    );
}

/// A valid frame of each type, to break.
fn sample(frame_type: FrameType) -> Vec<u8> {
    let frame = match frame_type {
        FrameType::Beacon => Frame::Beacon(Beacon::parse(&[0x20, 0, 0, 0]).unwrap()),
        FrameType::Request => Frame::Request(Request::new(RequestType::Put, 1, "f")),
        FrameType::Metadata => Frame::Metadata(Metadata {
            descriptor: Descriptor::D32,
            transfer_type: TransferType::File,
            terminated: false,
            udp_lite: false,
            session: 1,
            checksum: Checksum::of(ChecksumKind::Crc32, b""),
            entry: DirEntry::file("f", 1, 0),
        }),
        FrameType::Data => Frame::Data(Data {
            descriptor: Descriptor::D32,
            transfer_type: TransferType::File,
            request_status: false,
            end_of_data: false,
            session: 1,
            timestamp: None,
            offset: 0,
            payload: &[],
        }),
        FrameType::Status => Frame::Status(status_after_a_lost_fifth_frame()),
    };
    bytes(&frame)
}

#[test]
fn every_malformation_is_named() {
    let too_short = Frame::parse(&[0x24, 0x40]).unwrap_err();
    assert_eq!(
        too_short,
        WireError::TooShort {
            what: "flags word",
            len: 2
        }
    );
    assert_eq!(
        Status::parse(&STATUS_BYTES[..10]),
        Err(WireError::TooShort {
            what: "progress",
            len: 10
        })
    );
    assert_eq!(Frame::parse(&[0x44, 0x40, 0, 0]), Err(WireError::Version(2)));
    assert_eq!(Frame::parse(&[0x25, 0x40, 0, 0]), Err(WireError::FrameType(5)));
    assert_eq!(
        Data::parse(&STATUS_BYTES),
        Err(WireError::WrongFrame {
            expected: FrameType::Data,
            found: FrameType::Status
        })
    );
    let mut d128 = STATUS_BYTES;
    d128[1] = 0xc0;
    assert_eq!(Frame::parse(&d128), Err(WireError::Descriptor128));

    let request = sample(FrameType::Request);
    assert_eq!(
        Request::parse(&request[..request.len() - 1]),
        Err(WireError::NameNotTerminated)
    );
    let mut bad_name = request.clone();
    bad_name[8] = 0xff;
    assert_eq!(Request::parse(&bad_name), Err(WireError::InvalidName));
    assert_eq!(
        Request::new(RequestType::Get, 1, "a\0b").emit(&mut Vec::new()),
        Err(WireError::InvalidName)
    );
    let mut beacon = vec![0x20, 0, 0, 0];
    beacon.extend_from_slice("café".as_bytes());
    assert_eq!(Beacon::parse(&beacon), Err(WireError::InvalidName));
    let mut bad_type = request;
    bad_type[3] = 7;
    assert_eq!(Request::parse(&bad_type), Err(WireError::RequestType(7)));

    let too_large = Data {
        descriptor: Descriptor::D16,
        transfer_type: TransferType::File,
        request_status: false,
        end_of_data: false,
        session: 1,
        timestamp: None,
        offset: 70_000,
        payload: &[],
    };
    assert_eq!(
        too_large.emit(&mut Vec::new()),
        Err(WireError::ValueTooLarge {
            what: "offset",
            value: 70_000,
            descriptor: Descriptor::D16
        })
    );

    let mut reversed = STATUS_BYTES;
    reversed[22] = 0x10; // the hole's end becomes 0x10bb, before its start 0x1630

    assert_eq!(
        Status::parse(&reversed),
        Err(WireError::HoleReversed {
            start: 0x1630,
            end: 0x10bb
        })
    );
    let mut backwards = status_after_a_lost_fifth_frame();
    backwards.holes[0] = Hole { start: 9, end: 3 };
    assert_eq!(
        backwards.emit(&mut Vec::new()),
        Err(WireError::HoleReversed { start: 9, end: 3 })
    );

    let metadata = sample(FrameType::Metadata);
    let mut unknown_checksum = metadata.clone();
    unknown_checksum[3] = 0x19; // 1 word, type 9
    assert_eq!(
        Metadata::parse(&unknown_checksum),
        Err(WireError::ChecksumType(9))
    );
    let mut wrong_length = metadata.clone();
    wrong_length[3] = 0x21; // 2 words, CRC32
    assert_eq!(
        Metadata::parse(&wrong_length),
        Err(WireError::ChecksumLength { kind: 1, words: 2 })
    );
    let mut entry_flags = metadata;
    entry_flags[12] &= 0x7f;
    assert_eq!(Metadata::parse(&entry_flags), Err(WireError::DirentFlags(0x0000)));

    assert_eq!(sample(FrameType::Data).len(), 12);
    assert_eq!(sample(FrameType::Beacon), [0x20, 0, 0, 0]);
    assert_eq!(sample(FrameType::Status), STATUS_BYTES);
}

#[test]
fn causes_are_short_distinct_labels() {
    let errors = [
        WireError::TooShort { what: "x", len: 0 },
        WireError::Version(0),
        WireError::FrameType(9),
        WireError::WrongFrame {
            expected: FrameType::Data,
            found: FrameType::Beacon,
        },
        WireError::Descriptor128,
        WireError::NameNotTerminated,
        WireError::InvalidName,
        WireError::ValueTooLarge {
            what: "x",
            value: 1,
            descriptor: Descriptor::D16,
        },
        WireError::HoleReversed { start: 2, end: 1 },
        WireError::RequestType(9),
        WireError::ChecksumType(9),
        WireError::ChecksumLength { kind: 1, words: 2 },
        WireError::DirentFlags(0),
    ];
    let causes: std::collections::BTreeSet<_> = errors.iter().map(WireError::cause).collect();
    assert_eq!(causes.len(), errors.len());
    for error in &errors {
        assert!(!error.to_string().is_empty());
    }
}

fn descriptor() -> impl Strategy<Value = Descriptor> {
    prop::sample::select(Descriptor::ALL.to_vec())
}

fn value(descriptor: Descriptor) -> impl Strategy<Value = u64> {
    0..=descriptor.max_value()
}

fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9/._ -]{0,40}"
}

fn checksum() -> impl Strategy<Value = Checksum> {
    prop_oneof![
        Just(Checksum::None),
        any::<u32>().prop_map(Checksum::Crc32),
        any::<[u8; 16]>().prop_map(Checksum::Md5),
        any::<[u8; 20]>().prop_map(Checksum::Sha1),
    ]
}

fn entry() -> impl Strategy<Value = DirEntry> {
    (descriptor(), 0u8..4, any::<u32>(), any::<u32>(), name()).prop_flat_map(
        |(descriptor, kind, mtime, ctime, name)| {
            value(descriptor).prop_map(move |size| DirEntry {
                kind: match kind {
                    0 => EntryKind::File,
                    1 => EntryKind::Directory,
                    2 => EntryKind::SpecialFile,
                    _ => EntryKind::SpecialDirectory,
                },
                descriptor,
                size,
                mtime,
                ctime,
                name: name.clone(),
            })
        },
    )
}

fn transfer_type() -> impl Strategy<Value = TransferType> {
    (0u32..4).prop_map(TransferType::from_bits)
}

fn willing() -> impl Strategy<Value = Willing> {
    (0u32..4).prop_map(Willing::from_bits)
}

fn round_trip(frame: &Frame<'_>) -> Result<(), TestCaseError> {
    let wire = frame.to_bytes().map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(
        &Frame::parse(&wire).map_err(|e| TestCaseError::fail(e.to_string()))?,
        frame
    );
    Ok(())
}

proptest! {
    #[test]
    fn beacons_read_back(descriptor in descriptor(), bundles: bool, streaming: bool, tx in willing(),
        rx in willing(), udp_lite: bool, space in prop::option::of(descriptor().prop_flat_map(|d| (Just(d), value(d)))),
        endpoint in "[ -~]{0,30}") {
        round_trip(&Frame::Beacon(Beacon { descriptor, bundles, streaming, tx_willing: tx, rx_willing: rx,
            udp_lite, free_space: space, endpoint }))?;
    }

    #[test]
    fn requests_read_back(descriptor in descriptor(), kind in 0u8..7, session: u32, name in name(),
        directory: bool, bundles: bool, streams: bool, willingness in 0u8..4, session_type: bool,
        udp_lite: bool, auth in prop::collection::vec(any::<u8>(), 0..8)) {
        round_trip(&Frame::Request(Request { descriptor, request_type: RequestType::from_code(kind).unwrap(),
            session, name, directory, bundles, streams, willingness, session_type, udp_lite, auth }))?;
    }

    #[test]
    fn metadata_reads_back(descriptor in descriptor(), transfer_type in transfer_type(), terminated: bool,
        udp_lite: bool, session: u32, checksum in checksum(), entry in entry()) {
        round_trip(&Frame::Metadata(Metadata { descriptor, transfer_type, terminated, udp_lite, session,
            checksum, entry }))?;
    }

    #[test]
    fn data_reads_back(d in descriptor().prop_flat_map(|d| (Just(d), value(d))), transfer_type in transfer_type(),
        request_status: bool, end_of_data: bool, session: u32, timestamp: Option<[u8; 16]>,
        payload in prop::collection::vec(any::<u8>(), 0..64)) {
        round_trip(&Frame::Data(Data { descriptor: d.0, transfer_type, request_status, end_of_data, session,
            timestamp, offset: d.1, payload: &payload }))?;
    }

    #[test]
    fn statuses_read_back(descriptor in descriptor(), session: u32, timestamp: Option<[u8; 16]>,
        metadata_received: bool, all_holes: bool, voluntary: bool, error: u8,
        values in prop::collection::vec(any::<u64>(), 2..20)) {
        let max = descriptor.max_value();
        let fit = |v: u64| if max == u64::MAX { v } else { v % (max + 1) };
        // Holes as a receiver lists them: in order, apart, after the progress.
        let mut points: Vec<u64> = values[2..].iter().map(|v| fit(*v)).collect();
        points.sort_unstable();
        points.dedup();
        let holes: Vec<Hole> = points.chunks_exact(2).map(|pair| Hole { start: pair[0], end: pair[1] }).collect();
        let progress = fit(values[0]).min(holes.first().map_or(u64::MAX, |h| h.start));
        round_trip(&Frame::Status(Status { descriptor, session, timestamp, metadata_received, all_holes,
            voluntary, error: ErrorCode(error), progress, in_response_to: fit(values[1]), holes }))?;
    }

    #[test]
    fn holes_convert_to_ranges_and_back(start in 0u64..u64::MAX / 2, len in 1u64..1 << 20) {
        let hole = Hole::from_range(start..start + len).unwrap();
        prop_assert_eq!(hole.end - hole.start + 1, len);
        prop_assert_eq!(hole.range(), start..start + len);
    }

    #[test]
    fn any_bytes_parse_or_fail_without_panicking(wire in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(frame) = Frame::parse(&wire) {
            round_trip(&frame)?;
        }
        let _ = DirEntry::parse_listing(&wire);
    }
}
