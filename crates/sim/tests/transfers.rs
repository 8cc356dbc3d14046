//! Whole transfers in the simulator: every byte arrives once, in order,
//! checked against what was sent (the applications compare each byte), or
//! the run reports an error.

mod common;

use common::*;

const MIB: u64 = 1 << 20;

#[test]
fn a_mebibyte_arrives_intact_at_every_point_of_lowrate_leo_geo() {
    let seed = seed();
    let points = points("lowrate-leo-geo", &["protocol=tcp-vj"]);
    assert_eq!(points.len(), 18, "3 delays x 3 BERs x symmetric and asymmetric");
    for point in &points {
        let result = run(point, seed);
        let what = describe(&result);
        assert_eq!(result.error, None, "{what}");
        assert_eq!(result.bytes, MIB, "{what}");
        assert!(
            result.ratio <= 1.0,
            "faster than the physical limit? {what}: {}",
            result.ratio
        );
        assert!(result.ratio > 0.3, "{what}: ratio {}", result.ratio);
    }
}

#[test]
fn both_directions_at_once_on_an_asymmetric_lossy_link() {
    let seed = seed();
    for protocol in ["tcp-vj", "tcp-cubic"] {
        let point = &points(
            "lowrate-leo-geo",
            &[
                &format!("protocol={protocol}"),
                "link.delay=120ms",
                "link.ber=1e-6",
                "link.return.rate=2400bps",
                "workload.both_ways=true",
            ],
        )[0];
        let result = run(point, seed);
        let what = describe(&result);
        assert_eq!(result.error, None, "{what}");
        assert_eq!(result.bytes, 2 * MIB, "{what}");
        // The 2400 bit/s return direction is the slow one: its megabyte
        // takes at least its serialisation time.
        assert!(result.duration_s > (MIB * 8) as f64 / 2400.0, "{what}");
    }
}

#[test]
fn cubic_fills_a_clean_geo_link() {
    let seed = seed();
    let point = &points(
        "geo-8mbit",
        &[
            "protocol=tcp-cubic",
            "link.rtt=100ms",
            "link.ber=0",
            "workload.bytes=20MB",
        ],
    )[0];
    let result = run(point, seed);
    let what = describe(&result);
    assert_eq!(result.error, None, "{what}");
    assert!(result.ratio > 0.85, "{what}: ratio {}", result.ratio);
}

#[test]
fn corrupted_packets_are_caught_by_the_checksum_and_counted() {
    // BER 1e-6: about 1.2% of 1500-byte packets are hit, nearly always by
    // one bit, which the TCP checksum always catches. (At 1e-5 some 6% of
    // the hit packets carry two flips, and about 1 in 32 of those cancel in
    // the ones'-complement sum: over a 1 MiB transfer the odds that one
    // slips through and the simulator reports a content mismatch are about
    // one in five. A real link's CRC stops those; this mode has none.)
    let point = &points(
        "lowrate-leo-geo",
        &[
            "protocol=tcp-vj",
            "link.delay=120ms",
            "link.ber=1e-6",
            "link.return.rate=115200bps",
            "link.errors=corrupt",
            "workload.bytes=4MiB",
        ],
    )[0];
    let result = run(point, seed());
    let what = describe(&result);
    assert_eq!(result.error, None, "{what}");
    assert_eq!(result.bytes, 4 * MIB, "every byte arrived and matched: {what}");
    assert_eq!(
        result.link.forward.dropped_bit_errors, 0,
        "corrupt mode delivers: {what}"
    );
    let caught = result.endpoint_drops.get("bad_checksum").copied().unwrap_or(0);
    assert!(caught > 15, "{what}: {:?}", result.endpoint_drops);
}

#[test]
fn compressed_headers_carry_a_lossy_transfer_both_ways() {
    // Every segment after the SYNs travels as IP protocol 105; BER 1e-5
    // loses some 11% of full packets, compressed ones among them, and each
    // header after a loss must still be rebuilt right (the applications
    // check every byte).
    let seed = seed();
    for protocol in ["scps-rate", "scps-vj"] {
        let point = &points(
            "lowrate-leo-geo",
            &[
                &format!("protocol={protocol}"),
                "link.delay=120ms",
                "link.ber=1e-5",
                "link.return.rate=115200bps",
                "workload.both_ways=true",
                "tcp.header_compression=true",
            ],
        )[0];
        assert_eq!(point.header_bytes, 36, "the limit counts the compressed header");
        let result = run(point, seed);
        let what = describe(&result);
        assert_eq!(result.error, None, "{what}");
        assert_eq!(result.bytes, 2 * MIB, "{what}");
        assert!(result.retransmitted_bytes > 0, "losses were repaired: {what}");
        assert!(result.ratio <= 1.0, "{what}: ratio {}", result.ratio);
        for cause in [
            "compressed_field_unknown",
            "no_compressed_connection",
            "connection_id_mismatch",
        ] {
            assert_eq!(
                result.endpoint_drops.get(cause),
                None,
                "{what}: {:?}",
                result.endpoint_drops
            );
        }
    }
}

#[test]
fn compression_saves_wire_bytes_and_time_on_the_lowrate_link() {
    let seed = seed();
    let run_with = |compression: bool| {
        let point = &points(
            "lowrate-leo-geo",
            &[
                "protocol=scps-rate",
                "link.delay=120ms",
                "link.ber=0",
                "link.return.rate=115200bps",
                &format!("tcp.header_compression={compression}"),
            ],
        )[0];
        let result = run(point, seed);
        assert_eq!(result.error, None, "{}", describe(&result));
        result
    };
    let (plain, compressed) = (run_with(false), run_with(true));
    let wire = |r: &scps_sim::RunResult| r.link.forward.bytes + r.link.reverse.bytes;
    // 16 bytes fewer per data segment (725 of them for 1 MiB) and 14 per
    // ACK: at least 11 KB, nearly a second at 115200 bit/s.
    assert!(
        wire(&plain) > wire(&compressed) + 11_000,
        "{} vs {} bytes",
        wire(&plain),
        wire(&compressed)
    );
    assert!(
        compressed.duration_s + 0.5 < plain.duration_s,
        "{} s vs {} s",
        compressed.duration_s,
        plain.duration_s
    );
}
