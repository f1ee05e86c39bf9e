//! App models, version 1 (DESIGN.md section 4): screens, transitions, loaded hierarchies.
//!
//! A model is a JSON file (or a bundled `builtin:NAME`). Loading reads every screen's hierarchy
//! into a [`Node`] tree and validates the whole graph, so the world never meets a dangling
//! reference: every error names the screen or transition at fault.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::ui::Bounds;

/// Bundled models, by `builtin:NAME`.
const BUILTINS: &[(&str, &str)] = &[
    ("shop", include_str!("../../apps/shop/model.json")),
    ("settings", include_str!("../../apps/settings/model.json")),
    ("tiny", include_str!("../../apps/tiny/model.json")),
];

/// Larger displays than any phone or tablet are refused: every screenshot allocates the frame.
const MAX_SCREEN_SIDE: u32 = 4096;
/// Coordinates beyond this are not a layout but an attack on the arithmetic.
const MAX_COORDINATE: i32 = 1_000_000;
/// Deeper hierarchies than this are refused (real ones stay far below 100 levels).
const MAX_DEPTH: usize = 256;

/// Why a model could not be loaded; names the screen or transition at fault.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ModelError {
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid app model")]
    Json {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("unknown built-in app {name:?} (built-ins: {known})")]
    UnknownBuiltin { name: String, known: String },
    #[error("{path}: {reason}")]
    Invalid { path: String, reason: String },
    #[error("{path}: screen {screen:?}: {reason}")]
    Screen {
        path: String,
        screen: String,
        reason: String,
    },
    #[error("{path}: transition {index} (from {from:?}): {reason}")]
    Transition {
        path: String,
        index: usize,
        from: String,
        reason: String,
    },
}

/// What a transition reacts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Click,
    LongClick,
    Input,
    ScrollUp,
    ScrollDown,
    SwipeLeft,
    SwipeRight,
    Back,
}

impl Action {
    const NAMES: [(Action, &'static str); 8] = [
        (Action::Click, "click"),
        (Action::LongClick, "long_click"),
        (Action::Input, "input"),
        (Action::ScrollUp, "scroll_up"),
        (Action::ScrollDown, "scroll_down"),
        (Action::SwipeLeft, "swipe_left"),
        (Action::SwipeRight, "swipe_right"),
        (Action::Back, "back"),
    ];

    fn parse(name: &str) -> Option<Action> {
        Action::NAMES
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(action, _)| *action)
    }

    /// The name a model file gives the action (`long_click`).
    pub fn name(self) -> &'static str {
        Action::NAMES
            .iter()
            .find(|(action, _)| *action == self)
            .map_or("click", |(_, name)| name)
    }

    /// Scrolls and swipes change the view of the same screen: they replace the top of the back
    /// stack instead of pushing onto it.
    pub fn is_gesture(self) -> bool {
        matches!(
            self,
            Action::ScrollUp | Action::ScrollDown | Action::SwipeLeft | Action::SwipeRight
        )
    }
}

/// Where a transition leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Screen(usize),
    /// The app's process dies with this exception line.
    Crash(String),
    /// Another package comes to the front.
    External(String),
}

/// Fields an element must all equal for a transition to fire.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_desc: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<[i32; 4]>,
}

impl Target {
    fn is_empty(&self) -> bool {
        *self == Target::default()
    }

    /// How many fields the target names: of two targets matching the same element, the one
    /// naming more is the more specific.
    pub fn specificity(&self) -> usize {
        [
            self.resource_id.is_some(),
            self.text.is_some(),
            self.content_desc.is_some(),
            self.class.is_some(),
            self.bounds.is_some(),
        ]
        .into_iter()
        .filter(|given| *given)
        .count()
    }

    /// True when every listed field equals the node's (as the model recorded it).
    pub fn matches(&self, node: &Node) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        eq(&self.resource_id, node.attr("resource-id"))
            && eq(&self.text, node.attr("text"))
            && eq(&self.content_desc, node.attr("content-desc"))
            && eq(&self.class, node.attr("class"))
            && self.bounds.is_none_or(|b| Bounds::from(b) == node.bounds)
    }
}

