//! A sender and a receiver of this crate in one process, over the
//! loopback: the library's sessions end to end, as `scps send` and `scps
//! recv` run them (crates/cli/tests/transfer.rs runs the binary).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use scps_config::Direction;
use scps_config::stack::ToolKeepalive;
use scps_transfer::recv::{ServeOptions, Served};
use scps_transfer::send::{Sent, Workload};
use scps_transfer::{
    DEFAULT_BACKLOG, Encapsulation, EngineOptions, News, Stack, StackOptions, Tell, Transport,
    keepalive_every,
};
use scps_workload::bulk::Source;
use scps_workload::hello::Hello;
use scps_workload::report::Report;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

fn options() -> StackOptions {
    StackOptions {
        pcap: None,
        engine: EngineOptions {
            config: None,
            stack: None,
            sets: Vec::new(),
            channels: Vec::new(),
            keepalive: ToolKeepalive::Default(keepalive_every(Duration::from_secs(15))),
        },
        connect_timeout: Duration::from_secs(10),
        backlog: DEFAULT_BACKLOG,
    }
}

fn serve_once(port: u16) -> ServeOptions {
    ServeOptions {
        port,
        raw: false,
        output: None,
        max_connections: 4,
        hello_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        once: true,
    }
}

/// A signal that never comes in these tests: an interrupt is Ctrl-C,
/// which would stop the test harness itself.
fn never() -> Signal {
    signal(SignalKind::user_defined2()).unwrap()
}

/// Where the news goes, and where the test reads it.
fn news() -> (Tell, UnboundedReceiver<News>) {
    let (sender, receiver) = unbounded_channel();
    (
        Arc::new(move |news| {
            let _ = sender.send(news);
        }),
        receiver,
    )
}

/// Serves one connection on `receiver` at `port` while `sender` runs
/// `workload` to the port the receiver says it listens on, at `ip`: how
/// the receiver ended, the sender's report and the receiver's.
async fn transfer(
    receiver: &Stack,
    port: u16,
    sender: &Stack,
    ip: IpAddr,
    workload: &Workload,
) -> (Served, Report, Vec<Report>) {
    let (tell, mut told) = news();
    let sending = async {
        let port = match told.recv().await {
            Some(News::Listening { port, .. }) => port,
            other => panic!("a receiver first says where it listens: {other:?}"),
        };
        scps_transfer::send::run(sender, SocketAddr::new(ip, port), workload, &mut never(), &tell).await
    };
    let serving =
        async { scps_transfer::recv::serve(receiver, &serve_once(port), &mut never(), &tell).await };
    let (served, sent) = tokio::join!(serving, sending);
    let sent = match sent.unwrap() {
        Sent::Report(report) => *report,
        other => panic!("the session ran to its end: {other:?}"),
    };
    let mut received = Vec::new();
    while let Ok(news) = told.try_recv() {
        if let News::Report(report) = news {
            received.push(*report);
        }
    }
    (served.unwrap(), sent, received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_transfer_between_our_stacks_over_udp_is_verified_at_both_ends() {
    let localhost: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let receiver = Stack::start(
        &Transport::Udp {
            bind: localhost,
            peer: None,
            encapsulation: Encapsulation::Scps,
        },
        &options(),
        Direction::Reverse,
    )
    .unwrap();
    let peer = receiver.udp_addr().expect("a UDP path has its address");
    let sender = Stack::start(
        &Transport::Udp {
            bind: localhost,
            peer: Some(peer),
            encapsulation: Encapsulation::Scps,
        },
        &options(),
        Direction::Forward,
    )
    .unwrap();
    let workload = Workload::Bulk {
        source: Source::Generated {
            bytes: 1_000_000,
            seed: 7,
        },
        both_ways: false,
    };
    // Our stack's ports are its own: any serves.
    let (served, sent, received) = transfer(&receiver, 5001, &sender, peer.ip(), &workload).await;
    assert_eq!(served, Served::Complete);
    assert_eq!(
        (sent.protocol.as_str(), sent.workload.as_str()),
        ("scps-udp", "bulk")
    );
    assert_eq!(sent.verified, Some(true), "{sent:?}");
    assert_eq!(sent.bytes, 1_000_000);
    assert_eq!(received.len(), 1, "one report a connection");
    assert_eq!(received[0].verified, Some(true), "{:?}", received[0]);
    assert_eq!(received[0].sha256, sent.sha256);
    sender.close().await.unwrap();
    receiver.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_over_kernel_tcp_brings_the_receivers_bytes_checked() {
    let kernel = Transport::Tcp { congestion: None };
    let receiver = Stack::start(&kernel, &options(), Direction::Reverse).unwrap();
    let sender = Stack::start(&kernel, &options(), Direction::Forward).unwrap();
    let workload = Workload::Named(Hello::Fetch {
        bytes: 300_000,
        seed: 3,
    });
    // Port 0: the system chooses, and the receiver says which.
    let localhost = IpAddr::from([127, 0, 0, 1]);
    let (served, sent, received) = transfer(&receiver, 0, &sender, localhost, &workload).await;
    assert_eq!(served, Served::Complete);
    assert_eq!((sent.protocol.as_str(), sent.workload.as_str()), ("tcp", "fetch"));
    assert!(sent.stack.starts_with("kernel-"), "{}", sent.stack);
    assert_eq!((sent.bytes, sent.verified), (300_000, Some(true)), "{sent:?}");
    assert_eq!(received.len(), 1);
}

#[test]
fn kernel_tcp_refuses_what_configures_only_our_stack() {
    let kernel = Transport::Tcp { congestion: None };
    let capture = StackOptions {
        pcap: Some("capture.pcap".into()),
        ..options()
    };
    let mut labelled = options();
    labelled.engine.stack = Some("scps-rate".into());
    for (refused, said) in [
        (capture, "--pcap captures our stack's packets"),
        (labelled, "--config, --stack and --set configure our stack"),
    ] {
        let error = Stack::start(&kernel, &refused, Direction::Forward)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with(said), "{error}");
    }
}
