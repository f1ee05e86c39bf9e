//! `make bench`: performance numbers as medians. A plain harness: each section is a function;
//! `cargo bench --bench bench -- SECTION...` runs only the named sections.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use image::{DynamicImage, Rgb, RgbImage};

/// Named sections, in the order they run.
const SECTIONS: &[(&str, fn())] = &[("ui", ui), ("phash", phash), ("decide", decide)];

fn main() {
    // cargo passes `--bench`; anything else not starting with `-` names a section.
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for (name, section) in SECTIONS {
        if wanted.is_empty() || wanted.iter().any(|w| w == name) {
            println!("## {name}\n");
            section();
            println!();
        }
    }
}

/// Median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[times.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures")
}

/// Parse (signatures included) and prune, per real dump.
fn ui() {
    let mut dumps = Vec::new();
    for dir in ["uidump", "apps/notes/screens"] {
        for entry in std::fs::read_dir(fixtures().join(dir)).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|x| x == "xml") {
                dumps.push(path);
            }
        }
    }
    dumps.sort();
    println!("| dump | nodes | parse+signature µs | prune µs | total µs |");
    println!("|---|---:|---:|---:|---:|");
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
        let total = median(200, || {
            let mut elements = droid::ui::parse(black_box(&xml)).expect("parses");
            black_box(droid::ui::prune(&mut elements));
        });
        totals.push((nodes, micros(total)));
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        println!(
            "| {name} | {nodes} | {:.0} | {:.0} | {:.0} |",
            micros(parse),
            micros(prune),
            micros(total)
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
    let decode = median(30, || {
        black_box(image::load_from_memory(black_box(&png)).expect("decode"));
    });
    let decoded = image::load_from_memory(&png).expect("decode");
    let hash = median(30, || {
        black_box(droid::hash::phash_image(black_box(&decoded)));
    });
    println!("| step | median ms |");
    println!("|---|---:|");
    println!(
        "| decode PNG 1080×2400 ({} KiB) | {:.2} |",
        png.len() / 1024,
        micros(decode) / 1e3
    );
    println!(
        "| hash pixels in memory (target <= 5 ms) | {:.2} |",
        micros(hash) / 1e3
    );
}

/// A synthetic app of 500 screens (8 buttons each, every button leading to another screen) for
/// the heuristic: screen `i`'s observation.
fn synthetic_app_screen(i: usize) -> droid::events::Observation {
    use droid::ui::{Bounds, UiElement};
    let elements = (0..8u32)
        .map(|k| UiElement {
            element_id: k,
            ref_id: Some(k + 1),
            text: format!("Item {k} of {i}"),
            class_name: "android.widget.Button".into(),
            signature: format!("s{i}b{k}"),
            clickable: true,
            enabled: true,
            visible: true,
            bounds: Bounds::from([0, 200 * k as i32, 1080, 200 * k as i32 + 180]),
            ..UiElement::default()
        })
        .collect();
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
        elements,
        ..Default::default()
    }
}

/// Heuristic decision time per step while it explores a 500-screen app to exhaustion: early
/// steps find untried actions on the screen, late ones walk the graph (breadth-first search).
fn decide() {
    use droid::decide::heuristic::Heuristic;
    const SCREENS: usize = 500;
    let screens: Vec<_> = (0..SCREENS).map(synthetic_app_screen).collect();
    let mut heuristic = Heuristic::new(1, droid::decide::Credentials::default());
    heuristic.set_package(Some("com.bench".into()), Vec::new());
    let mut stack = vec![0usize];
    let mut times = Vec::new();
    for _ in 0..12_000 {
        let at = *stack.last().unwrap_or(&0);
        let start = Instant::now();
        let choice = heuristic.decide(black_box(&screens[at]));
        times.push(start.elapsed());
        let action = &choice.actions[0];
        match action.ref_id {
            Some(k) => stack.push((at * 31 + k as usize * 17 + 1) % SCREENS),
            None if stack.len() > 1 => {
                stack.pop();
            }
            None => stack = vec![0],
        }
    }
    let known = heuristic.graph().screen_count();
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
        "\n{} steps, {known} of {SCREENS} screens known at the end (target: median <= 2000 µs per step)",
        times.len()
    );
}
