//! `make bench`: performance numbers as medians; `make coverage`: how much of every app model
//! the deciders explore. A plain harness: each section is a function; `cargo bench --bench bench
//! -- SECTION...` runs only the named sections.

use std::collections::{BTreeMap, BTreeSet};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use droid::decide::heuristic;
use droid::events::{
    Action, ActionResult, ActionType, Decision, Event, Observation, Origin, ScreenHash,
};
use droid::record;
use droid::store::{Store, JOURNAL_STEPS};
use droid::ui::{Bounds, UiElement};
use image::{DynamicImage, Rgb, RgbImage};

#[path = "../tests/support/coverage_tables.rs"]
mod coverage_tables;
#[path = "support/crawl.rs"]
mod crawl;
#[path = "../tests/support/explore.rs"]
mod explore;
#[path = "../tests/support/mcp_stdio.rs"]
mod mcp_stdio;
#[path = "../tests/support/stand_in.rs"]
mod stand_in;

// The binaries' allocator (bins/common), so the figures are those the binaries give.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Sections that explore every app model again for minutes only to compare identity rules:
/// `make coverage` runs them, `make bench` does not.
const SLOW: &[&str] = &["identity", "misses", "collisions"];

/// Named sections, in the order they run.
const SECTIONS: &[(&str, fn())] = &[
    ("ui", ui),
    ("hostile_xml", hostile_xml),
    ("phash", phash),
    ("sim_world", sim_world),
    ("sim_server", sim_server),
    ("capture", capture),
    ("crawl_latency", crawl::crawl_latency),
    ("crawl_overhead", crawl::crawl_overhead),
    ("store", store),
    ("decide", decide),
    ("decide_db", decide_db),
    ("coverage", coverage),
    ("identity", identity),
    ("misses", misses),
    ("collisions", collisions),
    ("report", report),
    ("mcp", mcp),
];

/// The headline figures of the sections that ran, by section: `--json=FILE` writes them.
static FIGURES: std::sync::Mutex<BTreeMap<String, serde_json::Map<String, serde_json::Value>>> =
    std::sync::Mutex::new(BTreeMap::new());

/// Keeps a headline figure for `--json`.
fn figure(section: &str, name: &str, value: serde_json::Value) {
    let mut figures = FIGURES.lock().unwrap_or_else(|p| p.into_inner());
    figures
        .entry(section.to_string())
        .or_default()
        .insert(name.to_string(), value);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it, and
    // timings from a debug build would mean nothing, so that run only proves it builds.
    if !args.iter().any(|a| a == "--bench") {
        println!("benchmarks run with `make bench`");
        return;
    }
    let json = args.iter().find_map(|a| a.strip_prefix("--json="));
    // Anything else not starting with `-` names a section.
    let wanted: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    println!(
        "# droid benchmarks\n\nWritten by `make bench` (`cargo bench --bench bench`); medians on \
         this machine: {} CPUs, {}. What each section measures, and its target: \
         [docs/benchmarks.md](docs/benchmarks.md).\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        chrono::Utc::now().format("%Y-%m-%d")
    );
    for (name, section) in SECTIONS {
        let by_default = !SLOW.contains(name);
        if (wanted.is_empty() && by_default) || wanted.iter().any(|w| w == name) {
            println!("## {name}\n");
            section();
            println!();
        }
    }
    if let Some(path) = json {
        // The sections that ran replace theirs in the file; the others stay as they were.
        let mut kept: BTreeMap<String, serde_json::Value> = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let figures = FIGURES.lock().unwrap_or_else(|p| p.into_inner());
        for (section, values) in figures.iter() {
            kept.insert(section.clone(), serde_json::Value::Object(values.clone()));
        }
        let text = serde_json::to_string_pretty(&kept).expect("figures") + "\n";
        std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    }
}

/// Median and fastest of `runs` timings of `f`. On a loaded machine the fastest run shows the
/// uncontended cost, the median what a caller sees.
fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    (times[times.len() / 2], times[0])
}

