//! The stand-in host engine's side of the socket: it listens on TCP or a unix socket, runs one
//! [`Engine`] for every connection (DCGM state is the host engine's, shared by its clients),
//! and answers each framed request. Inside a `hostengine_away` window of the scenario it drops
//! the connections it has and closes new ones at once, as a host engine that went away would.
//!
//! Owns the listener and the connection threads only; DCGM's semantics are `engine`'s. It must
//! not touch the library's process state (`global`).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::engine::Engine;
use crate::proto::{self, Request, Response};

/// Connections served at once; more are closed on arrival.
pub const MAX_CONNECTIONS: usize = 64;
/// How often an idle connection looks at the timeline (to leave in an away window).
const POLL: Duration = Duration::from_millis(100);

/// Where the host engine listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// `--bind-ip ADDR -p PORT`.
    Tcp(String, u16),
    /// `--domain-socket PATH`.
    Unix(PathBuf),
}

/// Why the host engine cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {what}: {source}")]
    Listen {
        what: String,
        source: std::io::Error,
    },
    #[error("--domain-socket {0}: the path exists and is not a socket; not removing it")]
    NotASocket(PathBuf),
}

type Shared = Arc<Mutex<Engine>>;

/// A byte stream both ways with a read timeout.
trait Conn: Read + Write + Send + 'static {
    fn set_timeout(&self, d: Duration) -> std::io::Result<()>;
}
impl Conn for std::net::TcpStream {
    fn set_timeout(&self, d: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(d))
    }
}
impl Conn for std::os::unix::net::UnixStream {
    fn set_timeout(&self, d: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(d))
    }
}

/// Binds `listen`; `ready` is called with the address actually bound (the port chosen for
/// port 0), then connections are served until the process ends.
pub fn serve(engine: Engine, listen: &Listen, ready: impl FnOnce(&str)) -> Result<(), ServerError> {
    let engine: Shared = Arc::new(Mutex::new(engine));
    let active = Arc::new(AtomicUsize::new(0));
    match listen {
        Listen::Tcp(ip, port) => {
            let what = format!("{ip}:{port}");
            let l =
                TcpListener::bind((ip.as_str(), *port)).map_err(|source| ServerError::Listen {
                    what: what.clone(),
                    source,
                })?;
            let bound = l.local_addr().map_or(what, |a| a.to_string());
            ready(&bound);
            for s in l.incoming().flatten() {
                let _ = s.set_nodelay(true);
                accept(s, &engine, &active);
            }
        }
        Listen::Unix(path) => {
            if let Ok(meta) = std::fs::symlink_metadata(path) {
                if !meta.file_type().is_socket() {
                    return Err(ServerError::NotASocket(path.clone()));
                }
                let _ = std::fs::remove_file(path);
            }
            let what = path.display().to_string();
            let l = UnixListener::bind(path).map_err(|source| ServerError::Listen {
                what: what.clone(),
                source,
            })?;
            ready(&what);
            for s in l.incoming().flatten() {
                accept(s, &engine, &active);
            }
        }
    }
    Ok(())
}

/// Whether the host engine is away now (its scenario's `hostengine_away` windows).
fn away(engine: &Shared) -> bool {
    let e = engine.lock().unwrap_or_else(|p| p.into_inner());
    e.hostengine_away(e.now())
}

fn accept(s: impl Conn, engine: &Shared, active: &Arc<AtomicUsize>) {
    if away(engine) || active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
        return; // dropped: closed at once
    }
    active.fetch_add(1, Ordering::SeqCst);
    let (engine, active) = (Arc::clone(engine), Arc::clone(active));
    let spawned = std::thread::Builder::new()
        .name("dcgm-sim-conn".to_string())
        .spawn({
            let active = Arc::clone(&active);
            move || {
                connection(s, &engine);
                active.fetch_sub(1, Ordering::SeqCst);
            }
        });
    if spawned.is_err() {
        active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves one connection until the peer leaves, a message is malformed, or an away window
/// starts.
fn connection(mut s: impl Conn, engine: &Shared) {
    if s.set_timeout(POLL).is_err() {
        return;
    }
    loop {
        if away(engine) {
            return;
        }
        // Wait for the first byte of the length with the short poll; then read the rest.
        let mut first = [0u8; 1];
        match s.read(&mut first) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => return,
        }
        if s.set_timeout(Duration::from_secs(10)).is_err() {
            return;
        }
        let req: Request = match proto::recv(&mut (&first[..]).chain(&mut s)) {
            Ok(r) => r,
            Err(_) => return,
        };
        if away(engine) {
            return;
        }
        let resp: Response = {
            let mut e = engine.lock().unwrap_or_else(|p| p.into_inner());
            e.handle(req)
        };
        if proto::send(&mut s, &resp).is_err() || s.set_timeout(POLL).is_err() {
            return;
        }
    }
}
