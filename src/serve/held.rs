//! Holding something for as long as a response is in progress: [`Held`] is a response body
//! that keeps a value (a `--max-concurrent-scrapes` permit, a connection's in-request mark)
//! until hyper has taken the whole body or dropped it, and [`Tracked`] is the per-connection
//! service wrapper that marks a request in the connection's [`Activity`] from its arrival until
//! then (for the connection cap's shedding order) and gives each request its connection's
//! [`PinTo`] (as an extension, for the budget on the pages unfinished responses hold).
//!
//! It owns no HTTP logic: bodies and responses pass through unchanged.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{Request, Response};

use super::conns::Activity;
use super::pinned::PinTo;

/// A body that holds `T` until it is dropped.
pub struct Held<T> {
    inner: Body,
    _held: T,
}

impl<T> Held<T> {
    /// `inner`, holding `held` with it.
    pub fn new(inner: Body, held: T) -> Self {
        Self { inner, _held: held }
    }
}

impl<T: Unpin> http_body::Body for Held<T> {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A hyper service that marks each request in its connection's [`Activity`] until the
/// response body is taken, and gives each request the connection's [`PinTo`].
#[derive(Clone)]
pub struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
    pin_to: PinTo,
}

impl<S> Tracked<S> {
    /// `inner`, reporting to `activity`, its requests carrying `pin_to`.
    pub fn new(inner: S, activity: Arc<Activity>, pin_to: PinTo) -> Self {
        Self {
            inner,
            activity,
            pin_to,
        }
    }
}

type BoxedResponse<E> = Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send>>;

impl<S, B> hyper::service::Service<Request<B>> for Tracked<S>
where
    S: hyper::service::Service<Request<B>, Response = Response<Body>>,
    S::Future: Send + 'static,
    S::Error: 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxedResponse<S::Error>;

    fn call(&self, mut req: Request<B>) -> Self::Future {
        let mark = self.activity.request();
        req.extensions_mut().insert(self.pin_to.clone());
        let response = self.inner.call(req);
        Box::pin(async move {
            let resp = response.await?;
            Ok(resp.map(|body| Body::new(Held::new(body, mark))))
        })
    }
}
