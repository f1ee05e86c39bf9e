//! The UI hierarchy on every real dump: parsing, the pruned tree, refs.

use std::path::{Path, PathBuf};

use droid::ui::{is_actionable, parse, prune, prune_report, UiElement};

use crate::common::{fixtures, root};

/// Every real dump: `uidump/` and the notes app's screens.
pub fn all_dumps() -> Vec<PathBuf> {
    let mut dumps = Vec::new();
    for dir in ["uidump", "apps/notes/screens"] {
        let entries = std::fs::read_dir(fixtures().join(dir)).unwrap();
        dumps.extend(
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "xml")),
        );
    }
    dumps.sort();
    assert!(dumps.len() >= 29 + 51, "fixtures missing: {}", dumps.len());
    dumps
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// `<node` start tags in the raw text.
fn node_tags(xml: &str) -> usize {
    xml.match_indices("<node")
        .filter(|(at, _)| {
            let next = xml[at + 5..].chars().next();
            next.is_some_and(|c| c.is_whitespace() || c == '>' || c == '/')
        })
        .count()
}

#[test]
fn every_dump_parses_into_one_element_per_node() {
    droid::fixtures_or_skip!();
    for path in all_dumps() {
        let xml = read(&path);
        let elements = parse(&xml).unwrap_or_else(|e| panic!("{}: {e}", name(&path)));
        assert_eq!(elements.len(), node_tags(&xml), "{}", name(&path));
        for (i, e) in elements.iter().enumerate() {
            assert_eq!(e.element_id as usize, i);
            assert_eq!(e.signature.len(), 16, "{}", name(&path));
            assert!(e.xpath.starts_with("/hierarchy/"), "{}", e.xpath);
        }
    }
}

#[test]
fn no_text_keeps_an_undecoded_entity() {
    droid::fixtures_or_skip!();
    let entities = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#"];
    let mut decoded_somewhere = 0;
    for path in all_dumps() {
        let xml = read(&path);
        for e in parse(&xml).unwrap() {
            for field in [&e.text, &e.content_desc, &e.hint, &e.resource_id] {
                for entity in entities {
                    assert!(
                        !field.contains(entity),
                        "{}: element {} keeps {entity}: {field:?}",
                        name(&path),
                        e.element_id
                    );
                }
                decoded_somewhere += usize::from(field.contains(['&', '\n', '\u{a0}']));
            }
        }
    }
    // The fixtures do contain &amp;, &#10; and NBSP, so the check above saw decoded text.
    assert!(decoded_somewhere > 0);
}

#[test]
fn every_actionable_element_on_screen_has_a_ref_unless_repeated() {
    droid::fixtures_or_skip!();
    for path in all_dumps() {
        let mut elements = parse(&read(&path)).unwrap();
        let pruned = prune_report(&mut elements);
        let on_screen = |e: &UiElement| e.visible && e.bounds.area() > 0;
        for e in &elements {
            let dropped = pruned.repeated.contains(&e.element_id);
            if is_actionable(e) && on_screen(e) {
                assert!(
                    e.ref_id.is_some() || dropped,
                    "{}: actionable element {} ({} {:?}) has no ref",
                    name(&path),
                    e.element_id,
                    e.class_name,
                    e.text
                );
            }
            if e.ref_id.is_some() {
                assert!(is_actionable(e) && !dropped);
            }
        }
        for r in 1..=pruned.refs {
            let e = by_ref(&elements, r).unwrap();
            assert_eq!(e.ref_id, Some(r));
            assert_eq!(pruned.text.matches(&format!("[ref={r}]")).count(), 1);
        }
        assert!(by_ref(&elements, pruned.refs + 1).is_none());
    }
}

