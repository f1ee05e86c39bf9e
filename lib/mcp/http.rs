//! MCP's Streamable HTTP transport at `http://ADDR/mcp`: the SDK's service behind a small
//! hyper server that checks the bearer token first.
//!
//! On a loopback address (the default) anyone on this machine may connect, and the SDK checks
//! the `Host` header against loopback names (a web page cannot reach the server through DNS
//! rebinding). Anywhere else the server is reachable from other machines, so it refuses to
//! start unless told so (`allow_remote`) and given a bearer token, which every request must
//! then carry (`Authorization: Bearer TOKEN`, compared in constant time).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq;

use super::{DroidServer, Workbench};
use crate::secret::Secret;

/// The path the transport is served at.
pub const PATH: &str = "/mcp";
/// The shortest bearer token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// Where and how to serve over HTTP.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Serve on an address other machines can reach (needs `token`).
    pub allow_remote: bool,
    /// The bearer token every request must carry; none needed on loopback without one.
    pub token: Option<Secret>,
}

/// Why the HTTP transport could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    #[error(
        "{0} is not a loopback address: serving other machines needs --allow-remote and a bearer \
         token (--token-file or DROID_MCP_TOKEN)"
    )]
    NotLoopback(SocketAddr),
    #[error(
        "serving {0} to other machines needs a bearer token (--token-file or DROID_MCP_TOKEN)"
    )]
    NoToken(SocketAddr),
    #[error("listening on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Why a bearer token is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    #[error("the bearer token is shorter than {MIN_TOKEN_LEN} characters")]
    TooShort,
    #[error("the bearer token holds a space or a control character")]
    BadCharacter,
}

impl HttpOptions {
    /// Refuses an address beyond loopback unless `allow_remote` and a token say so.
    pub fn check(&self) -> Result<(), HttpError> {
        if self.addr.ip().is_loopback() {
            return Ok(());
        }
        if !self.allow_remote {
            return Err(HttpError::NotLoopback(self.addr));
        }
        if self.token.is_none() {
            return Err(HttpError::NoToken(self.addr));
        }
        Ok(())
    }
}

/// A bearer token from what a file or a variable holds (surrounding whitespace dropped).
pub fn token(text: &str) -> Result<Secret, TokenError> {
    let token = text.trim();
    if token.chars().count() < MIN_TOKEN_LEN {
        return Err(TokenError::TooShort);
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(TokenError::BadCharacter);
    }
    Ok(Secret::new(token))
}

/// Whether an `Authorization` header value carries `token` as a bearer token. The token is
/// compared in constant time (its length is not secret).
pub fn authorized(header: Option<&[u8]>, token: &Secret) -> bool {
    let Some(value) = header else {
        return false;
    };
    let scheme = b"bearer ";
    if value.len() < scheme.len() || !value[..scheme.len()].eq_ignore_ascii_case(scheme) {
        return false;
    }
    let given = value[scheme.len()..].trim_ascii();
    given.ct_eq(token.expose().as_bytes()).into()
}

type Body = BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Serves until the process ends.
pub(super) async fn serve(
    workbench: Arc<Workbench>,
    options: HttpOptions,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), HttpError> {
    let addr = options.addr;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| HttpError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| HttpError::Bind { addr, source })?;
    let mut config = StreamableHttpServerConfig::default();
    if !addr.ip().is_loopback() {
        // Clients name the server by whatever address or name reaches it; the token guards it.
        config = config.disable_allowed_hosts();
    }
    let service: StreamableHttpService<DroidServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(DroidServer::new(Arc::clone(&workbench))),
            Default::default(),
            config,
        );
    let token = options.token.map(Arc::new);
    ready(bound);
    loop {
        // A failed accept (a client that hung up, no file descriptors left for a moment) ends
        // that connection only.
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let service = service.clone();
        let token = token.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request| {
                let service = service.clone();
                let token = token.clone();
                async move { Ok::<_, Infallible>(route(&service, token.as_deref(), request).await) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            // A connection that breaks is the client's business: the server goes on.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, handler)
                .await;
        });
    }
}

async fn route(
    service: &StreamableHttpService<DroidServer, LocalSessionManager>,
    token: Option<&Secret>,
    request: Request<Incoming>,
) -> Response<Body> {
    if request.uri().path() != PATH {
        return plain(StatusCode::NOT_FOUND, "MCP is served at /mcp\n");
    }
    if let Some(token) = token {
        let header = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
        if !authorized(header, token) {
            let mut response = plain(StatusCode::UNAUTHORIZED, "a bearer token is needed\n");
            response.headers_mut().insert(
                WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
    }
    service.handle(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(addr: &str, allow_remote: bool, token: Option<&str>) -> HttpOptions {
        HttpOptions {
            addr: addr.parse().unwrap(),
            allow_remote,
            token: token.map(Secret::new),
        }
    }

    #[test]
    fn beyond_loopback_needs_the_flag_and_a_token() {
        assert!(options("127.0.0.1:0", false, None).check().is_ok());
        assert!(options("[::1]:8080", false, None).check().is_ok());
        let refused = options("0.0.0.0:8080", false, Some("x")).check();
        assert!(matches!(refused, Err(HttpError::NotLoopback(_))));
        let refused = options("0.0.0.0:8080", true, None).check();
        assert!(matches!(refused, Err(HttpError::NoToken(_))));
        assert!(options("0.0.0.0:8080", true, Some("t")).check().is_ok());
    }

    #[test]
    fn tokens_are_long_and_plain() {
        assert_eq!(
            token(" 0123456789abcdef \n").unwrap().expose(),
            "0123456789abcdef"
        );
        assert_eq!(token("short").unwrap_err(), TokenError::TooShort);
        assert_eq!(
            token("0123456789 abcdef").unwrap_err(),
            TokenError::BadCharacter
        );
    }

    #[test]
    fn only_the_bearer_token_itself_is_authorized() {
        let secret = Secret::new("0123456789abcdef");
        assert!(authorized(Some(b"Bearer 0123456789abcdef"), &secret));
        assert!(authorized(Some(b"bearer 0123456789abcdef"), &secret));
        for wrong in [
            &b"Bearer 0123456789abcdeF"[..],
            b"Bearer 0123456789abcde",
            b"Bearer 0123456789abcdef0",
            b"Basic 0123456789abcdef",
            b"0123456789abcdef",
            b"Bearer ",
            b"",
        ] {
            assert!(!authorized(Some(wrong), &secret), "{wrong:?}");
        }
        assert!(!authorized(None, &secret));
    }
}
