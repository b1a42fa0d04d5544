//! The NVSwitch chips of a session: which switches the hostengine lists
//! (`dcgmGetEntityGroupEntities(DCGM_FE_SWITCH)`) and which of their ports are up
//! (`dcgmGetNvLinkLinkStatus`, each port a `DCGM_FE_LINK` entity); a [`SwitchWatch`] is one
//! group of such entities (the switches, or the up ports) with its fields watched in field
//! groups of their own (one per collection interval), and each tick's latest values, keyed by
//! DCGM's entity id (a switch's id, or a port's packed link id); and [`number`], how any
//! latest value becomes a number (the session's reads use it too). Only the switches and ports
//! `-s/--switch-devices` chooses are watched; what it names that DCGM does not list is put in
//! words. Switches and ports are listed at connection and again every [`RELIST`]; a change
//! remakes the watches on what is listed then.
//!
//! Runs on the DCGM thread only, through the session that owns the handle. It must not log
//! or wait on anything but DCGM.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use dcgm_abi::{
    DCGM_FE_LINK, DCGM_FE_SWITCH, DCGM_FT_DOUBLE, DCGM_FT_INT64, DCGM_FT_STRING,
    DCGM_MAX_NUM_SWITCHES, DCGM_ST_OK, DcgmNvLinkLinkStateUp, Zeroed, c_text, dcgmFieldValue_v2,
    dcgmGroupEntityPair_t, dcgmHandle_t, dcgmNvLinkStatus_v5, dcgmNvLinkStatus_version5,
    fp64_is_blank, int64_is_blank, link_id,
};

use super::health::Failed;
use super::library::Api;
use super::objects::{Objects, lost};
use crate::gpu::switch_selection::SwitchSelection;

/// The most switches asked for at once: DCGM's `DCGM_MAX_NUM_SWITCHES` (12 in DCGM 4.6's
/// `dcgm_structs.h`; its NVLink status has room for no more).
pub const MAX_SWITCHES: usize = DCGM_MAX_NUM_SWITCHES;

/// The most values one `dcgmEntitiesGetLatestValues` call asks for (each is a 4 KiB
/// `dcgmFieldValue_v2`): the ports' reads are split into calls of at most this many.
const VALUES_PER_CALL: usize = 256;

/// Field ids, each with its collection interval.
pub type Fields<'a> = &'a [(u16, Duration)];

/// Each entity's values, by DCGM entity id (a switch's id, or a port's link id).
pub type SwitchValues = Vec<(u32, HashMap<u16, f64>)>;

/// Each switch's string values (for `label` rows), by DCGM entity id.
pub type SwitchTexts = HashMap<u32, HashMap<u16, String>>;

/// The group and field groups of the switches (or of their ports), and what they were made
/// for.
pub struct SwitchWatch {
    /// The fields with their intervals the watches were made for.
    wanted: Vec<(u16, Duration)>,
    /// Its group, field groups and watches.
    objects: Objects,
    /// The fields DCGM watches on the switches.
    watched: Vec<u16>,
    /// Fields DCGM refused, with its reason.
    pub refused: Vec<(u16, String)>,
}

/// The switches the hostengine lists, by DCGM entity id; a refusal other than a lost
/// connection is an empty list.
pub fn list(api: &Api, handle: dcgmHandle_t) -> Result<Result<Vec<u32>, Failed>, Failed> {
    let mut ids = [0u32; MAX_SWITCHES];
    let mut count = MAX_SWITCHES as i32;
    let name = "dcgmGetEntityGroupEntities";
    // SAFETY: `ids` has room for `count` ids, as the call requires.
    let rc = unsafe {
        (api.entity_group_entities)(handle, DCGM_FE_SWITCH, ids.as_mut_ptr(), &mut count, 0)
    };
    lost(name, rc)?;
    if rc != DCGM_ST_OK {
        return Ok(Err((name, rc)));
    }
    let n = usize::try_from(count).unwrap_or(0).min(MAX_SWITCHES);
    Ok(Ok(ids[..n].to_vec()))
}

