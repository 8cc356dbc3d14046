//! The gateway's Prometheus metrics (docs/gateway.md "Operations"),
//! served over HTTP on `metrics.listen`. Nothing is counted for them:
//! each scrape reads the gateway's [`Counters`] and its list of live
//! connections ([`LiveConnections`], with the link connections' figures
//! from the engine).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::TypedMetric;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};
use scps_bond::{ChannelReport, ChannelState};
use scps_net::{BundleMonitor, BundleReport};
use scps_secure::{AuthFailure, SecureStats};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::clients::Refusal;
use crate::config::Metrics;
use crate::counters::Counters;
use crate::exchange::{self, Limits};
use crate::http;
use crate::registry::{LiveConnections, RouteFigures, State};
use crate::security::{LinkWatch, Security};

/// What a scraper may ask of the endpoint.
const LIMITS: Limits = Limits {
    request: http::MAX_HEAD,
    time: Duration::from_secs(5),
    clients: 16,
    per_source: 4,
};

/// Serves the metrics of `counters` and `live` on `endpoint.listen`, to
/// its clients alone, in `tasks`; where it listens (useful when the port
/// was 0).
pub(crate) async fn start(
    endpoint: &Metrics,
    counters: Arc<Counters>,
    live: Arc<LiveConnections>,
    bundle: Option<BundleMonitor>,
    (security, watch): (&Security, &LinkWatch),
    tasks: &mut JoinSet<()>,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(endpoint.listen).await?;
    let address = listener.local_addr()?;
    let mut registry = Registry::with_prefix("scps_gateway");
    let gate = (counters.clone(), endpoint.clients.clone());
    registry.register_collector(Box::new(GatewayMetrics {
        counters,
        live,
        bundle,
        sealed: matches!(security, Security::Noise(_)),
        watch: watch.clone(),
    }));
    tasks.spawn(exchange::serve(
        listener,
        LIMITS,
        http::head_end,
        move |request| http::answer(request, || render(&registry)),
        move |stream: &tokio::net::TcpStream| {
            let (counters, clients) = &gate;
            let Ok(client) = stream.peer_addr() else {
                return false;
            };
            let admitted = clients.admits(client.ip());
            if !admitted {
                counters.turn_away("metrics", client, Refusal::NotAllowed, "not in metrics.clients");
            }
            admitted
        },
    ));
    Ok(address)
}

/// The text exposition of `registry`.
fn render(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing into a String cannot fail, nor can the collector.
    let _ = prometheus_client::encoding::text::encode(&mut text, registry);
    text
}

/// The metrics, read at each scrape.
#[derive(Debug)]
struct GatewayMetrics {
    counters: Arc<Counters>,
    live: Arc<LiveConnections>,
    /// The link's bundle of channels, if it rides one (either mode's link).
    bundle: Option<BundleMonitor>,
    /// Whether the link is sealed by the secure link (or plain).
    sealed: bool,
    watch: LinkWatch,
}

