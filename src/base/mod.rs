//! Leaves shared by every layer: the clock, Go durations, the version, file change stamps, label text, the
//! retry backoff, a log that speaks once per cause, the process's own figures, bounded reads of operator-given files, how
//! operator-given text (paths, keys) is shown in messages, and reading the YAML files an operator writes.
//!
//! Nothing here knows about NVML, Kubernetes, the exposition or HTTP, and no module in
//! `base` imports any other module of the crate outside `base`.

pub mod backoff;
pub mod bounded_read;
pub mod cause_log;
pub mod clock;
pub mod duration;
pub mod file_stamp;
pub mod label_text;
pub mod process;
pub mod shown;
pub mod version;
pub mod yaml;
