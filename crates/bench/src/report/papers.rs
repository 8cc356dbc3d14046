//! The papers whose experiments the scenarios repeat, named by their
//! authors and titles, with what each found: set beside our figures,
//! with the figure of ours to read against each finding.

use crate::record::Figure;

/// A paper: who wrote it, its title, and where it appeared when the
/// title alone does not find it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paper {
    pub authors: &'static str,
    pub title: &'static str,
    pub venue: Option<&'static str>,
}

/// What a paper reported for a scenario, and the figure of ours that
/// answers it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quote {
    pub paper: Paper,
    pub finding: &'static str,
    /// The figure of our records to show, per stack, over the sweep.
    pub field: Figure,
    pub unit: &'static str,
}

const TORGERSON: Paper = Paper {
    authors: "Torgerson, Hutcherson, McKelvey (JPL)",
    title: "TCP Performance Enhancement over Iridium",
    venue: None,
};

const EDWARDS: Paper = Paper {
    authors: "Edwards, Younghusband, Fodil-Lemelin (Xiphos), Bélisle, Peng, Phisel (CRC), Hartman (CSA)",
    title: "Performance of SCPS in Complex Networks",
    venue: None,
};

const WANG: Paper = Paper {
    authors: "Wang Ru-fa, Wang Ru H.",
    title: "Experimental study of channel delay impact on throughput performance of TCP and its \
            extensions in space",
    venue: Some("J. Zhejiang Univ. SCI 2005 6A(10)"),
};

const FINCH: Paper = Paper {
    authors: "Finch, Sullivan, Ivancic (NASA Ames/Glenn)",
    title: "An Evaluation of Protocol Enhancing Proxies and Modern File Transport Protocols for \
            Geostationary Satellite Communication",
    venue: None,
};

pub fn quote(scenario: &str) -> Option<Quote> {
    let quote = match scenario {
        "iridium-3ch" => Quote {
            paper: TORGERSON,
            finding: "3 channels of 7200 bit/s nominal: TCP tops out near 3200 bit/s, SCPS near 5000 bit/s; \
                      SCPS latency 11.3 s at 1024 bit/s offered to 83.3 s at 8192, TCP 6.9 s to 60 s",
            field: Figure::Actual,
            unit: "bit/s",
        },
        "t1-geo" => Quote {
            paper: EDWARDS,
            finding: "3 MB over T1 ideally takes about 16.1 s at BER 0 and 18.2 s at 1e-5; the baseline TCP \
                      (64 kB window) degrades with BER, SCPS with SNACK and no congestion control least",
            field: Figure::Duration,
            unit: "s",
        },
        "complex-35ws" => Quote {
            paper: EDWARDS,
            finding: "35 workstations over 680 kbit/s, 1.4 s RTT: SCPS downloads 40% faster than Windows 2000, \
                      60% faster than Windows NT",
            field: Figure::DownloadMean,
            unit: "s",
        },
        "lowrate-leo-geo" => Quote {
            paper: WANG,
            finding: "1 MiB over 115200 bit/s in about 90 to 160 s; at 120 ms and BER 1e-5 TCP slowest and \
                      SCPS-Vegas fastest; on the asymmetric link SCPS faster at every BER",
            field: Figure::Duration,
            unit: "s",
        },
        "geo-8mbit" => Quote {
            paper: FINCH,
            finding: "FTP limited to about 730 kbit/s at 600 ms by its 12 kB window; a PEP helps FTP, barely \
                      changes SCP; modern Linux TCP matches the PEP on a clean link",
            field: Figure::Goodput,
            unit: "bit/s",
        },
        _ => return None,
    };
    Some(quote)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_paper_is_named_by_its_authors_and_title() {
        for scenario in [
            "iridium-3ch",
            "t1-geo",
            "complex-35ws",
            "lowrate-leo-geo",
            "geo-8mbit",
        ] {
            let paper = quote(scenario).expect("a quote").paper;
            for text in [paper.authors, paper.title] {
                assert!(text.len() > 10, "{scenario}: {text}");
                assert!(!text.to_lowercase().contains("seed"), "{scenario}: {text}");
            }
        }
        assert_eq!(
            quote("geo-8mbit").unwrap().paper.authors,
            "Finch, Sullivan, Ivancic (NASA Ames/Glenn)"
        );
        assert_eq!(
            quote("t1-geo").unwrap().paper,
            quote("complex-35ws").unwrap().paper
        );
        assert_eq!(quote("no-such-scenario"), None);
    }
}
