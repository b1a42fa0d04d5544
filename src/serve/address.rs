//! The listen address flag (`-a/--address`) in dcgm-exporter's forms.
//!
//! Owns turning the flag's text into socket addresses to try in order. It must not bind,
//! listen or serve: that is `serve`'s job.

use std::net::{SocketAddr, ToSocketAddrs};

/// An `-a/--address` value that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ListenAddressError {
    /// Not `[HOST]:PORT`.
    #[error("{setting} {addr:?}: expected [HOST]:PORT, e.g. :9400, 127.0.0.1:9400 or [::]:9400")]
    Syntax {
        /// Where the value came from (`-a/--address`, its variable, or the file's key).
        setting: String,
        /// The value as given.
        addr: String,
    },
    /// The port is a number past 65535.
    #[error("{setting} {addr:?}: port {port} is out of range (0 to 65535); e.g. :9400")]
    PortRange {
        /// Where the value came from.
        setting: String,
        /// The value as given.
        addr: String,
        /// The port as written.
        port: String,
    },
    /// The host name does not resolve.
    #[error("{setting} {addr:?}: {source}")]
    Resolve {
        /// Where the value came from.
        setting: String,
        /// The value as given.
        addr: String,
        /// The resolver's answer.
        source: std::io::Error,
    },
}

/// Resolves a dcgm-exporter style listen address: `:9400` (all interfaces), `host:port`,
/// `[v6]:port`. Returns the candidates to try in order; an error names `setting`, where the
/// value came from (`-a/--address`, `DCGM_EXPORTER_LISTEN (-a/--address)`, a file's key).
pub fn parse_address(setting: &str, addr: &str) -> Result<Vec<SocketAddr>, ListenAddressError> {
    let bad = || ListenAddressError::Syntax {
        setting: setting.to_owned(),
        addr: addr.to_owned(),
    };
    let port_of = |p: &str| -> Result<u16, ListenAddressError> {
        if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
            p.parse().map_err(|_| ListenAddressError::PortRange {
                setting: setting.to_owned(),
                addr: addr.to_owned(),
                port: p.to_owned(),
            })
        } else {
            Err(bad())
        }
    };
    if let Some(port) = addr.strip_prefix(':') {
        let port = port_of(port)?;
        return Ok(vec![
            SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port)),
            SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, port)),
        ]);
    }
    if let Ok(a) = addr.parse::<SocketAddr>() {
        return Ok(vec![a]);
    }
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let port = port_of(port)?;
    let v: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|source| ListenAddressError::Resolve {
            setting: setting.to_owned(),
            addr: addr.to_owned(),
            source,
        })?
        .collect();
    if v.is_empty() { Err(bad()) } else { Ok(v) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_address("--address", ":9400").unwrap().len(), 2);
        assert_eq!(
            parse_address("--address", "127.0.0.1:9400").unwrap(),
            vec!["127.0.0.1:9400".parse().unwrap()]
        );
        assert_eq!(
            parse_address("--address", "[::1]:9400").unwrap(),
            vec!["[::1]:9400".parse().unwrap()]
        );
        assert!(parse_address("--address", "9400").is_err());
        assert!(parse_address("--address", ":notaport").is_err());
    }

    #[test]
    fn ports_past_65535_are_named_out_of_range() {
        for (addr, port) in [
            (":99999", "99999"),
            ("127.0.0.1:65536", "65536"),
            ("[::1]:99999999999999999999", "99999999999999999999"),
        ] {
            let e = parse_address("--address", addr).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("--address {addr:?}: port {port} is out of range (0 to 65535); e.g. :9400")
            );
        }
        let e = parse_address("--address", ":-1").unwrap_err().to_string();
        assert!(e.contains("expected [HOST]:PORT"), "{e}");
    }
}