/// Median of `runs` timings of `f`.
fn median<T>(runs: usize, f: impl FnMut() -> T) -> Duration {
    time(runs, f).0
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A duration in the unit that suits it, three significant digits or so.
fn duration(d: Duration) -> String {
    let us = micros(d);
    match us {
        us if us < 1e3 => format!("{us:.0} µs"),
        us if us < 1e6 => format!("{:.2} ms", us / 1e3),
        us => format!("{:.2} s", us / 1e6),
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The shared fixtures, or `None` (and one line saying that `section` is skipped) without them.
fn fixtures(section: &str) -> Option<PathBuf> {
    droid::fixtures::available(&format!("bench section {section}"))
}

/// Parse (signatures included) and prune, per real dump.
fn ui() {
    let Some(fixtures) = fixtures("ui") else {
        return;
    };
    let mut dumps = Vec::new();
    for dir in ["uidump", "apps/notes/screens"] {
        for entry in std::fs::read_dir(fixtures.join(dir)).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|x| x == "xml") {
                dumps.push(path);
            }
        }
    }
    dumps.sort();
    println!("| dump | nodes | parse+signature µs | prune µs | total µs | fastest total µs |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut totals = Vec::new();
    for path in &dumps {
        let xml = std::fs::read_to_string(path).expect("dump");
        let nodes = droid::ui::parse(&xml).expect("parses").len();
        let parse = median(200, || {
            black_box(droid::ui::parse(black_box(&xml)).expect("parses"));
        });
        let parsed = droid::ui::parse(&xml).expect("parses");
        let prune = median(200, || {
            let mut elements = parsed.clone();
            black_box(droid::ui::prune(&mut elements));
        });
        let (total, fastest) = time(200, || {
            let mut elements = droid::ui::parse(black_box(&xml)).expect("parses");
            black_box(droid::ui::prune(&mut elements));
        });
        totals.push((nodes, micros(total)));
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        println!(
            "| {name} | {nodes} | {:.0} | {:.0} | {:.0} | {:.0} |",
            micros(parse),
            micros(prune),
            micros(total),
            micros(fastest)
        );
    }
    let big: Vec<f64> = totals
        .iter()
        .filter(|(n, _)| *n >= 120)
        .map(|(_, t)| *t)
        .collect();
    let worst = big.iter().copied().fold(0.0, f64::max);
    println!(
        "\n{} dumps; the {} with >= 120 nodes take at most {worst:.0} µs (target: <= 1000 µs for 150 nodes)",
        dumps.len(),
        big.len()
    );
}

/// One attribute-rich node as uiautomator writes it, `{i}` numbered so no two print alike.
fn dump_node(i: usize, class: &str, close: &str) -> String {
    format!(
        r#"<node index="0" text="Item {i}" resource-id="com.x:id/item" class="{class}" package="com.x" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,{i}][1080,{}]"{close}>"#,
        i + 10
    )
}

/// Dumps of about `size` bytes shaped as the hostile probe shaped them: many windows, as many
/// attribute-less nodes as fit, one parent of many siblings (each of its own class), the most attributes a node may have, chains as
/// deep as allowed, and long classes deep down (the xpaths grow with depth).
fn hostile_dumps(size: usize) -> Vec<(&'static str, String)> {
    let fill = |mut body: String, mut next: Box<dyn FnMut(usize) -> String>| {
        let mut i = 0;
        while body.len() < size {
            body.push_str(&next(i));
            i += 1;
        }
        body
    };
    let head =
        r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0">"#;
    let windows = fill(
        head.into(),
        Box::new(|i| dump_node(i, "android.widget.TextView", "/")),
    );
    let siblings = fill(
        format!(
            r#"{head}<node class="android.widget.ListView" scrollable="true" bounds="[0,0][1080,2400]">"#
        ),
        Box::new(|i| dump_node(i, &format!("com.x.Row{i}"), "/")),
    ) + "</node>";
    let attributes = fill(
        head.into(),
        Box::new(|i| {
            let extra: String = (0..droid::ui::parse::MAX_ATTRIBUTES - 18)
                .map(|a| format!(r#" x{a}="{i}""#))
                .collect();
            dump_node(i, "android.widget.TextView", &format!("{extra}/"))
        }),
    );
    let depth = droid::ui::MAX_DEPTH - 1;
    let deep = fill(
        head.into(),
        Box::new(move |i| {
            let open: String = (0..depth)
                .map(|d| dump_node(i * depth + d, "a.V", ""))
                .collect();
            open + &"</node>".repeat(depth)
        }),
    );
    let long_class = "c".repeat(200);
    let chain: String = (0..depth)
        .map(|d| format!(r#"<node class="{long_class}" bounds="[0,0][9,{d}]">"#))
        .collect();
    let deep_leaves = fill(
        format!("{head}{chain}"),
        Box::new(|_| "<node/>".to_string()),
    ) + &"</node>".repeat(depth);
    let bare = fill(format!("{head}<node>"), Box::new(|_| "<node/>".to_string())) + "</node>";
    [
        ("windows", windows),
        ("bare", bare),
        ("siblings", siblings),
        ("attributes", attributes),
        ("deep", deep),
        ("deep_leaves", deep_leaves),
    ]
    .into_iter()
    .map(|(name, body)| (name, body + "</hierarchy>"))
    .collect()
}

/// What droid-capture and droid-hash do to a dump (parse with signatures, prune, layout and
/// structure hash), on 1 MB dumps of hostile shapes. Target: <= 100 ms each.
fn hostile_xml() {
    println!(
        "| shape | bytes | nodes | parse+prune ms | hashes ms | total ms | fastest total ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (shape, xml) in hostile_dumps(1 << 20) {
        let work = |xml: &str| {
            let parsed = droid::ui::parse(xml).map(|mut elements| {
                droid::ui::prune(&mut elements);
                elements.len()
            });
            let hashed =
                droid::hash::layout_hash(xml).and_then(|_| droid::hash::structure_hash(xml));
            (parsed, hashed.is_ok())
        };
        let (parsed, hashed) = work(&xml);
        let nodes = match parsed {
            Ok(nodes) if hashed => nodes.to_string(),
            Ok(_) => "hash refused".into(),
            Err(refused) => format!("refused: {refused}"),
        };
        let parse = median(5, || {
            let mut elements = droid::ui::parse(&xml);
            black_box(elements.as_mut().map(|e| droid::ui::prune(e)).ok());
        });
        let hashes = median(5, || {
            black_box(droid::hash::layout_hash(&xml).ok());
            black_box(droid::hash::structure_hash(&xml).ok());
        });
        let (total, fastest) = time(5, || work(&xml));
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "| {shape} | {} | {nodes} | {:.1} | {:.1} | {:.1} | {:.1} |",
            xml.len(),
            ms(parse),
            ms(hashes),
            ms(total),
            ms(fastest)
        );
    }
    println!("\ntarget: <= 100 ms per 1 MB dump, whatever its shape");
}

/// A 1080×2400 screen-like picture: a toolbar, list rows with text-like strokes, a button.
fn synthetic_screen() -> RgbImage {
    let mut image = RgbImage::from_pixel(1080, 2400, Rgb([250, 250, 250]));
    for y in 0..200 {
        for x in 0..1080 {
            image.put_pixel(x, y, Rgb([30, 90, 200]));
        }
    }
    for row in 0..12u32 {
        let top = 260 + row * 160;
        for y in top + 40..top + 80 {
            for x in 60..(300 + (row * 97) % 600) {
                if (x / 9) % 5 != 4 {
                    image.put_pixel(x, y, Rgb([40, 40, 40]));
                }
            }
        }
        for x in 0..1080 {
            image.put_pixel(x, top + 150, Rgb([220, 220, 220]));
        }
    }
    image
}

/// Perceptual hash of a 1080×2400 PNG: decoding and hashing measured apart.
fn phash() {
    let image = DynamicImage::ImageRgb8(synthetic_screen());
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .expect("encode");
    let decode = time(30, || {
        black_box(image::load_from_memory(black_box(&png)).expect("decode"));
    });
    let decoded = image::load_from_memory(&png).expect("decode");
    let hash = time(30, || {
        black_box(droid::hash::phash_image(black_box(&decoded)));
    });
    println!("| step | median ms | fastest ms |");
    println!("|---|---:|---:|");
    println!(
        "| decode PNG 1080×2400 ({} KiB) | {:.2} | {:.2} |",
        png.len() / 1024,
        micros(decode.0) / 1e3,
        micros(decode.1) / 1e3
    );
    println!(
        "| hash pixels in memory (target <= 5 ms) | {:.2} | {:.2} |",
        micros(hash.0) / 1e3,
        micros(hash.1) / 1e3
    );
}

/// The simulator's world on the real notes app: what one capture costs the device side.
fn sim_world() {
    use droid::sim::{model::AppModel, render, world::World};
    let Some(fixtures) = fixtures("sim_world") else {
        return;
    };
    let spec = fixtures.join("apps/notes/model.json").display().to_string();
    let Ok(model) = AppModel::load(&spec) else {
        println!("sim_world: skipped, {spec} not found");
        return;
    };
    let load = median(5, || AppModel::load(&spec).map(|m| m.screens().len()));
    let mut world = World::new(model, Default::default());
    let _ = world.open_screen("s001");
    let dump = median(20, || world.hierarchy_xml());
    let shot = median(20, || world.screenshot());
    let image = world.screenshot();
    let png = median(20, || render::png(&image));
    let tap = median(20, || {
        world.tap(900, 260);
        world.key("KEYCODE_BACK")
    });
    println!("| measure (notes app, screen s001, in-process world) | median |\n|---|---:|");
    for (measure, time) in [
        ("model load", load),
        ("`hierarchy_xml` (what `uiautomator dump` writes)", dump),
        ("screenshot render", shot),
        ("PNG encode", png),
        ("tap + back", tap),
    ] {
        println!("| {measure} | {} |", duration(time));
    }
}

/// One `shell,v2` command against a running simulator, as a client would send it; returns the
/// stdout bytes.
fn sim_shell(port: u16, command: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let frame = |s: &str| format!("{:04x}{s}", s.len());
    let mut request = frame("host:tport:any");
    request.push_str(&frame(&format!("shell,v2,raw:{command}")));
    stream.write_all(request.as_bytes()).expect("send");
    stream.write_all(&[4, 0, 0, 0, 0]).expect("close stdin");
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).expect("answer");
    // OKAY + 8-byte transport id + OKAY, then packets.
    let mut out = Vec::new();
    let mut at = 16;
    while at + 5 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
        if bytes[at] == 1 {
            out.extend_from_slice(&bytes[at + 5..at + 5 + len]);
        }
        at += 5 + len;
    }
    out
}

/// The simulator behind its socket: round trips, and what capturing the hierarchy and the
/// screenshot concurrently saves under the realistic latency model.
fn sim_server() {
    use droid::sim::{fault::Latency, Sim, SimConfig};
    let sim = Sim::start(SimConfig::new("builtin:shop")).expect("simulator");
    let port = sim.port();
    let echo = median(50, || sim_shell(port, "echo hi"));
    let dump = median(20, || {
        sim_shell(
            port,
            "uiautomator dump /data/local/tmp/d.xml && cat /data/local/tmp/d.xml",
        )
    });
    let shot = median(20, || sim_shell(port, "screencap -p"));
    println!("| measure (builtin:shop behind its socket, one connection a command) | median |\n|---|---:|");
    for (measure, time) in [
        ("`shell,v2` echo round trip, latency none", echo),
        ("`uiautomator dump F && cat F`, latency none", dump),
        ("`screencap -p`, latency none", shot),
    ] {
        println!("| {measure} | {} |", duration(time));
    }
    drop(sim);

    let mut config = SimConfig::new("builtin:shop");
    config.latency = Latency::Realistic;
    let sim = Sim::start(config).expect("simulator");
    let port = sim.port();
    let dump_cmd = "uiautomator dump /data/local/tmp/d.xml && cat /data/local/tmp/d.xml";
    let sequential = median(3, || {
        (sim_shell(port, dump_cmd), sim_shell(port, "screencap -p"))
    });
    let concurrent = median(3, || {
        std::thread::scope(|scope| {
            let dump = scope.spawn(|| sim_shell(port, dump_cmd));
            let shot = sim_shell(port, "screencap -p");
            (dump.join().expect("dump"), shot)
        })
    });
    println!(
        "| dump then screenshot, latency realistic | {} |",
        duration(sequential)
    );
    println!(
        "| dump and screenshot concurrently, latency realistic | {} |",
        duration(concurrent)
    );
    figure(
        "sim_server",
        "concurrent_over_sequential",
        serde_json::json!(round3(concurrent.as_secs_f64() / sequential.as_secs_f64())),
    );
}

/// Device capture through droid's own ADB client against the simulator with realistic latency
/// (notes app start screen): the dump, the screenshot and the foreground query alone, then a
/// whole capture with the parts concurrent and sequential. Target: concurrent <= 1.1 x the
/// slower of dump and screenshot.
fn capture() {
    use droid::capture::{observe_device, DeviceOptions};
    use droid::device::{AdbDevice, Device, DeviceConfig};
    use droid::sim::{fault::Latency, Sim, SimConfig};

    const RUNS: usize = 9;
    let Some(fixtures) = fixtures("capture") else {
        return;
    };
    let model = fixtures.join("apps/notes/model.json");
    let mut config = SimConfig::new(model.to_string_lossy());
    config.latency = Latency::Realistic;
    let sim = Sim::start(config).expect("simulator");
    let device = AdbDevice::connect(DeviceConfig::loopback(sim.port(), sim.serial()))
        .expect("connect to the simulator");
    let info = device.info().expect("device info");
    let out = std::env::temp_dir().join(format!("droid-bench-capture-{}", std::process::id()));
    let dump = median(RUNS, || device.dump_hierarchy().expect("dump"));
    let shot = median(RUNS, || device.screenshot().expect("screenshot"));
    let foreground = median(RUNS, || device.foreground().expect("foreground"));
    let whole = |concurrent| {
        let opts = DeviceOptions {
            out_dir: out.clone(),
            screenshot: true,
            concurrent,
            run_id: None,
            step: None,
            step_names: false,
        };
        median(RUNS, || {
            observe_device(&device, &info, &opts).expect("capture")
        })
    };
    let concurrent = whole(true);
    let sequential = whole(false);
    let _ = std::fs::remove_dir_all(&out);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("| part (medians of {RUNS}, latency realistic) | ms |");
    println!("|---|---:|");
    println!("| dump alone | {:.1} |", ms(dump));
    println!("| screenshot alone | {:.1} |", ms(shot));
    println!("| foreground alone | {:.1} |", ms(foreground));
    println!(
        "| capture, parts one after the other | {:.1} |",
        ms(sequential)
    );
    println!("| capture, parts concurrent | {:.1} |", ms(concurrent));
    let ratio = concurrent.as_secs_f64() / dump.max(shot).as_secs_f64();
    println!(
        "\nconcurrent capture = {ratio:.2} x the slower of dump and screenshot (target: <= 1.10)"
    );
    figure(
        "capture",
        "concurrent_over_slowest_part",
        serde_json::json!((ratio * 100.0).round() / 100.0),
    );
}

/// A synthetic run: `steps` steps over 300 screens of 30 activities, 12 elements each, one
/// action per step (two every tenth step).
fn synthetic_run(steps: u64) -> Vec<String> {
    let mut lines = Vec::new();
    for step in 1..=steps {
        let screen = (step * 7919) % 300;
        let activity = format!("com.example.app.Activity{}", screen % 30);
        let phash = (screen.wrapping_mul(0x9E37_79B9_7F4A_7C15)) ^ (step % 3);
        let elements: Vec<UiElement> = (0..12)
            .map(|i| {
                let bounds = Bounds::from([0, i * 100, 1080, i * 100 + 90]);
                let (cx, cy) = bounds.center();
                UiElement {
                    element_id: i as u32,
                    bounds,
                    class_name: "android.widget.Button".into(),
                    resource_id: format!("com.example.app:id/b{i}"),
                    text: format!("Item {i} of {screen}"),
                    clickable: true,
                    enabled: true,
                    visible: true,
                    center_x: cx,
                    center_y: cy,
                    xpath: format!("/hierarchy/node[{i}]"),
                    signature: format!("android.widget.Button|b{i}|Item {i} of {screen}"),
                    ref_id: Some(i as u32 + 1),
                    ..UiElement::default()
                }
            })
            .collect();
        let run = Some("bench".to_string());
        lines.push(
            Event::Observation(Box::new(Observation {
                run_id: run.clone(),
                step: Some(step),
                ts: Some(format!("2026-01-01T00:00:{:02}.000Z", step % 60)),
                package: Some("com.example.app".into()),
                activity: Some(activity.clone()),
                elements: elements.clone(),
                hash: Some(ScreenHash {
                    phash: Some(format!("{phash:016x}")),
                    screen_key: Some(format!("{activity}|{phash:016x}")),
                    ..ScreenHash::default()
                }),
                ..Observation::default()
            }))
            .to_line(),
        );
        let batch = if step % 10 == 0 { 2 } else { 1 };
        let actions: Vec<Action> = (0..batch).map(|_| Action::new(ActionType::Click)).collect();
        lines.push(
            Event::Decision(Decision {
                run_id: run.clone(),
                step: Some(step),
                decider: Some("heuristic".into()),
                ..Decision::new(actions)
            })
            .to_line(),
        );
        for index in 0..batch {
            let target = &elements[((step + index) % 12) as usize];
            lines.push(
                Event::Result(ActionResult {
                    run_id: run.clone(),
                    step: Some(step),
                    index: index as u32,
                    action_type: "click".into(),
                    target_signature: Some(target.signature.clone()),
                    success: true,
                    duration_ms: 100,
                    tap_point: Some([target.center_x.into(), target.center_y.into()]),
                    origin: Some(Origin::Heuristic),
                    ..ActionResult::default()
                })
                .to_line(),
            );
        }
    }
    lines
}

/// droid-record's stage: `input` recorded into a new crawler.db at `path`, then closed.
fn ingest(path: &Path, input: &str) {
    let store = Store::open(path).expect("open store");
    let mut stage = record::Stage::new(&store);
    droid::filter::run(
        &mut stage,
        input.as_bytes(),
        std::io::sink(),
        false,
        &mut |_| {},
    )
    .expect("ingest");
}

/// droid-record's stage over a synthetic 10 000-step run, and the exploration journal query.
fn store() {
    let lines = synthetic_run(10_000);
    let input = lines.join("\n") + "\n";
    let decode = median(3, || {
        let decoded = droid::events::EventReader::new(input.as_bytes())
            .filter(Result::is_ok)
            .count();
        assert_eq!(decoded, lines.len());
    });
    // Each ingest writes its own file and closes it (the close checkpoints the WAL, as when
    // droid-record exits); removing the files is not timed.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut ingests = 0;
    let (took, fastest) = time(3, || {
        ingests += 1;
        ingest(&dir.path().join(format!("crawler-{ingests}.db")), &input);
    });
    let rate = |d: Duration| lines.len() as f64 / d.as_secs_f64();
    println!(
        "ingest of a 10 000-step run ({} events, into a new file, then closed): median {:.2} s = {:.0} events/s, \
         fastest {:.0} events/s (target >= 20 000 events/s)",
        lines.len(),
        took.as_secs_f64(),
        rate(took),
        rate(fastest)
    );
    println!(
        "  of which decoding the lines (EventReader alone): median {:.2} s",
        decode.as_secs_f64()
    );
    figure(
        "store",
        "ingest_events_per_second",
        serde_json::json!(rate(took).round()),
    );
    let store = Store::open(&dir.path().join(format!("crawler-{ingests}.db"))).expect("reopen");
    let (journal, fastest) = time(200, || {
        let entries = store.journal("bench", JOURNAL_STEPS).expect("journal");
        assert_eq!(entries.len(), JOURNAL_STEPS);
    });
    println!(
        "exploration journal (last {JOURNAL_STEPS} steps of 10 000): median {:.1} µs, fastest {:.1} µs",
        micros(journal),
        micros(fastest)
    );
}

/// Tabs of the tab bar on every screen of the synthetic app with one: tab `t` leads to screen `t`.
const TABS: u32 = 4;

/// Each screen's own buttons in the synthetic app, without and with a tab bar (then the tabs are
/// half a screen's actions, so every two screens are siblings: the sibling rule's worst case).
fn own_buttons(tab_bar: bool) -> u32 {
    match tab_bar {
        false => 8,
        true => TABS,
    }
}

/// A synthetic app of 500 screens (its own buttons each, every button leading to another
/// screen, and with `tab_bar` [`TABS`] tabs shared by every screen) for the heuristic: screen
/// `i`'s observation.
fn synthetic_app_screen(i: usize, tab_bar: bool) -> droid::events::Observation {
    use droid::ui::{Bounds, UiElement};
    let button = |k: u32, text: String, signature: String| UiElement {
        element_id: k,
        ref_id: Some(k + 1),
        text,
        class_name: "android.widget.Button".into(),
        signature,
        clickable: true,
        enabled: true,
        visible: true,
        bounds: Bounds::from([0, 150 * k as i32, 1080, 150 * k as i32 + 140]),
        ..UiElement::default()
    };
    let own = own_buttons(tab_bar);
    let tabs = (0..TABS * u32::from(tab_bar))
        .map(|t| button(own + t, format!("Tab {t}"), format!("tab{t}")));
    let own = (0..own).map(|k| button(k, format!("Item {k} of {i}"), format!("s{i}b{k}")));
    droid::events::Observation {
        package: Some("com.bench".into()),
        activity: Some(format!("com.bench.A{}", i % 20)),
        hash: Some(droid::events::ScreenHash {
            phash: Some(format!(
                "{:016x}",
                (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            )),
            ..Default::default()
        }),
        elements: own.chain(tabs).collect(),
        ..Default::default()
    }
}

/// Heuristic decision time per step while it explores a 500-screen app to exhaustion: early
/// steps find untried actions on the screen, late ones walk the graph (breadth-first search).
/// Then the same app with a tab bar on every screen, whose tabs' sibling evidence grows with
/// the screens.
fn decide() {
    for tab_bar in [false, true] {
        println!(
            "{}{}\n",
            if tab_bar { "\n" } else { "" },
            match tab_bar {
                false => "Without shared widgets:",
                true => "With a tab bar on every screen:",
            }
        );
        explore_synthetic_app(tab_bar);
    }
}

/// Explores the synthetic app (see [`synthetic_app_screen`]) for `steps` steps with the
/// heuristic; `on_step` sees each observation, its choice and how long the decision took.
/// Returns the screens the heuristic knows at the end.
fn walk_synthetic_app(
    tab_bar: bool,
    steps: usize,
    mut on_step: impl FnMut(&Observation, &heuristic::Choice, Duration),
) -> usize {
    use heuristic::Heuristic;
    let screens: Vec<_> = (0..SYNTHETIC_SCREENS)
        .map(|i| synthetic_app_screen(i, tab_bar))
        .collect();
    let mut heuristic = Heuristic::new(1, droid::decide::Credentials::default());
    heuristic.set_package(Some("com.bench".into()), Vec::new());
    let own = own_buttons(tab_bar);
    let mut stack = vec![0usize];
    for _ in 0..steps {
        let at = *stack.last().unwrap_or(&0);
        let start = Instant::now();
        // The screen model is built once per observation, as the decide stage builds it.
        let shown = droid::screen::Screen::of(black_box(&screens[at]));
        let choice = heuristic.decide(&shown);
        on_step(&screens[at], &choice, start.elapsed());
        match choice.actions[0].ref_id {
            Some(k) if k > own => stack.push((k - own - 1) as usize),
            Some(k) => stack.push((at * 31 + k as usize * 17 + 1) % SYNTHETIC_SCREENS),
            None if stack.len() > 1 => {
                stack.pop();
            }
            None => stack = vec![0],
        }
    }
    heuristic.graph().screen_count()
}

/// Screens of the synthetic app.
const SYNTHETIC_SCREENS: usize = 500;

fn explore_synthetic_app(tab_bar: bool) {
    let mut times = Vec::new();
    let known = walk_synthetic_app(tab_bar, 12_000, |_, _, took| times.push(took));
    let third = times.len() / 3;
    let median_of = |slice: &[Duration]| {
        let mut sorted = slice.to_vec();
        sorted.sort_unstable();
        sorted[sorted.len() / 2]
    };
    println!("| steps | median µs | p99 µs |");
    println!("|---|---:|---:|");
    for (label, slice) in [
        ("first third", &times[..third]),
        ("middle third", &times[third..2 * third]),
        ("last third", &times[2 * third..]),
        ("all", &times[..]),
    ] {
        let mut sorted = slice.to_vec();
        sorted.sort_unstable();
        let p99 = sorted[sorted.len() * 99 / 100];
        println!(
            "| {label} | {:.1} | {:.1} |",
            micros(median_of(slice)),
            micros(p99)
        );
    }
    println!(
        "\n{} steps, {known} of {SYNTHETIC_SCREENS} screens known at the end (target: median <= 2000 µs per step)",
        times.len()
    );
    figure(
        "decide",
        &format!(
            "heuristic_median_us_{}",
            if tab_bar { "tab_bar" } else { "plain" }
        ),
        serde_json::json!(micros(median_of(&times)).round()),
    );
}

/// The synthetic app's exploration as droid-decide and droid-record would have written it:
/// run_started, then per step the observation and the decision (with its walk and relaunch).
fn recorded_exploration(steps: usize) -> Vec<String> {
    let run = Some("bench".to_string());
    let started = droid::events::RunStarted {
        run_id: "bench".into(),
        package: Some("com.bench".into()),
        ..Default::default()
    };
    let mut lines = vec![Event::RunStarted(started).to_line()];
    let mut step = 0;
    walk_synthetic_app(false, steps, |observation, choice, _| {
        step += 1;
        let observation = Observation {
            run_id: run.clone(),
            step: Some(step),
            ..observation.clone()
        };
        lines.push(Event::Observation(Box::new(observation)).to_line());
        let decision = Decision {
            run_id: run.clone(),
            step: Some(step),
            decider: Some("heuristic".into()),
            ..choice.to_decision()
        };
        lines.push(Event::Decision(decision).to_line());
    });
    lines
}

/// One step of a shell loop, `droid-decide --db crawler.db --run RUN < observation`: the run's
/// recorded events are read and replayed into a fresh graph before the decision, so a step costs
/// more the longer the run.
fn decide_db() {
    use droid::decide::{self, from_store, prompt::PromptSettings, Config, Decider};
    let dir = tempfile::tempdir().expect("temp dir");
    println!(
        "| steps recorded | events | read the run: median ms | read, replay, decide: median ms |"
    );
    println!("|---:|---:|---:|---:|");
    for steps in [100, 1_000, 5_000] {
        let lines = recorded_exploration(steps);
        let db = dir.path().join(format!("crawler-{steps}.db"));
        ingest(&db, &(lines.join("\n") + "\n"));
        // What is timed is the replay of this very run: every event reads back as written.
        let history = from_store::history(&db, "bench").expect("history");
        let written: Vec<Event> = lines
            .iter()
            .filter_map(|line| Event::from_line(line).expect("a line written is an event"))
            .collect();
        assert!(
            history == written,
            "crawler.db gives back the run as recorded"
        );
        let next = Observation {
            run_id: Some("bench".into()),
            step: Some(steps as u64 + 1),
            ..synthetic_app_screen(0, false)
        };
        let next = Event::Observation(Box::new(next)).to_line() + "\n";
        let read = median(5, || {
            from_store::history(&db, "bench").expect("history").len()
        });
        let one_shot = median(5, || {
            let config = Config {
                decider: Decider::Heuristic,
                seed: 1,
                prompt: PromptSettings::default(),
                history: from_store::history(&db, "bench").expect("history"),
                fall_back_when_unreachable: false,
                budget: Default::default(),
                price: None,
            };
            let mut stage = decide::Stage::new(config).expect("stage");
            let outcome = droid::filter::run(
                &mut stage,
                next.as_bytes(),
                std::io::sink(),
                false,
                &mut |_| {},
            );
            assert_eq!(outcome.expect("decide").lines, 1);
        });
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "| {steps} | {} | {:.1} | {:.1} |",
            lines.len(),
            ms(read),
            ms(one_shot)
        );
    }
}

/// Screens each decider reaches on every app model through droid-crawl's loop, against the
/// ceiling a tester reaches (`droid-sim --check`, the app's own package): seeds 0–4, a budget of
/// 3 × the ceiling's screens. `APP=onelist,agram`, `DECIDERS=heuristic,dfs`, `SEEDS=2` narrow a
/// run; `PER_SCREEN=30` gives 30 × the ceiling's screens (until the exploration says it is
/// complete); `MISSED=1` lists, per app and decider, the ceiling's screens a seed missed, in how
/// many seeds, and the last move of `--check`'s walk to each (the kind of action it needs).
fn coverage() {
    let per_screen: u64 = env_number("PER_SCREEN", 3);
    let seeds: u64 = env_number("SEEDS", 5);
    let apps: Vec<String> = explore::app_models()
        .into_iter()
        .filter(|app| {
            let only = env_list("APP");
            only.is_empty() || only.iter().any(|o| app_name(app) == o)
        })
        .collect();
    let mut deciders = env_list("DECIDERS");
    if deciders.is_empty() {
        deciders = DECIDER_LABELS.iter().map(|l| l.to_string()).collect();
    }
    let missed = std::env::var_os("MISSED").is_some();
    // 3 × is the section `make bench` keeps; another budget is a section of its own.
    let section = coverage_tables::section_name(per_screen);
    let section = section.as_str();
    figure(section, "per_screen", serde_json::json!(per_screen));
    figure(section, "seeds", serde_json::json!(seeds));
    figure(
        section,
        "apps",
        serde_json::json!(apps.iter().map(|a| app_name(a)).collect::<Vec<_>>()),
    );
    figure(section, "deciders", serde_json::json!(deciders));
    let mut gaps = Vec::new();
    let mut demands = Vec::new();
    let mut shares: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for app in &apps {
        let name = app_name(app);
        let check = droid::sim::check::check(app).expect("droid-sim --check");
        let model = droid::sim::model::AppModel::load(app).expect("app model");
        let ceiling: std::collections::BTreeSet<String> = check
            .screens
            .iter()
            .filter(|s| s.reached && s.package == check.package)
            .map(|s| s.screen.clone())
            .collect();
        let budget = per_screen * ceiling.len() as u64;
        demands.push((name, demand(app, &check, &ceiling), budget));
        let keys = screen_keys(app, &ceiling);
        let distinct = |screens: &mut dyn Iterator<Item = &String>| {
            screens
                .filter_map(|s| keys.get(s))
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        };
        for label in &deciders {
            let runs = runs_in_parallel(app, label, seeds, budget);
            let reached: Vec<usize> = runs
                .iter()
                .map(|r| r.reached.intersection(&ceiling).count())
                .collect();
            let mean = reached.iter().sum::<usize>() as f64 / reached.len() as f64;
            let share = 100.0 * mean / ceiling.len().max(1) as f64;
            shares.entry(label.clone()).or_default().push(share);
            let explored: Vec<&explore::Run> =
                runs.iter().filter(|r| r.ended == "explored").collect();
            // An end declared while a screen of the ceiling was one recorded move away from a
            // screen the run showed.
            let short: Vec<String> = explored
                .iter()
                .flat_map(|run| one_move_away(&model, run, &ceiling))
                .collect();
            let inferred =
                runs.iter().map(|r| r.inferred).sum::<usize>() as f64 / runs.len() as f64;
            let trips = runs
                .iter()
                .map(explore::Run::launcher_trips)
                .max()
                .unwrap_or(0);
            let calls: usize = runs.iter().map(model_calls).sum();
            let new_screens: usize = runs.iter().map(|r| r.reached.len()).sum();
            let calls_per_screen = calls as f64 / new_screens.max(1) as f64;
            let steps: usize = runs.iter().map(|r| r.observed.len()).sum();
            let calls_percent_of_steps = 100.0 * calls as f64 / steps.max(1) as f64;
            let keys_reached: Vec<usize> = runs
                .iter()
                .map(|run| distinct(&mut run.reached.iter().filter(|s| ceiling.contains(*s))))
                .collect();
            let keys_mean = keys_reached.iter().sum::<usize>() as f64 / runs.len().max(1) as f64;
            let repeated = runs
                .iter()
                .map(explore::Run::longest_repeat)
                .max()
                .unwrap_or(0);
            let (still, told): (usize, usize) = runs
                .iter()
                .map(explore::Run::still_steps)
                .fold((0, 0), |(s, t), (still, told)| (s + still, t + told));
            let still_percent = 100.0 * still as f64 / told.max(1) as f64;
            let key = format!("{name}.{label}");
            for (field, value) in [
                (
                    "steps_still_percent",
                    serde_json::json!(still_percent.round()),
                ),
                ("reached", serde_json::json!(reached)),
                ("mean", serde_json::json!(mean)),
                ("percent_of_ceiling", serde_json::json!(share.round())),
                ("ended_explored", serde_json::json!(explored.len())),
                ("explored_one_move_short", serde_json::json!(short)),
                ("inferred_per_run", serde_json::json!(inferred)),
                ("most_launcher_trips", serde_json::json!(trips)),
                ("most_steps_repeated", serde_json::json!(repeated)),
                (
                    "model_calls_per_new_screen",
                    serde_json::json!(calls_per_screen),
                ),
                (
                    "model_calls_percent_of_steps",
                    serde_json::json!(calls_percent_of_steps.round()),
                ),
                ("told_apart_mean", serde_json::json!(keys_mean)),
            ] {
                figure(section, &format!("{key}.{field}"), value);
            }
            if missed {
                let mut count: BTreeMap<&String, usize> = BTreeMap::new();
                for run in &runs {
                    for screen in ceiling.iter().filter(|s| !run.reached.contains(*s)) {
                        *count.entry(screen).or_default() += 1;
                    }
                }
                // Each with the last move of the shortest walk to it: the action it needs.
                let last_move = |screen: &str| {
                    let path = check.screens.iter().find(|s| s.screen == screen);
                    path.and_then(|s| s.path.last())
                        .map_or(String::new(), |step| {
                            format!("{} on {}", step.action, step.from)
                        })
                };
                let list: Vec<String> = count
                    .iter()
                    .map(|(s, n)| format!("{s} ×{n} ({})", last_move(s)))
                    .collect();
                gaps.push(format!("- {name}, {label}: {}", list.join(", ")));
            }
        }
        for (field, value) in [
            ("ceiling", serde_json::json!(ceiling.len())),
            ("budget", serde_json::json!(budget)),
            (
                "told_apart",
                serde_json::json!(distinct(&mut ceiling.iter())),
            ),
            ("inferred_moves", serde_json::json!(check.inferred_moves)),
        ] {
            figure(section, &format!("{name}.{field}"), value);
        }
    }
    for (label, list) in &shares {
        let mean_share = list.iter().sum::<f64>() / list.len().max(1) as f64;
        figure(
            section,
            &format!("{label}.mean_percent_of_ceiling"),
            serde_json::json!(mean_share.round()),
        );
    }
    let figures = FIGURES.lock().unwrap_or_else(|p| p.into_inner())[section].clone();
    print!("{}", coverage_tables::render(&figures));
    println!(
        "\nWhat each app asks of an explorer that does not know it: the actions droid sees on the \
         ceiling's screens (widgets, gestures, back); the ceiling's screens each one opens first \
         on the shortest walks from the start; and the decisions a uniformly random order of \
         each screen's actions takes, expected, to find those (Σ k(n+1)/(k+1) over screens of n \
         actions, k of them opening screens; the moves between screens not counted):\n"
    );
    println!("| app | ceiling | budget | actions | opening a screen | decisions, uninformed | ÷ budget |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, demand, budget) in demands {
        println!(
            "| {name} | {} | {budget} | {} | {} | {:.0} | {:.1} |",
            demand.screens,
            demand.actions,
            demand.opens,
            demand.uninformed,
            demand.uninformed / budget.max(1) as f64
        );
        figure(
            section,
            &format!("{name}.uninformed_decisions"),
            serde_json::json!(demand.uninformed.round()),
        );
    }
    if missed {
        println!("\nScreens of the ceiling missed (× seeds that missed them, the move that opens them):\n");
        for gap in gaps {
            println!("{gap}");
        }
    }
}

/// Why one run missed the ceiling's screens (`APP=notes SEED=0 cargo bench --bench bench --
/// misses`, `PER_SCREEN` as for coverage, `DECIDER` one of [`DECIDER_LABELS`], the heuristic
/// unless set): for each missed screen, the last move of
/// `--check`'s walk to it, how often the run stood on that move's screen, and what it decided
/// there each time (`TRACE=1`: every step, and a hybrid's switches; `KEEP_TRUTH=FILE`: the
/// simulator's truth log kept; `REASONS=1`: each decision's reasoning too); a
/// developer's tool, not a figure.
fn misses() {
    let per_screen: u64 = env_number("PER_SCREEN", 3);
    let seed: u64 = env_number("SEED", 0);
    let only = env_list("APP");
    let decider = std::env::var("DECIDER").unwrap_or_else(|_| "heuristic".to_string());
    for app in explore::app_models()
        .iter()
        .filter(|app| only.is_empty() || only.iter().any(|o| app_name(app) == o))
    {
        let check = droid::sim::check::check(app).expect("droid-sim --check");
        let ceiling: std::collections::BTreeSet<String> = check
            .screens
            .iter()
            .filter(|s| s.reached && s.package == check.package)
            .map(|s| s.screen.clone())
            .collect();
        let budget = per_screen * ceiling.len() as u64;
        let run = run_labelled(app, &decider, seed, budget);
        let reasons = std::env::var_os("REASONS").is_some();
        let decisions: BTreeMap<u64, Vec<String>> = run
            .events
            .iter()
            .filter_map(|e| match e {
                droid::events::Event::Decision(d) => Some((
                    d.step.unwrap_or(0),
                    d.actions
                        .iter()
                        .map(|a| {
                            a.action_desc
                                .clone()
                                .unwrap_or_else(|| a.action.to_string())
                        })
                        .chain(
                            d.actions
                                .iter()
                                .filter_map(|a| a.reasoning.as_ref())
                                .take(1)
                                .filter(|_| reasons)
                                .map(|r| format!("\n        ({r})")),
                        )
                        .collect(),
                )),
                _ => None,
            })
            .collect();
        // A hybrid decider's changes of who decides, shown in the trace before their step.
        let switches: BTreeMap<u64, Vec<&str>> = run
            .events
            .iter()
            .filter_map(|e| match e {
                droid::events::Event::Note(n) if n.kind == droid::events::NoteKind::Switch => {
                    Some((
                        n.step.unwrap_or(0),
                        n.message.as_deref().unwrap_or_default(),
                    ))
                }
                _ => None,
            })
            .fold(BTreeMap::new(), |mut by_step, (step, why)| {
                by_step.entry(step).or_insert_with(Vec::new).push(why);
                by_step
            });
        println!(
            "## {} (seed {seed}, {} steps, ended {}): {} of {}",
            app_name(app),
            run.observed.len(),
            run.ended,
            run.reached.intersection(&ceiling).count(),
            ceiling.len()
        );
        if std::env::var_os("TRACE").is_some() {
            let first: BTreeMap<u64, Vec<&String>> =
                run.first_shown
                    .iter()
                    .fold(BTreeMap::new(), |mut by_step, (screen, step)| {
                        by_step.entry(*step).or_default().push(screen);
                        by_step
                    });
            for (step, (observation, shown)) in (1..).zip(&run.observed) {
                let key = observation
                    .hash
                    .as_ref()
                    .and_then(|h| h.screen_key.clone())
                    .unwrap_or_default();
                let new: Vec<&str> = first
                    .get(&step)
                    .map(|s| s.iter().map(|s| s.as_str()).collect())
                    .unwrap_or_default();
                for why in switches.get(&step).into_iter().flatten() {
                    println!("      ({why})");
                }
                println!(
                    "  {step:>3} {shown} [{}] {} → new {}",
                    key.rsplit('|').next().unwrap_or_default(),
                    decisions
                        .get(&step)
                        .map(|d| d.join("; "))
                        .unwrap_or_default(),
                    new.join(" ")
                );
            }
        }
        for walk in check.screens.iter().filter(|s| ceiling.contains(&s.screen)) {
            if run.reached.contains(&walk.screen) {
                continue;
            }
            let Some(last) = walk.path.last() else {
                continue;
            };
            let target = last
                .target
                .as_ref()
                .map(|t| serde_json::to_string(t).unwrap_or_default())
                .unwrap_or_default();
            let visits: Vec<u64> = (1..)
                .zip(&run.observed)
                .filter(|(_, (_, shown))| *shown == last.from)
                .map(|(step, _)| step)
                .collect();
            println!(
                "- {} ← {} {target} on {} (shown {}: {} times)",
                walk.screen,
                last.action,
                last.from,
                if run.shown.contains(&last.from) {
                    "yes"
                } else {
                    "no"
                },
                visits.len()
            );
            for step in visits.iter().take(6) {
                let keyed = run.observed[(*step - 1) as usize]
                    .0
                    .hash
                    .as_ref()
                    .and_then(|h| h.screen_key.clone())
                    .unwrap_or_default();
                println!(
                    "    step {step} [{}]: {}",
                    keyed.rsplit('|').next().unwrap_or_default(),
                    decisions
                        .get(step)
                        .map(|d| d.join("; "))
                        .unwrap_or_default()
                );
            }
        }
    }
}

/// The screens of `ceiling` a run missed that a recorded transition leads to from a screen the
/// run showed: one move away when the exploration said it was complete.
fn one_move_away(
    model: &droid::sim::model::AppModel,
    run: &explore::Run,
    ceiling: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    use droid::sim::model::Destination;
    let id = |index: usize| model.screen(index).id.clone();
    let mut near: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for transition in model.transitions() {
        let Destination::Screen(to) = transition.to else {
            continue;
        };
        let (from, to) = (id(transition.from), id(to));
        if run.shown.contains(&from) && ceiling.contains(&to) && !run.shown.contains(&to) {
            near.insert(to);
        }
    }
    near.into_iter().collect()
}

/// The screen key droid gives each of `screens` of an app model (see [`model_observation`]).
fn screen_keys(
    app: &str,
    screens: &std::collections::BTreeSet<String>,
) -> BTreeMap<String, droid::screen::ScreenKey> {
    let model = droid::sim::model::AppModel::load(app).expect("app model");
    screens
        .iter()
        .map(|id| {
            let index = model.screen_index(id).expect("a model screen");
            let observation = model_observation(&model, index);
            (id.clone(), droid::screen::ScreenKey::of(&observation))
        })
        .collect()
}

/// What droid observes of a model screen as first shown: its dump, parsed and pruned as
/// droid-capture does, with its package and activity.
fn model_observation(model: &droid::sim::model::AppModel, index: usize) -> Observation {
    let screen = model.screen(index);
    let xml = droid::sim::model::write_hierarchy(&screen.roots);
    let mut elements = droid::ui::parse(&xml).expect("model hierarchy");
    let tree = droid::ui::prune(&mut elements);
    Observation {
        package: Some(screen.package.clone()),
        activity: Some(screen.activity.clone()),
        tree: Some(tree),
        elements,
        ..Observation::default()
    }
}

/// What an app model asks of an explorer that does not know it (see [`coverage`]).
struct Demand {
    /// The ceiling's screens.
    screens: usize,
    /// Actions droid sees on them: each screen's widgets and back.
    actions: usize,
    /// The ceiling's screens each screen is the last before on `droid-sim --check`'s shortest
    /// walks from the start.
    opens: usize,
    /// Decisions a uniformly random order of each screen's actions takes, expected, to find the
    /// `k` of its `n` actions opening those screens: Σ k(n+1)/(k+1).
    uninformed: f64,
}

fn demand(
    app: &str,
    check: &droid::sim::check::Report,
    ceiling: &std::collections::BTreeSet<String>,
) -> Demand {
    let model = droid::sim::model::AppModel::load(app).expect("app model");
    // The screen each of `--check`'s walks reaches its screen from.
    let opener = |screen: &str| {
        let walk = check.screens.iter().find(|s| s.screen == screen)?;
        walk.path.last().map(|step| step.from.clone())
    };
    let mut demand = Demand {
        screens: ceiling.len(),
        actions: 0,
        opens: 0,
        uninformed: 0.0,
    };
    for screen in ceiling {
        let index = model.screen_index(screen).expect("a screen of the model");
        let observation = model_observation(&model, index);
        let n = droid::screen::Screen::of(&observation).widgets().len() + 1;
        let opens = ceiling
            .iter()
            .filter(|other| opener(other).as_deref() == Some(screen.as_str()))
            .count();
        let k = opens.min(n);
        demand.actions += n;
        demand.opens += k;
        demand.uninformed += (k * (n + 1)) as f64 / (k + 1) as f64;
    }
    demand
}

/// A comma-separated environment variable's items.
/// The number in environment variable `name`, or `default` when it is unset or not a number.
/// States of each app the screen key cannot tell apart: per app, the model screens of its own
/// package a heuristic run showed, the keys they had, and for each key that more than one
/// screen shared, which elements' texts or checked states differ between them.
fn collisions() {
    use droid::screen::{Details, ScreenKey};
    let only = env_list("APP");
    let per_screen: u64 = env_number("PER_SCREEN", 3);
    for app in explore::app_models()
        .iter()
        .filter(|app| only.is_empty() || only.iter().any(|o| app_name(app) == o))
    {
        let (package, reachable, _) = explore::model_facts(app);
        let run = explore::run_app(
            app,
            droid::decide::Decider::Heuristic,
            0,
            per_screen * reachable.len() as u64,
        );
        let mut by_key: BTreeMap<ScreenKey, BTreeMap<String, droid::events::Observation>> =
            BTreeMap::new();
        for (o, truth) in &run.observed {
            if o.package.as_deref() != Some(package.as_str()) {
                continue;
            }
            by_key
                .entry(ScreenKey::of(o))
                .or_default()
                .entry(truth.clone())
                .or_insert_with(|| o.clone());
        }
        let truths: usize = by_key.values().map(BTreeMap::len).sum();
        println!(
            "### {}: {} keys for {truths} (key, screen) pairs\n",
            app_name(app),
            by_key.len()
        );
        for (key, screens) in by_key.iter().filter(|(_, s)| s.len() > 1) {
            println!(
                "- {key}: {}",
                screens.keys().cloned().collect::<Vec<_>>().join(", ")
            );
            // What the graph would tell the states apart by: the slots any of them shows
            // otherwise than the first.
            let all: Vec<Details> = screens.values().map(|o| Details::of(&o.elements)).collect();
            let slots: BTreeSet<&String> = all
                .iter()
                .flat_map(|other| all[0].differing(other))
                .collect();
            for slot in slots {
                let values: Vec<String> = all
                    .iter()
                    .map(|d| d.get(slot).map_or("-".into(), |v| format!("{v:?}")))
                    .collect();
                println!("    {slot}: {}", values.join(" / "));
            }
        }
        println!();
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    env_list(name)
        .first()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn env_list(name: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// An app model's short name: `builtin:shop`, or the folder of a fixture's model.
fn app_name(app: &str) -> &str {
    match app.starts_with("builtin:") {
        true => app,
        false => app.rsplit('/').nth(1).unwrap_or(app),
    }
}

/// Seeds `0..seeds` of one decider on one app, two at a time, in seed order.
fn runs_in_parallel(app: &str, label: &str, seeds: u64, steps: u64) -> Vec<explore::Run> {
    let next = std::sync::atomic::AtomicU64::new(0);
    let runs = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if seed >= seeds {
                    break;
                }
                let run = run_labelled(app, label, seed, steps);
                runs.lock().unwrap().push((seed, run));
            });
        }
    });
    let mut runs = runs.into_inner().unwrap();
    runs.sort_by_key(|(seed, _)| *seed);
    runs.into_iter().map(|(_, run)| run).collect()
}

/// The deciders `DECIDERS` names: `heuristic`, `dfs`, `random`, and the model deciders with the
/// stand-in model (tests/support/stand_in.rs) in text mode: `hybrid-oracle`, `hybrid-random`
/// (the hybrid with its defaults, K 6 and L 4, or `PLATEAU_STEPS` and `PLATEAU_MODEL_CALLS`) and `llm-oracle`, `llm-random` (the model
/// deciding every step).
const DECIDER_LABELS: &[&str] = &[
    "heuristic",
    "dfs",
    "random",
    "hybrid-oracle",
    "hybrid-random",
    "llm-oracle",
    "llm-random",
];

/// One run of `app` by the decider `label` names (see [`DECIDER_LABELS`]).
fn run_labelled(app: &str, label: &str, seed: u64, steps: u64) -> explore::Run {
    use droid::decide::Decider;
    let baseline = match label {
        "heuristic" => Some(Decider::Heuristic),
        "dfs" => Some(Decider::Dfs),
        "random" => Some(Decider::Random),
        _ => None,
    };
    if let Some(decider) = baseline {
        return explore::run_app(app, decider, seed, steps);
    }
    let (part, policy) = label
        .split_once('-')
        .filter(|(part, policy)| {
            ["hybrid", "llm"].contains(part) && ["oracle", "random"].contains(policy)
        })
        .unwrap_or_else(|| panic!("DECIDERS: {label} is none of {}", DECIDER_LABELS.join(", ")));
    explore::run_app_with(app, Decider::Heuristic, seed, steps, |config, truth| {
        let stand_in = stand_in::StandIn::start(match policy {
            "oracle" => stand_in::Policy::Oracle {
                app: app.to_string(),
                truth: truth.to_path_buf(),
            },
            _ => stand_in::Policy::Random(seed),
        });
        config.decide.prompt.text_only = true;
        config.decide.decider = match part {
            "hybrid" => Decider::Hybrid(droid::decide::hybrid::HybridConfig {
                provider: stand_in.provider(),
                plateau_steps: env_number(
                    "PLATEAU_STEPS",
                    droid::decide::hybrid::PLATEAU_STEPS.into(),
                ) as u32,
                model_calls: env_number(
                    "PLATEAU_MODEL_CALLS",
                    droid::decide::hybrid::MODEL_CALLS.into(),
                ) as u32,
                model_share: env_number("MODEL_SHARE", droid::decide::hybrid::MODEL_SHARE.into())
                    as u32,
            }),
            _ => Decider::Model(stand_in.provider()),
        };
    })
}

/// The decisions of a run that called a model (a decision carrying a model call's metadata,
/// the heuristic's fallbacks included).
fn model_calls(run: &explore::Run) -> usize {
    run.events
        .iter()
        .filter(|e| matches!(e, droid::events::Event::Decision(d) if d.ai.is_some()))
        .count()
}

/// Screen identity rules against the simulator's truth: pairs of observations of one model
/// screen a rule splits, pairs of different screens it merges.
fn identity() {
    use droid::screen::{controls, primary_action, signature};
    use std::collections::BTreeSet;
    struct Obs {
        truth: String,
        activity: String,
        phash: u64,
        layout: String,
        structure: String,
        widgets: String,
        texts: String,
    }
    let apps = explore::app_models();
    type Rule = (&'static str, fn(&Obs, &Obs) -> bool);
    let rules: Vec<Rule> = vec![
        ("activity + phash ≤ 5", |a, b| {
            a.activity == b.activity && (a.phash ^ b.phash).count_ones() <= 5
        }),
        ("activity + phash ≤ 10", |a, b| {
            a.activity == b.activity && (a.phash ^ b.phash).count_ones() <= 10
        }),
        ("layout hash", |a, b| a.layout == b.layout),
        ("structure hash", |a, b| a.structure == b.structure),
        ("activity + structure", |a, b| {
            a.activity == b.activity && a.structure == b.structure
        }),
        ("activity + widgets", |a, b| {
            a.activity == b.activity && a.widgets == b.widgets
        }),
        ("activity + widgets, else phash ≤ 5", |a, b| {
            a.activity == b.activity
                && match a.widgets.is_empty() && b.widgets.is_empty() {
                    true => (a.phash ^ b.phash).count_ones() <= 5,
                    false => a.widgets == b.widgets,
                }
        }),
        ("activity + layout", |a, b| {
            a.activity == b.activity && a.layout == b.layout
        }),
        ("activity + widgets, else layout", |a, b| {
            a.activity == b.activity
                && match a.widgets.is_empty() && b.widgets.is_empty() {
                    true => a.layout == b.layout,
                    false => a.widgets == b.widgets,
                }
        }),
        (
            "indistinguishable (activity, layout and phash all equal)",
            |a, b| a.activity == b.activity && a.layout == b.layout && a.phash == b.phash,
        ),
        ("activity + widgets + texts", |a, b| {
            a.activity == b.activity && a.widgets == b.widgets && a.texts == b.texts
        }),
        ("activity + widgets + phash ≤ 10", |a, b| {
            a.activity == b.activity
                && a.widgets == b.widgets
                && (a.phash ^ b.phash).count_ones() <= 10
        }),
    ];
    let mut totals = vec![(0u64, 0u64, 0u64, 0u64); rules.len()];
    for app in &apps {
        let (_, reachable, _) = explore::model_facts(app);
        let run = explore::run_app(
            app,
            droid::decide::Decider::Heuristic,
            0,
            3 * reachable.len() as u64,
        );
        let (reachable, observed) = (run.reachable.len(), run.observed);
        let obs: Vec<Obs> = observed
            .into_iter()
            .map(|(o, truth)| {
                let hash = o.hash.clone().unwrap_or_default();
                let mut keys: Vec<String> = controls(&o.elements)
                    .map(|e| format!("{}:{}", primary_action(e), signature(e)))
                    .collect();
                keys.sort();
                keys.dedup();
                let texts: BTreeSet<String> = o.elements.iter().map(|e| e.text.clone()).collect();
                Obs {
                    truth,
                    activity: o.activity.clone().or(o.package.clone()).unwrap_or_default(),
                    phash: droid::hash::parse_phash(
                        hash.phash.as_deref().unwrap_or("0000000000000000"),
                    )
                    .unwrap_or(0),
                    layout: hash.layout_hash.unwrap_or_default(),
                    structure: hash.structure_hash.unwrap_or_default(),
                    widgets: if keys.is_empty() {
                        String::new()
                    } else {
                        keys.join(",")
                    },
                    texts: texts.into_iter().collect::<Vec<_>>().join("\u{1f}"),
                }
            })
            .collect();
        let name = app.rsplit('/').nth(1).unwrap_or(app);
        let truths: BTreeSet<&str> = obs.iter().map(|o| o.truth.as_str()).collect();
        println!(
            "### {name}: {} observations, {} model screens shown, {reachable} reachable\n",
            obs.len(),
            truths.len()
        );
        println!("| rule | same-screen pairs kept | split | different pairs merged | merged |");
        println!("|---|---:|---:|---:|---:|");
        for (i, (rule_name, rule)) in rules.iter().enumerate() {
            let (mut same, mut split, mut diff, mut merged) = (0u64, 0u64, 0u64, 0u64);
            for a in 0..obs.len() {
                for b in a + 1..obs.len() {
                    let says = rule(&obs[a], &obs[b]);
                    if obs[a].truth == obs[b].truth {
                        same += 1;
                        split += u64::from(!says);
                    } else {
                        diff += 1;
                        merged += u64::from(says);
                    }
                }
            }
            let t = &mut totals[i];
            *t = (t.0 + same, t.1 + split, t.2 + diff, t.3 + merged);
            println!(
                "| {rule_name} | {:.1}% | {split} / {same} | {:.2}% | {merged} / {diff} |",
                100.0 * (same - split) as f64 / same.max(1) as f64,
                100.0 * merged as f64 / diff.max(1) as f64
            );
        }
        println!();
    }
    println!("### all apps\n");
    println!("| rule | same-screen pairs kept | different pairs merged |");
    println!("|---|---:|---:|");
    for ((rule_name, _), (same, split, diff, merged)) in rules.iter().zip(totals) {
        println!(
            "| {rule_name} | {:.2}% ({split} split of {same}) | {:.2}% ({merged} of {diff}) |",
            100.0 * (same - split) as f64 / same.max(1) as f64,
            100.0 * merged as f64 / diff.max(1) as f64
        );
    }
}

/// The store section's synthetic run with a 1080x2400 PNG screenshot per screen (300 of them,
/// written once into `dir`), as a crawl's observations name them.
fn with_screenshots(lines: Vec<String>, dir: &Path) -> Vec<String> {
    for screen in 0..300u32 {
        let path = dir.join(format!("s{screen:03}.png"));
        if path.exists() {
            continue;
        }
        let mut image = synthetic_screen();
        let tint = Rgb([(screen * 37 % 200) as u8, (screen * 91 % 200) as u8, 120]);
        for y in 0..200 {
            for x in 0..1080 {
                image.put_pixel(x, y, tint);
            }
        }
        image.save(&path).expect("screenshot");
    }
    lines
        .into_iter()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(&line).expect("json");
            if value["type"] == "observation" {
                let step = value["step"].as_u64().expect("step");
                let screen = (step * 7919) % 300;
                value["screenshot_path"] = dir
                    .join(format!("s{screen:03}.png"))
                    .display()
                    .to_string()
                    .into();
            }
            value.to_string()
        })
        .collect()
}

