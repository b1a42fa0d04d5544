//! Flap damping: a reason, once seen, stays in the verdict until its cause has been gone for
//! the hold time (`--health-hold`), so that a GPU whose fault comes and goes does not flip
//! between `ok` and `critical` every tick, and a one-off event (an Xid) is shown for that long.
//!
//! Owns the state kept between ticks: per GPU and reason (and Xid code and MIG GPU instance,
//! so that each instance's application Xid is held on its own), when the episode
//! began, when the cause was last seen, and the last words about it. It must not decide what
//! is wrong (`rules` does) or read the snapshot.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::snapshot::{ActiveReason, Reason};

/// A GPU (by UUID, or `#<index>` before its UUID was read), a reason, an Xid code.
type Key = (String, Reason, Option<u64>, Option<u32>);

/// The reasons held per GPU.
#[derive(Debug, Default)]
pub struct Damper {
    held: HashMap<Key, ActiveReason>,
}

impl Damper {
    /// Records this tick's observations of `gpu` at `now` (the rules' reasons, each seen at
    /// its `last_seen_unix`), and returns the reasons that are present or held (their cause
    /// gone for less than `hold` seconds), worst first. A reason already held keeps the start
    /// of its episode and takes the observation's severity, action and words.
    pub fn update(
        &mut self,
        gpu: &str,
        observed: Vec<ActiveReason>,
        now: f64,
        hold: f64,
    ) -> Vec<ActiveReason> {
        let mut seen = Vec::with_capacity(observed.len());
        for o in observed {
            let key = (gpu.to_owned(), o.reason, o.xid, o.gpu_instance_id);
            seen.push(key.clone());
            match self.held.entry(key) {
                Entry::Vacant(v) => {
                    v.insert(o);
                }
                Entry::Occupied(mut held) => {
                    let r = held.get_mut();
                    r.severity = o.severity;
                    r.action = o.action;
                    r.message = o.message;
                    r.last_seen_unix = r.last_seen_unix.max(o.last_seen_unix);
                }
            }
        }
        let mut out = Vec::new();
        self.held.retain(|k, r| {
            if k.0 != gpu {
                return true;
            }
            r.present = seen.contains(k) && now - r.last_seen_unix < hold;
            let keep = r.present || now - r.last_seen_unix < hold;
            if keep {
                out.push(r.clone());
            }
            keep
        });
        out.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then(a.reason.cmp(&b.reason))
                .then(a.xid.cmp(&b.xid))
                .then(a.gpu_instance_id.cmp(&b.gpu_instance_id))
        });
        out
    }

    /// Forgets the GPUs not in `gpus` (no longer enumerated).
    pub fn keep_only(&mut self, gpus: &[String]) {
        self.held.retain(|k, _| gpus.contains(&k.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Action, Verdict};

    fn obs(reason: Reason, at: f64) -> ActiveReason {
        ActiveReason {
            reason,
            severity: Verdict::Warning,
            xid: None,
            gpu_instance_id: None,
            message: "m".into(),
            action: Action::Watch,
            since_unix: at,
            last_seen_unix: at,
            present: true,
        }
    }

    #[test]
    fn a_reason_clears_only_after_its_cause_is_gone_for_the_hold_time() {
        let mut d = Damper::default();
        let hold = 10.0;
        let r = d.update("GPU-0", vec![obs(Reason::PowerBrake, 0.0)], 0.0, hold);
        assert_eq!(r.len(), 1);
        assert!(r[0].present);
        // The cause flaps off and on: the reason stays, the episode keeps its start.
        let r = d.update("GPU-0", vec![], 5.0, hold);
        assert!(!r[0].present, "held, not present");
        let r = d.update("GPU-0", vec![obs(Reason::PowerBrake, 8.0)], 8.0, hold);
        assert_eq!((r[0].since_unix, r[0].last_seen_unix), (0.0, 8.0));
        // Gone from 8 s: still held at 17.9 s, cleared at 18 s.
        assert_eq!(d.update("GPU-0", vec![], 17.9, hold).len(), 1);
        assert!(d.update("GPU-0", vec![], 18.0, hold).is_empty());
        // A new episode starts afresh.
        let r = d.update("GPU-0", vec![obs(Reason::PowerBrake, 30.0)], 30.0, hold);
        assert_eq!(r[0].since_unix, 30.0);
    }

    #[test]
    fn gpus_are_held_apart_and_forgotten_when_gone() {
        let mut d = Damper::default();
        d.update("GPU-0", vec![obs(Reason::NvlinkDown, 0.0)], 0.0, 10.0);
        assert!(d.update("GPU-1", vec![], 1.0, 10.0).is_empty());
        assert_eq!(d.update("GPU-0", vec![], 1.0, 10.0).len(), 1);
        d.keep_only(&["GPU-1".to_owned()]);
        assert!(d.update("GPU-0", vec![], 2.0, 10.0).is_empty());
    }

    #[test]
    fn worst_first() {
        let mut d = Damper::default();
        let mut crit = obs(Reason::EccDbe, 0.0);
        crit.severity = Verdict::Critical;
        let r = d.update("g", vec![obs(Reason::NvlinkDown, 0.0), crit], 0.0, 10.0);
        assert_eq!(r[0].reason, Reason::EccDbe);
    }
}
