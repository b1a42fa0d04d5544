//! Client-certificate verifiers beyond rustls' own: `RequireAnyClientCert`/`RequestClientCert`
//! without a CA, and `client_allowed_sans` (subject alternative names parsed with x509-parser).
//!
//! It must not load files or build the TLS configuration.

use std::sync::Arc;

use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// Accepts any client certificate that parses (Go's `RequestClientCert` and
/// `RequireAnyClientCert`); the handshake still proves the client holds its key.
#[derive(Debug)]
pub(super) struct AnyClientCert {
    pub(super) mandatory: bool,
    pub(super) hints: Vec<DistinguishedName>,
    pub(super) algs: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        ParsedCertificate::try_from(end_entity)?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// `client_allowed_sans`: after the inner verifier accepts the certificate, one of its subject
/// alternative names (DNS, e-mail, IP, URI; compared as exact strings, as exporter-toolkit
/// does) must be in the list.
#[derive(Debug)]
pub(super) struct SanCheck {
    pub(super) inner: Arc<dyn ClientCertVerifier>,
    pub(super) allowed: Vec<String>,
}

impl ClientCertVerifier for SanCheck {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let ok = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        let sans = subject_alt_names(end_entity.as_ref()).unwrap_or_default();
        if sans.iter().any(|s| self.allowed.contains(s)) {
            Ok(ok)
        } else {
            tracing::debug!(
                ?sans,
                "client certificate has no SAN listed in client_allowed_sans"
            );
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The subject alternative names of a DER certificate as strings, the way Go prints them:
/// DNS names, e-mail addresses, IP addresses and URIs, in the certificate's order. `None` when
/// the certificate or its SAN extension does not parse.
pub fn subject_alt_names(cert: &[u8]) -> Option<Vec<String>> {
    use x509_parser::extensions::GeneralName;
    let (_, cert) = x509_parser::parse_x509_certificate(cert).ok()?;
    let mut out = Vec::new();
    let Some(san) = cert.subject_alternative_name().ok()? else {
        return Some(out);
    };
    for name in &san.value.general_names {
        match name {
            GeneralName::RFC822Name(s) | GeneralName::DNSName(s) | GeneralName::URI(s) => {
                out.push((*s).to_owned());
            }
            GeneralName::IPAddress(b) => {
                if let Ok(b) = <[u8; 4]>::try_from(*b) {
                    out.push(std::net::Ipv4Addr::from(b).to_string());
                } else if let Ok(b) = <[u8; 16]>::try_from(*b) {
                    let ip = std::net::Ipv6Addr::from(b);
                    out.push(match ip.to_ipv4_mapped() {
                        Some(v4) => v4.to_string(),
                        None => ip.to_string(),
                    });
                }
            }
            _ => {}
        }
    }
    Some(out)
}