impl Collector for GatewayMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counts = self.counters.snapshot();
        let routes = self.live.routes();
        let limit = ConstGauge::new(counts.limit);
        limit.encode(encoder.encode_descriptor(
            "connection_limit",
            "Split connections the gateway holds at most at once",
            None,
            ConstGauge::<u64>::TYPE,
        )?)?;
        family(
            &mut encoder,
            "connections",
            "Split connections held now, by route and state",
            None,
            routes.iter().flat_map(|(route, figures)| {
                State::ALL.into_iter().map(move |state| {
                    (
                        [("route", route.as_str()), ("state", state.name())],
                        ConstGauge::new(figures.held[state as usize]),
                    )
                })
            }),
        )?;
        family(
            &mut encoder,
            "connections_ended",
            "Split connections ended since the start, by outcome",
            None,
            [
                ("closed", counts.closed),
                ("reset", counts.reset),
                ("refused", counts.refused),
                ("idle", counts.idle),
            ]
            .map(|(outcome, count)| ([("outcome", outcome)], ConstCounter::new(count))),
        )?;
        family(
            &mut encoder,
            "refusals",
            "Connections turned away or retried since the start, by cause",
            None,
            [
                ("over_limit", counts.over_limit),
                ("no_route", counts.no_route),
                ("turned_down", counts.turned_down),
                ("socks_refused", counts.socks_refused),
                ("client_not_allowed", counts.client_not_allowed),
                ("client_not_authenticated", counts.client_not_authenticated),
                ("handshakes_of_source", counts.handshakes_of_source),
                ("handshakes_full", counts.handshakes_full),
                ("handshake_timed_out", counts.handshake_timed_out),
                ("no_local_port", counts.no_local_port),
                ("no_descriptors", counts.no_descriptors),
                ("plain_retries", counts.plain_retries),
            ]
            .map(|(cause, count)| ([("cause", cause)], ConstCounter::new(count))),
        )?;
        family(
            &mut encoder,
            "relayed",
            "Bytes relayed since the start, by route and direction",
            Some(&Unit::Bytes),
            routes.iter().flat_map(|(route, figures)| {
                [
                    ("lan_to_link", figures.relayed.lan_to_link),
                    ("link_to_lan", figures.relayed.link_to_lan),
                ]
                .map(|(direction, bytes)| {
                    (
                        [("route", route.as_str()), ("direction", direction)],
                        ConstCounter::new(bytes),
                    )
                })
            }),
        )?;
        family(
            &mut encoder,
            "link_connections",
            "Link connections open now, by route: the ones the link figures are of",
            None,
            per_route(&routes, |figures| Some(figures.links)),
        )?;
        family(
            &mut encoder,
            "link_retransmitted",
            "Data bytes sent again by the route's open link connections, summed",
            Some(&Unit::Bytes),
            per_route(&routes, |figures| Some(figures.retransmitted_bytes)),
        )?;
        family(
            &mut encoder,
            "link_resent",
            "Data bytes the route's link connections have sent again since the start, those that ended and \
             those open",
            Some(&Unit::Bytes),
            routes.iter().map(|(route, figures)| {
                (
                    [("route", route.as_str())],
                    ConstCounter::new(figures.link_resent_bytes),
                )
            }),
        )?;
        family(
            &mut encoder,
            "link_send_rate",
            "Data sent by the route's open link connections, bit/s over the last second or more, summed",
            Some(&Unit::Other("bits_per_second".to_owned())),
            per_route(&routes, |figures| Some(figures.send_rate_bps)),
        )?;
        family(
            &mut encoder,
            "link_srtt",
            "Smoothed round-trip time of the route's open link connections, mean",
            Some(&Unit::Seconds),
            per_route(&routes, RouteFigures::srtt_mean_s),
        )?;
        family(
            &mut encoder,
            "link_congestion_window",
            "Congestion window of the route's open link connections, mean",
            Some(&Unit::Bytes),
            per_route(&routes, RouteFigures::cwnd_mean_bytes),
        )?;
        if self.sealed {
            encode_secure_link(&mut encoder, &self.watch.secure.stats())?;
        } else {
            ConstCounter::new(self.watch.strangers.get()).encode(encoder.encode_descriptor(
                "link_strangers",
                "Datagrams on the plain link (link.security = \"none\") from anyone but the far gateway, dropped",
                None,
                ConstCounter::<u64>::TYPE,
            )?)?;
        }
        match &self.bundle {
            Some(bundle) => encode_bundle(&mut encoder, &bundle.report()),
            None => Ok(()),
        }
    }
}

/// The secure link (docs/secure-link.md): what it refused, its handshakes,
/// what it could not send.
fn encode_secure_link(encoder: &mut DescriptorEncoder, stats: &SecureStats) -> Result<(), std::fmt::Error> {
    family(
        encoder,
        "link_auth_failures",
        "Datagrams on the link dropped unread because they did not authenticate, by cause",
        None,
        AuthFailure::ALL.map(|cause| {
            let count = stats.auth_failures.get(cause).copied().unwrap_or(0);
            ([("cause", cause)], ConstCounter::new(count))
        }),
    )?;
    family(
        encoder,
        "link_handshakes",
        "Secure link handshakes completed since the start: initiated here, or answered here and used by the far gateway",
        None,
        [
            ("initiated", stats.handshakes_completed),
            ("answered", stats.sessions_confirmed),
        ]
        .map(|(role, count)| ([("role", role)], ConstCounter::new(count))),
    )?;
    ConstCounter::new(stats.no_session).encode(encoder.encode_descriptor(
        "link_no_session",
        "Packets not sent for want of a secure link session with the far gateway",
        None,
        ConstCounter::<u64>::TYPE,
    )?)
}

