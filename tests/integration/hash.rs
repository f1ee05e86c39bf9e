//! droid-hash end to end: standalone forms, stability, volatile attributes, the filter stage.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Output, Stdio};

use droid::events::{Event, Observation};
use droid::hash::{format_phash, hamming, layout_hash, phash_image, phash_png};
use image::{DynamicImage, Rgb, RgbImage};
use serde_json::Value;

use crate::capture::{assert_one_line_failure, write_png};
use crate::common::{droid, feed, fixtures};

fn hash(args: &[&str]) -> Output {
    droid("droid-hash").args(args).output().unwrap()
}

fn hash_stdin(input: &str) -> Output {
    feed(&mut droid("droid-hash"), input)
}

fn json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn uidump(name: &str) -> PathBuf {
    fixtures().join("uidump").join(name)
}

/// A screen-like picture: white, with a line of text-like strokes on each of the given rows
/// (40 px apart), each line as long as its row number makes it.
fn screen(rows: &[u32]) -> RgbImage {
    let mut image = RgbImage::from_pixel(270, 600, Rgb([250, 250, 250]));
    for &row in rows {
        let length = 60 + (row * 37) % 180;
        for y in row * 40 + 10..row * 40 + 30 {
            for x in 20..20 + length {
                if (x / 4) % 3 != 2 {
                    image.put_pixel(x, y, Rgb([40, 40, 40]));
                }
            }
        }
    }
    image
}

/// A wireframe of a dump at a third of its size: grey outlines for the nodes, dark strokes as
/// long as the labels. Close enough to a screenshot to measure the perceptual hash on real
/// layouts.
fn wireframe(xml: &str) -> DynamicImage {
    let elements = droid::ui::parse(xml).unwrap();
    let mut image = RgbImage::from_pixel(360, 760, Rgb([255, 255, 255]));
    let clamp = |v: i32, max: u32| (v.max(0) as u32 / 3).min(max);
    for e in elements.iter().filter(|e| e.visible) {
        let (x1, y1) = (clamp(e.bounds.x1, 360), clamp(e.bounds.y1, 760));
        let (x2, y2) = (clamp(e.bounds.x2, 360), clamp(e.bounds.y2, 760));
        if x2 <= x1 || y2 <= y1 {
            continue;
        }
        for x in x1..x2 {
            image.put_pixel(x, y1, Rgb([200, 200, 200]));
            image.put_pixel(x, y2 - 1, Rgb([200, 200, 200]));
        }
        for y in y1..y2 {
            image.put_pixel(x1, y, Rgb([200, 200, 200]));
            image.put_pixel(x2 - 1, y, Rgb([200, 200, 200]));
        }
        let label = if e.text.is_empty() {
            &e.content_desc
        } else {
            &e.text
        };
        let width = (label.chars().count() as u32 * 8).min(x2 - x1);
        let height = 10.min(y2 - y1);
        let top = y1 + (y2 - y1 - height) / 2;
        for y in top..top + height {
            for x in (x1 + 1..x1 + width).filter(|x| (x / 2) % 4 != 3) {
                image.put_pixel(x, y, Rgb([30, 30, 30]));
            }
        }
    }
    DynamicImage::ImageRgb8(image)
}

/// The seed rule needs distinct screens more than 5 bits apart: measured on wireframes of the
/// notes app's 51 real screens, over every pair whose layouts differ.
/// Bits two renderings of one screen may differ by (noise, a blinking cursor).
const CLOSE: u32 = 5;

#[test]
fn distinct_real_layouts_are_more_than_5_bits_apart_in_most_pairs() {
    droid::fixtures_or_skip!();
    let screens: Vec<(String, u64)> = crate::ui::all_dumps()
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("apps/notes"))
        .map(|p| {
            let xml = std::fs::read_to_string(p).unwrap();
            let image = wireframe(&xml);
            assert_eq!(phash_image(&image), phash_image(&image));
            (layout_hash(&xml).unwrap(), phash_image(&image))
        })
        .collect();
    let (mut pairs, mut close) = (0, 0);
    for (i, (layout_a, a)) in screens.iter().enumerate() {
        for (layout_b, b) in &screens[i + 1..] {
            if layout_a != layout_b {
                pairs += 1;
                close += usize::from(hamming(*a, *b) <= CLOSE);
            }
        }
    }
    println!("{close} of {pairs} pairs of distinct layouts within {CLOSE} bits");
    assert!(pairs > 1000);
    assert!(close * 20 < pairs, "{close} of {pairs} pairs too close");
}