/// One transition of the screen graph.
#[derive(Debug, Clone)]
pub struct Transition {
    pub from: usize,
    pub action: Action,
    pub target: Option<Target>,
    pub to: Destination,
    /// Field resource id → anchored regex its current text must match.
    pub requires: Vec<(String, Regex)>,
}

/// One node of a screen's hierarchy, attributes in the order a dump writes them.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub attrs: Vec<(String, String)>,
    pub bounds: Bounds,
    pub children: Vec<Node>,
}

impl Node {
    /// The attribute's value, or `""` when absent.
    pub fn attr(&self, name: &str) -> &str {
        self.attrs
            .iter()
            .find(|(key, _)| key == name)
            .map_or("", |(_, value)| value.as_str())
    }

    pub fn flag(&self, name: &str) -> bool {
        self.attr(name) == "true"
    }

    pub fn set_attr(&mut self, name: &str, value: String) {
        match self.attrs.iter_mut().find(|(key, _)| key == name) {
            Some((_, old)) => *old = value,
            None => self.attrs.push((name.to_string(), value)),
        }
    }

    /// A text field, as uiautomator shows one.
    pub fn is_editable(&self) -> bool {
        self.attr("class").contains("EditText")
    }

    /// This node and its descendants in document order.
    pub fn walk(&self) -> Vec<&Node> {
        let mut out = vec![self];
        for child in &self.children {
            out.extend(child.walk());
        }
        out
    }
}

/// One screen of the model.
#[derive(Debug, Clone)]
pub struct Screen {
    pub id: String,
    pub package: String,
    pub activity: String,
    pub secure: bool,
    /// Window roots, as children of `<hierarchy>`.
    pub roots: Vec<Node>,
}

impl Screen {
    /// Every node in document order (the index used for per-field state).
    pub fn nodes(&self) -> Vec<&Node> {
        self.roots.iter().flat_map(Node::walk).collect()
    }
}

/// A loaded, validated app model.
#[derive(Debug, Clone)]
pub struct AppModel {
    package: String,
    label: String,
    version_name: String,
    screen_size: (u32, u32),
    start: usize,
    ime_adbkeyboard: bool,
    apk: ApkSpec,
    pcapdroid: Option<Pcapdroid>,
    screens: Vec<Screen>,
    transitions: Vec<Transition>,
}

/// What the app's APK holds beyond the activities of its screens (`"apk"` in the model).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApkSpec {
    /// Activities the manifest declares that no screen of the model shows (`.Name` or full).
    #[serde(default)]
    pub extra_activities: Vec<String>,
    /// Split APKs installed beside `base.apk` (`config.arm64_v8a` is `split_config.arm64_v8a.apk`).
    #[serde(default)]
    pub splits: Vec<String>,
}

/// PCAPdroid installed on the device (`"pcapdroid"` in the model).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pcapdroid {
    /// The control API key set in PCAPdroid's settings: requests without it wait for a consent
    /// nobody gives. Without one every request is granted.
    #[serde(default)]
    pub api_key: Option<String>,
}

#[derive(Deserialize)]
struct RawModel {
    package: String,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    version_name: Option<String>,
    screen_size: [u32; 2],
    start: String,
    screens: Vec<RawScreen>,
    #[serde(default)]
    transitions: Vec<RawTransition>,
    #[serde(default)]
    ime_adbkeyboard: bool,
    #[serde(default)]
    apk: ApkSpec,
    #[serde(default)]
    pcapdroid: Option<Pcapdroid>,
}

