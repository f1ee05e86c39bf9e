//! A crawl of an app model by the real `droid-crawl` on a simulated device (`--sim`), recorded
//! into a crawler.db and a session folder: the run the report tests render.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A recorded run.
pub struct CrawledRun {
    pub db: PathBuf,
    pub run_id: String,
    pub session_dir: PathBuf,
    pub package: String,
}

/// Crawls `app` (`builtin:shop`, a model file) for `steps` steps into `dir/crawler.db` and a
/// session folder under `dir/output_data/`. `anr_on` names a screen of the model on which the
/// app stops responding (droid-sim's `anr-on` fault).
pub fn crawl_in_process(dir: &Path, app: &str, steps: u64, anr_on: Option<&str>) -> CrawledRun {
    let db = dir.join("crawler.db");
    let mut cmd = crate::common::droid("droid-crawl");
    cmd.args(["--sim", app, "--max-steps", &steps.to_string()])
        .args(["--db", &db.display().to_string()])
        .args(["--out", &dir.join("output_data").display().to_string()])
        .args(["--pause-ms", "0", "--report", "none"]);
    if let Some(screen) = anr_on {
        cmd.args(["--sim-fault", &format!("anr-on:{screen}")]);
    }
    let output = cmd.output().expect("droid-crawl runs");
    assert!(output.status.success(), "droid-crawl: {output:?}");
    let ended: Value = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .rfind(|event| event["type"] == "run_ended")
        .expect("a run_ended line");
    let started: Value = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "run_started")
        .expect("a run_started line");
    CrawledRun {
        db,
        run_id: ended["run_id"].as_str().unwrap_or_default().to_string(),
        session_dir: PathBuf::from(ended["session_dir"].as_str().unwrap_or_default()),
        package: started["package"].as_str().unwrap_or_default().to_string(),
    }
}
