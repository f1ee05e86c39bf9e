//! The pruned text tree: the screen as a model and a person read it.
//!
//! ```text
//! - Toolbar
//!   - Button "Navigate up" [ref=1]
//!   - Text "Settings"
//! - List [ref=2]
//!   - Button "Network & internet / Mobile, Wi-Fi, hotspot" [ref=3]
//!   - Switch "Airplane mode" [ref=4] [checked]
//! - TextInput hint="Email" #email [ref=5] [focused]
//! ```
//!
//! One line per widget, two spaces of indent per level, in document order. A line is the role,
//! the label in quotes (text, else content description), `desc=` when both differ, `hint=` for
//! fields, `#id` (the resource id's name) when there is no label, `[ref=N]` on every actionable
//! element, then states (`[disabled]` only on what could otherwise be acted on).
//!
//! Pruning:
//! - invisible and zero-area nodes are left out (their children still count);
//! - a wrapper that is neither actionable nor labelled is replaced by its only child, by nothing
//!   when it has none, or by its children when they are all containers and it has no resource
//!   id; otherwise it is shown as `Group`;
//! - an actionable element without a label takes the labels of its content when nothing in it
//!   is actionable and there are at most six (`Button "Title / Subtitle"`);
//! - a labelled element drops plain children that only repeat its label;
//! - a sibling subtree that prints exactly like an earlier sibling is dropped and counted in a
//!   `- (N repeated items omitted)` line.
//!
//! Refs count from 1 in reading order. `docs/ui-tree.md` has examples and measurements.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use super::{UiElement, MAX_DEPTH};

/// Longest label shown, in characters; longer ones end with `…`.
const MAX_LABEL_CHARS: usize = 100;

/// Most labels folded into one actionable line; more stay a subtree.
const MAX_FOLDED_LABELS: usize = 6;

/// The pruned tree and what it left out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pruned {
    /// The tree text, one line per shown widget, ending with a newline unless empty.
    pub text: String,
    /// Elements left out because their subtree repeats an earlier sibling's.
    pub repeated: Vec<u32>,
    /// Elements left out because they are invisible or have no area.
    pub hidden: Vec<u32>,
    /// How many refs were handed out (refs are `1..=refs`).
    pub refs: u32,
}

/// The pruned text tree; sets `ref_id` on each element that got a `[ref=N]` (and clears it on
/// the others).
pub fn prune(elements: &mut [UiElement]) -> String {
    prune_report(elements).text
}

/// [`prune`], also telling which elements were left out and why.
pub fn prune_report(elements: &mut [UiElement]) -> Pruned {
    // Positions in the slice, not element ids, so elements from the wire cannot point out of
    // range; a parent must come before its child (document order), so there are no cycles.
    let position: HashMap<u32, usize> = elements
        .iter()
        .enumerate()
        .map(|(at, e)| (e.element_id, at))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); elements.len()];
    let mut roots = Vec::new();
    for (at, e) in elements.iter().enumerate() {
        match e.parent.and_then(|p| position.get(&p)) {
            Some(&parent) if parent < at => children[parent].push(at),
            _ => roots.push(at),
        }
    }
    let mut pruned = Pruned::default();
    let builder = Builder {
        elements,
        children: &children,
    };
    let windows: Vec<(usize, Vec<Shown>)> = roots
        .iter()
        .map(|&root| (root, builder.build(root, 0, &mut pruned)))
        .collect();

    for e in elements.iter_mut() {
        e.ref_id = None;
    }
    let mut printer = Printer {
        elements,
        out: String::new(),
        next_ref: 1,
    };
    let several_windows = windows.len() > 1;
    for (root, shown) in windows.iter().filter(|(_, shown)| !shown.is_empty()) {
        if several_windows {
            let package = printer.elements[*root].package.clone();
            printer
                .out
                .push_str(&format!("- Window {}\n", quote(&package)));
            printer.print_all(shown, 1);
        } else {
            printer.print_all(shown, 0);
        }
    }
    pruned.refs = printer.next_ref - 1;
    pruned.text = printer.out;
    pruned
}

