//! What droid-crawl adds to the device's own time: crawls run in-process against droid-sim, the
//! wall time of each step set against the time the simulated device spent running commands in
//! it (`SimHandle::busy_periods`).

use std::path::Path;
use std::time::{Duration, Instant};

use clap::Parser;
use droid::crawl::{self, cli::CrawlArgs, Level, Listener};
use droid::decide::cli::DeciderArgs;
use droid::device::{AdbDevice, DeviceConfig};
use droid::events::Event;
use droid::sim::{fault::Latency, Sim, SimConfig};
use serde_json::{json, Value};

use crate::figure;

/// droid-crawl's own flags, parsed as the binary parses them.
#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    crawl: CrawlArgs,
    #[command(flatten)]
    decider: DeciderArgs,
}

/// When each observation of a crawl was written.
#[derive(Default)]
struct Clock {
    observed: Vec<Instant>,
    nodes: Vec<usize>,
}

impl Listener for Clock {
    fn event(&mut self, event: &Event) {
        if let Event::Observation(observation) = event {
            self.observed.push(Instant::now());
            self.nodes.push(observation.elements.len());
        }
    }

    fn say(&mut self, _level: Level, _message: &str) {}
}

/// One step: from its observation to the next one's.
struct Step {
    wall: Duration,
    device: Duration,
    nodes: usize,
}

/// Crawls `model` for `steps` steps with the heuristic and no pause between actions; each step's
/// wall time and the device's busy time inside it.
fn crawl_steps(model: &str, latency: Latency, steps: u64) -> Vec<Step> {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = Sim::start(SimConfig {
        latency,
        ..SimConfig::new(model)
    })
    .expect("simulator");
    let package = droid::sim::model::AppModel::load(model)
        .expect("model")
        .package()
        .to_string();
    let device =
        AdbDevice::connect(DeviceConfig::loopback(sim.port(), sim.serial())).expect("connect");
    let db = dir.path().join("crawler.db").display().to_string();
    let out = dir.path().join("out").display().to_string();
    let steps_arg = steps.to_string();
    let flags = Flags::parse_from([
        "bench",
        "--package",
        &package,
        "--decider",
        "heuristic",
        "--max-steps",
        &steps_arg,
        "--pause-ms",
        "0",
        "--report",
        "none",
        "--db",
        &db,
        "--out",
        &out,
        "--config-db",
        &dir.path().join("user_config.db").display().to_string(),
    ]);
    let decide = flags
        .decider
        .config(Some(package.clone()), Vec::new())
        .expect("decider");
    let mut settings = flags.decider.settings().expect("settings");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let config = flags
        .crawl
        .config(
            package,
            decide,
            droid::act::Config::default(),
            stop,
            &mut settings,
        )
        .expect("config");
    let config = crawl::Config {
        act: droid::act::Config {
            pause: Duration::ZERO,
            ..config.act
        },
        ..config
    };
    let mut clock = Clock::default();
    let summary = crawl::crawl(config, &device, &mut clock).expect("crawl");
    assert_eq!(summary.status, "COMPLETED", "{}", summary.reason);
    let busy = sim.busy_periods();
    clock
        .observed
        .windows(2)
        .zip(&clock.nodes)
        .map(|(pair, &nodes)| Step {
            wall: pair[1] - pair[0],
            device: busy_within(&busy, pair[0], pair[1]),
            nodes,
        })
        .collect()
}