#[test]
fn xml_hash_is_stable_and_64_hex() {
    droid::fixtures_or_skip!();
    let dump = uidump("29_youtube_emulator_720x1280_newfmt.xml");
    let first = json(&hash(&["--xml", dump.to_str().unwrap(), "--structure"]));
    let second = json(&hash(&["--xml", dump.to_str().unwrap(), "--structure"]));
    assert_eq!(first, second);
    let layout = first["layout_hash"].as_str().unwrap();
    assert_eq!(layout.len(), 64);
    assert!(layout.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(first["structure_hash"].as_str().unwrap().len(), 64);
    let text = std::fs::read_to_string(&dump).unwrap();
    assert_eq!(layout, layout_hash(&text).unwrap());
}

/// What the layout hash promises to see of a dump: everything but the volatile attributes.
fn stable_view(xml: &str) -> Vec<(String, String, String, String, bool, [i32; 4])> {
    droid::ui::parse(xml)
        .unwrap()
        .into_iter()
        .map(|e| {
            let text = if e.editable { String::new() } else { e.text };
            (
                e.class_name,
                e.resource_id,
                e.content_desc,
                text,
                e.clickable,
                e.bounds.into(),
            )
        })
        .collect()
}

#[test]
fn dumps_share_a_layout_hash_only_when_they_differ_in_volatile_attributes() {
    droid::fixtures_or_skip!();
    let mut seen = std::collections::HashMap::new();
    for path in crate::ui::all_dumps() {
        let text = std::fs::read_to_string(&path).unwrap();
        let hash = layout_hash(&text).unwrap();
        if let Some((other, other_text)) = seen.insert(hash, (path.clone(), text.clone())) {
            assert_eq!(
                stable_view(&text),
                stable_view(&other_text),
                "{path:?} vs {other:?}"
            );
        }
    }
    assert!(seen.len() > 60, "too many collisions: {}", seen.len());
}

/// Edited copies of a real dump (never the fixture itself): volatile attributes do not change
/// the layout hash, anything else does.
#[test]
fn layout_hash_ignores_the_volatile_attributes() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // (fixture, from, to, same hash?)
        (
            "29_youtube_emulator_720x1280_newfmt.xml",
            r#"focused="true""#,
            r#"focused="false""#,
            true,
        ),
        (
            "05_compose_whereismytrain_edittext.xml",
            r#"text="Gomti Express" resource-id="" class="android.widget.EditText""#,
            r#"text="Typed" resource-id="" class="android.widget.EditText""#,
            true,
        ),
        (
            "19_settings_phone_network_mode.xml",
            r#"checked="true""#,
            r#"checked="false""#,
            true,
        ),
        (
            "04_systemui_nothing.xml",
            r#"selected="true""#,
            r#"selected="false""#,
            true,
        ),
        (
            "41_u2python_format_webview_displayid.xml",
            r#"visible-to-user="true""#,
            r#"visible-to-user="false""#,
            true,
        ),
        (
            "19_settings_phone_network_mode.xml",
            "5G preferencial",
            "6G preferencial",
            false,
        ),
        (
            "19_settings_phone_network_mode.xml",
            r#"clickable="true""#,
            r#"clickable="false""#,
            false,
        ),
    ];
    for (fixture, from, to, same) in cases {
        let original = uidump(fixture);
        let text = std::fs::read_to_string(&original).unwrap();
        assert!(text.contains(from), "{fixture} lacks {from}");
        let edited = dir.path().join(fixture);
        std::fs::write(&edited, text.replace(from, to)).unwrap();
        let a = json(&hash(&["--xml", original.to_str().unwrap()]));
        let b = json(&hash(&["--xml", edited.to_str().unwrap()]));
        assert_eq!(a == b, same, "{fixture}: {from} -> {to}");
    }
}

#[test]
fn scrolling_a_list_keeps_the_layout_hash() {
    droid::fixtures_or_skip!();
    // 25's settings list is scrollable: moving a row inside it is a scroll offset.
    let text = std::fs::read_to_string(uidump("25_settings_samsung.xml")).unwrap();
    let elements = droid::ui::parse(&text).unwrap();
    let list = elements.iter().find(|e| e.scrollable).unwrap();
    let row = elements
        .iter()
        .find(|e| e.parent == Some(list.element_id))
        .unwrap();
    let b = row.bounds;
    let before = format!("[{},{}][{},{}]", b.x1, b.y1, b.x2, b.y2);
    let after = format!("[{},{}][{},{}]", b.x1, b.y1 - 50, b.x2, b.y2 - 50);
    let scrolled = text.replace(&before, &after);
    assert_ne!(scrolled, text);
    assert_eq!(layout_hash(&scrolled).unwrap(), layout_hash(&text).unwrap());
}