/// The size table of docs/ui-tree.md (`cargo test --test integration ui::tree_size -- --nocapture`).
#[test]
fn tree_size_is_smaller_than_the_xml() {
    droid::fixtures_or_skip!();
    let (mut xml_total, mut tree_total) = (0, 0);
    println!("| dump | nodes | XML chars | tree chars | XML tokens | tree tokens | tree/XML |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for path in all_dumps() {
        let xml = read(&path);
        let mut elements = parse(&xml).unwrap();
        let tree = prune(&mut elements);
        let (x, t) = (xml.chars().count(), tree.chars().count());
        assert!(t < x, "{}: tree {t} chars, XML {x}", name(&path));
        println!(
            "| {} | {} | {x} | {t} | {} | {} | {:.1}% |",
            name(&path),
            elements.len(),
            x / 4,
            t / 4,
            100.0 * t as f64 / x as f64
        );
        xml_total += x;
        tree_total += t;
    }
    println!(
        "| all | | {xml_total} | {tree_total} | {} | {} | {:.1}% |",
        xml_total / 4,
        tree_total / 4,
        100.0 * tree_total as f64 / xml_total as f64
    );
    // On the whole set the tree is at least ten times smaller.
    assert!(tree_total * 10 < xml_total);
}

/// Pruned trees people read, kept as files under tests/fixtures/trees/. After an intended format
/// change, regenerate with `DROID_WRITE_SNAPSHOTS=1 cargo test --test integration ui::` and
/// review the diff.
#[test]
fn pruned_tree_snapshots() {
    droid::fixtures_or_skip!();
    let cases = [
        "uidump/22_login_form_password.xml",
        "uidump/19_settings_phone_network_mode.xml",
        "uidump/41_u2python_format_webview_displayid.xml",
        "apps/notes/screens/s000.xml",
    ];
    for case in cases {
        let mut elements = parse(&read(&fixtures().join(case))).unwrap();
        let tree = prune(&mut elements);
        let stem = Path::new(case).file_stem().unwrap().to_string_lossy();
        let snapshot = root().join(format!("tests/fixtures/trees/{stem}.txt"));
        if std::env::var_os("DROID_WRITE_SNAPSHOTS").is_some() {
            std::fs::write(&snapshot, &tree).unwrap();
        }
        let expected = std::fs::read_to_string(&snapshot).unwrap_or_default();
        assert!(
            tree == expected,
            "{case}: tree differs from {}:\n{tree}",
            snapshot.display()
        );
    }
}

#[test]
fn multi_window_and_offset_windows() {
    droid::fixtures_or_skip!();
    let mut elements = parse(&read(
        &fixtures().join("uidump/41_u2python_format_webview_displayid.xml"),
    ))
    .unwrap();
    let roots = elements.iter().filter(|e| e.parent.is_none()).count();
    assert!(roots > 1);
    let tree = prune(&mut elements);
    assert!(
        tree.starts_with("- Window \"com.android.systemui\"\n"),
        "{tree}"
    );
    assert!(tree.contains("- Window \"com.eco.global.app\""));

    let popup = parse(&read(
        &fixtures().join("uidump/38_kakaotalk_popup_window_offset_bounds.xml"),
    ))
    .unwrap();
    assert_eq!(popup[0].bounds.y1, 583);
    assert_eq!(popup[0].center_y, (583 + 1718) / 2);
}

#[test]
fn password_text_never_reaches_the_tree() {
    droid::fixtures_or_skip!();
    for case in ["22_login_form_password.xml", "37_keyguard_pin_password.xml"] {
        let mut elements = parse(&read(&fixtures().join("uidump").join(case))).unwrap();
        let tree = prune(&mut elements);
        let passwords: Vec<&UiElement> = elements.iter().filter(|e| e.password).collect();
        assert!(!passwords.is_empty(), "{case}");
        assert!(tree.contains("[password]"), "{case}");
        for e in passwords {
            if !e.text.trim().is_empty() {
                assert!(!tree.contains(&format!("\"{}\"", e.text.trim())), "{case}");
            }
        }
    }
}

/// The element carrying `[ref=r]`.
fn by_ref(elements: &[UiElement], r: u32) -> Option<&UiElement> {
    elements.iter().find(|e| e.ref_id == Some(r))
}
