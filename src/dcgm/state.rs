//! The client's record of DCGM's state over ticks ([`StateBook`]): connecting, up or down, since
//! when, its last answer, the ticks without one and the last error, from which the sampler's
//! `snapshot::DcgmStatus` is made each tick.
//!
//! Bookkeeping only: it must not call DCGM or log (the client logs each change, once).

use super::options::Mode;
use crate::snapshot::{DcgmState, DcgmStatus};

/// DCGM's state as the ticks saw it.
#[derive(Debug, Clone)]
pub struct StateBook {
    state: DcgmState,
    /// When the current state began (`None` until the first tick).
    since_unix: Option<f64>,
    last_answer_unix: Option<f64>,
    failed_ticks: u64,
    last_error: Option<String>,
}

impl Default for StateBook {
    fn default() -> Self {
        Self {
            state: DcgmState::Connecting,
            since_unix: None,
            last_answer_unix: None,
            failed_ticks: 0,
            last_error: None,
        }
    }
}

impl StateBook {
    /// The state now.
    pub fn state(&self) -> DcgmState {
        self.state
    }

    fn enter(&mut self, state: DcgmState, now_unix: f64) {
        if self.state != state || self.since_unix.is_none() {
            self.since_unix = Some(now_unix);
        }
        self.state = state;
    }

    /// A tick at `now_unix` with no answer yet while the library loads or the first
    /// connection is made (`why`: what it waits for). Before DCGM ever answered it stays
    /// connecting; afterwards nothing changes (a reconnection after a loss is still down).
    pub fn waiting(&mut self, now_unix: f64, why: String) {
        if self.state == DcgmState::Connecting {
            self.enter(DcgmState::Connecting, now_unix);
            self.last_error = Some(why);
        }
    }

    /// An answer at `now_unix`: `up` whether DCGM answered, `why` what failed (all of it when
    /// not up, a part of it when up).
    pub fn answer(&mut self, now_unix: f64, up: bool, why: Option<String>) {
        if up {
            self.enter(DcgmState::Up, now_unix);
            self.last_answer_unix = Some(now_unix);
        } else {
            self.enter(DcgmState::Down, now_unix);
        }
        self.last_error = why;
    }

    /// A tick that ended without DCGM's values.
    pub fn failed_tick(&mut self) {
        self.failed_ticks += 1;
    }

    /// The state as the snapshot carries it, for `mode` (no unserved values: the sampler adds
    /// them).
    pub fn status(&self, mode: &Mode) -> DcgmStatus {
        DcgmStatus {
            mode: mode.name(),
            address: match mode {
                Mode::Remote(a) => Some(a.to_string()),
                _ => None,
            },
            state: self.state,
            since_unix: self.since_unix.unwrap_or(0.0),
            last_answer_unix: self.last_answer_unix,
            failed_ticks: self.failed_ticks,
            last_error: self.last_error.clone(),
            unserved: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_moves_only_when_the_state_changes() {
        let mut b = StateBook::default();
        b.waiting(10.0, "loading".into());
        b.waiting(11.0, "connecting".into());
        let s = b.status(&Mode::Embedded);
        assert_eq!(
            (s.state, s.since_unix, s.address),
            (DcgmState::Connecting, 10.0, None)
        );
        assert_eq!(s.last_error.as_deref(), Some("connecting"));
        b.answer(12.0, false, Some("refused".into()));
        b.failed_tick();
        b.answer(13.0, false, Some("still refused".into()));
        b.failed_tick();
        let s = b.status(&Mode::Embedded);
        assert_eq!(
            (s.state, s.since_unix, s.failed_ticks),
            (DcgmState::Down, 12.0, 2)
        );
        assert_eq!(s.last_error.as_deref(), Some("still refused"));
        // Reconnecting after a loss is still down.
        b.waiting(14.0, "connecting".into());
        assert_eq!(b.status(&Mode::Embedded).state, DcgmState::Down);
        b.answer(15.0, true, None);
        b.answer(16.0, true, None);
        let s = b.status(&Mode::Embedded);
        assert_eq!(s.state, DcgmState::Up);
        assert_eq!((s.since_unix, s.last_answer_unix), (15.0, Some(16.0)));
        assert_eq!((s.last_error, s.failed_ticks), (None, 2));
    }
}
