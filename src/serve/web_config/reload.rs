//! TLS at run time: hands out the current rustls configuration and rebuilds it when the
//! certificate, key or CA files change (checked at most every `RELOAD_CHECK_INTERVAL`).
//!
//! It must not parse the YAML or serve connections.

use super::schema::{RELOAD_CHECK_INTERVAL, WebConfigError};
use super::tls::{ClientAuth, TlsSettings};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use rustls::ServerConfig;

use crate::base::file_stamp::FileStamp;

pub(super) struct ReloadState {
    pub(super) checked: Instant,
    pub(super) stamps: Vec<Option<FileStamp>>,
}

/// The TLS side of a web config: settings plus the rustls configuration in use.
pub struct TlsServer {
    pub(super) settings: TlsSettings,
    pub(super) current: ArcSwap<ServerConfig>,
    pub(super) reload: Mutex<ReloadState>,
}

impl TlsServer {
    pub(super) fn new(settings: TlsSettings) -> Result<Self, WebConfigError> {
        let stamps = settings.stamps();
        let cfg = settings.build()?;
        Ok(Self {
            settings,
            current: ArcSwap::from_pointee(cfg),
            reload: Mutex::new(ReloadState {
                checked: Instant::now(),
                stamps,
            }),
        })
    }

    /// For the start-up log: `TLS (TLS 1.2 and 1.3)`, or `mTLS (TLS 1.3 only; client
    /// certificates: RequireAndVerifyClientCert, SANs restricted)`.
    pub fn describe(&self) -> String {
        let s = &self.settings;
        let has = |v: rustls::ProtocolVersion| s.versions.iter().any(|x| x.version == v);
        let versions = match (
            has(rustls::ProtocolVersion::TLSv1_2),
            has(rustls::ProtocolVersion::TLSv1_3),
        ) {
            (true, true) => "TLS 1.2 and 1.3",
            (true, false) => "TLS 1.2 only",
            _ => "TLS 1.3 only",
        };
        if s.client_auth == ClientAuth::NoClientCert {
            return format!("TLS ({versions})");
        }
        let sans = if s.allowed_sans.is_some() {
            ", SANs restricted"
        } else {
            ""
        };
        format!(
            "mTLS ({versions}; client certificates: {:?}{sans})",
            s.client_auth
        )
    }

    /// The client-certificate policy.
    pub fn client_auth(&self) -> ClientAuth {
        self.settings.client_auth
    }

    /// The configuration for a new connection. At most every [`RELOAD_CHECK_INTERVAL`] the
    /// certificate, key and CA files are checked (metadata only); when one changed, the
    /// configuration is rebuilt. A rebuild that fails keeps the previous configuration.
    pub fn config(&self) -> Arc<ServerConfig> {
        self.reload_if_changed(RELOAD_CHECK_INTERVAL);
        self.current.load_full()
    }

    /// Rebuilds when the files changed and `interval` passed since the last check. Returns
    /// `true` when a new configuration was installed.
    pub fn reload_if_changed(&self, interval: Duration) -> bool {
        // Another connection is already checking: use the current configuration.
        let Ok(mut state) = self.reload.try_lock() else {
            return false;
        };
        if state.checked.elapsed() < interval {
            return false;
        }
        state.checked = Instant::now();
        let stamps = self.settings.stamps();
        if stamps == state.stamps {
            return false;
        }
        // Remember the new state even when the rebuild fails: a half-written rotation changes
        // the files again when it completes.
        state.stamps = stamps;
        match self.settings.build() {
            Ok(cfg) => {
                self.current.store(Arc::new(cfg));
                tracing::info!(
                    cert = %self.settings.cert.name(),
                    "TLS certificate files changed: new connections use the new files"
                );
                true
            }
            Err(e) => {
                tracing::warn!(
                    "TLS files changed but cannot be used, keeping the previous ones: {e}"
                );
                false
            }
        }
    }
}
