//! The server side of a TLS connection's start: the handshake, bounded by
//! [`TLS_HANDSHAKE_TIMEOUT`], and the `400` a client that speaks plain HTTP to the TLS port
//! gets instead of an alert it cannot read.
//!
//! It must not load certificates (`web_config` does) nor serve requests (`server` does, on the
//! stream this returns).

use super::web_config::TlsServer;

/// How long a client may take to complete the TLS handshake.
pub(super) const TLS_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs the server side of the handshake. A client that speaks plain HTTP to the TLS port
/// gets a `400` saying so (as Go's server does) instead of a TLS alert it cannot read.
pub(super) async fn tls_handshake(
    tcp: tokio::net::TcpStream,
    tls: &TlsServer,
) -> Option<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    let mut first = [0u8; 1];
    match tcp.peek(&mut first).await {
        Ok(1) => {}
        _ => return None,
    }
    // 0x16: a TLS handshake record.
    if first[0] != 0x16 {
        if first[0].is_ascii_uppercase() {
            refuse_plain_http(tcp).await;
        }
        return None;
    }
    match tokio_rustls::TlsAcceptor::from(tls.config())
        .accept(tcp)
        .await
    {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::debug!("TLS handshake failed: {e}");
            None
        }
    }
}

/// Answers a plain HTTP request on the TLS port with `400`, then closes politely: what the
/// client sent is read first, so that closing does not turn into a reset that loses the answer.
async fn refuse_plain_http(mut tcp: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const ANSWER: &[u8] =
        b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
        Connection: close\r\n\r\nThis port serves HTTPS: use an https:// URL.\n";
    let mut sink = [0u8; 4096];
    // What has already arrived of the request (bounded: this loop does not yield).
    for _ in 0..16 {
        match tcp.try_read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
    if tcp.write_all(ANSWER).await.is_err() {
        return;
    }
    let _ = tcp.shutdown().await;
    // Until the client closes its side (the caller's handshake timeout bounds this).
    while let Ok(n) = tcp.read(&mut sink).await {
        if n == 0 {
            return;
        }
    }
}
