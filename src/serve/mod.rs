//! The HTTP server: `/metrics`, `/health`, `/ready`, the landing page `/` and its JSON form
//! `/status` (both from [`status`], built from the last published snapshot at most once per tick
//! and cached, `pages`).
//!
//! By concern: the handlers and the router ([`app`], `handlers`); the accept loop, bounds and
//! shutdown ([`serve`], `server`, with `conns`, `deadline`, `held`, `listener`, `pinned`); the
//! server's own self-metric counters ([`ServeCounts`], `counts`); the server side of a TLS
//! connection's start (`handshake`) and what a web config adds to the router ([`protect()`],
//! `protect`; [`crate::serve::web_config`] parses it, its TLS policy included); the listen
//! address (`address`). [`watchdog`] logs a stalled sampler. This module only declares them and re-exports their public items; it
//! must not hold code of its own.

pub mod address;
mod conns;
mod counts;
mod deadline;
mod handlers;
mod handshake;
mod held;
pub mod landing;
mod listener;
mod pages;
mod pinned;
mod protect;
mod server;
pub mod status;
pub mod web_config;

pub use counts::ServeCounts;
pub use handlers::{
    CONTENT_TYPE, DEFAULT_MAX_CONCURRENT_SCRAPES, ServeOptions, accepts_gzip, app, app_with,
    watchdog,
};
pub use listener::{Listener, with_nodelay};
pub use protect::{UNAUTHENTICATED_PATHS, protect};
pub use server::{Limits, SHUTDOWN_DRAIN, SHUTDOWN_GRACE, ServeError, bind, serve};
