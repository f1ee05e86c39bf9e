//! `make bench`: performance numbers as medians, one section per function.
//! `cargo bench --bench bench -- NAME...` runs only the named sections.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use droid::adb::ServerConfig;
use droid::capture::{observe_device, DeviceOptions};
use droid::device::{AdbDevice, Device, DeviceConfig};

type Section = (&'static str, fn());

const SECTIONS: &[Section] = &[("capture", capture)];

fn main() {
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for (name, section) in SECTIONS {
        if wanted.is_empty() || wanted.iter().any(|w| w == name) {
            println!("== {name}");
            section();
        }
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs `f` `n` times and returns the median wall time.
fn measure(n: usize, mut f: impl FnMut()) -> Duration {
    median(
        (0..n)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed()
            })
            .collect(),
    )
}

/// droid-sim with realistic latency, killed at the end of the section.
struct Sim(Child, DeviceConfig);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_sim() -> Sim {
    let model =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/apps/notes/model.json");
    // Bench binaries live in target/<profile>/deps, the package's binaries one level up.
    let exe = std::env::current_exe().expect("bench binary path");
    let bins = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    let mut child = Command::new(bins.join("droid-sim"))
        .arg("--app")
        .arg(model)
        .args(["--port", "0", "--latency", "realistic"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("droid-sim runs");
    let mut ready = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut ready)
        .expect("ready line");
    let ready: serde_json::Value = serde_json::from_str(&ready).expect("ready line is JSON");
    let config = DeviceConfig {
        server: ServerConfig {
            host: "127.0.0.1".into(),
            port: ready["port"].as_u64().expect("port") as u16,
            start_server: false,
            ..ServerConfig::default()
        },
        serial: ready["serial"].as_str().map(str::to_string),
        ..DeviceConfig::default()
    };
    Sim(child, config)
}

/// Device capture against `droid-sim --latency realistic`: the dump and the screenshot alone,
/// then a whole capture with the parts concurrent and sequential. Target: concurrent <= 1.1 x
/// the slower of dump and screenshot.
fn capture() {
    const RUNS: usize = 15;
    let sim = start_sim();
    let device = AdbDevice::connect(sim.1.clone()).expect("connect to droid-sim");
    let info = device.info().expect("device info");
    let out = std::env::temp_dir().join(format!("droid-bench-{}", std::process::id()));
    let dump = measure(RUNS, || {
        device.dump_hierarchy().expect("dump");
    });
    let shot = measure(RUNS, || {
        device.screenshot().expect("screenshot");
    });
    let fg = measure(RUNS, || {
        device.foreground().expect("foreground");
    });
    let run = |concurrent| {
        let opts = DeviceOptions {
            out_dir: out.clone(),
            screenshot: true,
            concurrent,
            run_id: None,
            step: None,
        };
        measure(RUNS, || {
            observe_device(&device, &info, &opts).expect("capture");
        })
    };
    let concurrent = run(true);
    let sequential = run(false);
    let _ = std::fs::remove_dir_all(&out);
    let slower = dump.max(shot);
    println!("  median of {RUNS} runs, droid-sim --latency realistic, notes app start screen");
    println!("  dump alone          {:8.1} ms", ms(dump));
    println!("  screenshot alone    {:8.1} ms", ms(shot));
    println!("  foreground alone    {:8.1} ms", ms(fg));
    println!("  capture sequential  {:8.1} ms", ms(sequential));
    println!(
        "  capture concurrent  {:8.1} ms  = {:.2} x the slower part (target <= 1.10)",
        ms(concurrent),
        concurrent.as_secs_f64() / slower.as_secs_f64()
    );
}
