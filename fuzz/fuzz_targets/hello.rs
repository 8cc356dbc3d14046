//! The `scps send`/`scps recv` hello line (`scps_workload::hello`) on
//! arbitrary bytes from the peer: a hello that passes its checks, or an error naming what
//! was wrong, never a panic; an accepted hello writes back to a line that
//! reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_workload::hello;

thread_local! {
    // Built once: building a runtime per input took most of the time.
    static RUNTIME: tokio::runtime::Runtime =
        tokio::runtime::Builder::new_current_thread().build().unwrap();
}

fuzz_target!(|data: &[u8]| {
    RUNTIME.with(|runtime| runtime.block_on(async {
        let mut input = data;
        if let Ok(accepted) = hello::read_hello(&mut input).await {
            let mut line = Vec::new();
            hello::write_hello(&mut line, &accepted).await.unwrap();
            let again = hello::read_hello(&mut line.as_slice()).await.unwrap();
            assert_eq!(again, accepted);
        }
    }));
});
