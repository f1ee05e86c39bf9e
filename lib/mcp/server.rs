//! The MCP side: droid's tools and resources for the SDK's server, each a thin call into the
//! [`Workbench`] on a blocking thread. A tool that fails answers with a tool error naming the
//! cause (the client's model reads it); the server goes on.

use std::sync::Arc;

use base64::Engine;
use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    ActInput, Acted, CrawlInput, CrawlStatus, Devices, Error, Observed, ReportInput, ReportOutput,
    Workbench,
};
use crate::crawl::Command;
use crate::report::Format;

const INSTRUCTIONS: &str = "droid drives an Android device (or droid-sim's simulated one). \
`observe` shows the screen: a pruned element tree where [ref=N] names an element, the screen's \
key and a screenshot. `act` taps, types, scrolls, presses keys, launches apps; refs name \
elements of the last observation. `crawl` explores an app on its own in the background; \
`crawl_status` and `crawl_control` follow and steer it; `report` reads a run's summary, \
crashes and screen graph. `devices` lists and chooses the device.";

/// The URI of a run's report in `format`.
fn report_uri(run: &str, format: Format) -> String {
    format!("droid://runs/{run}/report.{}", format.extension())
}

/// The run and format a report URI names.
fn parse_report_uri(uri: &str) -> Option<(&str, Format)> {
    let rest = uri.strip_prefix("droid://runs/")?;
    let (run, file) = rest.split_once('/')?;
    let extension = file.strip_prefix("report.")?;
    let format = Format::ALL
        .into_iter()
        .filter(|f| *f != Format::Pdf)
        .find(|f| f.extension() == extension)?;
    (!run.is_empty() && !run.contains('/')).then_some((run, format))
}

fn mime(format: Format) -> &'static str {
    match format {
        Format::Text => "text/plain",
        Format::Json => "application/json",
        Format::Html => "text/html",
        Format::Junit => "application/xml",
        Format::Dot => "text/vnd.graphviz",
        Format::Pdf => "application/pdf",
    }
}

/// `devices`' input.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct DevicesInput {
    /// Choose this device for the session (observe, act and crawl use it).
    pub serial: Option<String>,
}

/// `crawl_status`' and `crawl_control`'s run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct RunInput {
    /// A run started by this server [default: every crawl, or the newest one not ended].
    pub run: Option<String>,
}

/// What `crawl_control` asks.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ControlCommand {
    /// Pause after the current step.
    Pause,
    Resume,
    /// Stop gracefully: the summary and reports are written.
    Stop,
}

/// `crawl_control`'s input.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ControlInput {
    pub command: ControlCommand,
    /// A run started by this server [default: the newest one not ended].
    pub run: Option<String>,
}

/// The crawls of this server, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Crawls {
    pub crawls: Vec<CrawlStatus>,
}

/// droid's MCP server: its tools over one shared [`Workbench`].
#[derive(Clone)]
pub struct DroidServer {
    workbench: Arc<Workbench>,
    tool_router: ToolRouter<DroidServer>,
}

impl DroidServer {
    pub fn new(workbench: Arc<Workbench>) -> DroidServer {
        DroidServer {
            workbench,
            tool_router: DroidServer::tool_router(),
        }
    }

    /// Runs `job` on a blocking thread; its error (or its panic) as the text a client reads.
    async fn blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Workbench) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, String> {
        let workbench = Arc::clone(&self.workbench);
        match tokio::task::spawn_blocking(move || job(&workbench)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(crate::filter::Chain(&error).to_string()),
            Err(failed) => Err(format!("the tool failed: {failed}")),
        }
    }
}

/// A tool's answer: `value` as structured content (and as JSON text), or the error as a tool
/// error.
fn answer<T: Serialize>(outcome: Result<T, String>) -> CallToolResult {
    match outcome.map(|value| serde_json::to_value(value)) {
        Ok(Ok(value)) => CallToolResult::structured(value),
        Ok(Err(error)) => failure(format!("encoding the answer: {error}")),
        Err(error) => failure(error),
    }
}

fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

#[tool_router]
impl DroidServer {
    /// List the devices attached to the ADB server: serial, state, model, Android version,
    /// screen size, and which one this session uses. With `serial`, choose that device for
    /// the session (observe, act and crawl use it; the screens it has seen start anew).
    /// Without a choice the session uses the server's --device, else the only device attached.
    #[tool(output_schema = schema_for_output::<Devices>())]
    async fn devices(&self, Parameters(input): Parameters<DevicesInput>) -> CallToolResult {
        answer(
            self.blocking(move |w| match input.serial.as_deref() {
                Some(serial) => w.choose(serial),
                None => w.devices(),
            })
            .await,
        )
    }

    /// Capture the current screen as droid-capture does: the pruned element tree where
    /// [ref=N] names an element for `act`, the foreground package and activity, the screen's
    /// key (droid's screen identity), whether this session saw the screen before, and the
    /// screenshot as an image (at most 1280 px a side; `image.scale_x`/`scale_y` map its
    /// pixels to the device's).
    #[tool(
        output_schema = schema_for_output::<Observed>(),
        annotations(read_only_hint = true)
    )]
    async fn observe(&self) -> CallToolResult {
        match self.blocking(|w| w.observe()).await {
            Ok(snapshot) => {
                let mut result = answer::<Observed>(Ok(snapshot.observed));
                if let Some(png) = snapshot.png {
                    let data = base64::engine::general_purpose::STANDARD.encode(png);
                    result.content.push(ContentBlock::image(data, "image/png"));
                }
                result
            }
            Err(error) => failure(error),
        }
    }

    /// Act on the device as droid-act does, then observe the screen it led to. `action`:
    /// tap (`ref`, or `x` and `y`), long_press (`ref` or `x`, `y`), type (`text`: `ref` then
    /// holds exactly it, else it is added to the focused field; typed exactly, never run by a
    /// shell; `{{test_password}}` types the server's test password), swipe (`x`, `y` to
    /// `to_x`, `to_y`, `duration_ms`), scroll (`direction` up/down/left/right, inside `ref` or
    /// the screen), key (`key`: back, home, enter, app_switch, KEYCODE_*), launch and stop
    /// (`package`), wait (`duration_ms`). Refs name elements of the last `observe`. Answers
    /// the action's result (success, target, error) and the new screen's key; a failed action
    /// is a tool error with its result.
    #[tool(output_schema = schema_for_output::<Acted>())]
    async fn act(&self, Parameters(input): Parameters<ActInput>) -> CallToolResult {
        match self.blocking(move |w| w.act(&input)).await {
            Ok(acted) => {
                // A failed action: its error first, for the model that reads it.
                let failed = (!acted.result.success).then(|| {
                    let why = acted.result.error_message.as_deref().unwrap_or("failed");
                    format!("the action failed: {why}")
                });
                let mut result = answer::<Acted>(Ok(acted));
                if let Some(why) = failed {
                    result.is_error = Some(true);
                    result.content.insert(0, ContentBlock::text(why));
                }
                result
            }
            Err(error) => failure(error),
        }
    }

    /// Start a droid-crawl run on `package` on the session's device, in the background: it
    /// explores on its own until `max_steps`, `max_duration_secs` or nothing is left, records
    /// into the server's crawler.db and writes its reports. `decider`: heuristic (default),
    /// random, dfs, or an LLM (gemini, openrouter, ollama, openai, with `model`; keys from
    /// the server's settings). Answers the run's first status; follow it with
    /// `crawl_status`, steer it with `crawl_control`, read it with `report`.
    #[tool(output_schema = schema_for_output::<CrawlStatus>())]
    async fn crawl(&self, Parameters(input): Parameters<CrawlInput>) -> CallToolResult {
        answer(self.blocking(move |w| w.crawl(&input)).await)
    }

    /// The status of the crawls this server started (newest first), or of `run`: state
    /// (RUNNING, PAUSED_MANUAL, STOPPED, ERROR, ...), step, distinct screens, crashes,
    /// whether it ended and why, its latest messages.
    #[tool(
        output_schema = schema_for_output::<Crawls>(),
        annotations(read_only_hint = true)
    )]
    async fn crawl_status(&self, Parameters(input): Parameters<RunInput>) -> CallToolResult {
        let outcome = self
            .blocking(move |w| w.crawl_status(input.run.as_deref()))
            .await;
        answer(outcome.map(|crawls| Crawls { crawls }))
    }

    /// Pause, resume or stop a crawl of this server (`run`, else the newest not ended), as
    /// `droid-crawl pause|resume|stop` does: it takes effect before the crawl's next step.
    /// Answers the crawl's status when asked.
    #[tool(output_schema = schema_for_output::<CrawlStatus>())]
    async fn crawl_control(&self, Parameters(input): Parameters<ControlInput>) -> CallToolResult {
        let command = match input.command {
            ControlCommand::Pause => Command::Pause,
            ControlCommand::Resume => Command::Resume,
            ControlCommand::Stop => Command::Stop,
        };
        answer(
            self.blocking(move |w| w.control(input.run.as_deref(), command))
                .await,
        )
    }

    /// A run's report from the server's crawler.db (`run`: an id or `latest`). `view`:
    /// summary (the text droid-crawl prints at its end, with run_stats), json (the whole
    /// report as droid-report --format json writes it), crashes (crashes and ANRs by
    /// signature, with traces and the steps to reproduce), graph (screens and transitions,
    /// and Graphviz DOT).
    #[tool(annotations(read_only_hint = true))]
    async fn report(
        &self,
        Parameters(input): Parameters<ReportInput>,
    ) -> Result<Json<ReportOutput>, String> {
        self.blocking(move |w| w.report(&input)).await.map(Json)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for DroidServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("droid-mcp", env!("CARGO_PKG_VERSION"))
                    .with_title("droid: Android exploration"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let runs = self
            .blocking(|w| w.runs())
            .await
            .map_err(|e| ErrorData::internal_error(e, None))?;
        let mut resources = Vec::new();
        for run in runs {
            for format in [Format::Text, Format::Json] {
                let name = format!("run {} report ({})", run.run_id, format.name());
                resources.push(
                    Resource::new(report_uri(&run.run_id, format), name)
                        .with_description(format!(
                            "{} on {}: {}, {} steps, {} screens, started {}",
                            run.package, run.device, run.status, run.steps, run.screens, run.start
                        ))
                        .with_mime_type(mime(format)),
                );
            }
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new("droid://runs/{run}/report.{format}", "run report")
            .with_description(
                "A run's report: format txt, json, html, xml (JUnit) or dot; run is a run id \
                 or `latest`",
            );
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let Some((run, format)) = parse_report_uri(&uri) else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {uri}: droid serves droid://runs/RUN/report.FORMAT"),
                None,
            ));
        };
        let run = run.to_string();
        let text = self
            .blocking(move |w| w.render(&run, format))
            .await
            .map_err(|e| ErrorData::resource_not_found(e, None))?;
        let contents = ResourceContents::text(text, uri).with_mime_type(mime(format));
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_uris_name_a_run_and_a_text_format() {
        let uri = report_uri("r1", Format::Json);
        assert_eq!(uri, "droid://runs/r1/report.json");
        assert_eq!(parse_report_uri(&uri), Some(("r1", Format::Json)));
        assert_eq!(
            parse_report_uri("droid://runs/latest/report.txt"),
            Some(("latest", Format::Text))
        );
        for bad in [
            "droid://runs/r1/report.pdf",
            "droid://runs//report.txt",
            "droid://runs/r1/x/report.txt",
            "file:///etc/passwd",
            "droid://runs/r1/summary.txt",
        ] {
            assert_eq!(parse_report_uri(bad), None, "{bad}");
        }
    }
}
