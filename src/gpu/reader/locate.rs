//! Which GPU is at which NVML index this tick, decided by UUID, never by a cached index.
//!
//! [`Gpus::locate`] asks NVML each index's handle and UUID (and, while an index does not
//! answer, the GPUs known from earlier ticks by their PCI bus id); the rest is a pure decision
//! over those answers. It reads identities only, never field values.
//!
//! NVML's indices are dense and follow the PCI bus order of the GPUs enumerated now: while a
//! GPU is unbound every GPU after it moves down one index, and a lost GPU (fallen off the bus)
//! keeps its index but answers nothing, not even its UUID. So an index that answers with a UUID
//! names that GPU (a *verified* place), and an index that does not answer is given a name only
//! when exactly one GPU fits it: a GPU that answered at a verified place on an earlier tick,
//! does not answer this tick, is still present (NVML's lookup by its PCI bus id says it is
//! lost, not gone), and whose bus id lies between those of the verified neighbours of the
//! index. An index no GPU fits, or that several fit, names none (an empty UUID): a fault
//! there is never put on another GPU's series, verdict, Node condition or pod.

use std::collections::{BTreeMap, HashMap, HashSet};

use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;
use tracing::{info, warn};

use super::entities::{self, read_ident};
use super::state::GpuState;

/// Every GPU found so far, by UUID (never by NVML index), with what the reader keeps of it.
#[derive(Default)]
pub(super) struct Gpus {
    pub(super) by_uuid: HashMap<String, GpuState>,
    /// The indices warned about as answering no UUID that no known GPU fits.
    warned_unnamed: HashSet<u32>,
}