#[test]
fn png_hash_is_stable_and_separates_screens() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.png"), dir.path().join("b.png"));
    write_png(&a, &screen(&[1, 2, 3, 5, 8]));
    write_png(&b, &screen(&[1, 2, 4, 6, 8]));
    let first = json(&hash(&[a.to_str().unwrap()]));
    assert_eq!(first, json(&hash(&[a.to_str().unwrap()])));
    let phash_a = first["phash"].as_str().unwrap().to_string();
    assert_eq!(phash_a.len(), 16);
    assert_eq!(
        phash_a,
        format_phash(phash_png(&std::fs::read(&a).unwrap()).unwrap())
    );
    let phash_b = json(&hash(&[b.to_str().unwrap()]))["phash"]
        .as_str()
        .unwrap()
        .to_string();
    let out = hash(&["distance", &phash_a, &phash_b]);
    assert!(out.status.success());
    let distance: u32 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let expected = hamming(
        u64::from_str_radix(&phash_a, 16).unwrap(),
        u64::from_str_radix(&phash_b, 16).unwrap(),
    );
    assert_eq!(distance, expected);
    assert!(distance > 5, "two layouts {distance} bits apart");
}

#[test]
fn distance_of_known_hashes() {
    let out = hash(&["distance", "ffffffffffffffff", "0000000000000000"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "64\n");
    let out = hash(&["distance", "00000000000000f0", "0000000000000010"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "3\n");
}

#[test]
fn malformed_inputs_exit_1_with_one_line() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake.png");
    std::fs::write(&fake, "this is not a png").unwrap();
    let cut = dir.path().join("cut.png");
    write_png(&cut, &screen(&[1, 3]));
    let bytes = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let truncated = dir.path().join("truncated.xml");
    let xml = std::fs::read_to_string(uidump("25_settings_samsung.xml")).unwrap();
    std::fs::write(&truncated, &xml[..xml.len() - 40]).unwrap();
    let cmd = fixtures().join("device/cmd");
    let idle = cmd.join("uiautomator_dump_error_idle_FROM_SOURCE.txt");
    let null_root = cmd.join("uiautomator_dump_error_nullroot_FROM_SOURCE.txt");
    let cases: [(Vec<&str>, &str); 7] = [
        (vec![fake.to_str().unwrap()], "not a readable PNG"),
        (vec![cut.to_str().unwrap()], "not a readable PNG"),
        (vec!["--xml", truncated.to_str().unwrap()], "truncated XML"),
        (vec!["--xml", idle.to_str().unwrap()], "idle state"),
        (vec!["--xml", null_root.to_str().unwrap()], "null root node"),
        (vec!["distance", "xyz", "0000000000000000"], "16 hex digits"),
        (vec!["/nonexistent.png"], "reading /nonexistent.png"),
    ];
    for (args, needle) in cases {
        assert_one_line_failure(&hash(&args), needle);
    }
}

fn capture_line(args: &[&str]) -> String {
    let out = droid("droid-capture").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn observations(stdout: &[u8]) -> Vec<Observation> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .lines()
        .filter_map(|l| match Event::from_line(l).unwrap() {
            Some(Event::Observation(o)) => Some(*o),
            _ => None,
        })
        .collect()
}

#[test]
fn filter_enriches_observations_and_passes_the_rest_through() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("shot.png");
    write_png(&shot, &screen(&[0, 2, 7]));
    let dump = uidump("22_login_form_password.xml");
    let observation = capture_line(&[
        "--from-xml",
        dump.to_str().unwrap(),
        "--screenshot",
        shot.to_str().unwrap(),
        "--activity",
        "com.safeum.android/.Login",
    ]);
    let unknown = r#"{"type":"custom_thing","v":1,  "keep":"my spacing"}"#;
    let note = r#"{"type":"note","v":1,"kind":"warning","message":"x"}"#;
    let input = format!("{unknown}\n{observation}{note}\n");
    let out = hash_stdin(&input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], unknown);
    assert_eq!(lines[2], note);
    let o = &observations(&out.stdout)[0];
    let h = o.hash.as_ref().unwrap();
    let standalone = json(&hash(&["--xml", dump.to_str().unwrap(), "--structure"]));
    assert_eq!(h.layout_hash.as_deref(), standalone["layout_hash"].as_str());
    assert_eq!(
        h.structure_hash.as_deref(),
        standalone["structure_hash"].as_str()
    );
    let phash = json(&hash(&[shot.to_str().unwrap()]))["phash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(h.phash.as_deref(), Some(phash.as_str()));
    // The screen's identity as the deciders and crawler.db know it, not a picture's.
    assert_eq!(
        h.screen_key.as_deref(),
        Some(droid::screen::ScreenKey::of(o).as_str())
    );
    // Everything droid-capture wrote is still there.
    assert_eq!(o.elements.len(), 26);
    assert!(o.tree.is_some());
}

