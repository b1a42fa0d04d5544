//! A connection to a stand-in host engine (`dcgmConnect_v2`): the socket (TCP or unix), its
//! deadlines, and one request/response exchange per DCGM call. A connection whose host engine
//! has gone, or that missed a deadline, is broken for good: every later call answers
//! `DCGM_ST_CONNECTION_NOT_VALID` and the caller connects again.
//!
//! Owns the client side of the socket only; it must not touch the process state (`global`).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::time::Duration;

use dcgm_abi as abi;

use crate::proto::{self, Reply, Request, Response};

/// The port `nv-hostengine` listens on when none is given.
pub const DEFAULT_PORT: u16 = 5555;
/// The deadline of a connection whose parameters give none (`timeoutMs` 0).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A byte stream both ways.
trait Duplex: Read + Write + Send {}
impl Duplex for TcpStream {}
impl Duplex for UnixStream {}

/// One connection; `None` once broken.
pub struct Remote {
    stream: Mutex<Option<Box<dyn Duplex>>>,
}

/// Splits `host[:port]` (IPv6 in brackets), the port defaulting to 5555.
pub fn host_port(address: &str) -> Option<(String, u16)> {
    let address = address.trim();
    if address.is_empty() {
        return None;
    }
    if let Some(rest) = address.strip_prefix('[') {
        let (host, tail) = rest.split_once(']')?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if tail.is_empty() => DEFAULT_PORT,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match address.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Some((host.to_string(), port.parse().ok()?)),
        Some(_) => Some((address.to_string(), DEFAULT_PORT)),
        None => Some((address.to_string(), DEFAULT_PORT)),
    }
}

impl Remote {
    /// Connects to `address` (a `host[:port]`, or a socket path when `unix`) within `timeout`,
    /// and checks that a host engine answers there.
    pub fn connect(address: &str, unix: bool, timeout: Duration) -> Result<Remote, i32> {
        let stream: Box<dyn Duplex> = if unix {
            let s = UnixStream::connect(address).map_err(|_| abi::DCGM_ST_CONNECTION_NOT_VALID)?;
            s.set_read_timeout(Some(timeout))
                .and_then(|()| s.set_write_timeout(Some(timeout)))
                .map_err(|_| abi::DCGM_ST_CONNECTION_NOT_VALID)?;
            Box::new(s)
        } else {
            let (host, port) = host_port(address).ok_or(abi::DCGM_ST_BADPARAM)?;
            let addr = (host.as_str(), port)
                .to_socket_addrs()
                .map_err(|_| abi::DCGM_ST_CONNECTION_NOT_VALID)?
                .next()
                .ok_or(abi::DCGM_ST_CONNECTION_NOT_VALID)?;
            let s = TcpStream::connect_timeout(&addr, timeout)
                .map_err(|_| abi::DCGM_ST_CONNECTION_NOT_VALID)?;
            s.set_read_timeout(Some(timeout))
                .and_then(|()| s.set_write_timeout(Some(timeout)))
                .and_then(|()| s.set_nodelay(true))
                .map_err(|_| abi::DCGM_ST_CONNECTION_NOT_VALID)?;
            Box::new(s)
        };
        let remote = Remote {
            stream: Mutex::new(Some(stream)),
        };
        match remote.call(Request::HostengineVersion) {
            Ok(Reply::Version(_)) => Ok(remote),
            _ => Err(abi::DCGM_ST_CONNECTION_NOT_VALID),
        }
    }

    /// One exchange. A failed or late exchange breaks the connection: the call answers
    /// `DCGM_ST_TIMEOUT` when the deadline passed and `DCGM_ST_CONNECTION_NOT_VALID`
    /// otherwise, and every later call `DCGM_ST_CONNECTION_NOT_VALID`.
    pub fn call(&self, req: Request) -> Response {
        let mut guard = self
            .stream
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(stream) = guard.as_mut() else {
            return Err(abi::DCGM_ST_CONNECTION_NOT_VALID);
        };
        let result = proto::send(stream, &req).and_then(|()| proto::recv::<Response>(stream));
        match result {
            Ok(resp) => resp,
            Err(e) => {
                *guard = None;
                match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                        Err(abi::DCGM_ST_TIMEOUT)
                    }
                    _ => Err(abi::DCGM_ST_CONNECTION_NOT_VALID),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_port_5555() {
        assert_eq!(host_port("10.0.0.7"), Some(("10.0.0.7".to_string(), 5555)));
        assert_eq!(
            host_port("dcgm.svc:5566"),
            Some(("dcgm.svc".to_string(), 5566))
        );
        assert_eq!(host_port("[::1]:6000"), Some(("::1".to_string(), 6000)));
        assert_eq!(host_port("[::1]"), Some(("::1".to_string(), 5555)));
        assert_eq!(host_port("::1"), Some(("::1".to_string(), 5555)));
        assert_eq!(host_port("host:port"), None);
        assert_eq!(host_port(""), None);
    }
}
