//! The metrics endpoint's HTTP (`scps_gateway::http`) on arbitrary bytes
//! from a client: whatever came, whole or cut short, the answer is an
//! HTTP/1.1 status line (nothing for a client that sent nothing), never a
//! panic, and only `GET /metrics` gets the metrics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_gateway::exchange::Request;
use scps_gateway::http::{answer, head_end};

fuzz_target!(|data: &[u8]| {
    let request = match head_end(data) {
        Some(end) => {
            assert!(end <= data.len());
            Request::Whole(data[..end].to_vec())
        }
        None => Request::Truncated(data.to_vec()),
    };
    let mut served = false;
    let reply = answer(request, || {
        served = true;
        "metrics\n".to_owned()
    });
    if data.is_empty() {
        assert!(reply.is_empty());
        return;
    }
    assert!(reply.starts_with(b"HTTP/1.1 "), "{reply:?}");
    if served {
        assert!(data.starts_with(b"GET /metrics"), "{data:?}");
        assert!(reply.starts_with(b"HTTP/1.1 200"));
    }
});
