//! The `scps send`/`scps recv` hello line (crates/cli/src/transfer/hello.rs,
//! included here by path: the cli is a binary crate) on arbitrary bytes
//! from the peer: a hello that passes its checks, or an error naming what
//! was wrong, never a panic; an accepted hello writes back to a line that
//! reads back the same.
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/cli/src/transfer/hello.rs"]
mod hello;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let mut input = data;
        if let Ok(accepted) = hello::read_hello(&mut input).await {
            let mut line = Vec::new();
            hello::write_hello(&mut line, &accepted).await.unwrap();
            let again = hello::read_hello(&mut line.as_slice()).await.unwrap();
            assert_eq!(again, accepted);
        }
    });
});