#[derive(Deserialize)]
struct RawScreen {
    id: String,
    #[serde(default)]
    package: Option<String>,
    #[serde(default)]
    activity: Option<String>,
    #[serde(default)]
    hierarchy: Option<String>,
    #[serde(default)]
    elements: Option<Vec<RawElement>>,
    #[serde(default)]
    secure: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawElement {
    #[serde(default = "default_class")]
    class: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    resource_id: String,
    #[serde(default)]
    content_desc: String,
    #[serde(default)]
    hint: Option<String>,
    bounds: [i32; 4],
    #[serde(default)]
    clickable: bool,
    #[serde(default)]
    long_clickable: bool,
    #[serde(default)]
    scrollable: bool,
    #[serde(default)]
    checkable: bool,
    #[serde(default)]
    checked: bool,
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default)]
    focused: bool,
    #[serde(default)]
    selected: bool,
    #[serde(default)]
    password: bool,
    #[serde(default)]
    children: Vec<RawElement>,
}

fn default_class() -> String {
    "android.view.View".to_string()
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct RawTransition {
    from: String,
    action: String,
    #[serde(default)]
    target: Option<Target>,
    to: String,
    #[serde(default)]
    requires: HashMap<String, String>,
    #[serde(default)]
    crash: Option<String>,
}

/// The model's file in a model folder.
const MODEL_FILE: &str = "model.json";

impl AppModel {
    /// Loads MODEL.json, a folder holding `model.json` (as `apps/shop` or a fixture app), or
    /// `builtin:NAME`; validation errors name the screen / transition at fault.
    pub fn load(spec: &str) -> Result<AppModel, ModelError> {
        if let Some(name) = spec.strip_prefix("builtin:") {
            let text = BUILTINS
                .iter()
                .find(|(builtin, _)| *builtin == name)
                .map(|(_, text)| *text)
                .ok_or_else(|| ModelError::UnknownBuiltin {
                    name: name.to_string(),
                    known: builtin_names().join(", "),
                })?;
            return AppModel::parse(text, spec, None);
        }
        let given = Path::new(spec);
        let folder = given.join(MODEL_FILE);
        let path = match given.is_dir() && folder.is_file() {
            true => folder.as_path(),
            false => given,
        };
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        AppModel::parse(&text, spec, Some(&base))
    }

    /// Parses model JSON; `base` is the folder `hierarchy` paths are relative to (none for
    /// built-ins, which may not use hierarchy files).
    pub fn parse(text: &str, name: &str, base: Option<&Path>) -> Result<AppModel, ModelError> {
        let raw: RawModel = serde_json::from_str(text).map_err(|source| ModelError::Json {
            path: name.to_string(),
            source,
        })?;
        let invalid = |reason: String| ModelError::Invalid {
            path: name.to_string(),
            reason,
        };
        if raw.package.trim().is_empty() {
            return Err(invalid("empty \"package\"".to_string()));
        }
        let [width, height] = raw.screen_size;
        if width == 0 || height == 0 || width > MAX_SCREEN_SIDE || height > MAX_SCREEN_SIDE {
            return Err(invalid(format!(
                "screen_size {width}x{height} is not a plausible display"
            )));
        }
        let mut screens = Vec::with_capacity(raw.screens.len());
        let mut index = HashMap::new();
        for raw_screen in raw.screens {
            let screen = load_screen(raw_screen, &raw.package, (width, height), name, base)?;
            if index.insert(screen.id.clone(), screens.len()).is_some() {
                return Err(ModelError::Screen {
                    path: name.to_string(),
                    screen: screen.id,
                    reason: "defined twice".to_string(),
                });
            }
            screens.push(screen);
        }
        let start = *index
            .get(&raw.start)
            .ok_or_else(|| invalid(format!("start screen {:?} is not defined", raw.start)))?;
        let transitions = raw
            .transitions
            .into_iter()
            .enumerate()
            .map(|(i, t)| load_transition(i, t, &index, &screens, name))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AppModel {
            label: raw.label.unwrap_or_else(|| raw.package.clone()),
            package: raw.package,
            version_name: raw.version_name.unwrap_or_else(|| "1.0".to_string()),
            screen_size: (width, height),
            start,
            ime_adbkeyboard: raw.ime_adbkeyboard,
            apk: raw.apk,
            pcapdroid: raw.pcapdroid,
            screens,
            transitions,
        })
    }

    pub fn package(&self) -> &str {
        &self.package
    }

    /// The app's name as the launcher and system dialogs show it.
    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn version_name(&self) -> &str {
        &self.version_name
    }

    pub fn screen_size(&self) -> (u32, u32) {
        self.screen_size
    }

    /// Whether the model installs the ADB Keyboard IME.
    pub fn ime_adbkeyboard(&self) -> bool {
        self.ime_adbkeyboard
    }

    /// What the app's APK declares beyond its screens' activities, and its splits.
    pub fn apk(&self) -> &ApkSpec {
        &self.apk
    }

    /// PCAPdroid, when the model installs it.
    pub fn pcapdroid(&self) -> Option<&Pcapdroid> {
        self.pcapdroid.as_ref()
    }

    pub fn start(&self) -> usize {
        self.start
    }

    pub fn screens(&self) -> &[Screen] {
        &self.screens
    }

    pub fn screen(&self, index: usize) -> &Screen {
        &self.screens[index]
    }

    pub fn screen_index(&self, id: &str) -> Option<usize> {
        self.screens.iter().position(|s| s.id == id)
    }

    pub fn transitions(&self) -> &[Transition] {
        &self.transitions
    }

    /// Whether a recorded move other than back leads from `from` to `to`.
    pub fn opens(&self, from: usize, to: usize) -> bool {
        self.transitions
            .iter()
            .any(|t| t.from == from && t.to == Destination::Screen(to) && t.action != Action::Back)
    }

    /// Whether a recorded back from `from` to `to` only returned to the screen beneath, so
    /// back from `from` over `beneath` returns there: `to` opens `from`, and `beneath` shows
    /// `to`'s activity. A screen opened from several (one sort dialog over two lists) was
    /// recorded going back to one of them; Android returns to the one it was opened over. A
    /// screen beneath of another activity is a state a back stack kept apart (a setting ticked
    /// pushes its page's other state): the recorded back stands.
    pub fn back_returns_beneath(&self, from: usize, to: usize, beneath: usize) -> bool {
        self.screens[beneath].activity == self.screens[to].activity && self.opens(to, from)
    }

    /// Screens reachable from the start screen along transitions, in breadth-first order.
    pub fn reachable(&self) -> Vec<usize> {
        let mut seen = BTreeSet::from([self.start]);
        let mut order = vec![self.start];
        let mut queue = VecDeque::from([self.start]);
        while let Some(at) = queue.pop_front() {
            for t in self.transitions.iter().filter(|t| t.from == at) {
                if let Destination::Screen(to) = t.to {
                    if seen.insert(to) {
                        order.push(to);
                        queue.push_back(to);
                    }
                }
            }
        }
        order
    }

    /// The screen count and the screens reachable from the start screen (`droid-sim --describe`,
    /// see [`crate::sim::infer::describe`]).
    pub fn describe(&self) -> String {
        let reachable = self.reachable();
        let ids = |indexes: &mut dyn Iterator<Item = usize>| {
            indexes
                .map(|i| self.screens[i].id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = format!(
            "{} {}: {} screens, {} transitions, start {:?}\nreachable from the start screen ({}): {}\n",
            self.package,
            self.version_name,
            self.screens.len(),
            self.transitions.len(),
            self.screens[self.start].id,
            reachable.len(),
            ids(&mut reachable.iter().copied()),
        );
        let reached: BTreeSet<usize> = reachable.into_iter().collect();
        let mut unreachable = (0..self.screens.len()).filter(|i| !reached.contains(i));
        let unreachable = ids(&mut unreachable);
        if !unreachable.is_empty() {
            out.push_str(&format!("not reachable: {unreachable}\n"));
        }
        out
    }
}

/// Names accepted after `builtin:`.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTINS.iter().map(|(name, _)| *name).collect()
}

fn load_screen(
    raw: RawScreen,
    app_package: &str,
    size: (u32, u32),
    name: &str,
    base: Option<&Path>,
) -> Result<Screen, ModelError> {
    let fail = |reason: String| ModelError::Screen {
        path: name.to_string(),
        screen: raw.id.clone(),
        reason,
    };
    if raw.id.is_empty() || raw.id.starts_with('@') {
        return Err(fail(
            "a screen id must be non-empty and not start with '@'".to_string(),
        ));
    }
    let package = raw
        .package
        .clone()
        .unwrap_or_else(|| app_package.to_string());
    let roots = match (&raw.hierarchy, &raw.elements) {
        (Some(_), Some(_)) => {
            return Err(fail(
                "has both \"hierarchy\" and \"elements\"; give one".to_string(),
            ))
        }
        (None, None) => {
            return Err(fail(
                "has neither \"hierarchy\" nor \"elements\"".to_string(),
            ))
        }
        (Some(file), None) => {
            let base = base.ok_or_else(|| {
                fail("a built-in model cannot refer to hierarchy files".to_string())
            })?;
            let path: PathBuf = base.join(file);
            let xml = std::fs::read_to_string(&path)
                .map_err(|err| fail(format!("cannot read {}: {err}", path.display())))?;
            parse_hierarchy(&xml).map_err(|reason| fail(format!("{}: {reason}", path.display())))?
        }
        (None, Some(elements)) => vec![elements_to_root(elements, &package, size).map_err(fail)?],
    };
    if roots.is_empty() {
        return Err(fail("the hierarchy has no nodes".to_string()));
    }
    Ok(Screen {
        activity: raw
            .activity
            .clone()
            .unwrap_or_else(|| format!("{package}.MainActivity")),
        id: raw.id,
        package,
        secure: raw.secure,
        roots,
    })
}

/// Builds a full-screen window root with the elements as its children.
fn elements_to_root(
    elements: &[RawElement],
    package: &str,
    (width, height): (u32, u32),
) -> Result<Node, String> {
    let children = elements
        .iter()
        .enumerate()
        .map(|(i, e)| element_node(e, i, package))
        .collect::<Result<Vec<_>, String>>()?;
    let bounds = Bounds {
        x1: 0,
        y1: 0,
        x2: width as i32,
        y2: height as i32,
    };
    Ok(make_node(
        0,
        "android.widget.FrameLayout",
        package,
        bounds,
        &NodeFlags {
            enabled: true,
            ..NodeFlags::default()
        },
        children,
    ))
}

#[derive(Default)]
struct NodeFlags {
    text: String,
    resource_id: String,
    content_desc: String,
    hint: Option<String>,
    checkable: bool,
    checked: bool,
    clickable: bool,
    enabled: bool,
    focusable: bool,
    focused: bool,
    scrollable: bool,
    long_clickable: bool,
    password: bool,
    selected: bool,
}

fn element_node(e: &RawElement, index: usize, package: &str) -> Result<Node, String> {
    let [x1, y1, x2, y2] = e.bounds;
    if x2 < x1 || y2 < y1 {
        return Err(format!(
            "element {index} ({:?}): bounds are inverted",
            e.class
        ));
    }
    let children = e
        .children
        .iter()
        .enumerate()
        .map(|(i, child)| element_node(child, i, package))
        .collect::<Result<Vec<_>, _>>()?;
    let editable = e.class.contains("EditText");
    let flags = NodeFlags {
        text: e.text.clone(),
        resource_id: e.resource_id.clone(),
        content_desc: e.content_desc.clone(),
        hint: e.hint.clone(),
        checkable: e.checkable,
        checked: e.checked,
        clickable: e.clickable || editable,
        enabled: e.enabled,
        focusable: e.clickable || editable,
        focused: e.focused,
        scrollable: e.scrollable,
        long_clickable: e.long_clickable,
        password: e.password,
        selected: e.selected,
    };
    Ok(make_node(
        index,
        &e.class,
        package,
        Bounds::from(e.bounds),
        &flags,
        children,
    ))
}

fn make_node(
    index: usize,
    class: &str,
    package: &str,
    bounds: Bounds,
    f: &NodeFlags,
    children: Vec<Node>,
) -> Node {
    let b = |v: bool| v.to_string();
    let mut attrs = vec![
        ("index".to_string(), index.to_string()),
        ("text".to_string(), f.text.clone()),
        ("resource-id".to_string(), f.resource_id.clone()),
        ("class".to_string(), class.to_string()),
        ("package".to_string(), package.to_string()),
        ("content-desc".to_string(), f.content_desc.clone()),
        ("checkable".to_string(), b(f.checkable)),
        ("checked".to_string(), b(f.checked)),
        ("clickable".to_string(), b(f.clickable)),
        ("enabled".to_string(), b(f.enabled)),
        ("focusable".to_string(), b(f.focusable)),
        ("focused".to_string(), b(f.focused)),
        ("scrollable".to_string(), b(f.scrollable)),
        ("long-clickable".to_string(), b(f.long_clickable)),
        ("password".to_string(), b(f.password)),
        ("selected".to_string(), b(f.selected)),
        ("bounds".to_string(), bounds.to_string()),
    ];
    if let Some(hint) = &f.hint {
        attrs.push(("hint".to_string(), hint.clone()));
    }
    Node {
        attrs,
        bounds,
        children,
    }
}

/// Window roots as `uiautomator dump` writes them: one line, no trailing newline.
pub fn write_hierarchy(roots: &[Node]) -> String {
    let mut xml = String::from(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">",
    );
    for root in roots {
        write_node(&mut xml, root);
    }
    xml.push_str("</hierarchy>");
    xml
}

fn write_node(out: &mut String, node: &Node) {
    out.push_str("<node");
    for (key, value) in &node.attrs {
        out.push(' ');
        out.push_str(key);
        out.push_str("=\"");
        escape_attr(out, value);
        out.push('"');
    }
    if node.children.is_empty() {
        out.push_str(" />");
        return;
    }
    out.push('>');
    for child in &node.children {
        write_node(out, child);
    }
    out.push_str("</node>");
}

/// Escapes as Android's XmlSerializer does in attribute values.
fn escape_attr(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
}

/// Recorded bounds: uiautomator's `[x1,y1][x2,y2]` within the coordinates a layout can have.
fn parse_bounds(text: &str) -> Option<Bounds> {
    text.parse::<Bounds>().ok().filter(|b| {
        [b.x1, b.y1, b.x2, b.y2]
            .iter()
            .all(|v| v.abs() <= MAX_COORDINATE)
    })
}

/// Parses a `uiautomator dump` file into its window roots.
pub fn parse_hierarchy(xml: &str) -> Result<Vec<Node>, String> {
    // Before the XML parser, which recurses once per level of nesting.
    crate::ui::parse::check_shape(xml).map_err(|refused| refused.to_string())?;
    let doc = roxmltree::Document::parse(xml).map_err(|err| format!("bad XML: {err}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "hierarchy" {
        return Err(format!(
            "root element is <{}>, not <hierarchy>",
            root.tag_name().name()
        ));
    }
    root.children()
        .filter(|n| n.has_tag_name("node"))
        .map(|n| xml_node(n, 0))
        .collect()
}

fn xml_node(node: roxmltree::Node, depth: usize) -> Result<Node, String> {
    let line = || node.document().text_pos_at(node.range().start).row;
    if depth > MAX_DEPTH {
        return Err(format!(
            "line {}: nodes nested deeper than {MAX_DEPTH}",
            line()
        ));
    }
    let attrs: Vec<(String, String)> = node
        .attributes()
        .map(|a| (a.name().to_string(), a.value().to_string()))
        .collect();
    let raw_bounds = node.attribute("bounds").unwrap_or("");
    let bounds = parse_bounds(raw_bounds)
        .ok_or_else(|| format!("line {}: bad bounds {raw_bounds:?}", line()))?;
    let children = node
        .children()
        .filter(|n| n.has_tag_name("node"))
        .map(|n| xml_node(n, depth + 1))
        .collect::<Result<_, _>>()?;
    Ok(Node {
        attrs,
        bounds,
        children,
    })
}

fn load_transition(
    index: usize,
    raw: RawTransition,
    screens_by_id: &HashMap<String, usize>,
    screens: &[Screen],
    name: &str,
) -> Result<Transition, ModelError> {
    let fail = |reason: String| ModelError::Transition {
        path: name.to_string(),
        index,
        from: raw.from.clone(),
        reason,
    };
    let from = *screens_by_id
        .get(&raw.from)
        .ok_or_else(|| fail("\"from\" names no screen".to_string()))?;
    let action = Action::parse(&raw.action).ok_or_else(|| {
        fail(format!(
            "unknown action {:?} (click, long_click, input, scroll_up, scroll_down, swipe_left, swipe_right, back)",
            raw.action
        ))
    })?;
    let to = if raw.to == "@crash" {
        Destination::Crash(
            raw.crash
                .clone()
                .unwrap_or_else(|| "java.lang.RuntimeException: crash".to_string()),
        )
    } else if let Some(package) = raw.to.strip_prefix("@external:") {
        if package.is_empty() {
            return Err(fail("\"@external:\" needs a package name".to_string()));
        }
        Destination::External(package.to_string())
    } else {
        Destination::Screen(
            *screens_by_id
                .get(&raw.to)
                .ok_or_else(|| fail(format!("\"to\" names no screen: {:?}", raw.to)))?,
        )
    };
    let target = raw.target.clone().filter(|t| !t.is_empty());
    match (&target, action) {
        (Some(_), Action::Back) => {
            return Err(fail("a back transition takes no target".to_string()))
        }
        (None, Action::Click | Action::LongClick | Action::Input) => {
            return Err(fail(format!("a {} transition needs a target", raw.action)))
        }
        _ => {}
    }
    let nodes = screens[from].nodes();
    if let Some(target) = &target {
        if !nodes.iter().any(|n| target.matches(n)) {
            return Err(fail(format!(
                "target {target:?} matches no element of the screen"
            )));
        }
    }
    let mut requires: Vec<(String, Regex)> = Vec::new();
    for (field, pattern) in &raw.requires {
        if !nodes.iter().any(|n| n.attr("resource-id") == field) {
            return Err(fail(format!("requires field {field:?}, not on the screen")));
        }
        let regex = Regex::new(&format!("^(?:{pattern})$"))
            .map_err(|err| fail(format!("requires {field:?}: bad regex: {err}")))?;
        requires.push((field.clone(), regex));
    }
    requires.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Transition {
        from,
        action,
        target,
        to,
        requires,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_SCREENS: &str = r#"{
        "package": "p.q", "screen_size": [100, 200], "start": "a",
        "screens": [
            {"id": "a", "elements": [{"class": "android.widget.Button", "text": "Go",
                                      "resource_id": "p.q:id/go", "bounds": [0, 0, 50, 50],
                                      "children": [{"text": "inner", "bounds": [5, 5, 20, 20]}]}]},
            {"id": "b", "elements": [{"class": "android.widget.EditText", "resource_id": "p.q:id/f",
                                      "bounds": [0, 0, 100, 40]}]},
            {"id": "c", "elements": []}
        ],
        "transitions": [
            {"from": "a", "action": "click", "target": {"text": "Go"}, "to": "b",
             "requires": {"p.q:id/go": "x|y"}},
            {"from": "b", "action": "scroll_down", "to": "@external:org.example"}
        ]
    }"#;

    #[test]
    fn a_folder_holding_model_json_loads_as_its_file() {
        let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/apps/tiny");
        let from_folder = AppModel::load(folder).unwrap();
        let from_file = AppModel::load(&format!("{folder}/model.json")).unwrap();
        assert_eq!(from_folder.package(), from_file.package());
        assert_eq!(from_folder.screens().len(), from_file.screens().len());
        let empty = tempfile::tempdir().unwrap();
        let error = AppModel::load(&empty.path().display().to_string()).unwrap_err();
        assert!(matches!(error, ModelError::Read { .. }), "{error}");
    }

    #[test]
    fn elements_become_a_full_screen_window_with_dump_attributes() {
        let model = AppModel::parse(TWO_SCREENS, "m", None).unwrap();
        let a = model.screen(0);
        assert_eq!(a.roots.len(), 1);
        assert_eq!(a.roots[0].bounds, Bounds::from([0, 0, 100, 200]));
        let nodes = a.nodes();
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[1].attr("resource-id"), "p.q:id/go");
        assert_eq!(nodes[1].attr("bounds"), "[0,0][50,50]");
        assert_eq!(nodes[2].attr("class"), "android.view.View");
        assert_eq!(nodes[2].attr("package"), "p.q");
        assert!(
            model.screen(1).nodes()[1].flag("clickable"),
            "fields take taps"
        );
        assert_eq!(a.activity, "p.q.MainActivity");
    }

    #[test]
    fn transitions_resolve_and_requires_are_anchored() {
        let model = AppModel::parse(TWO_SCREENS, "m", None).unwrap();
        let t = &model.transitions()[0];
        assert_eq!(t.to, Destination::Screen(1));
        assert!(t.requires[0].1.is_match("x"));
        assert!(!t.requires[0].1.is_match("xy"), "the whole text must match");
        assert_eq!(
            model.transitions()[1].to,
            Destination::External("org.example".into())
        );
        assert!(model.transitions()[1].action.is_gesture());
        assert_eq!(model.reachable(), [0, 1]);
        assert!(model.describe().contains("not reachable: c"));
    }

    #[test]
    fn targets_compare_every_given_field() {
        let model = AppModel::parse(TWO_SCREENS, "m", None).unwrap();
        let go = model.screen(0).nodes()[1];
        let target = |json: &str| serde_json::from_str::<Target>(json).unwrap();
        assert!(target(r#"{"text": "Go"}"#).matches(go));
        assert!(target(r#"{"text": "Go", "bounds": [0, 0, 50, 50]}"#).matches(go));
        assert!(!target(r#"{"text": "Go", "bounds": [0, 0, 50, 51]}"#).matches(go));
        assert!(!target(r#"{"text": "Go", "class": "android.widget.TextView"}"#).matches(go));
        assert!(serde_json::from_str::<Target>(r#"{"txt": "Go"}"#).is_err());
    }

    #[test]
    fn attributes_escape_like_the_device() {
        let mut out = String::new();
        escape_attr(&mut out, "a\"<b>&\nc");
        assert_eq!(out, "a&quot;&lt;b&gt;&amp;&#10;c");
    }

    #[test]
    fn hierarchies_parse_with_their_attribute_order() {
        let roots = parse_hierarchy(
            r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node index="0" text="a&#10;b" bounds="[0,0][10,10]"><node bounds="[1,2][3,4]"/></node></hierarchy>"#,
        )
        .unwrap();
        assert_eq!(roots[0].attrs[0].0, "index");
        assert_eq!(roots[0].attr("text"), "a\nb");
        assert_eq!(roots[0].children[0].bounds, Bounds::from([1, 2, 3, 4]));
        assert!(parse_hierarchy("<hierarchy><node bounds=\"[0,0]\"/></hierarchy>").is_err());
        assert!(parse_hierarchy("<nodes/>").is_err());
        assert!(parse_hierarchy("<hierarchy>").is_err());
        let deep = format!(
            "<hierarchy>{}{}</hierarchy>",
            "<node bounds=\"[0,0][1,1]\">".repeat(300),
            "</node>".repeat(300)
        );
        assert!(parse_hierarchy(&deep).unwrap_err().contains("deeper"));
        // Deep enough to overflow the XML parser's recursion: refused before it runs.
        let abyss = format!("<hierarchy>{}", "<node>".repeat(100_000));
        assert!(parse_hierarchy(&abyss).unwrap_err().contains("deeper"));
        let written = write_hierarchy(&roots);
        assert!(written.contains(r#"text="a&#10;b""#), "{written}");
        assert_eq!(parse_hierarchy(&written).unwrap(), roots);
        assert!(
            parse_hierarchy(r#"<hierarchy><node bounds="[0,0][2147483647,1]"/></hierarchy>"#)
                .is_err()
        );
    }
}