/// Something a user can act on: enabled, on screen with an area, and clickable, long-clickable,
/// editable, scrollable or checkable.
pub fn is_actionable(e: &UiElement) -> bool {
    e.enabled && offers_action(e) && e.bounds.area() > 0
}

/// Clickable, long-clickable, editable, scrollable or checkable, enabled or not.
fn offers_action(e: &UiElement) -> bool {
    e.clickable || e.long_clickable || e.editable || e.scrollable || e.checkable
}

/// Whether the element is on screen at all.
fn is_shown(e: &UiElement) -> bool {
    e.visible && e.bounds.area() > 0
}

/// A widget that makes it into the tree.
#[derive(Debug)]
struct Shown {
    /// Position of the element in the slice.
    at: usize,
    /// Labels of plain text children folded into this line.
    folded_label: Option<String>,
    children: Vec<Shown>,
    /// Siblings dropped after `children` as repeats.
    omitted: usize,
    /// Hash of the subtree as printed without refs: equal keys print alike.
    key: u64,
}

struct Builder<'a> {
    elements: &'a [UiElement],
    children: &'a [Vec<usize>],
}

impl Builder<'_> {
    /// What element `id` contributes to its parent's child list: nothing, itself, or (for
    /// wrappers and hidden nodes) its children.
    fn build(&self, at: usize, depth: usize, pruned: &mut Pruned) -> Vec<Shown> {
        let e = &self.elements[at];
        let mut kids = Vec::new();
        if depth < MAX_DEPTH {
            for &child in &self.children[at] {
                kids.extend(self.build(child, depth + 1, pruned));
            }
        }
        let omitted = self.drop_repeats(&mut kids, pruned);
        if !is_shown(e) {
            pruned.hidden.push(e.element_id);
            return kids;
        }
        let actionable = is_actionable(e);
        if !actionable && label(e).is_none() && e.hint.is_empty() && omitted == 0 {
            // A plain wrapper says nothing unless it groups leaves together or has a name.
            let only_containers = kids.iter().all(|k| !k.children.is_empty() || k.omitted > 0);
            if kids.len() <= 1 || (e.resource_id.is_empty() && only_containers) {
                return kids;
            }
        }
        let mut node = Shown {
            at,
            folded_label: None,
            children: kids,
            omitted,
            key: 0,
        };
        match label(e) {
            None if actionable => self.fold_text_children(&mut node),
            None => {}
            Some(own) => self.drop_echoes(&mut node, &own),
        }
        let mut hasher = DefaultHasher::new();
        line(e, &node, None).hash(&mut hasher);
        node.omitted.hash(&mut hasher);
        for child in &node.children {
            child.key.hash(&mut hasher);
        }
        node.key = hasher.finish();
        vec![node]
    }

    /// An unlabelled button over plain labelled content reads better as one line:
    /// `Button "Title / Subtitle"`. Only when nothing inside is actionable and the labels are few.
    fn fold_text_children(&self, node: &mut Shown) {
        let mut labels = Vec::new();
        if node.omitted > 0 || !self.gather_labels(&node.children, &mut labels) {
            return;
        }
        if labels.is_empty() || labels.len() > MAX_FOLDED_LABELS {
            return;
        }
        labels.dedup();
        node.folded_label = Some(labels.join(" / "));
        node.children.clear();
    }

    /// Plain text children that only repeat their parent's label (`Button "1"` over `Text "1"`)
    /// say nothing new.
    fn drop_echoes(&self, node: &mut Shown, own: &str) {
        node.children.retain(|child| {
            let e = &self.elements[child.at];
            let plain = child.children.is_empty() && child.omitted == 0 && !is_actionable(e);
            !(plain && label(e).as_deref() == Some(own))
        });
    }

    /// Collects the labels of a subtree in reading order; `false` when it holds anything that
    /// must stay its own line (an actionable element, omitted repeats).
    fn gather_labels(&self, nodes: &[Shown], labels: &mut Vec<String>) -> bool {
        nodes.iter().all(|child| {
            let e = &self.elements[child.at];
            if is_actionable(e) || child.omitted > 0 {
                return false;
            }
            labels.extend(label(e));
            self.gather_labels(&child.children, labels)
        })
    }

    /// Drops siblings that print exactly like an earlier one; returns how many.
    fn drop_repeats(&self, kids: &mut Vec<Shown>, pruned: &mut Pruned) -> usize {
        let mut seen = HashSet::new();
        let before = kids.len();
        kids.retain(|kid| {
            if seen.insert(kid.key) {
                true
            } else {
                collect_ids(self.elements, kid, &mut pruned.repeated);
                false
            }
        });
        before - kids.len()
    }
}

