//! The emulator's figures as text, as `scps emulate ctl stats` prints
//! them: a row per channel and direction, each side's bond with a row per
//! channel as the bond sees it, and the uptime.

use std::fmt::Write;

use crate::stats::{SideBond, Stats};

impl Stats {
    /// The figures as a table, one line each, ending in a newline.
    pub fn table(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail: the results are ignored below.
        let _ = writeln!(
            out,
            "{:>3} {:<8} {:<4} {:>10} {:>12} {:>10} {:>12} {:>8} {:>8} {:>8} {:>11} {:>11}",
            "ch",
            "dir",
            "up",
            "pkts in",
            "bytes in",
            "pkts out",
            "bytes out",
            "buffer",
            "errors",
            "outage",
            "queue mean",
            "queue max"
        );
        for c in &self.channels {
            let _ = writeln!(
                out,
                "{:>3} {:<8} {:<4} {:>10} {:>12} {:>10} {:>12} {:>8} {:>8} {:>8} {:>9.3}ms {:>9.3}ms",
                c.channel,
                c.direction,
                if c.up { "yes" } else { "no" },
                c.packets_in,
                c.bytes_in,
                c.packets_out,
                c.bytes_out,
                c.dropped_buffer,
                c.dropped_bit_errors,
                c.dropped_outage,
                c.queue_delay_mean_s * 1e3,
                c.queue_delay_max_s * 1e3,
            );
        }
        for bond in &self.bonds {
            bond_table(bond, &mut out);
        }
        let _ = writeln!(out, "uptime {:.3} s", self.uptime_s);
        out
    }
}

/// A side's bond: its counters, then each channel as it sees it.
fn bond_table(bond: &SideBond, out: &mut String) {
    let f = &bond.figures;
    let _ = writeln!(
        out,
        "bond at side {} (sends {}): {} state changes, {} dropped full, {} bad frames, {} misrouted and {} stale answers",
        bond.side,
        bond.sends,
        f.state_changes,
        f.dropped_full,
        f.bad_frames,
        f.misrouted_answers,
        f.stale_answers
    );
    let _ = writeln!(
        out,
        "{:>3} {:<8} {:>12} {:>10} {:>7} {:>12} {:>12} {:>8}",
        "ch", "state", "rate bit/s", "srtt", "loss", "bytes sent", "bytes recv", "changes"
    );
    for (index, c) in f.channels.iter().enumerate() {
        let srtt = c
            .srtt_s
            .map_or_else(|| "-".to_owned(), |s| format!("{:.1}ms", s * 1e3));
        let _ = writeln!(
            out,
            "{:>3} {:<8} {:>12.0} {:>10} {:>6.2}% {:>12} {:>12} {:>8}",
            index,
            c.state.name(),
            c.rate_bps,
            srtt,
            c.loss * 100.0,
            c.sent_bytes,
            c.received_bytes,
            c.changes
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::stats::{ChannelFigures, Stats};

    fn channel(channel: usize, direction: &str, up: bool) -> ChannelFigures {
        ChannelFigures {
            channel,
            direction: direction.to_owned(),
            up,
            forced_outage: !up,
            packets_in: 120,
            bytes_in: 150_000,
            packets_out: 118,
            bytes_out: 147_500,
            dropped_buffer: 1,
            dropped_bit_errors: 1,
            dropped_outage: 0,
            packets_corrupted: 0,
            queue_delay_mean_s: 0.0125,
            queue_delay_max_s: 0.25,
            queue_delay_total_s: 1.5,
            queue_delay_histogram: Vec::new(),
            packets_transmitted: 118,
            backlog_bytes: 0,
            rate_bps: 2_000_000,
            delay_s: 0.3,
            ber: 1e-6,
        }
    }

    #[test]
    fn the_table_has_a_row_per_channel_and_direction_and_ends_with_the_uptime() {
        let stats = Stats {
            uptime_s: 12.5,
            channels: vec![channel(0, "forward", true), channel(0, "return", false)],
            directions: Vec::new(),
            bonds: Vec::new(),
        };
        let table = stats.table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4, "{table}");
        assert!(lines[0].starts_with(" ch dir      up      pkts in"), "{table}");
        let fields: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            fields,
            [
                "0",
                "return",
                "no",
                "120",
                "150000",
                "118",
                "147500",
                "1",
                "1",
                "0",
                "12.500ms",
                "250.000ms"
            ]
        );
        assert_eq!(lines[3], "uptime 12.500 s");
        assert!(table.ends_with('\n'));
    }
}
