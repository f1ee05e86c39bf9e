//! droid-capture's offline form, end to end through the binary.

use std::path::Path;
use std::process::Output;

use droid::events::{Event, Observation};
use image::{Rgb, RgbImage};

use crate::common::{droid, fixtures};

fn capture(args: &[&str]) -> Output {
    droid("droid-capture").args(args).output().unwrap()
}

fn observation(output: &Output) -> Observation {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    match Event::from_line(stdout.trim_end()).unwrap() {
        Some(Event::Observation(o)) => *o,
        other => panic!("not an observation: {other:?}"),
    }
}

fn uidump(name: &str) -> String {
    fixtures()
        .join("uidump")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Exit 1 with exactly one line on stderr, naming the problem.
pub fn assert_one_line_failure(output: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(needle), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

pub fn write_png(path: &Path, image: &RgbImage) {
    image
        .save_with_format(path, image::ImageFormat::Png)
        .unwrap();
}

#[test]
fn builds_an_observation_from_a_dump() {
    droid::fixtures_or_skip!();
    let dump = uidump("22_login_form_password.xml");
    let o = observation(&capture(&[
        "--from-xml",
        &dump,
        "--run",
        "r1",
        "--step",
        "3",
    ]));
    assert_eq!(o.run_id.as_deref(), Some("r1"));
    assert_eq!(o.step, Some(3));
    assert_eq!(o.package.as_deref(), Some("com.safeum.android"));
    assert_eq!(o.screen_size, Some([720, 1528]));
    assert_eq!(o.elements.len(), 26);
    assert!(o.tree.as_deref().unwrap().contains("[ref=1]"));
    let with_ref = o.elements.iter().filter(|e| e.ref_id.is_some()).count();
    assert_eq!(with_ref, o.tree.unwrap().matches("[ref=").count());
    assert!(Path::new(o.xml_path.as_deref().unwrap()).is_absolute());
    assert!(!o.flags.secure && !o.flags.loading);
    assert!(o.hash.is_none());
}

#[test]
fn package_and_activity_flags_win() {
    droid::fixtures_or_skip!();
    let dump = uidump("41_u2python_format_webview_displayid.xml");
    let o = observation(&capture(&["--from-xml", &dump]));
    // The largest window, not the navigation bar listed first.
    assert_eq!(o.package.as_deref(), Some("com.eco.global.app"));
    let o = observation(&capture(&[
        "--from-xml",
        &dump,
        "--package",
        "p.q",
        "--activity",
        "p.q/.Main",
    ]));
    assert_eq!(o.package.as_deref(), Some("p.q"));
    assert_eq!(o.activity.as_deref(), Some("p.q/.Main"));
}

#[test]
fn a_black_screenshot_is_secure_and_sets_the_size() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("black.png");
    write_png(&shot, &RgbImage::new(108, 240));
    let dump = uidump("22_login_form_password.xml");
    let o = observation(&capture(&[
        "--from-xml",
        &dump,
        "--screenshot",
        shot.to_str().unwrap(),
    ]));
    assert!(o.flags.secure);
    assert_eq!(o.screen_size, Some([108, 240]));
    assert_eq!(o.screenshot_path.as_deref(), shot.to_str());

    let drawn = dir.path().join("drawn.png");
    let mut image = RgbImage::new(108, 240);
    image.put_pixel(50, 50, Rgb([255, 255, 255]));
    write_png(&drawn, &image);
    let o = observation(&capture(&[
        "--from-xml",
        &dump,
        "--screenshot",
        drawn.to_str().unwrap(),
    ]));
    assert!(!o.flags.secure);
}

#[test]
fn a_progress_popup_is_loading() {
    droid::fixtures_or_skip!();
    let o = observation(&capture(&[
        "--from-xml",
        &uidump("28_youtube_popup_emulator_newfmt.xml"),
    ]));
    assert!(o.flags.loading);
    // A popup window alone does not tell the screen size.
    assert_eq!(o.screen_size, None);
}

#[test]
fn malformed_inputs_exit_1_with_one_line() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let cmd = fixtures().join("device/cmd");
    let idle = cmd.join("uiautomator_dump_error_idle_FROM_SOURCE.txt");
    let null_root = cmd.join("uiautomator_dump_error_nullroot_FROM_SOURCE.txt");
    let truncated = dir.path().join("truncated.xml");
    let xml = std::fs::read_to_string(uidump("18_google_messages.xml")).unwrap();
    std::fs::write(&truncated, &xml[..xml.len() / 3]).unwrap();
    let empty = dir.path().join("empty.xml");
    std::fs::write(&empty, "").unwrap();
    let not_png = dir.path().join("shot.png");
    std::fs::write(&not_png, "<html>not a png</html>").unwrap();
    let good_dump = uidump("22_login_form_password.xml");
    let cases: [(Vec<&str>, &str); 6] = [
        (vec!["--from-xml", idle.to_str().unwrap()], "idle state"),
        (
            vec!["--from-xml", null_root.to_str().unwrap()],
            "null root node",
        ),
        (
            vec!["--from-xml", truncated.to_str().unwrap()],
            "truncated XML",
        ),
        (vec!["--from-xml", empty.to_str().unwrap()], "empty dump"),
        (
            vec!["--from-xml", "/nonexistent/dump.xml"],
            "reading /nonexistent/dump.xml",
        ),
        (
            vec![
                "--from-xml",
                &good_dump,
                "--screenshot",
                not_png.to_str().unwrap(),
            ],
            "not a readable PNG",
        ),
    ];
    for (args, needle) in cases {
        assert_one_line_failure(&capture(&args), needle);
    }
}

#[test]
fn usage_errors_exit_2() {
    // No arguments at all is a device capture (DESIGN section 10), so not a usage error.
    assert_eq!(capture(&["--count", "x"]).status.code(), Some(2));
    assert_eq!(capture(&["--screenshot", "a.png"]).status.code(), Some(2));
    assert_eq!(capture(&["--from-xml"]).status.code(), Some(2));
}
