#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_config::topology::{InterfaceAddress, Topology};
use scps_config::Scenario;

/// A scenario the input completes with `[topology...]` tables of its own,
/// so that the fuzzer spends its time in the topology's checks (names,
/// addresses, routes, links, paths) rather than in the rest of the file.
const HEAD: &str = "name = \"fuzz\"\nprotocol = \"tcp-vj\"\n[link]\nrate = \"1Mbit\"\n\
                    [workload]\nkind = \"bulk\"\nbytes = 1000\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(address) = text.parse::<InterfaceAddress>() {
        assert_eq!(address.to_string().parse::<InterfaceAddress>(), Ok(address), "{text:?}");
        assert!(address.prefix.contains(address.address), "{text:?}");
    }
    let _ = Topology::two_hosts().find("fuzz", text);
    if let Ok(scenario) = Scenario::from_text(&format!("{HEAD}{text}"), "fuzz", &[]) {
        for point in &scenario.points {
            let topology = &point.topology;
            assert!(topology.clients().count() >= 1);
            for link in &topology.links {
                for end in link.ends {
                    let name = topology.describe(end);
                    assert_eq!(topology.find("fuzz", &name), Ok(end), "{name}");
                }
            }
        }
    }
});
