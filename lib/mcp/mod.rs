//! droid-mcp: droid's device and crawls as tools for any Model Context Protocol client (an
//! assistant in an editor or a chat app, an agent framework), over stdio or Streamable HTTP.
//!
//! Built on the protocol's official Rust SDK (`rmcp`): it speaks the current revision and
//! negotiates older ones as the SDK does. The tools ([`server`]) are thin: each calls the
//! [`Workbench`], which uses the stages' own code: the capture droid-capture makes, hashed as
//! droid-hash hashes it, actions executed as droid-act executes them, droid-crawl's loop,
//! droid-report's reports. `docs/mcp.md` describes every tool and how to configure a client.

mod crawls;
pub mod http;
mod server;
mod workbench;

use std::path::PathBuf;

pub use crawls::{CrawlInput, CrawlStatus};
pub use http::{HttpOptions, TokenError};
pub use server::DroidServer;
pub use workbench::{
    ActInput, ActKind, Acted, Config, DeviceEntry, Devices, ImageInfo, Observed, ReportInput,
    ReportOutput, ReportView, ScrollDirection, Snapshot, Workbench,
};

/// Why a tool could not do what it was asked (sent to the client as the tool's error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{0}")]
    Input(String),
    #[error("the ADB server")]
    Adb(#[source] crate::adb::AdbError),
    #[error("the device")]
    Device(#[source] crate::device::DeviceError),
    #[error("observing the screen")]
    Capture(#[source] crate::explore::ExploreError),
    #[error("the action: {0}")]
    Action(String),
    #[error("run {run} is crawling {serial}: pause or stop it first")]
    Busy { serial: String, run: String },
    #[error("the decider")]
    Decide(#[source] crate::decide::Error),
    #[error("starting a thread")]
    Thread(#[source] std::io::Error),
    #[error("the crawl could not start: {0}")]
    CrawlStart(String),
    #[error("no crawl {0} in this server")]
    NoCrawl(String),
    #[error("run {0} has ended")]
    Ended(String),
    #[error("telling run {0}")]
    Control(String, #[source] std::io::Error),
    #[error("the report")]
    Report(#[source] crate::report::Error),
}

/// Why the server could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error("starting the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("the MCP session")]
    Session(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Http(#[from] http::HttpError),
}

/// Serves MCP on stdin and stdout until the client closes stdin.
pub fn serve_stdio(workbench: Workbench) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    runtime()?.block_on(async move {
        let server = DroidServer::new(std::sync::Arc::new(workbench));
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::Session(Box::new(e)))?;
        running
            .waiting()
            .await
            .map_err(|e| ServeError::Session(Box::new(e)))?;
        Ok(())
    })
}

/// Serves MCP's Streamable HTTP transport at `http://ADDR/mcp` until the process ends; `ready`
/// is told the address bound (a port of 0 picks one).
pub fn serve_http(
    workbench: Workbench,
    options: HttpOptions,
    ready: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ServeError> {
    options.check()?;
    runtime()?.block_on(http::serve(std::sync::Arc::new(workbench), options, ready))?;
    Ok(())
}

fn runtime() -> Result<tokio::runtime::Runtime, ServeError> {
    // One thread for the protocol: the tools' device and database work runs on tokio's blocking
    // threads, crawls on their own.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)
}

/// Where `observe` saves its captures by default: droid-capture's folder.
pub fn default_captures() -> PathBuf {
    std::env::temp_dir().join("droid-captures")
}
