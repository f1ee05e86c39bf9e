//! droid-hash: screen identity keys, standalone or as a filter stage.

mod common;

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use droid::events::EventWriter;
use droid::hash;
use serde_json::{Map, Value};

#[derive(Parser, Debug)]
#[command(
    name = "droid-hash",
    version,
    args_conflicts_with_subcommands = true,
    about = "Layout hash, perceptual hash and screen key: of files, or of every observation on stdin",
    long_about = "Screen identity keys. With a PNG it prints {\"phash\":\"<16 hex digits>\"} \
(dHash, 64 bits); with --xml a uiautomator dump it prints {\"layout_hash\":\"<64 hex digits>\"} \
(sha256 of the hierarchy without volatile attributes: focus, selection, checked, typed text, \
scroll offsets). With no file it filters the event stream: every observation gets a `hash` \
object (layout_hash, structure_hash, phash, and screen_key: the screen's identity as the deciders \
and crawler.db know it, from the activity and the widgets' actions), every other line passes \
through untouched. `distance` counts the bits two perceptual hashes differ in.",
    after_help = "Examples:
  droid-hash shot.png
  droid-hash --xml window_dump.xml --structure
  droid-hash distance 8f3c0e1a55aa0f0f 8f3c0e1a55aa0f1f
  droid-capture --from-xml dump.xml --screenshot shot.png | droid-hash"
)]
struct Args {
    /// A PNG screenshot to hash.
    #[arg(value_name = "SHOT.png")]
    png: Option<PathBuf>,
    /// A uiautomator dump to hash.
    #[arg(long, value_name = "DUMP.xml")]
    xml: Option<PathBuf>,
    /// With --xml: also print the structure hash (classes and ids only, no text).
    #[arg(long, requires = "xml")]
    structure: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the Hamming distance between two perceptual hashes (16 hex digits each).
    Distance { h1: String, h2: String },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let outcome = match (&args.command, &args.png, &args.xml) {
        (Some(Command::Distance { h1, h2 }), _, _) => distance(h1, h2),
        (None, None, None) => filter(),
        (None, png, xml) => standalone(png.as_deref(), xml.as_deref(), args.structure),
    };
    common::finish("droid-hash", outcome)
}

fn distance(h1: &str, h2: &str) -> anyhow::Result<ExitCode> {
    let a = hash::parse_phash(h1)?;
    let b = hash::parse_phash(h2)?;
    println!("{}", hash::hamming(a, b));
    Ok(ExitCode::SUCCESS)
}

fn standalone(png: Option<&Path>, xml: Option<&Path>, structure: bool) -> anyhow::Result<ExitCode> {
    let mut out = Map::new();
    if let Some(path) = png {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let phash = hash::phash_png(&bytes).with_context(|| path.display().to_string())?;
        out.insert("phash".into(), Value::from(hash::format_phash(phash)));
    }
    if let Some(path) = xml {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let context = || path.display().to_string();
        out.insert(
            "layout_hash".into(),
            hash::layout_hash(&text).with_context(context)?.into(),
        );
        if structure {
            out.insert(
                "structure_hash".into(),
                hash::structure_hash(&text).with_context(context)?.into(),
            );
        }
    }
    EventWriter::new(io::stdout().lock()).write_value(&Value::Object(out))?;
    Ok(ExitCode::SUCCESS)
}

fn filter() -> anyhow::Result<ExitCode> {
    common::filter("droid-hash", &mut hash::Stage, false)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        super::Args::command().debug_assert();
    }
}
