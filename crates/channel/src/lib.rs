//! Pure, seeded, deterministic models of a link direction.
//!
//! Shared by the discrete-event simulator (virtual time) and the live link
//! emulator (real time): no threads, no clocks, no I/O. Time is passed in
//! as a [`Duration`](std::time::Duration) since an arbitrary epoch, and the
//! same seed, configuration and calls always give the same fates.
//!
//! # The model of one direction of one circuit
//!
//! A packet of `L` bytes (the whole IP packet) offered at `now` goes
//! through, in order:
//!
//! 1. **Queue and line** (`serializer.rs`; with [`Qdisc::Red`], `red.rs`
//!    may drop a packet early, counted as a buffer drop). A FIFO
//!    drop-tail buffer of `buffer_bytes` in front of a line clocking at
//!    `rate_bps`. The packet occupies the line for
//!    `(L + framing_bytes) * 8 / rate` seconds. With a token-bucket
//!    [`ShaperConfig`], the packet may start only when the bucket holds
//!    `L` bytes of tokens (refilled continuously at `shaper.rate_bps` up to
//!    `burst_bytes`, full at time 0; a packet takes `L` tokens), and the
//!    line clocks at `min(rate_bps, ceiling_bps)`. So
//!    `start = max(now, previous end, tokens sufficient)`,
//!    `end = start + serialisation`, computed at once. The packet is
//!    refused ([`DropCause::Buffer`]) if the bytes of packets accepted but
//!    not started by `now`, plus `L`, exceed `buffer_bytes`. Times are
//!    exact (integer ticks of `1/rate` ns), so there is no drift over
//!    millions of packets.
//! 2. **Outages** (`outage.rs`). The link is down during
//!    scheduled [`OutageWindow`]s and during the redials of random
//!    [`CallDrops`] (up ~ Exponential(mean_interval), then down ~
//!    Uniform[redial_min, redial_max], starting up at time 0). A packet
//!    whose transmission `[start, end)` overlaps a down instant is lost
//!    ([`DropCause::Outage`]); it still occupies the line.
//! 3. **Bit errors** (`bit_errors.rs`). Each of the
//!    `8 L` bits (framing excluded) is in error independently with
//!    probability `ber`, drawn as geometric gaps carried across packets, so
//!    `P(error in packet) = 1 - (1 - ber)^(8 L)` exactly. In
//!    [`ErrorMode::Drop`] an errored packet is lost
//!    ([`DropCause::BitErrors`]); in [`ErrorMode::Corrupt`] its errored
//!    bits are flipped in place and it is delivered; in
//!    [`ErrorMode::FrameCheck`] they are flipped and the link's frame check
//!    sequence (`frame_check.rs`) decides: lost if it sees the damage,
//!    delivered damaged if it does not. A packet lost to an
//!    outage is reported as an outage loss (and not corrupted).
//!    With [`BurstErrors`] (`burst.rs`), the rate is `burst.ber` for the
//!    bits sent while a two-state (Gilbert-Elliott) process is in its bad
//!    state.
//! 4. **Delay** (`delay.rs`). `arrival = end + max(0, delay +
//!    jitter)`, jitter being none, Uniform[-a, a] or Normal(0, sd). Unless
//!    `allow_reordering`, a packet never arrives before the previously
//!    delivered one.
//!
//! Each random process has its own ChaCha8 stream derived from the
//! channel's seed (bit errors 0, jitter 1, call drops 2, burst states 3,
//! early drops 4): enabling one does
//! not shift the others (see `channel.rs`).
//!
//! A [`Bundle`] stripes packets round-robin over parallel channels that are
//! up (like Linux teql). An asymmetric circuit is simply two independent
//! [`Channel`]s.
//!
//! # Choices the model makes
//!
//! * Buffer and tokens count IP bytes (`L`); framing only costs line time.
//!   A packet larger than `buffer_bytes` is always refused, even on an idle
//!   line (the rule counts the packet itself); a packet larger than
//!   `burst_bytes` waits for a full bucket and leaves it in debt.
//! * A packet lost to an outage still advances the bit-error stream and
//!   draws a jitter sample, so each random process depends only on the
//!   sequence of packets on the line; it is reported as
//!   [`DropCause::Outage`] even if it also had bit errors.
//! * A [`Bundle`] with no channel up loses the packet at once on the next
//!   channel in turn, without occupying that line.
//! * `now` should be non-decreasing across `transmit` calls; outage
//!   queries (`is_up`, `next_change`) may come in any order.
//! * Times are whole nanoseconds; anything beyond `u64::MAX` ns (~584
//!   years) is clamped.
//!
//! [`packet_error_rate`], [`goodput_limit_bps`] and
//! [`expected_up_fraction`] give the physical limit against which results
//! are judged.

mod bit_errors;
mod bundle;
mod burst;
mod channel;
mod config;
mod delay;
mod frame_check;
mod limit;
mod outage;
mod red;
mod serializer;
mod stats;
mod time;
mod token_bucket;

pub use bundle::{Bundle, channel_seed, derive_seed};
pub use channel::{Channel, DropCause, Fate};
pub use config::{
    BurstErrors, CallDrops, ChannelConfig, ConfigError, ErrorMode, FrameCheck, Jitter, OutageConfig,
    OutageWindow, Qdisc, RedConfig, ShaperConfig,
};
pub use limit::{expected_up_fraction, goodput_limit_bps, packet_error_rate};
pub use outage::{OutageProcess, RETAINED_DOWN_PERIODS};
pub use stats::{ChannelStats, QUEUE_DELAY_BOUNDS};
