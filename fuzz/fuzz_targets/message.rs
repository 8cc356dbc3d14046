//! `scps_workload_format::message::check` on arbitrary bytes: a message of
//! the size the input claims is either accepted (and then rewrites to the
//! same bytes) or refused with an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_workload_format::message::{HEADER, check, write};
use scps_workload_format::payload::Pattern;

fuzz_target!(|data: &[u8]| {
    if data.len() < HEADER + 9 {
        return;
    }
    let (head, message) = data.split_at(9);
    let offset = u64::from_le_bytes(head[..8].try_into().unwrap());
    let pattern = Pattern::new(u64::from(head[8]));
    if let Ok(sent) = check(message, offset, message.len(), &pattern) {
        let mut again = vec![0u8; message.len()];
        write(&mut again, offset, sent, &pattern);
        assert_eq!(again, message);
    }
});
