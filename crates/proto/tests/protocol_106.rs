//! SCPS-TP on IP protocol 106, as the SCPS RI's standalone builds send it
//! (its gateway sends 6, as TCP does; docs/spec/scps-tp-options.md, "IP
//! protocol numbers"): dropped by default; taken when configured, each
//! connection answered on the protocol it was opened on, the checksum's
//! pseudo-header holding 106 (6 accepted too); a connection opened on 106
//! when its configuration says so; never sent otherwise.

mod harness;

use harness::*;
use scps_proto::wire::{IPPROTO_SCPS_TP, IPPROTO_TCP, IpRepr, TcpFlags, TcpRepr, build_segment_packet};
use scps_proto::{Config, Endpoint, EndpointConfig, State};

fn endpoint(accept_protocol_106: bool, connection: Config) -> Harness {
    let mut h = Harness::new(Config::default());
    h.ep = Endpoint::new(
        EndpointConfig {
            accept_protocol_106,
            connection,
            ..EndpointConfig::default()
        },
        [OURS.ip()],
    )
    .unwrap();
    h
}

/// Sends `seg` from THEIRS to OURS on IP protocol `protocol`, its
/// checksum's pseudo-header holding `checksum_protocol`.
fn send_on(h: &mut Harness, protocol: u8, checksum_protocol: u8, seg: &Seg) {
    let repr = seg.repr(THEIRS.port(), OURS.port());
    let mut packet = Vec::new();
    build_segment_packet(THEIRS.ip(), OURS.ip(), checksum_protocol, 64, &repr, &mut packet).unwrap();
    // The IP header's protocol, and its checksum again.
    packet[9] = protocol;
    packet[10..12].fill(0);
    let mut sum = scps_node::checksum::Checksum::new();
    sum.add_bytes(&packet[..20]);
    packet[10..12].copy_from_slice(&sum.finish().to_be_bytes());
    h.ep.handle_packet(h.now, &packet);
}

/// What the endpoint sends, with the IP protocol each segment went on;
/// every checksum verified with that protocol in the pseudo-header.
fn output_on(h: &mut Harness) -> Vec<(u8, Seg)> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while h.ep.poll_transmit(h.now, &mut buf) {
        let (ip, payload) = IpRepr::parse(&buf).unwrap();
        let tcp = TcpRepr::parse_as(payload, ip.src(), ip.dst(), ip.protocol(), true)
            .expect("the checksum covers the protocol the segment went on");
        out.push((ip.protocol(), Seg::from(&tcp)));
    }
    out
}

#[test]
fn by_default_protocol_106_is_not_tcp() {
    let mut h = endpoint(false, Config::default());
    h.ep.listen(OURS, None).unwrap();
    send_on(
        &mut h,
        IPPROTO_SCPS_TP,
        IPPROTO_SCPS_TP,
        &Seg::new(TcpFlags::SYN, PEER_ISS),
    );
    assert!(output_on(&mut h).is_empty(), "no answer");
    assert_eq!(h.ep.stats().dropped("not_tcp"), 1);
}

#[test]
fn a_connection_opened_on_106_is_answered_on_106() {
    let mut h = endpoint(true, Config::default());
    h.ep.listen(OURS, None).unwrap();
    send_on(
        &mut h,
        IPPROTO_SCPS_TP,
        IPPROTO_SCPS_TP,
        &Seg::new(TcpFlags::SYN, PEER_ISS).mss(1400),
    );
    let out = output_on(&mut h);
    assert_eq!(out.len(), 1, "{out:?}");
    let (protocol, syn_ack) = &out[0];
    assert_eq!(*protocol, IPPROTO_SCPS_TP);
    assert_eq!(syn_ack.flags, TcpFlags::SYN | TcpFlags::ACK);
    // The ACK carries data; its checksum holds 6, which is accepted too.
    let ack = Seg::ack(PEER_ISS + 1, syn_ack.seq.wrapping_add(1)).payload(b"hello over 106");
    send_on(&mut h, IPPROTO_SCPS_TP, IPPROTO_TCP, &ack);
    let conn = h.ep.accept(OURS).expect("established");
    assert_eq!(h.ep.state(conn), Some(State::Established));
    assert_eq!(h.read(conn), b"hello over 106");
    h.ep.send(conn, b"and back").unwrap();
    let out = output_on(&mut h);
    let (protocol, reply) = out.last().expect("the reply");
    assert_eq!(*protocol, IPPROTO_SCPS_TP);
    assert_eq!(reply.payload, b"and back");
}

#[test]
fn the_same_listener_answers_tcp_on_tcp() {
    let mut h = endpoint(true, Config::default());
    h.ep.listen(OURS, None).unwrap();
    send_on(
        &mut h,
        IPPROTO_TCP,
        IPPROTO_TCP,
        &Seg::new(TcpFlags::SYN, PEER_ISS),
    );
    let out = output_on(&mut h);
    assert_eq!(out[0].0, IPPROTO_TCP, "never 106 to a TCP peer");
}

#[test]
fn a_reset_for_nothing_goes_back_on_106() {
    let mut h = endpoint(true, Config::default());
    send_on(
        &mut h,
        IPPROTO_SCPS_TP,
        IPPROTO_SCPS_TP,
        &Seg::new(TcpFlags::SYN, PEER_ISS),
    );
    let out = output_on(&mut h);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, IPPROTO_SCPS_TP);
    assert!(out[0].1.has(TcpFlags::RST));
}

#[test]
fn a_connection_configured_for_106_opens_on_it() {
    let config = Config {
        ip_protocol: IPPROTO_SCPS_TP,
        ..Config::default()
    };
    let mut h = endpoint(false, config);
    let conn = h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    let out = output_on(&mut h);
    assert_eq!(out[0].0, IPPROTO_SCPS_TP);
    let syn = &out[0].1;
    // The peer answers on 106 too; the endpoint takes it although
    // `accept_protocol_106` is off: its connections speak 106.
    let syn_ack = Seg::new(TcpFlags::SYN, PEER_ISS).with_ack(syn.seq.wrapping_add(1));
    send_on(&mut h, IPPROTO_SCPS_TP, IPPROTO_SCPS_TP, &syn_ack);
    assert_eq!(h.ep.state(conn), Some(State::Established));
    assert_eq!(output_on(&mut h)[0].0, IPPROTO_SCPS_TP, "the handshake's ACK");
}

#[test]
fn only_6_and_106_are_protocols_of_segments() {
    let mut h = endpoint(false, Config::default());
    let udp = Config {
        ip_protocol: 17,
        ..Config::default()
    };
    let err = h.ep.connect(h.now, THEIRS, Some(OURS), Some(udp)).unwrap_err();
    assert!(err.to_string().contains("ip_protocol = 17"), "{err}");
}