/// The GPU at one NVML index this tick.
pub(super) enum Located {
    /// It answered with its UUID.
    Up(nvml_wrapper::Device<'static>, String),
    /// It answered no UUID: the GPU [`unanswered_names`] names there (none when no single
    /// known GPU fits), and the step that failed and how.
    Down(Option<String>, &'static str, NvmlError),
}

impl Gpus {
    /// Every enumerated index's handle and UUID, then the GPU each index names: the UUID it
    /// answered with, or for one that did not answer the one GPU that fits it
    /// ([`unanswered_names`]). The state of every GPU found is kept under its UUID;
    /// that of a GPU found nowhere (unbound, gone) is forgotten.
    pub(super) fn locate(&mut self, nvml: &'static Nvml, count: u32) -> Vec<(u32, Located)> {
        let mut found: Vec<(u32, Located)> = Vec::with_capacity(count as usize);
        for index in 0..count {
            let answer = nvml
                .device_by_index(index)
                .map_err(|e| ("device_handle", e))
                .and_then(|dev| match dev.uuid() {
                    Ok(uuid) => Ok((dev, uuid)),
                    Err(e) => Err(("device_identity", e)),
                });
            let located = match answer {
                Ok((dev, uuid)) => match self.verified(&dev, &uuid) {
                    Ok(()) => Located::Up(dev, uuid),
                    Err(e) => Located::Down(None, "device_identity", e),
                },
                Err((step, e)) => Located::Down(None, step, e),
            };
            found.push((index, located));
        }
        // Most ticks every index answers: nothing more to ask or decide.
        let (names, maybe_present) = if found.iter().any(|(_, l)| matches!(l, Located::Down(..))) {
            self.name_unanswered(nvml, &found)
        } else {
            (BTreeMap::new(), Vec::new())
        };
        for (index, located) in &mut found {
            if let Located::Down(name, ..) = located {
                *name = names.get(index).cloned();
                if name.is_none() && self.warned_unnamed.insert(*index) {
                    warn!(
                        gpu = *index,
                        "NVML index {index} answers no UUID and no GPU seen before fits it \
                         (lost before it was ever read, or several could be there): it is \
                         reported with no UUID, and no GPU's series, verdict or pods take \
                         its fault"
                    );
                }
            }
        }
        self.warned_unnamed.retain(|i| {
            found
                .iter()
                .any(|(j, l)| j == i && matches!(l, Located::Down(None, ..)))
        });
        // Keep the state of every GPU found; a GPU that may still be present (its bus lookup
        // could not tell) is kept too, so that it can be named on a later tick.
        let mut keep: HashSet<String> = found
            .iter()
            .filter_map(|(_, l)| match l {
                Located::Up(_, uuid) | Located::Down(Some(uuid), ..) => Some(uuid.clone()),
                Located::Down(None, ..) => None,
            })
            .collect();
        keep.extend(maybe_present);
        self.by_uuid.retain(|uuid, _| keep.contains(uuid));
        for (index, located) in &found {
            let uuid = match located {
                Located::Up(_, uuid) | Located::Down(Some(uuid), ..) => uuid,
                Located::Down(None, ..) => continue,
            };
            if let Some(g) = self.by_uuid.get_mut(uuid) {
                if let Some(was) = g.index.filter(|was| was != index) {
                    info!(
                        uuid = %uuid,
                        was,
                        now = *index,
                        "the GPU is at another NVML index (one before it unbound or bound \
                         again); its series carry the new index from this tick"
                    );
                }
                g.index = Some(*index);
            }
        }
        found
    }

    /// For the indices of `found` that answered no UUID, the GPU each is named by
    /// ([`unanswered_names`]), after asking NVML by bus id about every known GPU that did not
    /// answer; and those of them that may still be present (lost, or the lookup could not
    /// tell), whose state is kept so that they can be named on a later tick.
    fn name_unanswered(
        &self,
        nvml: &'static Nvml,
        found: &[(u32, Located)],
    ) -> (BTreeMap<u32, String>, Vec<String>) {
        let seen: Vec<(u32, Seen)> = found
            .iter()
            .map(|(i, l)| match l {
                Located::Up(_, uuid) => (*i, Seen::Verified(uuid.clone())),
                Located::Down(..) => (*i, Seen::Unanswered),
            })
            .collect();
        let bus_of: HashMap<String, String> = self
            .by_uuid
            .iter()
            .map(|(u, g)| (u.clone(), g.ident.pci_bus_id.clone()))
            .collect();
        let answered: HashSet<&str> = seen
            .iter()
            .filter_map(|(_, s)| match s {
                Seen::Verified(u) => Some(u.as_str()),
                Seen::Unanswered => None,
            })
            .collect();
        let known: Vec<(String, ByBus)> = self
            .by_uuid
            .iter()
            .filter(|(u, _)| !answered.contains(u.as_str()))
            .map(|(uuid, g)| {
                let said = match nvml.device_by_pci_bus_id(g.ident.pci_bus_id.as_str()) {
                    Err(NvmlError::GpuLost) => ByBus::Lost,
                    Err(NvmlError::NotFound | NvmlError::InvalidArg) => ByBus::Elsewhere,
                    Err(_) => ByBus::Unknown,
                    Ok(dev) => match dev.uuid() {
                        Ok(_) => ByBus::Elsewhere,
                        Err(NvmlError::GpuLost) => ByBus::Lost,
                        Err(_) => ByBus::Unknown,
                    },
                };
                (uuid.clone(), said)
            })
            .collect();
        let names = unanswered_names(&seen, &bus_of, &known);
        let maybe_present = known
            .into_iter()
            .filter(|(_, said)| *said != ByBus::Elsewhere)
            .map(|(uuid, _)| uuid)
            .collect();
        (names, maybe_present)
    }

    /// Records that the GPU behind `dev` answered with `uuid` this tick: its identity is read
    /// once (its minor number every tick), under its UUID.
    fn verified(
        &mut self,
        dev: &nvml_wrapper::Device<'static>,
        uuid: &str,
    ) -> Result<(), NvmlError> {
        match self.by_uuid.get_mut(uuid) {
            Some(g) => {
                g.ident.minor = entities::minor(dev)?;
            }
            None => {
                let ident = read_ident(dev, uuid.to_owned())?;
                self.by_uuid.insert(uuid.to_owned(), GpuState::new(ident));
            }
        }
        Ok(())
    }
}

/// What the handle at one index answered this tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seen {
    /// The handle answered with this UUID.
    Verified(String),
    /// No UUID could be had (the GPU is lost, or the lookup failed).
    Unanswered,
}

/// What NVML's lookup by PCI bus id says of a GPU known from an earlier tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ByBus {
    /// Present but lost (`GPU_IS_LOST`): it may be at an unanswered index.
    Lost,
    /// Not enumerated (unbound, removed) or answering: it is at no unanswered index.
    Elsewhere,
    /// The lookup failed otherwise: it may be at an unanswered index.
    Unknown,
}