/// How long at least one command ran between `from` and `to` (overlapping commands once).
fn busy_within(periods: &[(Instant, Instant)], from: Instant, to: Instant) -> Duration {
    let mut clipped: Vec<(Instant, Instant)> = periods
        .iter()
        .map(|&(start, end)| (start.max(from), end.min(to)))
        .filter(|(start, end)| start < end)
        .collect();
    clipped.sort();
    let mut total = Duration::ZERO;
    let mut current: Option<(Instant, Instant)> = None;
    for (start, end) in clipped {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some((s, e)) = current {
        total += e - s;
    }
    total
}

fn median_of(mut values: Vec<Duration>) -> Duration {
    values.sort_unstable();
    values[values.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `make bench`'s `crawl_latency`: with a real device's delays a step should take about the
/// device's own time.
pub fn crawl_latency() {
    const STEPS: u64 = 30;
    let steps = crawl_steps("builtin:shop", Latency::Realistic, STEPS);
    let wall: Duration = steps.iter().map(|s| s.wall).sum();
    let device: Duration = steps.iter().map(|s| s.device).sum();
    let ratio = wall.as_secs_f64() / device.as_secs_f64();
    let ratios: Vec<f64> = {
        let mut r: Vec<f64> = steps
            .iter()
            .map(|s| s.wall.as_secs_f64() / s.device.as_secs_f64())
            .collect();
        r.sort_by(f64::total_cmp);
        r
    };
    let median_wall = median_of(steps.iter().map(|s| s.wall).collect());
    let median_device = median_of(steps.iter().map(|s| s.device).collect());
    let median_ratio = ratios[ratios.len() / 2];
    println!(
        "droid-crawl --sim builtin:shop --sim-latency realistic --pause-ms 0, heuristic, {STEPS} \
         steps ({} measured: observation to observation):\n",
        steps.len()
    );
    println!("| | median ms per step | total s |");
    println!("|---|---:|---:|");
    println!(
        "| step wall time | {:.0} | {:.1} |",
        ms(median_wall),
        wall.as_secs_f64()
    );
    println!(
        "| device busy (simulator's commands, overlaps once) | {:.0} | {:.1} |",
        ms(median_device),
        device.as_secs_f64()
    );
    println!(
        "| droid's own time (wall - busy) | {:.0} | {:.1} |",
        ms(median_wall.saturating_sub(median_device)),
        (wall - device.min(wall)).as_secs_f64()
    );
    println!(
        "\nwall / device time: {ratio:.3} over the run, median step {median_ratio:.3}, worst \
         step {:.3} (target <= 1.05)",
        ratios[ratios.len() - 1]
    );
    figure("crawl_latency", "steps", json!(steps.len()));
    figure("crawl_latency", "wall_over_device", json!(round3(ratio)));
    figure(
        "crawl_latency",
        "median_step_wall_over_device",
        json!(round3(median_ratio)),
    );
    figure(
        "crawl_latency",
        "median_step_wall_ms",
        json!(ms(median_wall).round()),
    );
    figure(
        "crawl_latency",
        "median_step_device_ms",
        json!(ms(median_device).round()),
    );
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A model of four screens of about `nodes` nodes each (a toolbar and a list of rows, each row
/// a clickable layout with an icon and two texts; the first row of each screen leads to the
/// next screen), for droid-crawl's overhead per step by screen size.
fn sized_model(dir: &Path, nodes: usize) -> String {
    const SCREENS: usize = 4;
    let rows = (nodes.saturating_sub(4) / 4).max(1);
    let height = 2400;
    let top = 240;
    let row_h = ((height - top) / rows as i64).max(2);
    let screens: Vec<Value> = (0..SCREENS)
        .map(|s| {
            let list: Vec<Value> = (0..rows)
                .map(|r| {
                    let y = top + r as i64 * row_h;
                    let b = |x1: i64, x2: i64| json!([x1, y, x2, y + row_h]);
                    json!({
                        "class": "android.widget.LinearLayout",
                        "resource_id": "com.example.sized:id/row",
                        "clickable": true,
                        "bounds": b(0, 1080),
                        "children": [
                            {"class": "android.widget.ImageView", "content_desc": format!("icon {r}"), "bounds": b(0, 120)},
                            {"class": "android.widget.TextView", "text": format!("Item {r} of screen {s}"), "bounds": b(140, 800)},
                            {"class": "android.widget.TextView", "text": format!("{r} min"), "bounds": b(820, 1080)}
                        ]
                    })
                })
                .collect();
            json!({
                "id": format!("s{s}"),
                "activity": format!("com.example.sized.Screen{s}Activity"),
                "elements": [
                    {"class": "android.view.ViewGroup", "resource_id": "com.example.sized:id/toolbar", "bounds": [0, 80, 1080, 240],
                     "children": [{"class": "android.widget.TextView", "text": format!("Screen {s}"), "bounds": [40, 100, 800, 220]}]},
                    {"class": "androidx.recyclerview.widget.RecyclerView", "resource_id": "com.example.sized:id/list", "scrollable": true,
                     "bounds": [0, top, 1080, height], "children": list}
                ]
            })
        })
        .collect();
    let transitions: Vec<Value> = (0..SCREENS)
        .map(|s| {
            json!({"from": format!("s{s}"), "action": "click", "target": {"text": format!("Item 0 of screen {s}")},
                   "to": format!("s{}", (s + 1) % SCREENS)})
        })
        .collect();
    let model = json!({
        "package": "com.example.sized",
        "label": "Sized",
        "version_name": "1.0",
        "screen_size": [1080, height],
        "start": "s0",
        "screens": screens,
        "transitions": transitions,
    });
    let path = dir.join(format!("sized-{nodes}.json"));
    std::fs::write(&path, model.to_string()).expect("model");
    path.display().to_string()
}

/// `make bench`'s `crawl_overhead`: droid's own time per step (everything but the device's) by
/// screen size, with a device that answers at once.
pub fn crawl_overhead() {
    const STEPS: u64 = 25;
    let dir = tempfile::tempdir().expect("temp dir");
    println!(
        "droid-crawl on a 1080x2400 model of ~N nodes per screen, no device latency, heuristic, \
         {STEPS} steps: droid's own time per step = step wall time - the simulator's busy time \
         (target <= 15 ms for a typical 150-node screen):\n"
    );
    println!(
        "| model nodes per screen | nodes in the dump (median) | step wall ms (median) | device \
         busy ms | droid's own ms |"
    );
    println!("|---:|---:|---:|---:|---:|");
    for nodes in [30, 150, 1000] {
        let steps = crawl_steps(&sized_model(dir.path(), nodes), Latency::None, STEPS);
        let wall = median_of(steps.iter().map(|s| s.wall).collect());
        let device = median_of(steps.iter().map(|s| s.device).collect());
        let own = median_of(
            steps
                .iter()
                .map(|s| s.wall.saturating_sub(s.device))
                .collect(),
        );
        let mut dumped: Vec<usize> = steps.iter().map(|s| s.nodes).collect();
        dumped.sort_unstable();
        println!(
            "| {nodes} | {} | {:.1} | {:.1} | {:.1} |",
            dumped[dumped.len() / 2],
            ms(wall),
            ms(device),
            ms(own)
        );
        figure(
            "crawl_overhead",
            &format!("own_ms_per_step_{nodes}_nodes"),
            json!((ms(own) * 10.0).round() / 10.0),
        );
    }
}