/// The up ports of the `switches` as `DCGM_FE_LINK` entity ids (`dcgm_link_t`), switch by
/// switch and port by port, as `dcgmGetNvLinkLinkStatus` reports them (dcgm-exporter, too,
/// watches the up links only); a refusal other than a lost connection is an empty list.
pub fn ports(
    api: &Api,
    handle: dcgmHandle_t,
    switches: &[u32],
) -> Result<Result<Vec<u32>, Failed>, Failed> {
    let name = "dcgmGetNvLinkLinkStatus";
    let mut status = dcgmNvLinkStatus_v5::zeroed();
    status.version = dcgmNvLinkStatus_version5;
    // SAFETY: a zeroed struct with its version word, as the header asks.
    let rc = unsafe { (api.link_status)(handle, &mut *status) };
    lost(name, rc)?;
    if rc != DCGM_ST_OK {
        return Ok(Err((name, rc)));
    }
    let n = usize::try_from(status.numNvSwitches)
        .unwrap_or(0)
        .min(MAX_SWITCHES);
    let mut out = Vec::new();
    for sw in status.nvSwitches.iter().take(n) {
        if !switches.contains(&sw.entityId) {
            continue;
        }
        for (port, state) in sw.linkState.iter().enumerate() {
            if *state == DcgmNvLinkLinkStateUp {
                out.push(link_id(DCGM_FE_SWITCH, sw.entityId, port as u32));
            }
        }
    }
    Ok(Ok(out))
}

/// The DCGM pairs of the entities `ids` of entity group `group` (`DCGM_FE_SWITCH` for switch
/// ids, `DCGM_FE_LINK` for ports' link ids).
fn pairs(group: u32, ids: &[u32]) -> Vec<dcgmGroupEntityPair_t> {
    ids.iter()
        .map(|id| dcgmGroupEntityPair_t {
            entityGroupId: group,
            entityId: *id,
        })
        .collect()
}

/// How often the switches and their ports' states are listed again: a switch that comes or
/// goes, or a port that goes down or comes back, is seen within this time.
pub const RELIST: Duration = Duration::from_secs(10);

/// The switches a session listed, their up ports, and the watches on each.
pub struct Switches {
    /// What `-s/--switch-devices` chose, for the listings after the first.
    sel: SwitchSelection,
    /// When they were last listed (`None`: never).
    listed_at: Option<Instant>,
    /// The switches the hostengine listed, or why it listed none.
    ids: Result<Vec<u32>, SwitchError>,
    /// The up ports of those switches (link entity ids), or why DCGM gave no port states.
    ports: Result<Vec<u32>, SwitchError>,
    switch_watch: Option<SwitchWatch>,
    port_watch: Option<SwitchWatch>,
    /// What `-s/--switch-devices` names that the hostengine does not list, in words.
    pub note: Option<String>,
}

impl Default for Switches {
    /// None listed yet.
    fn default() -> Self {
        Self {
            sel: SwitchSelection::default(),
            listed_at: None,
            ids: Ok(Vec::new()),
            ports: Ok(Vec::new()),
            switch_watch: None,
            port_watch: None,
            note: None,
        }
    }
}

/// Ids as a short list (`0, 1, 2`).
fn id_list(ids: &[u32]) -> String {
    let shown: Vec<String> = ids.iter().map(u32::to_string).collect();
    shown.join(", ")
}

/// What `sel` names that DCGM does not list: switches not in `ids`, ports no chosen switch
/// has up among `up` ((switch, port) pairs); `None` when everything named is there.
fn selection_note(sel: &SwitchSelection, ids: &[u32], up: &[(u32, u32)]) -> Option<String> {
    const MAX: usize = 16;
    let mut parts = Vec::new();
    let switches = sel.switches_missing(ids, MAX);
    if !switches.is_empty() {
        parts.push(format!(
            "NVSwitch {}, which the DCGM hostengine does not list (it lists {})",
            id_list(&switches),
            if ids.is_empty() {
                "none".to_owned()
            } else {
                id_list(ids)
            }
        ));
    }
    let ports = sel.ports_missing(up, MAX);
    if !ports.is_empty() {
        let most = up.iter().map(|(_, p)| *p).max();
        parts.push(format!(
            "port {}, which no chosen NVSwitch has up ({})",
            id_list(&ports),
            most.map_or("none is up".to_owned(), |m| format!(
                "up ports are numbered 0 to {m}"
            ))
        ));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "-s/--switch-devices names {}: nothing is exported for them",
            parts.join("; and ")
        )
    })
}