fn collect_ids(elements: &[UiElement], node: &Shown, out: &mut Vec<u32>) {
    out.push(elements[node.at].element_id);
    for child in &node.children {
        collect_ids(elements, child, out);
    }
}

struct Printer<'a> {
    elements: &'a mut [UiElement],
    out: String,
    next_ref: u32,
}

impl Printer<'_> {
    fn print_all(&mut self, nodes: &[Shown], depth: usize) {
        for node in nodes {
            self.print(node, depth);
        }
    }

    fn print(&mut self, node: &Shown, depth: usize) {
        let element = &mut self.elements[node.at];
        let reference = is_actionable(element).then(|| {
            let r = self.next_ref;
            self.next_ref += 1;
            element.ref_id = Some(r);
            r
        });
        let text = line(element, node, reference);
        push_line(&mut self.out, depth, &text);
        self.print_all(&node.children, depth + 1);
        if node.omitted > 0 {
            let note = format!("({} repeated items omitted)", node.omitted);
            push_line(&mut self.out, depth + 1, &note);
        }
    }
}

fn push_line(out: &mut String, depth: usize, text: &str) {
    for _ in 0..depth {
        out.push_str("  ");
    }
    out.push_str("- ");
    out.push_str(text);
    out.push('\n');
}

/// One widget's line, without indent.
fn line(e: &UiElement, node: &Shown, reference: Option<u32>) -> String {
    let mut out = String::from(role(e));
    let own = label(e);
    let shown_label = own.clone().or_else(|| node.folded_label.clone());
    if let Some(text) = &shown_label {
        out.push(' ');
        out.push_str(&quote(text));
    }
    let desc = e.content_desc.trim();
    if own.is_some() && !desc.is_empty() && own.as_deref() != Some(desc) {
        out.push_str(" desc=");
        out.push_str(&quote(desc));
    }
    let hint = e.hint.trim();
    if !hint.is_empty() && own.as_deref() != Some(hint) {
        out.push_str(" hint=");
        out.push_str(&quote(hint));
    }
    if shown_label.is_none() {
        if let Some(name) = id_name(&e.resource_id) {
            out.push_str(" #");
            out.push_str(name);
        }
    }
    if let Some(r) = reference {
        out.push_str(&format!(" [ref={r}]"));
    }
    let states = [
        (e.checked, "[checked]"),
        (e.selected, "[selected]"),
        (e.focused, "[focused]"),
        // Disabled matters for what could otherwise be acted on; uiautomator also marks
        // plain labels disabled, which says nothing.
        (!e.enabled && offers_action(e), "[disabled]"),
        (e.password, "[password]"),
        (e.scrollable && !is_scroll_role(role(e)), "[scrollable]"),
    ];
    for (on, state) in states {
        if on {
            out.push(' ');
            out.push_str(state);
        }
    }
    out
}

/// [`super::own_label`], when there is one.
fn label(e: &UiElement) -> Option<String> {
    Some(super::own_label(e))
        .filter(|l| !l.is_empty())
        .map(str::to_string)
}

/// `com.app:id/login_button` → `login_button`.
fn id_name(resource_id: &str) -> Option<&str> {
    let name = resource_id
        .rsplit_once(":id/")
        .map_or(resource_id, |(_, n)| n);
    (!name.is_empty()).then_some(name)
}

