//! Event sets: creation, registration, and delivery of timeline events with a cursor per set
//! (a set gets a GPU's events from its registration on).

use super::{Dev, NvmlResult, Sim};
use std::collections::BTreeMap;

use super::{EventSet, SUPPORTED_EVENTS};
use crate::ret;
use crate::scenario::Event;

impl Sim {
    /// `nvmlEventSetCreate`.
    pub fn event_set_create(&mut self) -> u64 {
        let id = self.take_id();
        let set = EventSet {
            registered: BTreeMap::new(),
            delivered: vec![false; self.scenario.events.len()],
            ..EventSet::default()
        };
        self.event_sets.insert(id, set);
        self.write_census();
        id
    }

    /// `nvmlEventSetFree`.
    pub fn event_set_free(&mut self, id: u64) -> NvmlResult<()> {
        self.event_sets.remove(&id).ok_or(ret::INVALID_ARGUMENT)?;
        self.write_census();
        Ok(())
    }

    /// `nvmlDeviceGetSupportedEventTypes`.
    pub fn supported_events(&self, dev: Dev) -> NvmlResult<u64> {
        self.physical_only(dev)?;
        Ok(SUPPORTED_EVENTS)
    }

    /// `nvmlDeviceRegisterEvents` at scenario time `t`. As with real NVML a set only gets the
    /// events that occur after registration: when GPU `g` is first registered on the set, its
    /// events at or before `t` count as already delivered for this set (other GPUs' events
    /// are untouched; adding event types for an already registered GPU changes only the mask).
    pub fn register_events(&mut self, dev: Dev, mask: u64, set: u64, t: f64) -> NvmlResult<()> {
        let g = self.physical_only(dev)?;
        if mask & !SUPPORTED_EVENTS != 0 {
            return Err(ret::NOT_SUPPORTED);
        }
        let s = self.event_sets.get_mut(&set).ok_or(ret::INVALID_ARGUMENT)?;
        if !s.registered.contains_key(&g) {
            for (e, d) in self.scenario.events.iter().zip(s.delivered.iter_mut()) {
                if e.t > t {
                    break;
                }
                if e.gpu == g {
                    *d = true;
                }
            }
        }
        let before = s.registered.get(&g).copied().unwrap_or(0);
        let after = before | mask;
        s.registered.insert(g, after);
        // Events of this GPU passed over because the set did not ask for their type are owed
        // now that it does (as before the scan passed them).
        let events = &self.scenario.events;
        let owed_now = |i: &usize| {
            let e = &events[*i];
            e.gpu == g && e.event_type & after != 0
        };
        if after != before && s.masked.iter().any(owed_now) {
            let (owed, still): (Vec<usize>, Vec<usize>) = std::mem::take(&mut s.masked)
                .into_iter()
                .partition(owed_now);
            s.masked = still;
            let mut all: Vec<usize> = s.reopened.drain(..).chain(owed).collect();
            all.sort_unstable();
            s.reopened = all.into();
        }
        Ok(())
    }

    /// Scenario time of the set's first undelivered event after `t` (what a wait sleeps until).
    pub fn next_due_after(&self, set: u64, t: f64) -> NvmlResult<Option<f64>> {
        let s = self.event_sets.get(&set).ok_or(ret::INVALID_ARGUMENT)?;
        // Everything before the cursor is delivered, never owed, or (reopened) due already.
        Ok(self
            .scenario
            .events
            .iter()
            .enumerate()
            .skip(s.cursor)
            .filter(|(_, e)| e.t > t)
            .find(|(i, e)| s.awaits(*i, e))
            .map(|(_, e)| e.t))
    }

    /// Next event of the set due at `t` that it has not delivered yet (each set has its own
    /// cursor, so every set sees every event of its registered GPUs that occurs after their
    /// registration, once). The scan goes on from where the last one stopped: an event is
    /// passed once, delivered, or set aside when its GPU is registered for other types only.
    pub fn next_event(&mut self, set: u64, t: f64) -> NvmlResult<Option<Event>> {
        let s = self.event_sets.get_mut(&set).ok_or(ret::INVALID_ARGUMENT)?;
        let events = &self.scenario.events;
        if let Some(&i) = s.reopened.front()
            && events[i].t <= t
        {
            s.reopened.pop_front();
            s.delivered[i] = true;
            return Ok(Some(events[i]));
        }
        while let Some(e) = events.get(s.cursor) {
            if e.t > t {
                break;
            }
            let i = s.cursor;
            s.cursor += 1;
            if s.awaits(i, e) {
                s.delivered[i] = true;
                return Ok(Some(*e));
            }
            if !s.delivered[i] {
                if s.registered.contains_key(&e.gpu) {
                    s.masked.push(i);
                } else {
                    // A GPU registered later skips its events up to then: never owed.
                    s.delivered[i] = true;
                }
            }
        }
        Ok(None)
    }
}

impl EventSet {
    /// Whether the set still owes timeline event `i` (`e`): its GPU is registered for the
    /// event's type and the set has not delivered it.
    fn awaits(&self, i: usize, e: &Event) -> bool {
        self.registered
            .get(&e.gpu)
            .is_some_and(|mask| mask & e.event_type != 0)
            && self.delivered.get(i) == Some(&false)
    }
}
