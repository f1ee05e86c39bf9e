//! `uiautomator dump` XML → [`UiElement`]s.
//!
//! The input is what a device gives back, so it is read tolerantly: a success line such as
//! `UI hierchary dumped to: /dev/tty` glued before or after the XML (the `exec-out uiautomator dump
//! /dev/tty` form), pretty-printed files, several windows under one `<hierarchy>`, and the
//! newer `drawing-order`, `hint`, `display-id` and `visible-to-user` attributes are all fine. What
//! is not a hierarchy gives a typed [`ParseError`], never a panic.

use super::{signature, Bounds, UiElement};

/// Why a dump is not a usable hierarchy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    #[error("empty dump")]
    Empty,
    /// uiautomator timed out waiting for the app to be idle (an animation that never stops).
    #[error("uiautomator could not get an idle state (the screen kept animating)")]
    IdleState,
    /// No window had accessibility focus (a secure screen, a screen being switched, a lock).
    #[error("uiautomator returned a null root node (no active window)")]
    NullRoot,
    /// Only the tool's success line (`UI hierchary dumped to: PATH`): the XML went to a file.
    #[error(
        "no XML, only uiautomator's status line {0:?}: the dump is in that file on the device"
    )]
    StatusOnly(String),
    /// Another `ERROR:` line or an exception from the uiautomator tool.
    #[error("uiautomator failed: {0}")]
    Tool(String),
    #[error("truncated XML: {0}")]
    Truncated(String),
    #[error("not XML: {0}")]
    NotXml(String),
    #[error("malformed XML: {0}")]
    Malformed(String),
    /// Well-formed XML whose root is not `<hierarchy>`.
    #[error("not a uiautomator hierarchy: the root element is <{0}>")]
    NotHierarchy(String),
    #[error("node {element}: bad bounds {value:?}")]
    BadBounds { element: u32, value: String },
    /// Nested deeper than any real screen; refused so that walking it cannot exhaust the stack.
    #[error("nodes nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// Deepest nesting accepted. Real dumps stay under 100 levels.
pub const MAX_DEPTH: usize = 1000;

/// Parses a dump into elements in document order (`element_id` = position), with every field
/// filled, `signature` included.
pub fn parse(xml: &str) -> Result<Vec<UiElement>, ParseError> {
    let doc = document(xml)?;
    let mut elements = Vec::new();
    for window in doc.root_element().children().filter(is_node) {
        collect(
            window,
            None,
            0,
            "/hierarchy",
            1 + preceding_same_class(window),
            &mut elements,
        )?;
    }
    signature::sign_all(&mut elements);
    Ok(elements)
}

/// The parsed `<hierarchy>` document of a dump (shared with the layout hash).
pub(crate) fn document(input: &str) -> Result<roxmltree::Document<'_>, ParseError> {
    let xml = hierarchy_text(input)?;
    let doc = roxmltree::Document::parse(xml).map_err(|e| {
        let reason = e.to_string();
        let ends_cleanly = xml.contains("</hierarchy>") || xml.trim_end().ends_with("/>");
        match e {
            roxmltree::Error::UnexpectedEndOfStream | roxmltree::Error::UnclosedRootNode => {
                ParseError::Truncated(reason)
            }
            _ if !ends_cleanly => ParseError::Truncated(reason),
            _ => ParseError::Malformed(reason),
        }
    })?;
    let root = doc.root_element().tag_name().name();
    if root != "hierarchy" {
        return Err(ParseError::NotHierarchy(root.to_string()));
    }
    // Depth per node, parents first (document order), indexed by roxmltree's node ids.
    let mut depths: Vec<usize> = Vec::new();
    for node in doc.descendants() {
        let id = node.id().get_usize();
        let depth = node
            .parent()
            .and_then(|p| depths.get(p.id().get_usize()))
            .map_or(0, |d| d + 1);
        if depth > MAX_DEPTH {
            return Err(ParseError::TooDeep);
        }
        if depths.len() <= id {
            depths.resize(id + 1, 0);
        }
        depths[id] = depth;
    }
    Ok(doc)
}

/// The XML part of a dump: from `<?xml` or `<hierarchy` to `</hierarchy>`, without the tool's
/// status lines around it. Recognises the tool's error lines when there is no XML.
fn hierarchy_text(input: &str) -> Result<&str, ParseError> {
    let text = input.trim_start_matches('\u{feff}').trim();
    if text.is_empty() {
        return Err(ParseError::Empty);
    }
    let start = [text.find("<?xml"), text.find("<hierarchy")]
        .into_iter()
        .flatten()
        .min();
    let Some(start) = start else {
        return Err(tool_error(text));
    };
    let end = text
        .rfind("</hierarchy>")
        .map_or(text.len(), |end| end + "</hierarchy>".len());
    Ok(&text[start..end])
}

