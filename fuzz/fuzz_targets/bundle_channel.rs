//! A bundle channel as `--channel` gives it: any text is read or refused
//! with an error naming the key, never a panic; what is read keeps its
//! addresses' IP version on both sides.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_config::bundle::BundleChannel;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match text.parse::<BundleChannel>() {
        Ok(channel) => {
            assert_eq!(channel.local.is_ipv4(), channel.peer.is_ipv4());
            assert!(channel.rate_bps >= 8);
        }
        Err(error) => assert!(error.to_string().starts_with("--channel"), "{error}"),
    }
});
