//! The hostengine's address as `-r/--remote-hostengine-info` gives it, in dcgm-exporter's
//! forms (`host:port`, `host`, `tcp://host:port`, `unix:///path`), parsed into what
//! `dcgmConnect_v2` takes ([`HostengineAddress`]).
//!
//! Parsing only; it must not connect or log.

/// The hostengine's port when an address names none.
pub const DEFAULT_PORT: u16 = 5555;

/// A hostengine address as `dcgmConnect_v2` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostengineAddress {
    /// `host:port`, or a socket path.
    pub target: String,
    /// `addressIsUnixSocket`.
    pub unix: bool,
}

impl std::fmt::Display for HostengineAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.unix {
            write!(f, "unix://{}", self.target)
        } else {
            f.write_str(&self.target)
        }
    }
}

/// A hostengine address that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HostengineAddressError {
    /// Empty, or a scheme other than `tcp://` and `unix://`.
    #[error(
        "{0:?}: not a hostengine address (expected host:port, host, tcp://host:port or \
         unix:///path/to/socket)"
    )]
    Form(String),
    /// The port is not a number from 1 to 65535.
    #[error("{0:?}: the port is not a number from 1 to 65535")]
    Port(String),
}

/// Parses dcgm-exporter's forms of `-r`: `host:port`, `host` (port 5555), `tcp://host:port`,
/// `unix:///path`.
pub fn parse_hostengine_address(text: &str) -> Result<HostengineAddress, HostengineAddressError> {
    let t = text.trim();
    if let Some(path) = t.strip_prefix("unix://") {
        if !path.starts_with('/') {
            return Err(HostengineAddressError::Form(text.to_owned()));
        }
        return Ok(HostengineAddress {
            target: path.to_owned(),
            unix: true,
        });
    }
    let hp = t.strip_prefix("tcp://").unwrap_or(t);
    if hp.is_empty() || hp.contains("://") || hp.contains('/') || hp.contains(char::is_whitespace) {
        return Err(HostengineAddressError::Form(text.to_owned()));
    }
    // `[v6]:port`, `[v6]`, `host:port`, `host`.
    let (host, port) = if let Some(rest) = hp.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| HostengineAddressError::Form(text.to_owned()))?;
        (format!("[{h}]"), after.strip_prefix(':'))
    } else {
        match hp.split_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (hp.to_owned(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(HostengineAddressError::Form(text.to_owned()));
    }
    let port = match port {
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(HostengineAddressError::Port(text.to_owned())),
        },
        None => DEFAULT_PORT,
    };
    Ok(HostengineAddress {
        target: format!("{host}:{port}"),
        unix: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_in_dcgm_exporters_forms() {
        let a = |s: &str| parse_hostengine_address(s).map(|a| (a.target, a.unix)).ok();
        assert_eq!(a("localhost:5555"), Some(("localhost:5555".into(), false)));
        assert_eq!(
            a("nv-hostengine"),
            Some(("nv-hostengine:5555".into(), false))
        );
        assert_eq!(
            a("tcp://10.0.0.1:5566"),
            Some(("10.0.0.1:5566".into(), false))
        );
        assert_eq!(a("[::1]:5555"), Some(("[::1]:5555".into(), false)));
        assert_eq!(a("[::1]"), Some(("[::1]:5555".into(), false)));
        assert_eq!(
            a("unix:///run/dcgm/he.sock"),
            Some(("/run/dcgm/he.sock".into(), true))
        );
        for bad in [
            "",
            "unix://rel/path",
            "http://x:1",
            "host:0",
            "host:99999",
            "host:x",
            ":5",
        ] {
            assert!(parse_hostengine_address(bad).is_err(), "{bad:?} accepted");
        }
        let e = parse_hostengine_address("host:0")
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("port")));
    }
}
