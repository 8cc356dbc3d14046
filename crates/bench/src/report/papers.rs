//! The papers' numbers as SCENARIOS.md quotes them, to set beside ours:
//! for each scenario, what the paper found and which of our figures to
//! read against it.

/// What a paper reported for a scenario, and the figure of ours that
/// answers it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quote {
    pub paper: &'static str,
    pub finding: &'static str,
    /// The field of our records to show, per stack, over the sweep.
    pub field: &'static str,
    pub unit: &'static str,
}

pub fn quote(scenario: &str) -> Option<Quote> {
    let quote = match scenario {
        "iridium-3ch" => Quote {
            paper: "Torgerson et al. (JPL), seeds 000 and 004",
            finding: "3 channels of 7200 bit/s nominal: TCP tops out near 3200 bit/s, SCPS near 5000 bit/s; \
                      SCPS latency 11.3 s at 1024 bit/s offered to 83.3 s at 8192, TCP 6.9 s to 60 s",
            field: "actual_bps",
            unit: "bit/s",
        },
        "t1-geo" => Quote {
            paper: "Edwards et al. (Xiphos/CRC), seed 001",
            finding: "3 MB over T1 ideally takes about 16.1 s at BER 0 and 18.2 s at 1e-5; the baseline TCP \
                      (64 kB window) degrades with BER, SCPS with SNACK and no congestion control least",
            field: "duration_s",
            unit: "s",
        },
        "complex-35ws" => Quote {
            paper: "Edwards et al., seed 001",
            finding: "35 workstations over 680 kbit/s, 1.4 s RTT: SCPS downloads 40% faster than Windows 2000, \
                      60% faster than Windows NT",
            field: "download_mean_s",
            unit: "s",
        },
        "lowrate-leo-geo" => Quote {
            paper: "Wang & Wang, seed 002",
            finding: "1 MiB over 115200 bit/s in about 90 to 160 s; at 120 ms and BER 1e-5 TCP slowest and \
                      SCPS-Vegas fastest; on the asymmetric link SCPS faster at every BER",
            field: "duration_s",
            unit: "s",
        },
        "geo-8mbit" => Quote {
            paper: "Finch, Sullivan, Ivancic (NASA), seed 003",
            finding: "FTP limited to about 730 kbit/s at 600 ms by its 12 kB window; a PEP helps FTP, barely \
                      changes SCP; modern Linux TCP matches the PEP on a clean link",
            field: "goodput_bps",
            unit: "bit/s",
        },
        _ => return None,
    };
    Some(quote)
}
