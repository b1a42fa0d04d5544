//! Wall-clock time as the exposition writes it (Unix seconds).
//!
//! Owns reading the system clock in one place so that every layer stamps times the same way.
//! It must not sleep, schedule or depend on any other module.

use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock seconds since the Unix epoch (0 if the clock is before the epoch).
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
