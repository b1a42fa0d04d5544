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
        };
        self.event_sets.insert(id, set);
        id
    }

    /// `nvmlEventSetFree`.
    pub fn event_set_free(&mut self, id: u64) -> NvmlResult<()> {
        self.event_sets
            .remove(&id)
            .map(|_| ())
            .ok_or(ret::INVALID_ARGUMENT)
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
        *s.registered.entry(g).or_insert(0) |= mask;
        Ok(())
    }

    /// Scenario time of the set's first undelivered event after `t` (what a wait sleeps until).
    pub fn next_due_after(&self, set: u64, t: f64) -> NvmlResult<Option<f64>> {
        let s = self.event_sets.get(&set).ok_or(ret::INVALID_ARGUMENT)?;
        Ok(self
            .scenario
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.t > t)
            .find(|(i, e)| s.awaits(*i, e))
            .map(|(_, e)| e.t))
    }

    /// Next event of the set due at `t` that it has not delivered yet (each set has its own
    /// cursor, so every set sees every event of its registered GPUs that occurs after their
    /// registration, once).
    pub fn next_event(&mut self, set: u64, t: f64) -> NvmlResult<Option<Event>> {
        let s = self.event_sets.get_mut(&set).ok_or(ret::INVALID_ARGUMENT)?;
        for (i, e) in self.scenario.events.iter().enumerate() {
            if e.t > t {
                break;
            }
            if s.awaits(i, e) {
                if let Some(d) = s.delivered.get_mut(i) {
                    *d = true;
                }
                return Ok(Some(*e));
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