/// The UUID of the GPU at each unanswered index, where exactly one known GPU fits it (see the
/// module docs). `seen` is every index enumerated this tick, in order; `bus_of` the PCI bus
/// id of each UUID known (verified this tick or earlier); `known` the UUIDs of GPUs known from
/// earlier ticks with what the lookup by bus id said of each.
pub(super) fn unanswered_names(
    seen: &[(u32, Seen)],
    bus_of: &HashMap<String, String>,
    known: &[(String, ByBus)],
) -> BTreeMap<u32, String> {
    let verified: HashSet<&str> = seen
        .iter()
        .filter_map(|(_, s)| match s {
            Seen::Verified(u) => Some(u.as_str()),
            Seen::Unanswered => None,
        })
        .collect();
    // Known GPUs that do not answer this tick and may still be present.
    // (bus key, UUID), in bus order; a GPU whose bus id is not known cannot be placed.
    let mut candidates: Vec<(String, &str)> = known
        .iter()
        .filter(|(u, by_bus)| !verified.contains(u.as_str()) && *by_bus != ByBus::Elsewhere)
        .filter_map(|(u, _)| Some((bus_key(bus_of.get(u)?), u.as_str())))
        .collect();
    candidates.sort();
    let bus = |i: usize| -> Option<String> {
        match &seen[i].1 {
            Seen::Verified(u) => bus_of.get(u).map(|b| bus_key(b)),
            Seen::Unanswered => None,
        }
    };
    // For each unanswered index, the candidates whose bus id lies between the nearest
    // verified neighbours' (a neighbour whose bus id is not known bounds nothing).
    let mut fits: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for (pos, (index, s)) in seen.iter().enumerate() {
        if *s != Seen::Unanswered {
            continue;
        }
        let below = (0..pos).rev().find_map(bus);
        let above = (pos + 1..seen.len()).find_map(bus);
        let here: Vec<&str> = candidates
            .iter()
            .filter(|(b, _)| {
                below.as_ref().is_none_or(|lo| lo < b) && above.as_ref().is_none_or(|hi| b < hi)
            })
            .map(|(_, u)| *u)
            .collect();
        fits.insert(*index, here);
    }
    // As many candidates as unanswered indices, each in bus order fitting its index: NVML's
    // order decides them all (two lost GPUs side by side, which bounds alone cannot tell).
    if fits.len() == candidates.len() {
        let paired: Option<BTreeMap<u32, String>> = fits
            .iter()
            .zip(&candidates)
            .map(|((i, here), (_, u))| here.contains(u).then(|| (*i, (*u).to_owned())))
            .collect();
        if let Some(all) = paired {
            return all;
        }
    }
    // Otherwise an index is named only by a candidate that fits it and no other index.
    let mut fitted: HashMap<&str, usize> = HashMap::new();
    for u in fits.values().flatten() {
        *fitted.entry(u).or_default() += 1;
    }
    fits.into_iter()
        .filter_map(|(i, here)| match here.as_slice() {
            [one] if fitted.get(one) == Some(&1) => Some((i, (*one).to_owned())),
            _ => None,
        })
        .collect()
}

