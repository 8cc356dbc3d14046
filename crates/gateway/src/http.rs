//! The little HTTP/1.1 the metrics endpoint speaks: `GET /metrics` is
//! answered with the metrics, anything else with the status that says
//! why not, and the connection is closed after each answer (no
//! keep-alive; a request's body, if any, is never read).

use crate::exchange::Request;

/// The longest request head read (request line and headers).
pub(crate) const MAX_HEAD: usize = 8 * 1024;

/// What the metrics are served as: the OpenMetrics text format, which
/// `prometheus_client`'s text encoder writes.
pub(crate) const METRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Where a request's head ends: after its empty line (CRLF CRLF, or LF LF
/// from a lax client).
pub fn head_end(bytes: &[u8]) -> Option<usize> {
    let crlf = bytes.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    crlf.into_iter().chain(lf).min()
}

/// The whole answer to `request`; `metrics` writes the body of a
/// `GET /metrics`. A client that left without a byte gets nothing.
pub fn answer(request: Request, metrics: impl FnOnce() -> String) -> Vec<u8> {
    match request {
        Request::Whole(head) => match target(&head) {
            Ok(()) => response("200 OK", METRICS_TYPE, "", &metrics()),
            Err(refusal) => refusal.response(),
        },
        Request::Truncated(bytes) if bytes.is_empty() => Vec::new(),
        Request::Truncated(_) => Refusal::BadRequest.response(),
        Request::TooLong => Refusal::TooLong.response(),
        Request::Slow => Refusal::Slow.response(),
    }
}

/// Why a request is not answered with the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    BadRequest,
    NotFound,
    WrongMethod,
    TooLong,
    Slow,
}

impl Refusal {
    fn response(self) -> Vec<u8> {
        let (status, extra, text) = match self {
            Refusal::BadRequest => ("400 Bad Request", "", "not an HTTP/1.x request\n"),
            Refusal::NotFound => ("404 Not Found", "", "only /metrics is served\n"),
            Refusal::WrongMethod => ("405 Method Not Allowed", "Allow: GET\r\n", "only GET is served\n"),
            Refusal::TooLong => (
                "431 Request Header Fields Too Large",
                "",
                "the request's head is too long\n",
            ),
            Refusal::Slow => ("408 Request Timeout", "", "the request took too long\n"),
        };
        response(status, "text/plain; charset=utf-8", extra, text)
    }
}

/// Checks the request line of `head`: `GET /metrics` (a query string
/// aside) over HTTP/1.x.
fn target(head: &[u8]) -> Result<(), Refusal> {
    let head = std::str::from_utf8(head).map_err(|_| Refusal::BadRequest)?;
    let line = head.lines().next().unwrap_or_default();
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(Refusal::BadRequest);
    };
    if method.is_empty() || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
        return Err(Refusal::BadRequest);
    }
    if method != "GET" {
        return Err(Refusal::WrongMethod);
    }
    match target.split('?').next() {
        Some("/metrics") => Ok(()),
        _ => Err(Refusal::NotFound),
    }
}

fn response(status: &str, content_type: &str, extra_headers: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra_headers}\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of(request: Request) -> String {
        let answer = String::from_utf8(answer(request, || "# EOF\n".to_owned())).unwrap();
        answer.lines().next().unwrap_or_default().to_owned()
    }

    fn whole(head: &str) -> Request {
        Request::Whole(head.as_bytes().to_vec())
    }

    #[test]
    fn get_metrics_is_answered_with_them() {
        let answer = answer(whole("GET /metrics HTTP/1.1\r\nHost: gw\r\n\r\n"), || {
            "scps_gateway_connection_limit 4\n# EOF\n".to_owned()
        });
        let answer = String::from_utf8(answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(
            answer.contains(&format!("Content-Type: {METRICS_TYPE}\r\n")),
            "{answer}"
        );
        assert!(answer.contains("Content-Length: 38\r\n"), "{answer}");
        assert!(
            answer.ends_with("\r\n\r\nscps_gateway_connection_limit 4\n# EOF\n"),
            "{answer}"
        );
        assert_eq!(
            status_of(whole("GET /metrics?x=1 HTTP/1.0\n\n")),
            "HTTP/1.1 200 OK"
        );
    }

    #[test]
    fn anything_else_gets_the_status_that_says_why_not() {
        assert_eq!(
            status_of(whole("GET / HTTP/1.1\r\n\r\n")),
            "HTTP/1.1 404 Not Found"
        );
        assert_eq!(
            status_of(whole("GET /metrics/x HTTP/1.1\r\n\r\n")),
            "HTTP/1.1 404 Not Found"
        );
        assert_eq!(
            status_of(whole("POST /metrics HTTP/1.1\r\n\r\n")),
            "HTTP/1.1 405 Method Not Allowed"
        );
        for bad in [
            "GET /metrics\r\n\r\n",
            "GET /metrics HTTP/2\r\n\r\n",
            "GET  /metrics HTTP/1.1\r\n\r\n",
            "GET metrics HTTP/1.1\r\n\r\n",
            "\r\n\r\n",
        ] {
            assert_eq!(status_of(whole(bad)), "HTTP/1.1 400 Bad Request", "{bad:?}");
        }
        assert_eq!(
            status_of(Request::Whole(b"GET /\xff HTTP/1.1\r\n\r\n".to_vec())),
            "HTTP/1.1 400 Bad Request"
        );
        assert_eq!(
            status_of(Request::Truncated(b"GET /metr".to_vec())),
            "HTTP/1.1 400 Bad Request"
        );
        assert_eq!(
            status_of(Request::TooLong),
            "HTTP/1.1 431 Request Header Fields Too Large"
        );
        assert_eq!(status_of(Request::Slow), "HTTP/1.1 408 Request Timeout");
        assert!(answer(Request::Truncated(Vec::new()), String::new).is_empty());
    }

    #[test]
    fn the_head_ends_at_its_empty_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody"), Some(24));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nbody"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n"), None);
    }
}