/// What one tick read of the switches.
#[derive(Debug, Default, Clone)]
pub struct SwitchReading {
    /// The switch-level values per listed switch when switch or port fields are wanted, or
    /// why DCGM lists no switch.
    pub switches: Option<Result<SwitchValues, SwitchError>>,
    /// The per-port values per up port (link entity id), when port fields are wanted.
    pub ports: SwitchValues,
    /// Each switch's string values (the `label` rows' fields).
    pub texts: SwitchTexts,
    /// Switch and port fields DCGM refused to watch, with its reason.
    pub refused: Vec<(u16, String)>,
    /// What `-s/--switch-devices` names that the hostengine does not list, when switch or
    /// port fields are wanted.
    pub note: Option<String>,
    /// What is listed, in words (switches and up ports), when switch or port fields are
    /// wanted.
    pub listing: Option<String>,
}

/// Why DCGM lists no switch or no port state: a call it refused on a connection that still
/// works (a lost connection is a [`Failed`] that ends the read instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// The listing call returned an error code.
    #[error("{call}: {text}")]
    Refused {
        /// The DCGM function.
        call: &'static str,
        /// Its return code.
        rc: i32,
        /// DCGM's words for it, with the code.
        text: String,
    },
}

/// DCGM's words for a failed call.
fn failed(api: &Api, (call, rc): Failed) -> SwitchError {
    SwitchError::Refused {
        call,
        rc,
        text: api.describe(rc),
    }
}

impl Switches {
    /// Lists the switches and their up ports that `sel` (`-s/--switch-devices`) chooses, and
    /// what it names that is not there; a lost connection is an error, any other refusal is
    /// kept as the reason there are none.
    pub fn list(api: &Api, handle: dcgmHandle_t, sel: &SwitchSelection) -> Result<Self, Failed> {
        let all = list(api, handle)?.map_err(|f| failed(api, f));
        let all_ports = match &all {
            Ok(ids) if !ids.is_empty() => ports(api, handle, ids)?.map_err(|f| failed(api, f)),
            _ => Ok(Vec::new()),
        };
        let up: Vec<(u32, u32)> = all_ports
            .iter()
            .flatten()
            .map(|l| dcgm_abi::link_parts(*l))
            .map(|(_, s, p)| (s, p))
            .collect();
        let note = match &all {
            Ok(ids) if !sel.is_all() => selection_note(sel, ids, &up),
            _ => None,
        };
        let ids = all.map(|ids| ids.into_iter().filter(|s| sel.wants_switch(*s)).collect());
        let ports = all_ports.map(|links| {
            let wanted = |l: &u32| {
                let (_, s, p) = dcgm_abi::link_parts(*l);
                sel.wants_port(s, p)
            };
            links.into_iter().filter(wanted).collect()
        });
        Ok(Self {
            sel: sel.clone(),
            listed_at: Some(Instant::now()),
            ids,
            ports,
            note,
            ..Self::default()
        })
    }

    /// None listed yet, to be listed for `sel` at the next read.
    pub fn unlisted(sel: &SwitchSelection) -> Self {
        Self {
            sel: sel.clone(),
            ..Self::default()
        }
    }

    /// Lists the switches and ports again when [`RELIST`] has passed since the last
    /// listing; a change drops the watches (the read makes them on what is listed now).
    fn relist(&mut self, api: &Api, handle: dcgmHandle_t) -> Result<(), Failed> {
        if self.listed_at.is_some_and(|at| at.elapsed() < RELIST) {
            return Ok(());
        }
        let new = Self::list(api, handle, &self.sel)?;
        if new.ids != self.ids || new.ports != self.ports {
            self.destroy(api, handle);
            *self = new;
        } else {
            self.listed_at = new.listed_at;
            self.note = new.note;
        }
        Ok(())
    }

    /// What is listed, in words: `4 NVSwitches (0, 1, 2, 3), 144 up ports`.
    fn listing(&self) -> String {
        match (&self.ids, &self.ports) {
            (Err(why), _) => format!("no NVSwitch ({why})"),
            (Ok(ids), ports) => format!(
                "{} NVSwitch{} ({}), {}",
                ids.len(),
                if ids.len() == 1 { "" } else { "es" },
                id_list(ids),
                match ports {
                    Ok(p) => format!("{} up port{}", p.len(), if p.len() == 1 { "" } else { "s" }),
                    Err(why) => format!("no port states ({why})"),
                }
            ),
        }
    }