/// A label in double quotes, whitespace runs (newlines, NBSP) folded to one space, `"` and `\`
/// escaped, cut at [`MAX_LABEL_CHARS`] (and `…` added): how a prompt shows an app's text.
pub fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    let mut words = text.split_whitespace().peekable();
    let mut count = 0;
    'words: while let Some(word) = words.next() {
        for c in word.chars() {
            if count == MAX_LABEL_CHARS {
                out.push('…');
                break 'words;
            }
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
            count += 1;
        }
        if words.peek().is_some() {
            out.push(' ');
            count += 1;
        }
    }
    out.push('"');
    out
}

fn is_scroll_role(role: &str) -> bool {
    matches!(role, "List" | "Scroll" | "Pager")
}

/// A short role name from the class and the flags.
fn role(e: &UiElement) -> &'static str {
    if e.editable {
        return "TextInput";
    }
    let simple = e.class_name.rsplit(['.', '$']).next().unwrap_or_default();
    let by_class = [
        ("Switch", "Switch"),
        ("CheckBox", "CheckBox"),
        ("RadioButton", "Radio"),
        ("ToggleButton", "Toggle"),
        ("Button", "Button"),
        ("ImageView", "Image"),
        ("RecyclerView", "List"),
        ("ListView", "List"),
        ("GridView", "List"),
        ("ScrollView", "Scroll"),
        ("ViewPager", "Pager"),
        ("Spinner", "Dropdown"),
        ("SeekBar", "Slider"),
        ("RatingBar", "Slider"),
        ("ProgressBar", "Progress"),
        ("WebView", "Web"),
        ("TabWidget", "Tabs"),
        ("TabLayout", "Tabs"),
        ("Toolbar", "Toolbar"),
    ];
    if let Some((_, role)) = by_class.iter().find(|(suffix, _)| simple.ends_with(suffix)) {
        return role;
    }
    if simple == "Image" {
        return "Image";
    }
    if e.checkable {
        "CheckBox"
    } else if e.scrollable {
        "Scroll"
    } else if e.clickable || e.long_clickable {
        "Button"
    } else if simple.ends_with("TextView") || !e.text.trim().is_empty() {
        "Text"
    } else if !e.content_desc.trim().is_empty() {
        "Image"
    } else {
        "Group"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::parse;

    fn node(attrs: &str, inner: &str) -> String {
        let enabled = if attrs.contains("enabled=") {
            ""
        } else {
            r#"enabled="true""#
        };
        format!(r#"<node {enabled} bounds="[0,0][100,100]" {attrs}>{inner}</node>"#)
    }

    fn tree(body: &str) -> (String, Vec<UiElement>) {
        let mut elements = parse(&format!("<hierarchy>{body}</hierarchy>")).unwrap();
        let text = prune(&mut elements);
        (text, elements)
    }

    #[test]
    fn wrappers_collapse_and_empty_leaves_go() {
        let body = node(
            r#"class="android.widget.FrameLayout""#,
            &node(
                r#"class="android.widget.LinearLayout""#,
                &(node(
                    r#"class="android.widget.Button" text="OK" clickable="true""#,
                    "",
                ) + &node(r#"class="android.widget.ImageView""#, "")),
            ),
        );
        let (text, elements) = tree(&body);
        assert_eq!(text, "- Button \"OK\" [ref=1]\n");
        let by_ref = |r| elements.iter().find(|e| e.ref_id == Some(r));
        assert_eq!(by_ref(1).unwrap().text, "OK");
        assert!(by_ref(2).is_none());
    }

    #[test]
    fn unlabelled_buttons_take_their_text_children() {
        let row = node(
            r#"class="android.widget.LinearLayout" clickable="true""#,
            &(node(r#"class="android.widget.TextView" text="Wi-Fi""#, "")
                + &node(r#"class="android.widget.TextView" text="Off""#, "")),
        );
        let (text, _) = tree(&row);
        assert_eq!(text, "- Button \"Wi-Fi / Off\" [ref=1]\n");
    }

    #[test]
    fn children_echoing_the_label_go() {
        let key = node(
            r#"class="android.widget.FrameLayout" content-desc="1" clickable="true""#,
            &(node(r#"class="android.widget.TextView" text="1""#, "")
                + &node(r#"class="android.widget.TextView" text="ABC""#, "")),
        );
        let (text, _) = tree(&key);
        assert_eq!(text, "- Button \"1\" [ref=1]\n  - Text \"ABC\"\n");
    }

    #[test]
    fn repeated_siblings_are_dropped_and_reported() {
        let item = node(r#"class="android.widget.ImageView" clickable="true""#, "");
        let other = node(
            r#"class="android.widget.Button" text="More" clickable="true""#,
            "",
        );
        let list = node(
            r#"class="androidx.recyclerview.widget.RecyclerView" scrollable="true""#,
            &format!("{item}{item}{other}{item}"),
        );
        let mut elements = parse(&format!("<hierarchy>{list}</hierarchy>")).unwrap();
        let pruned = prune_report(&mut elements);
        assert_eq!(
            pruned.text,
            "- List [ref=1]\n  - Image [ref=2]\n  - Button \"More\" [ref=3]\n  - (2 repeated items omitted)\n"
        );
        assert_eq!(pruned.repeated, [2, 4]);
        assert_eq!(pruned.refs, 3);
    }

    #[test]
    fn states_ids_hints_and_passwords() {
        let body = node(
            r#"class="android.widget.LinearLayout""#,
            &(node(
                r#"class="android.widget.EditText" text="hunter2" password="true" resource-id="app:id/pw" focused="true" clickable="true" hint="Password""#,
                "",
            ) + &node(
                r#"class="android.widget.Switch" text="Dark &quot;mode&quot;" checkable="true" checked="true" enabled="false""#,
                "",
            )),
        );
        let (text, _) = tree(&body);
        assert_eq!(
            text,
            "- Group\n  - TextInput hint=\"Password\" #pw [ref=1] [focused] [password]\n  - Switch \"Dark \\\"mode\\\"\" [checked] [disabled]\n"
        );
        assert!(!text.contains("hunter2"));
    }

    #[test]
    fn hidden_nodes_are_skipped_but_their_children_kept() {
        let body = node(
            r#"class="android.widget.FrameLayout" visible-to-user="false""#,
            &node(
                r#"class="android.widget.Button" text="Go" clickable="true" visible-to-user="true""#,
                "",
            ),
        );
        let mut elements = parse(&format!("<hierarchy>{body}</hierarchy>")).unwrap();
        let pruned = prune_report(&mut elements);
        assert_eq!(pruned.text, "- Button \"Go\" [ref=1]\n");
        assert_eq!(pruned.hidden, [0]);
    }

    #[test]
    fn elements_from_the_wire_cannot_break_it() {
        let cyclic = vec![
            UiElement {
                element_id: 7,
                parent: Some(9),
                clickable: true,
                enabled: true,
                visible: true,
                text: "A".into(),
                bounds: [0, 0, 10, 10].into(),
                ..UiElement::default()
            },
            UiElement {
                element_id: 9,
                parent: Some(7),
                visible: true,
                text: "B".into(),
                bounds: [0, 0, 10, 10].into(),
                ..UiElement::default()
            },
        ];
        let mut elements = cyclic;
        let text = prune(&mut elements);
        assert_eq!(text, "- Button \"A\" [ref=1]\n  - Text \"B\"\n");
        let by_ref = |r| elements.iter().find(|e| e.ref_id == Some(r));
        assert_eq!(by_ref(1).unwrap().element_id, 7);
    }

    #[test]
    fn long_labels_are_cut_and_whitespace_folded() {
        assert_eq!(quote("a\n\u{a0} b"), "\"a b\"");
        let long = "x".repeat(150);
        assert_eq!(quote(&long).chars().count(), MAX_LABEL_CHARS + 3);
    }
}