/// What a dump without any XML in it says.
fn tool_error(text: &str) -> ParseError {
    if text.contains("could not get idle state") {
        return ParseError::IdleState;
    }
    if text.contains("null root node") {
        return ParseError::NullRoot;
    }
    if let Some(status) = text.lines().find(|l| l.contains("dumped to:")) {
        return ParseError::StatusOnly(one_line(status));
    }
    let telling_line = text.lines().map(str::trim).find(|line| {
        line.starts_with("ERROR") || line.contains("Exception") || line.contains("Error:")
    });
    if let Some(line) = telling_line {
        return ParseError::Tool(one_line(line));
    }
    if text.starts_with('<') {
        // Markup that never reaches a <hierarchy>: say what it is.
        return match roxmltree::Document::parse(text) {
            Ok(doc) => ParseError::NotHierarchy(doc.root_element().tag_name().name().to_string()),
            Err(e) => ParseError::Malformed(e.to_string()),
        };
    }
    ParseError::NotXml(format!("starts with {:?}", one_line(text)))
}

/// The first line of `text`, cut to a readable length.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

fn is_node(n: &roxmltree::Node) -> bool {
    n.is_element() && n.tag_name().name() == "node"
}

fn class_of<'a>(n: &roxmltree::Node<'a, '_>) -> &'a str {
    n.attribute("class").unwrap_or_default()
}

/// How many earlier siblings have the same class (XPath's position among same-named siblings).
fn preceding_same_class(n: roxmltree::Node) -> usize {
    let class = class_of(&n);
    n.prev_siblings()
        .skip(1)
        .filter(|s| is_node(s) && class_of(s) == class)
        .count()
}

fn collect(
    node: roxmltree::Node,
    parent: Option<u32>,
    depth: u32,
    parent_xpath: &str,
    position: usize,
    out: &mut Vec<UiElement>,
) -> Result<(), ParseError> {
    let id = out.len() as u32;
    let element = element_of(node, id, parent, depth, parent_xpath, position)?;
    let xpath = element.xpath.clone();
    out.push(element);
    let mut seen_classes: Vec<(&str, usize)> = Vec::new();
    for child in node.children().filter(is_node) {
        let class = class_of(&child);
        let position = match seen_classes.iter_mut().find(|(c, _)| *c == class) {
            Some((_, count)) => {
                *count += 1;
                *count
            }
            None => {
                seen_classes.push((class, 1));
                1
            }
        };
        collect(child, Some(id), depth + 1, &xpath, position, out)?;
    }
    Ok(())
}

fn element_of(
    node: roxmltree::Node,
    id: u32,
    parent: Option<u32>,
    depth: u32,
    parent_xpath: &str,
    position: usize,
) -> Result<UiElement, ParseError> {
    let mut e = UiElement {
        element_id: id,
        parent,
        depth,
        ..UiElement::default()
    };
    let (mut bounds, mut visible_to_user) = (None, None);
    // One pass over the attributes: a node has about twenty, looked up by name they cost more
    // than the rest of the parse.
    for attribute in node.attributes() {
        let value = attribute.value();
        let flag = value == "true";
        match attribute.name() {
            "text" => e.text = value.to_string(),
            "content-desc" => e.content_desc = clean_desc(value),
            "class" => e.class_name = value.to_string(),
            "package" => e.package = value.to_string(),
            "resource-id" => e.resource_id = value.to_string(),
            "hint" => e.hint = value.to_string(),
            "clickable" => e.clickable = flag,
            "long-clickable" => e.long_clickable = flag,
            "scrollable" => e.scrollable = flag,
            "checkable" => e.checkable = flag,
            "checked" => e.checked = flag,
            "enabled" => e.enabled = flag,
            "focusable" => e.focusable = flag,
            "focused" => e.focused = flag,
            "selected" => e.selected = flag,
            "password" => e.password = flag,
            "visible-to-user" => visible_to_user = Some(flag),
            "bounds" => bounds = Some(value),
            _ => {}
        }
    }
    if let Some(value) = bounds {
        e.bounds = parse_bounds(value).ok_or_else(|| ParseError::BadBounds {
            element: id,
            value: value.to_string(),
        })?;
    }
    (e.center_x, e.center_y) = e.bounds.center();
    e.visible = visible_to_user.unwrap_or(e.bounds.area() > 0);
    e.editable = is_text_input(&e.class_name);
    let step = if e.class_name.is_empty() {
        "node"
    } else {
        &e.class_name
    };
    e.xpath = format!("{parent_xpath}/{step}[{position}]");
    Ok(e)
}

/// Some OEM dumps (vivo) write a missing description as the literal string `null`.
fn clean_desc(desc: &str) -> String {
    match desc {
        "null" => String::new(),
        desc => desc.to_string(),
    }
}

