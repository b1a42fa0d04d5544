//! The DCGM client: profiling fields (`DCGM_FI_PROF_*`) on GPUs without NVML's GPM, and on
//! their MIG GPU instances, the DCGM-only health checks, and the NVSwitch chips' switch-level
//! fields (NVML shows no switch), from `libdcgm.so.4` loaded at run time.
//!
//! NVML first: the reader (`gpu`) serves every field it can; on a GPU where GPM is not
//! supported it leaves the GPM rows empty when DCGM may serve them, and this module fills them
//! in, entity matched by UUID (and NVML GPU-instance id), in the exposition's units. The modes
//! ([`Mode`]): a standalone hostengine (`remote`, `-r`), an in-process one (`embedded`), or
//! `off`. Every DCGM call runs on one thread that owns the handle ([`client`]); the sampler
//! asks it for each tick's values and waits at most a deadline. Loading is [`library`],
//! the connected handle's calls `session`, the GPUs' watches `watches`, the groups, field groups
//! and watches made on a handle (unwatched and destroyed together) `objects`, the profiling
//! metric groups [`groups`], the health watches (`DCGM_EXP_GPU_HEALTH_STATUS`) `health`, the
//! NVSwitch chips and their switch-level fields `switches`, the settings `options`, which
//! rows DCGM fills and how, and which it should have filled and did not, `select`; DCGM's
//! state over the ticks (connecting, up, down, since when, the last error) `state`.
//!
//! It must not encode, serve, or read NVML; it never sees `Config` (its options are
//! [`DcgmOptions`]).

mod address;
pub mod client;
pub mod groups;
mod health;
pub mod library;
mod objects;
mod options;
mod select;
mod session;
mod state;
mod switches;
mod wanted;
mod watches;

pub use address::{
    DEFAULT_PORT, HostengineAddress, HostengineAddressError, parse_hostengine_address,
};
pub use client::{Client, ClientError, DcgmSupport, Outcome};
pub use options::{
    DEFAULT_MAX_KEEP_AGE, DcgmOptions, LOG_NONE, MAX_DEADLINE, MIN_DEADLINE, Mode, deadline_for,
    parse_log_level,
};
pub use select::{
    merge, merge_health, serves, switch_label_fields, switch_samples, switches_not_served,
    unserved, wanted,
};
pub use session::GpuGroups;
pub use switches::{SwitchTexts, SwitchValues};
pub use wanted::{Target, Wanted};