/// droid-report's formats over synthetic 1 000- and 10 000-step runs (the store section's run,
/// 300 screens with screenshots, a crash every 100 steps): loading the report from crawler.db,
/// then rendering each format.
fn report() {
    use droid::report::{self, Format, Report};
    let Some(fixtures) = fixtures("report") else {
        return;
    };
    let fonts = report::pdf::Fonts::system().expect("fonts for the PDF");
    let crash = droid::crash::parse_crashes(
        &std::fs::read_to_string(
            fixtures.join("device/logcat/fatal_exception_threadtime_tag_android7.txt"),
        )
        .expect("fixture"),
    )
    .remove(0);
    println!("Each cell: median of 3 runs / fastest, in ms.\n");
    println!("| steps | load | text | json | pdf | html | junit | dot | load + slowest |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let shots = tempfile::tempdir().expect("temp dir");
    for steps in [1_000u64, 10_000] {
        let mut lines = with_screenshots(synthetic_run(steps), shots.path());
        for step in (100..=steps).step_by(100) {
            lines.push(
                Event::Note(droid::events::Note {
                    run_id: Some("bench".into()),
                    step: Some(step),
                    kind: "crash".into(),
                    data: Some(serde_json::to_value(&crash).expect("json")),
                    ..droid::events::Note::default()
                })
                .to_line(),
            );
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("crawler.db");
        ingest(&path, &(lines.join("\n") + "\n"));
        let store = Store::open(&path).expect("open");
        let load = time(3, || Report::load(&store, "bench").expect("report"));
        let loaded = Report::load(&store, "bench").expect("report");
        let mut times = Vec::new();
        for format in Format::ALL {
            times.push(time(3, || {
                let mut out = Vec::new();
                match format {
                    Format::Pdf => out = report::pdf::render(&loaded, &fonts).expect("pdf"),
                    other => report::render(&loaded, other, &mut out).expect("render"),
                }
                out.len()
            }));
        }
        let ms = |(median, fastest): (Duration, Duration)| {
            format!(
                "{:.0} / {:.0}",
                median.as_secs_f64() * 1e3,
                fastest.as_secs_f64() * 1e3
            )
        };
        let slowest = times.iter().copied().max().unwrap_or_default();
        println!(
            "| {steps} | {} | {} | {} |",
            ms(load),
            times.iter().map(|t| ms(*t)).collect::<Vec<_>>().join(" | "),
            ms((load.0 + slowest.0, load.1 + slowest.1))
        );
        figure(
            "report",
            &format!("load_and_slowest_format_ms_{steps}_steps"),
            serde_json::json!(((load.0 + slowest.0).as_secs_f64() * 1e3).round()),
        );
    }
    println!("\nload + the slowest format (target: <= 2000 ms for 1 000 steps)");
}

/// One of this package's binaries, which `cargo bench` builds beside the bench.
fn binary(name: &str) -> std::process::Command {
    let path = match name {
        "droid-capture" => env!("CARGO_BIN_EXE_droid-capture"),
        "droid-hash" => env!("CARGO_BIN_EXE_droid-hash"),
        "droid-act" => env!("CARGO_BIN_EXE_droid-act"),
        "droid-mcp" => env!("CARGO_BIN_EXE_droid-mcp"),
        other => panic!("no binary {other}"),
    };
    let mut command = std::process::Command::new(path);
    command
        .env_remove("ANDROID_SERIAL")
        .env_remove("ADB_SERVER_SOCKET");
    command
}

/// Runs `command` to its end with nothing on stdin: its stdout (it must succeed).
fn run_binary(mut command: std::process::Command) -> Vec<u8> {
    let output = command
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running a droid binary");
    assert!(output.status.success(), "{command:?}: {output:?}");
    output.stdout
}

/// droid-mcp's observe and act through MCP (stdio, droid-mcp's own JSON-RPC lines) against
/// droid-sim with realistic latency, next to droid-capture, droid-hash and droid-act run as
/// processes, as a shell loop or an agent calling them would: medians of each. An MCP `act` also
/// captures the screen it led to (its answer names the new screen's key), so it is set against
/// droid-act followed by droid-capture | droid-hash.
fn mcp() {
    use droid::sim::{fault::Latency, Sim, SimConfig};
    const RUNS: usize = 11;
    let mut config = SimConfig::new("builtin:shop");
    config.latency = Latency::Realistic;
    let sim = Sim::start(config).expect("simulator");
    let dir = tempfile::tempdir().expect("temp dir");
    let captures = dir.path().join("captures");
    let device = [
        "--adb-port".to_string(),
        sim.port().to_string(),
        "--device".into(),
        sim.serial().to_string(),
    ];
    // The launcher's empty middle: a tap there changes nothing, so every run sees one screen.
    let (x, y) = (540, 1500);
    let capture = || {
        let mut command = binary("droid-capture");
        command.args(&device).arg("--out").arg(&captures);
        command
    };
    let captured = median(RUNS, || run_binary(capture()));
    let keyed = || {
        let observation = run_binary(capture());
        let mut hash = binary("droid-hash");
        hash.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = hash.spawn().expect("droid-hash starts");
        {
            use std::io::Write;
            let mut input = child.stdin.take().expect("stdin");
            input.write_all(&observation).expect("feeding droid-hash");
        }
        let output = child.wait_with_output().expect("droid-hash ends");
        assert!(output.status.success(), "droid-hash: {output:?}");
        output.stdout
    };
    let hashed = median(RUNS, keyed);
    let tap = || {
        let mut command = binary("droid-act");
        command
            .args(&device)
            .args(["tap", &x.to_string(), &y.to_string()]);
        run_binary(command)
    };
    let tapped = median(RUNS, tap);
    let tapped_and_keyed = median(RUNS, || (tap(), keyed()));

    let mut args = device.to_vec();
    args.push("--captures".into());
    args.push(captures.to_string_lossy().into_owned());
    args.push("--db".into());
    args.push(dir.path().join("crawler.db").to_string_lossy().into_owned());
    let mut command = binary("droid-mcp");
    command.args(&args);
    let mut server = mcp_stdio::McpStdio::spawn(command);
    server.initialize("2025-11-25");
    let first = server.call("observe", serde_json::json!({}));
    let observed = median(RUNS, || server.call("observe", serde_json::json!({})));
    let acted = median(RUNS, || {
        let acted = server.call("act", serde_json::json!({"action": "tap", "x": x, "y": y}));
        assert_eq!(
            acted["changed"], false,
            "the tap changed the screen: {acted}"
        );
        acted
    });
    let last = server.call("observe", serde_json::json!({}));
    assert_eq!(
        first["screen_key"], last["screen_key"],
        "one screen throughout"
    );
    drop(server);

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("| builtin:shop, latency realistic, medians of {RUNS} | ms |\n|---|---:|");
    for (what, time) in [
        (
            "droid-capture (a process: connect, capture, exit)",
            captured,
        ),
        ("droid-capture \\| droid-hash (the screen key)", hashed),
        (
            "MCP `observe` (capture, key, downscaled screenshot in the answer)",
            observed,
        ),
        ("droid-act tap X Y (a process)", tapped),
        (
            "droid-act tap, then droid-capture \\| droid-hash",
            tapped_and_keyed,
        ),
        (
            "MCP `act` tap (the tap, then the new screen captured and keyed)",
            acted,
        ),
    ] {
        println!("| {what} | {:.1} |", ms(time));
    }
    for (name, time) in [
        ("capture_ms", captured),
        ("capture_hash_ms", hashed),
        ("observe_ms", observed),
        ("act_direct_ms", tapped),
        ("act_then_capture_hash_ms", tapped_and_keyed),
        ("act_ms", acted),
    ] {
        figure("mcp", name, serde_json::json!(round3(ms(time))));
    }
}