#[test]
fn filter_with_a_missing_screenshot_notes_it_and_keeps_the_layout_hash() {
    droid::fixtures_or_skip!();
    let dump = uidump("22_login_form_password.xml");
    let line = capture_line(&["--from-xml", dump.to_str().unwrap()]);
    let mut value: Value = serde_json::from_str(&line).unwrap();
    value["screenshot_path"] = Value::from("/nonexistent/shot.png");
    let out = hash_stdin(&format!("{value}\n"));
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 1: no perceptual hash for /nonexistent/shot.png"),
        "{stderr}"
    );
    let o = &observations(&out.stdout)[0];
    let h = o.hash.as_ref().unwrap();
    assert!(h.layout_hash.is_some());
    assert!(h.phash.is_none());
    // Identity comes from the hierarchy: a lost screenshot does not lose it.
    assert_eq!(
        h.screen_key.as_deref(),
        Some(droid::screen::ScreenKey::of(o).as_str())
    );
}

#[test]
fn filter_reports_bad_lines_by_number_and_exits_1() {
    let note = r#"{"type":"note","v":1,"kind":"a"}"#;
    let out = hash_stdin(&format!("{note}\nnot json\n{note}\n"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{note}\n{note}\n")
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("droid-hash: line 2: not valid JSON"),
        "{stderr}"
    );

    let empty = hash_stdin("");
    assert_eq!(empty.status.code(), Some(0));
    assert!(empty.stdout.is_empty());
}

#[test]
fn inline_xml_is_hashed_too() {
    droid::fixtures_or_skip!();
    let xml = std::fs::read_to_string(uidump("06_launcher_com_android_launcher.xml")).unwrap();
    let line = serde_json::json!({"type": "observation", "v": 1, "xml": xml}).to_string();
    let out = hash_stdin(&format!("{line}\n"));
    let o = &observations(&out.stdout)[0];
    assert_eq!(
        o.hash.as_ref().unwrap().layout_hash,
        Some(layout_hash(&xml).unwrap())
    );
}

#[test]
fn a_closed_stdout_is_a_normal_end() {
    let mut child = droid("droid-hash")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let note = "{\"type\":\"note\",\"v\":1,\"kind\":\"a\"}\n".repeat(20_000);
    // droid-hash may stop reading as soon as its first write fails.
    let _ = child.stdin.take().unwrap().write_all(note.as_bytes());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
}

#[test]
fn over_deep_dumps_are_refused_by_every_entry_point_and_the_filter_goes_on() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    // Far past the depth at which the XML parser's recursion overflowed the stack (~13,000).
    let deep = dir.path().join("deep.xml");
    let levels = 50_000;
    std::fs::write(
        &deep,
        format!(
            "<hierarchy>{}{}</hierarchy>",
            "<node>".repeat(levels),
            "</node>".repeat(levels)
        ),
    )
    .unwrap();
    let deep = deep.to_str().unwrap();
    assert_one_line_failure(&hash(&["--xml", deep]), "nested deeper than");
    let capture = droid("droid-capture")
        .args(["--from-xml", deep])
        .output()
        .unwrap();
    assert_one_line_failure(&capture, "nested deeper than");
    let good = uidump("22_login_form_password.xml");
    let lines: String = [deep, good.to_str().unwrap()]
        .iter()
        .map(|path| {
            let event = serde_json::json!({"type": "observation", "v": 1, "xml_path": path});
            format!("{event}\n")
        })
        .collect();
    let out = hash_stdin(&lines);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 1: no layout hash") && stderr.contains("deeper"),
        "{stderr}"
    );
    let seen = observations(&out.stdout);
    assert_eq!(seen.len(), 2, "{stderr}");
    assert!(seen[0].hash.as_ref().unwrap().layout_hash.is_none());
    assert!(seen[1].hash.as_ref().unwrap().layout_hash.is_some());
}