/// The link's channels (docs/bonding.md; either mode's link): their states, what
/// they carried, what their probes measured.
fn encode_bundle(encoder: &mut DescriptorEncoder, report: &BundleReport) -> Result<(), std::fmt::Error> {
    let names: Vec<String> = (0..report.channels.len()).map(|i| i.to_string()).collect();
    let channels = || names.iter().zip(&report.channels);
    family(
        encoder,
        "bundle_channel_state",
        "1 for each channel's state now (up, down, standby), 0 for the others",
        None,
        channels().flat_map(|(name, channel)| {
            [ChannelState::Up, ChannelState::Down, ChannelState::Standby].map(|state| {
                (
                    [("channel", name.as_str()), ("state", state.name())],
                    ConstGauge::new(u64::from(channel.state == state)),
                )
            })
        }),
    )?;
    family(
        encoder,
        "bundle_channel_changes",
        "State changes of each channel since the start",
        None,
        names.iter().enumerate().map(|(index, name)| {
            let changes = report.events.iter().filter(|e| e.channel == index).count();
            ([("channel", name.as_str())], ConstCounter::new(changes as u64))
        }),
    )?;
    for (metric, help, value) in [
        (
            "bundle_channel_sent",
            "Bytes sent on each channel since the start",
            (|c| c.sent_bytes) as fn(&ChannelReport) -> u64,
        ),
        (
            "bundle_channel_received",
            "Bytes received on each channel since the start",
            |c| c.received_bytes,
        ),
    ] {
        family(
            encoder,
            metric,
            help,
            Some(&Unit::Bytes),
            channels()
                .map(|(name, channel)| ([("channel", name.as_str())], ConstCounter::new(value(channel)))),
        )?;
    }
    family(
        encoder,
        "bundle_channel_rtt",
        "Smoothed round trip of each channel's probes (absent before an answer)",
        Some(&Unit::Seconds),
        channels().filter_map(|(name, channel)| {
            Some((
                [("channel", name.as_str())],
                ConstGauge::new(channel.srtt?.as_secs_f64()),
            ))
        }),
    )?;
    family(
        encoder,
        "bundle_channel_loss",
        "Share of the bytes given to each channel that did not arrive, as its probes measure it",
        Some(&Unit::Ratios),
        channels().map(|(name, channel)| ([("channel", name.as_str())], ConstGauge::new(channel.loss))),
    )?;
    family(
        encoder,
        "bundle_channel_rate",
        "Delivery rate of each channel as its probes measure it, bit/s",
        Some(&Unit::Other("bits_per_second".to_owned())),
        channels().map(|(name, channel)| ([("channel", name.as_str())], ConstGauge::new(channel.rate_bps))),
    )?;
    ConstCounter::new(report.icmp_ignored).encode(encoder.encode_descriptor(
        "bundle_icmp_ignored",
        "ICMP reports about the channels' datagrams that quote none sent lately (forged or stale), ignored",
        None,
        ConstCounter::<u64>::TYPE,
    )?)
}

/// A sample's label set: its route.
type RouteLabel<'a> = [(&'static str, &'a str); 1];

/// A gauge's samples: one per route that has a `value`.
fn per_route<V>(
    routes: &BTreeMap<String, RouteFigures>,
    value: impl Fn(&RouteFigures) -> Option<V>,
) -> Vec<(RouteLabel<'_>, ConstGauge<V>)> {
    routes
        .iter()
        .filter_map(|(route, figures)| Some(([("route", route.as_str())], ConstGauge::new(value(figures)?))))
        .collect()
}