    /// This tick's values of the wanted switch fields on every listed switch and of the
    /// wanted port fields on every up port (listed again first when [`RELIST`] has passed,
    /// watches made first, again when the fields or the listing changed), with DCGM's cache
    /// `limits`; `switches` is `None` when neither is wanted.
    pub fn read(
        &mut self,
        api: &Api,
        handle: dcgmHandle_t,
        (switch_fields, port_fields): (Fields<'_>, Fields<'_>),
        limits: (Duration, i32),
    ) -> Result<SwitchReading, Failed> {
        for (watch, fields) in [
            (&mut self.switch_watch, switch_fields),
            (&mut self.port_watch, port_fields),
        ] {
            if watch.as_ref().is_some_and(|w| !w.made_for(fields))
                && let Some(w) = watch.take()
            {
                w.destroy(api, handle);
            }
        }
        let mut out = SwitchReading::default();
        if switch_fields.is_empty() && port_fields.is_empty() {
            return Ok(out);
        }
        self.relist(api, handle)?;
        out.note.clone_from(&self.note);
        out.listing = Some(self.listing());
        let ids = match &self.ids {
            Ok(ids) => ids.clone(),
            Err(why) => {
                out.switches = Some(Err(why.clone()));
                return Ok(out);
            }
        };
        let switch_pairs = pairs(DCGM_FE_SWITCH, &ids);
        if !switch_fields.is_empty() && !ids.is_empty() && self.switch_watch.is_none() {
            let what = ("nvswitch", switch_pairs.as_slice());
            self.switch_watch = Some(SwitchWatch::make(api, handle, what, switch_fields, limits)?);
        }
        let values = match &self.switch_watch {
            Some(w) => {
                out.refused.extend(w.refused.iter().cloned());
                let (values, texts) = w.read(api, handle, &switch_pairs)?;
                out.texts = texts;
                values
            }
            None => ids.iter().map(|s| (*s, HashMap::new())).collect(),
        };
        out.switches = Some(Ok(values));
        if port_fields.is_empty() || ids.is_empty() {
            return Ok(out);
        }
        let links = match &self.ports {
            Ok(links) => links.clone(),
            Err(why) => {
                let why = format!("DCGM would not give the NVSwitch ports' states: {why}");
                out.refused
                    .extend(port_fields.iter().map(|(f, _)| (*f, why.clone())));
                return Ok(out);
            }
        };
        let pairs = pairs(DCGM_FE_LINK, &links);
        if self.port_watch.is_none() && !pairs.is_empty() {
            let what = ("nvswitch-port", pairs.as_slice());
            self.port_watch = Some(SwitchWatch::make(api, handle, what, port_fields, limits)?);
        }
        if let Some(w) = &self.port_watch {
            out.refused.extend(w.refused.iter().cloned());
            out.ports = w.read(api, handle, &pairs)?.0;
        }
        Ok(out)
    }

    /// Unwatches the watches and destroys their groups (errors ignored: they go with the
    /// handle).
    pub fn destroy(&mut self, api: &Api, handle: dcgmHandle_t) {
        for w in [self.switch_watch.take(), self.port_watch.take()]
            .into_iter()
            .flatten()
        {
            w.destroy(api, handle);
        }
    }
}

impl SwitchWatch {
    /// Whether the watches were made for `fields`.
    pub fn made_for(&self, fields: &[(u16, Duration)]) -> bool {
        self.wanted == fields
    }

    /// Makes one group of `entities` (switches or ports), named after `what`, and watches
    /// `fields` on it, one field group per interval, with DCGM's cache `limits` (max keep age,
    /// max keep samples). A field group DCGM refuses leaves its fields refused with DCGM's
    /// reason; a lost connection is an error (what was made goes with the session).
    pub fn make(
        api: &Api,
        handle: dcgmHandle_t,
        (what, entities): (&str, &[dcgmGroupEntityPair_t]),
        fields: &[(u16, Duration)],
        limits: (Duration, i32),
    ) -> Result<Self, Failed> {
        let mut w = Self {
            wanted: fields.to_vec(),
            objects: Objects::default(),
            watched: Vec::new(),
            refused: Vec::new(),
        };
        let refuse = |w: &mut Self, fs: &[u16], (name, rc): Failed| {
            let why = format!(
                "DCGM refused the {what} watch: {name}: {}",
                api.describe(rc)
            );
            w.refused.extend(fs.iter().map(|f| (*f, why.clone())));
        };
        let ids: Vec<u16> = fields.iter().map(|(f, _)| *f).collect();
        let grp = match w
            .objects
            .group(api, handle, &format!("gpu-exporter-{what}"), entities)?
        {
            Ok(g) => g,
            Err(refused) => {
                refuse(&mut w, &ids, refused);
                return Ok(w);
            }
        };
        let mut per: BTreeMap<Duration, Vec<u16>> = BTreeMap::new();
        for (f, iv) in fields {
            per.entry(*iv).or_default().push(*f);
        }
        for (iv, fs) in per {
            let name = format!("gpu-exporter-{what}-{}", w.objects.field_group_count());
            match w
                .objects
                .watch(api, handle, grp, (&name, &fs), iv, limits)?
            {
                Ok(()) => w.watched.extend(&fs),
                Err(refused) => refuse(&mut w, &fs, refused),
            }
        }
        w.watched.sort_unstable();
        Ok(w)
    }