/// A bus id in one spelling (NVML gives upper-case hex with an 8-digit domain; a legacy
/// 4-digit domain or lower case sorts the same way once normalised).
fn bus_key(bus_id: &str) -> String {
    let lower = bus_id.trim().to_ascii_lowercase();
    match lower.split_once(':') {
        Some((domain, rest)) => format!("{:0>8}:{rest}", domain.trim_start_matches("0x")),
        None => lower,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four GPUs on buses 18, 2a, 3a, 5d, known from an earlier tick.
    fn four() -> Vec<(String, String)> {
        ["18", "2a", "3a", "5d"]
            .iter()
            .enumerate()
            .map(|(i, b)| {
                (
                    format!("GPU-{i}"),
                    format!("00000000:{}:00.0", b.to_uppercase()),
                )
            })
            .collect()
    }

    fn run(seen: &[(u32, Seen)], by_bus: &[ByBus]) -> BTreeMap<u32, String> {
        let gpus = four();
        let bus_of: HashMap<String, String> = gpus.iter().cloned().collect();
        let known: Vec<(String, ByBus)> = gpus
            .iter()
            .zip(by_bus)
            .map(|((u, _), s)| (u.clone(), *s))
            .collect();
        unanswered_names(seen, &bus_of, &known)
    }

    fn v(u: &str) -> Seen {
        Seen::Verified(u.into())
    }

    use ByBus::{Elsewhere, Lost, Unknown};
    use Seen::Unanswered;

    #[test]
    fn a_lost_gpu_keeps_its_name_at_its_index() {
        let seen = [
            (0, v("GPU-0")),
            (1, v("GPU-1")),
            (2, Unanswered),
            (3, v("GPU-3")),
        ];
        let got = run(&seen, &[Elsewhere, Elsewhere, Lost, Elsewhere]);
        assert_eq!(got, BTreeMap::from([(2, "GPU-2".into())]));
    }

    #[test]
    fn a_lost_gpu_after_an_unbound_one_is_named_at_its_shifted_index() {
        // GPU 0 unbound: GPU 1 answers at 0, the lost GPU 2 sits at 1, GPU 3 at 2. The
        // healthy GPU 1, last verified at index 1, is never named there.
        let seen = [(0, v("GPU-1")), (1, Unanswered), (2, v("GPU-3"))];
        let got = run(&seen, &[Elsewhere, Elsewhere, Lost, Elsewhere]);
        assert_eq!(got, BTreeMap::from([(1, "GPU-2".into())]));
        // The same with a driver whose lookup by bus id cannot tell: the neighbours decide.
        let got = run(&seen, &[Unknown, Unknown, Unknown, Unknown]);
        assert_eq!(got, BTreeMap::from([(1, "GPU-2".into())]));
    }

    #[test]
    fn two_lost_gpus_side_by_side_are_named_in_bus_order() {
        let seen = [
            (0, v("GPU-0")),
            (1, Unanswered),
            (2, Unanswered),
            (3, v("GPU-3")),
        ];
        let got = run(&seen, &[Elsewhere, Lost, Lost, Elsewhere]);
        assert_eq!(
            got,
            BTreeMap::from([(1, "GPU-1".into()), (2, "GPU-2".into())])
        );
    }

    #[test]
    fn an_index_that_several_gpus_fit_names_none() {
        // GPU 1 and GPU 2 unknown to the bus lookup, only one unanswered index between GPU 0
        // and GPU 3: either may be there (the other unbound), so neither is named.
        let seen = [(0, v("GPU-0")), (1, Unanswered), (2, v("GPU-3"))];
        let got = run(&seen, &[Elsewhere, Unknown, Unknown, Elsewhere]);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn a_gpu_lost_before_it_was_ever_seen_names_none() {
        let seen = [(0, v("GPU-0")), (1, Unanswered)];
        let got = run(&seen, &[Elsewhere, Elsewhere, Elsewhere, Elsewhere]);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn a_gpu_outside_its_neighbours_bus_range_is_not_named_there() {
        // GPU 3 is lost but its bus (5d) is above GPU 2's (3a), so it cannot be at index 1.
        let seen = [(0, v("GPU-0")), (1, Unanswered), (2, v("GPU-2"))];
        let got = run(&seen, &[Elsewhere, Elsewhere, Elsewhere, Lost]);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn bus_ids_compare_in_one_spelling() {
        assert_eq!(bus_key("0000:2A:00.0"), bus_key("00000000:2a:00.0"));
        assert!(bus_key("00000000:18:00.0") < bus_key("00000000:2A:00.0"));
    }
}
