//! droid-mcp: droid's device and crawls as tools for any MCP client, over stdio or HTTP.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use droid::decide::cli::DeciderArgs;
use droid::device::cli::DeviceArgs;
use droid::device::ScreenshotMode;
use droid::mcp::{self, HttpOptions, Workbench};

const EXAMPLES: &str = "Examples:
  droid-mcp                                   (stdio: what an MCP client starts)
  droid-mcp --device emulator-5554 --db runs/crawler.db --out runs/output_data
  droid-mcp --http 127.0.0.1:8765             (Streamable HTTP at http://127.0.0.1:8765/mcp)
  DROID_MCP_TOKEN=... droid-mcp --http 127.0.0.1:8765   (every request needs the bearer token)
  droid-mcp --http 0.0.0.0:8765 --allow-remote --token-file token.txt
  droid-sim --app builtin:shop &   # then: droid-mcp --adb-port PORT --device SERIAL
A client's configuration (Claude Desktop, VS Code, ...) names the command:
  {\"mcpServers\": {\"droid\": {\"command\": \"droid-mcp\", \"args\": [\"--db\", \"/path/crawler.db\"]}}}
Tools: devices, observe, act, crawl, crawl_status, crawl_control, report; resources: each run's
report as droid://runs/RUN/report.txt and .json. See docs/mcp.md.
";

#[derive(Parser)]
#[command(
    name = "droid-mcp",
    version,
    about = "Serve droid's device and crawls to MCP clients (Model Context Protocol)",
    long_about = "Serves the Model Context Protocol on stdin and stdout (what a client such as \
Claude Desktop or VS Code starts), or with --http its Streamable HTTP transport. Its tools observe \
the device's screen as droid-capture does (pruned tree with [ref=N], screen key, screenshot), \
act on it as droid-act does, run droid-crawl in the background (status, pause, resume, stop) \
and read droid-report's reports; each run's report is also a resource. Logs go to stderr: \
stdout is the protocol's in stdio mode.",
    after_help = EXAMPLES
)]
struct Args {
    #[command(flatten)]
    device: DeviceArgs,
    /// crawler.db: crawls record into it, reports read from it.
    #[arg(long, default_value = "crawler.db", env = "DROID_DB")]
    db: PathBuf,
    /// Where crawls make their session folders.
    #[arg(long, default_value = "output_data", env = "DROID_OUT")]
    out: PathBuf,
    /// Where `observe` saves dumps and screenshots [default: droid-captures in the system
    /// temporary folder].
    #[arg(long, value_name = "DIR")]
    captures: Option<PathBuf>,
    /// Milliseconds between two actions of a batch.
    #[arg(long, default_value_t = 500, value_name = "MS")]
    pause_ms: u64,
    /// Serve MCP's Streamable HTTP transport at http://ADDR/mcp instead of stdio (a loopback
    /// address unless --allow-remote).
    #[arg(long, value_name = "ADDR", help_heading = "HTTP")]
    http: Option<SocketAddr>,
    /// With --http: serve on an address other machines can reach (needs a bearer token).
    #[arg(long, requires = "http", help_heading = "HTTP")]
    allow_remote: bool,
    /// With --http: a file holding the bearer token every request must carry (at least 16
    /// characters) [default: DROID_MCP_TOKEN, when set].
    #[arg(long, value_name = "FILE", requires = "http", help_heading = "HTTP")]
    token_file: Option<PathBuf>,
    /// The decider a crawl uses unless it names one, and its model, keys and prompt.
    #[command(flatten, next_help_heading = "Crawls")]
    decider: DeciderArgs,
}

fn main() -> ExitCode {
    common::finish("droid-mcp", run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    let env = |key: &str| std::env::var(key).ok();
    let device = args.device.to_config(ScreenshotMode::Png, env)?;
    let mut settings = args.decider.settings()?;
    let act = droid::act::Config {
        pause: Duration::from_millis(args.pause_ms),
        test_password: settings.secret("test_password", args.decider.test_password.as_deref())?,
        ..droid::act::Config::default()
    };
    let token = match (&args.token_file, env("DROID_MCP_TOKEN")) {
        (Some(file), _) => Some(
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?,
        ),
        (None, Some(token)) if args.http.is_some() && !token.is_empty() => Some(token),
        _ => None,
    }
    .map(|text| mcp::http::token(&text))
    .transpose()?;
    let workbench = Workbench::new(mcp::Config {
        device,
        db: args.db,
        out: args.out,
        captures: args.captures.unwrap_or_else(mcp::default_captures),
        act,
        decider: args.decider,
    });
    match args.http {
        None => mcp::serve_stdio(workbench)?,
        Some(addr) => {
            let options = HttpOptions {
                addr,
                allow_remote: args.allow_remote,
                token,
            };
            let guarded = options.token.is_some();
            mcp::serve_http(workbench, options, |bound| {
                let guard = match guarded {
                    true => " (bearer token required)",
                    false => "",
                };
                common::say(
                    "droid-mcp",
                    &format!("serving MCP at http://{bound}{}{guard}", mcp::http::PATH),
                );
            })?
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        super::Args::command().debug_assert();
    }
}