    /// This tick's latest values of the watched fields on `entities`, by entity id, numbers
    /// and strings apart (a blank or a failed value is left out), in calls of at most
    /// [`VALUES_PER_CALL`] values.
    pub fn read(
        &self,
        api: &Api,
        handle: dcgmHandle_t,
        entities: &[dcgmGroupEntityPair_t],
    ) -> Result<(SwitchValues, SwitchTexts), Failed> {
        let mut out: SwitchValues = entities
            .iter()
            .map(|e| (e.entityId, HashMap::new()))
            .collect();
        let mut texts = SwitchTexts::new();
        if self.watched.is_empty() || entities.is_empty() {
            return Ok((out, texts));
        }
        let mut fields = self.watched.clone();
        let nf = fields.len();
        let per_call = (VALUES_PER_CALL / nf).max(1);
        for (chunk, got) in entities.chunks(per_call).zip(out.chunks_mut(per_call)) {
            let mut pairs = chunk.to_vec();
            let mut values = vec![dcgmFieldValue_v2::zeroed(); pairs.len() * nf];
            // SAFETY: `values` holds entities × fields entries, as the call fills.
            let rc = unsafe {
                (api.latest)(
                    handle,
                    pairs.as_mut_ptr(),
                    pairs.len() as u32,
                    fields.as_mut_ptr(),
                    nf as u32,
                    0,
                    values.as_mut_ptr(),
                )
            };
            if rc != DCGM_ST_OK {
                return Err(("dcgmEntitiesGetLatestValues", rc));
            }
            for (i, (id, got)) in got.iter_mut().enumerate() {
                for (j, f) in fields.iter().enumerate() {
                    let Some(v) = values.get(i * nf + j) else {
                        continue;
                    };
                    if let Some(n) = number(v) {
                        got.insert(*f, n);
                    } else if let Some(t) = text(v) {
                        texts.entry(*id).or_default().insert(*f, t);
                    }
                }
            }
        }
        Ok((out, texts))
    }

    /// Unwatches the fields and destroys the group and field groups (errors ignored: they go
    /// with the handle).
    pub fn destroy(self, api: &Api, handle: dcgmHandle_t) {
        self.objects.destroy(api, handle);
    }
}

/// One value as a string: `None` for a non-OK status, a blank or not-supported sentinel
/// (`<<<…>>>`), an empty string or a type other than a string.
fn text(v: &dcgmFieldValue_v2) -> Option<String> {
    if v.status != DCGM_ST_OK || v.fieldType != DCGM_FT_STRING {
        return None;
    }
    // SAFETY: the union member read is the one `fieldType` names.
    let t = c_text(unsafe { &v.value.str_ });
    (!t.is_empty() && !t.starts_with("<<<")).then_some(t)
}

/// One value as a number: `None` for a non-OK status, a blank sentinel or a non-numeric type.
pub fn number(v: &dcgmFieldValue_v2) -> Option<f64> {
    if v.status != DCGM_ST_OK {
        return None;
    }
    // SAFETY: the union member read is the one `fieldType` names.
    match v.fieldType {
        DCGM_FT_DOUBLE => {
            let d = unsafe { v.value.dbl };
            (!fp64_is_blank(d)).then_some(d)
        }
        DCGM_FT_INT64 => {
            let i = unsafe { v.value.i64_ };
            (!int64_is_blank(i)).then_some(i as f64)
        }
        _ => None,
    }
}