/// EditText and its subclasses (AppCompat, Material `TextInputEditText`, Compose text fields
/// report `android.widget.EditText`), and the platform's other text inputs.
pub(crate) fn is_text_input(class_name: &str) -> bool {
    let simple = class_name.rsplit(['.', '$']).next().unwrap_or_default();
    simple.ends_with("EditText")
        || matches!(
            simple,
            "AutoCompleteTextView" | "MultiAutoCompleteTextView" | "SearchAutoComplete"
        )
}

/// `[x1,y1][x2,y2]` → bounds; `None` when it is anything else.
pub fn parse_bounds(value: &str) -> Option<Bounds> {
    let inner = value.trim().strip_prefix('[')?.strip_suffix(']')?;
    let (first, second) = inner.split_once("][")?;
    let pair = |s: &str| -> Option<(i32, i32)> {
        let (a, b) = s.split_once(',')?;
        Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
    };
    let (x1, y1) = pair(first)?;
    let (x2, y2) = pair(second)?;
    Some(Bounds { x1, y1, x2, y2 })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = r#"<node index="0" text="A &amp; B&#10;c" resource-id="p:id/x" class="android.widget.EditText" package="p" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="true" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[10,20][110,220]" />"#;

    fn dump(body: &str) -> String {
        format!("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">{body}</hierarchy>")
    }

    #[test]
    fn fills_fields_and_decodes_entities() {
        let elements = parse(&dump(NODE)).unwrap();
        let e = &elements[0];
        assert_eq!(e.text, "A & B\nc");
        assert!(e.editable && e.focused && e.clickable && e.enabled && e.visible);
        assert_eq!((e.center_x, e.center_y), (60, 120));
        assert_eq!(e.xpath, "/hierarchy/android.widget.EditText[1]");
        assert_eq!(e.signature.len(), 16);
    }

    #[test]
    fn xpath_counts_same_class_siblings() {
        let body = format!(
            r#"<node class="a.L" bounds="[0,0][1,1]">{NODE}<node class="a.T" bounds="[0,0][1,1]"/>{NODE}</node>"#
        );
        let elements = parse(&dump(&body)).unwrap();
        assert_eq!(elements.len(), 4);
        assert_eq!(
            elements[3].xpath,
            "/hierarchy/a.L[1]/android.widget.EditText[2]"
        );
        assert_eq!(elements[2].xpath, "/hierarchy/a.L[1]/a.T[1]");
        assert_eq!(elements[3].parent, Some(0));
        assert_eq!(elements[3].depth, 1);
    }

    #[test]
    fn status_lines_around_the_xml_are_tolerated() {
        let glued = format!("{}UI hierchary dumped to: /dev/tty\n", dump(NODE));
        assert_eq!(parse(&glued).unwrap().len(), 1);
        let before = format!("UI hierarchy dumped to: /dev/tty\n{}", dump(NODE));
        assert_eq!(parse(&before).unwrap().len(), 1);
    }

    #[test]
    fn typed_errors() {
        assert_eq!(parse("  \n"), Err(ParseError::Empty));
        assert_eq!(
            parse("ERROR: could not get idle state.\n"),
            Err(ParseError::IdleState)
        );
        assert_eq!(
            parse("ERROR: null root node returned by UiTestAutomationBridge.\n"),
            Err(ParseError::NullRoot)
        );
        let full = dump(NODE);
        assert!(matches!(
            parse(&full[..full.len() / 2]),
            Err(ParseError::Truncated(_))
        ));
        assert!(matches!(parse("hello world"), Err(ParseError::NotXml(_))));
        assert!(matches!(
            parse("UI hierchary dumped to: /sdcard/window_dump.xml\n"),
            Err(ParseError::StatusOnly(_))
        ));
        assert_eq!(
            parse("<html><body/></html>"),
            Err(ParseError::NotHierarchy("html".into()))
        );
        assert!(matches!(
            parse(&dump(r#"<node bounds="[1,2]"/>"#)),
            Err(ParseError::BadBounds { element: 0, .. })
        ));
    }

    #[test]
    fn absurd_nesting_is_refused_not_a_stack_overflow() {
        let deep = format!(
            "<hierarchy>{}{}</hierarchy>",
            "<node>".repeat(MAX_DEPTH + 5),
            "</node>".repeat(MAX_DEPTH + 5)
        );
        assert_eq!(parse(&deep), Err(ParseError::TooDeep));
        let fine = format!(
            "<hierarchy>{}{}</hierarchy>",
            "<node>".repeat(200),
            "</node>".repeat(200)
        );
        assert_eq!(parse(&fine).unwrap().len(), 200);
    }

    #[test]
    fn bounds() {
        assert_eq!(
            parse_bounds("[0,583][1080,1718]"),
            Some(Bounds::from([0, 583, 1080, 1718]))
        );
        assert_eq!(parse_bounds("[0,0][a,1]"), None);
        assert_eq!(parse_bounds(""), None);
    }
}
