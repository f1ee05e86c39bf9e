//! Reports of a run: what a crawl leaves behind, for people and for CI.
//!
//! [`Report::load`] reads one run from crawler.db (and the screenshots its events name) into
//! [`Report`], the data every format renders; [`render`] writes it as text (80 columns), JSON
//! (every `run_stats` field under the reference's name), PDF, a self-contained HTML file, JUnit
//! XML or Graphviz DOT. A run is reported whatever its state: running, paused, stopped or
//! errored. `docs/report.md` describes each format.

pub mod data;
pub mod dot;
pub mod graph;
pub mod html;
pub mod json;
pub mod junit;
pub mod pdf;
pub mod text;
mod thumbnail;

use std::io::Write;

pub use data::Report;

/// What went wrong making a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    #[error("the database has no run yet")]
    NoRuns,
    #[error("writing the report")]
    Write(#[source] std::io::Error),
    #[error("no font for the PDF: {0}")]
    Font(String),
    #[error("building the PDF: {0}")]
    Pdf(String),
}

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Pdf,
    Html,
    Junit,
    Dot,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::Text,
        Format::Json,
        Format::Pdf,
        Format::Html,
        Format::Junit,
        Format::Dot,
    ];

    /// The name on the command line (`--format NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Pdf => "pdf",
            Format::Html => "html",
            Format::Junit => "junit",
            Format::Dot => "dot",
        }
    }

    /// The usual file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Text => "txt",
            Format::Junit => "xml",
            other => other.name(),
        }
    }

    pub fn parse(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// What makes `--fail-on` fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    /// The app crashed at least once.
    Crash,
    /// The app stopped responding at least once.
    Anr,
    /// The run ended with ERROR, or a stage stopped on an error.
    Error,
}

impl FailOn {
    pub fn parse(name: &str) -> Option<FailOn> {
        match name {
            "crash" => Some(FailOn::Crash),
            "anr" => Some(FailOn::Anr),
            "error" => Some(FailOn::Error),
            _ => None,
        }
    }

    /// What the run has of this, for people; `None` when it has none.
    pub fn found(self, report: &Report) -> Option<String> {
        let plural = |n: usize, one: &str, many: &str| match n {
            1 => format!("1 {one}"),
            n => format!("{n} {many}"),
        };
        match self {
            FailOn::Crash => match report.occurrences("crash") {
                0 => None,
                n => Some(format!(
                    "{} ({} distinct)",
                    plural(n, "crash", "crashes"),
                    report.groups("crash").count()
                )),
            },
            FailOn::Anr => match report.occurrences("anr") {
                0 => None,
                n => Some(format!(
                    "{} ({} distinct)",
                    plural(n, "ANR", "ANRs"),
                    report.groups("anr").count()
                )),
            },
            FailOn::Error => report.failure().map(|why| format!("an error: {why}")),
        }
    }
}

/// Writes the reports of `run` in `formats` into `dir` as `report.EXT` (what a crawl leaves in
/// its session folder) and returns their paths. A format that fails stops the rest.
pub fn write_files(
    store: &crate::store::Store,
    run: &str,
    dir: &std::path::Path,
    formats: &[Format],
) -> Result<Vec<std::path::PathBuf>, Error> {
    let report = Report::load(store, run)?;
    let mut written = Vec::new();
    for &format in formats {
        let path = dir.join(format!("report.{}", format.extension()));
        let file = std::fs::File::create(&path).map_err(Error::Write)?;
        render(&report, format, &mut std::io::BufWriter::new(file))?;
        written.push(path);
    }
    Ok(written)
}

/// The text summary of `run` in the crawler.db at `db` (what a crawl prints at its end).
pub fn text_summary(db: &std::path::Path, run: &str) -> Result<String, Error> {
    let store = crate::store::Store::open_existing(db)?;
    Ok(text::render(&Report::load(&store, run)?))
}

/// Writes `report` in `format` to `out`.
pub fn render(report: &Report, format: Format, out: &mut dyn Write) -> Result<(), Error> {
    match format {
        Format::Text => out
            .write_all(text::render(report).as_bytes())
            .map_err(Error::Write)?,
        Format::Json => json::write(report, out)?,
        Format::Pdf => {
            let bytes = pdf::render(report, &pdf::Fonts::system()?)?;
            out.write_all(&bytes).map_err(Error::Write)?;
        }
        Format::Html => out
            .write_all(html::render(report).as_bytes())
            .map_err(Error::Write)?,
        Format::Junit => out
            .write_all(junit::render(report).as_bytes())
            .map_err(Error::Write)?,
        Format::Dot => out
            .write_all(dot::render(report).as_bytes())
            .map_err(Error::Write)?,
    }
    out.flush().map_err(Error::Write)
}