/// One metric with a sample per label set.
fn family<L: EncodeLabelSet, M: EncodeMetric + TypedMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    samples: impl IntoIterator<Item = (L, M)>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, unit, M::TYPE)?;
    for (labels, sample) in samples {
        sample.encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::Clients;
    use crate::registry::Relayed;
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get(addr: SocketAddr, request: &[u8]) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut answer))
            .await
            .expect("answered and closed")
            .unwrap();
        answer
    }

    /// The value of the sample `name{labels}` in `text`.
    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    #[tokio::test]
    async fn a_scrape_reads_the_counters_and_the_live_connections() {
        let counters = Arc::new(Counters::new(4));
        let live = Arc::new(LiveConnections::default());
        let mut tasks = JoinSet::new();
        let addr = start(
            &Metrics {
                listen: "127.0.0.1:0".parse().unwrap(),
                clients: Clients::Any,
            },
            counters.clone(),
            live.clone(),
            None,
            (&Security::None, &LinkWatch::default()),
            &mut tasks,
        )
        .await
        .unwrap();
        counters.closed.fetch_add(3, Ordering::Relaxed);
        counters.no_route.fetch_add(1, Ordering::Relaxed);
        let listing = live.list("10.1.0.5:40000".parse().unwrap(), "bulk");
        listing.progress().publish(
            State::Relaying,
            Relayed {
                lan_to_link: 123_456,
                link_to_lan: 789,
            },
        );

        let answer = get(addr, b"GET /metrics HTTP/1.1\r\nHost: gw\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        let body = answer.split_once("\r\n\r\n").unwrap().1;
        assert!(body.ends_with("# EOF\n"), "{body}");
        assert_eq!(sample(body, "scps_gateway_connection_limit"), Some(4.0));
        assert_eq!(
            sample(body, "scps_gateway_connections_ended_total{outcome=\"closed\"}"),
            Some(3.0)
        );
        assert_eq!(
            sample(body, "scps_gateway_refusals_total{cause=\"no_route\"}"),
            Some(1.0)
        );
        assert_eq!(
            sample(
                body,
                "scps_gateway_connections{route=\"bulk\",state=\"relaying\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(body, "scps_gateway_connections{route=\"bulk\",state=\"opening\"}"),
            Some(0.0)
        );
        assert_eq!(
            sample(
                body,
                "scps_gateway_relayed_bytes_total{route=\"bulk\",direction=\"lan_to_link\"}"
            ),
            Some(123_456.0)
        );
        assert_eq!(
            sample(body, "scps_gateway_link_connections{route=\"bulk\"}"),
            Some(0.0)
        );
        assert_eq!(
            sample(body, "scps_gateway_link_srtt_seconds{route=\"bulk\"}"),
            None,
            "no link connection, no mean"
        );

        drop(listing);
        let body = get(addr, b"GET /metrics HTTP/1.1\r\n\r\n").await;
        assert_eq!(
            sample(
                &body,
                "scps_gateway_relayed_bytes_total{route=\"bulk\",direction=\"link_to_lan\"}"
            ),
            Some(789.0),
            "bytes stay counted once the connection ended"
        );
        assert_eq!(
            sample(
                &body,
                "scps_gateway_connections{route=\"bulk\",state=\"relaying\"}"
            ),
            Some(0.0)
        );
    }

    #[tokio::test]
    async fn the_endpoint_refuses_what_it_does_not_serve() {
        let mut tasks = JoinSet::new();
        let addr = start(
            &Metrics {
                listen: "127.0.0.1:0".parse().unwrap(),
                clients: Clients::Any,
            },
            Arc::new(Counters::new(1)),
            Arc::new(LiveConnections::default()),
            None,
            (&Security::None, &LinkWatch::default()),
            &mut tasks,
        )
        .await
        .unwrap();
        let status = |answer: String| answer.lines().next().unwrap_or_default().to_owned();
        assert_eq!(
            status(get(addr, b"GET /other HTTP/1.1\r\n\r\n").await),
            "HTTP/1.1 404 Not Found"
        );
        assert_eq!(
            status(get(addr, b"DELETE /metrics HTTP/1.1\r\n\r\n").await),
            "HTTP/1.1 405 Method Not Allowed"
        );
        assert_eq!(
            status(get(addr, b"hello there\r\n\r\n").await),
            "HTTP/1.1 400 Bad Request"
        );
        // A head that never ends: cut at the limit, answered, closed.
        let mut endless = b"GET /metrics HTTP/1.1\r\n".to_vec();
        endless.extend(std::iter::repeat_n(b'x', 2 * http::MAX_HEAD));
        assert_eq!(
            status(get(addr, &endless).await),
            "HTTP/1.1 431 Request Header Fields Too Large"
        );
    }
}
