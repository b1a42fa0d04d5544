//! The one exponential backoff every retry loop uses (NVML loading, the kubelet client, DRA
//! discovery), built on the `backon` crate: the first delay, doubling, capped, no jitter.
//!
//! It only computes delays; it must not sleep, log or know what is being retried.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// Delays `first`, `2 × first`, `4 × first`, … up to `cap`, then `cap` for ever; [`reset`]
/// starts again from `first` (after a success).
///
/// [`reset`]: Backoff::reset
#[derive(Debug)]
pub struct Backoff {
    builder: ExponentialBuilder,
    delays: ExponentialBackoff,
    cap: Duration,
}

impl Backoff {
    /// A backoff from `first` doubling to `cap` (a `cap` below `first` is raised to `first`).
    pub fn new(first: Duration, cap: Duration) -> Self {
        let cap = cap.max(first);
        let builder = ExponentialBuilder::default()
            .with_min_delay(first)
            .with_max_delay(cap)
            .with_factor(2.0)
            .without_max_times();
        Self {
            builder,
            delays: builder.build(),
            cap,
        }
    }

    /// The delay before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        self.delays.next().unwrap_or(self.cap)
    }

    /// Starts again from the first delay.
    pub fn reset(&mut self) {
        self.delays = self.builder.build();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_the_cap_and_resets() {
        let s = Duration::from_secs;
        let mut b = Backoff::new(s(1), s(60));
        let got: Vec<u64> = (0..9).map(|_| b.next_delay().as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        b.reset();
        assert_eq!(b.next_delay(), s(1));
        assert_eq!(b.next_delay(), s(2));
        // A cap below the first delay never shortens it (the kubelet client's long intervals).
        let mut b = Backoff::new(s(90), s(60));
        assert_eq!([b.next_delay(), b.next_delay()], [s(90), s(90)]);
        let mut b = Backoff::new(Duration::from_millis(250), s(1));
        let got: Vec<u128> = (0..4).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(got, [250, 500, 1000, 1000]);
    }
}
