//! The node's diagnosis as one value: the types `/status` serializes and the landing page
//! (`landing.rs`) renders ([`NodeStatus`] and its parts, in `display`), and [`build`], which
//! derives them from the last published snapshot (`derive`).
//!
//! Declarations and re-exports only; what each part owns and must not do is in its header.

mod derive;
mod display;

pub use derive::build;
pub use display::{
    Cause, CountersStatus, CurrentValues, DcgmSource, FieldErrors, GpuStatus, InstanceStatus,
    Missing, NodeStatus, ProcessStatus, ShownHealth, SourceStatus, UnavailableField,
    UnsupportedField, WithheldField,
};
