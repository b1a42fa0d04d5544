//! The private request/response protocol between the simulated library and the stand-in host
//! engine (`dcgm-sim-hostengine`), and the in-process form of the same calls: every DCGM call
//! the library implements is one [`Request`] answered by one [`Response`]. On a socket each
//! message is a 4-byte big-endian length and that many bytes of JSON, at most [`MAX_MESSAGE`].
//!
//! Owns the message types and their framing only; it must not know about sockets' lifetimes,
//! handles or the C ABI.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

/// Largest message either side sends or accepts, bytes.
pub const MAX_MESSAGE: usize = 8 << 20;

/// An entity: a `DCGM_FE_*` group and DCGM's id within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Entity {
    pub group: u32,
    pub id: u32,
}

/// One DCGM call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    HostengineVersion,
    Devices,
    /// `dcgmGetEntityGroupEntities`: the ids of one entity group (`DCGM_FE_*`).
    EntityGroupEntities {
        group: u32,
    },
    Attributes {
        gpu: u32,
    },
    Hierarchy,
    GroupCreate {
        kind: u32,
        name: String,
    },
    GroupAdd {
        group: u64,
        entity: Entity,
    },
    GroupDestroy {
        group: u64,
    },
    FieldGroupCreate {
        fields: Vec<u16>,
        name: String,
    },
    FieldGroupDestroy {
        id: u64,
    },
    Watch {
        group: u64,
        field_group: u64,
        freq_us: i64,
        keep_age_s: f64,
        keep_samples: i32,
    },
    Unwatch {
        group: u64,
        field_group: u64,
    },
    UpdateAll,
    Latest {
        entities: Vec<Entity>,
        fields: Vec<u16>,
    },
    MetricGroups {
        gpu: u32,
    },
    /// `dcgmHealthSet`: the `dcgmHealthSystems_t` mask a group watches.
    HealthSet {
        group: u64,
        systems: u32,
    },
    HealthGet {
        group: u64,
    },
    HealthCheck {
        group: u64,
    },
    /// `dcgmGetNvLinkLinkStatus`: the NVSwitches' port states.
    NvLinkStatus,
    /// Not a DCGM call: what the host engine holds for its clients, for tests that look for
    /// leaks through the socket (the library never sends it).
    Census,
}

/// One health incident (`dcgmIncidentInfo_t`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    pub system: u32,
    pub health: u32,
    pub code: u32,
    pub message: String,
    pub entity: Entity,
}

/// What a GPU's attributes carry.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Attributes {
    pub name: String,
    pub brand: String,
    pub uuid: String,
    pub serial: String,
    pub pci_bus_id: String,
    pub vbios: String,
    pub inforom: String,
    pub pci_device_id: u32,
    pub pci_subsystem_id: u32,
    pub driver_version: String,
    pub mig_enabled: bool,
    pub fb_total_mib: u32,
    pub fb_used_mib: u32,
    pub fb_free_mib: u32,
    pub bar1_mib: u32,
    pub power_limit_w: u32,
    pub default_power_limit_w: u32,
    pub slowdown_c: u32,
}

/// One MIG entity of the hierarchy.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MigEntry {
    pub entity: Entity,
    pub parent: Entity,
    pub gpu_uuid: String,
    pub gpu_index: u32,
    pub instance_id: u32,
    pub compute_instance_id: u32,
    pub profile_id: u32,
    pub slices: u32,
}

/// A value as DCGM hands it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Val {
    Int(i64),
    Dbl(f64),
    Str(String),
}

/// One entity × field answer: per-value status, timestamp (µs since 1970), value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Value {
    pub entity: Entity,
    pub field: u16,
    pub status: i32,
    pub ts: i64,
    pub val: Val,
}

/// A successful answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Reply {
    Done,
    Version(String),
    Devices(Vec<u32>),
    Attributes(Box<Attributes>),
    Hierarchy(Vec<MigEntry>),
    Id(u64),
    Values(Vec<Value>),
    MetricGroups(Vec<crate::prof::MetricGroup>),
    /// `dcgmHealthGet`'s mask.
    Systems(u32),
    /// `dcgmHealthCheck`: the overall result and the incidents.
    Health(u32, Vec<Incident>),
    /// `dcgmGetNvLinkLinkStatus`: each switch's id and its ports' `dcgmNvLinkLinkState_t`.
    LinkStatus(Vec<(u32, Vec<u32>)>),
    /// `Census`: the host engine's live entity groups, field groups and watched (entity,
    /// field) pairs.
    Census {
        groups: usize,
        field_groups: usize,
        watches: usize,
    },
}

/// The answer to a request: a reply or a `DCGM_ST_*` code.
pub type Response = Result<Reply, i32>;

/// Writes one framed message.
pub fn send<T: Serialize>(w: &mut impl Write, msg: &T) -> std::io::Result<()> {
    let body = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    if body.len() > MAX_MESSAGE {
        return Err(std::io::Error::other(format!(
            "message of {} bytes is over the {MAX_MESSAGE}-byte limit",
            body.len()
        )));
    }
    let len = u32::try_from(body.len()).map_err(std::io::Error::other)?;
    w.write_all(&len.to_be_bytes())?;
    w.write_all(&body)?;
    w.flush()
}

/// Reads one framed message (an oversized length is refused before anything is allocated).
pub fn recv<T: for<'de> Deserialize<'de>>(r: &mut impl Read) -> std::io::Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_MESSAGE {
        return Err(std::io::Error::other(format!(
            "peer announced a {len}-byte message, over the {MAX_MESSAGE}-byte limit"
        )));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(std::io::Error::other)
}
