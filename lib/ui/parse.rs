//! `uiautomator dump` XML → [`UiElement`]s.
//!
//! The input is what a device gives back, so it is read tolerantly: a success line such as
//! `UI hierchary dumped to: /dev/tty` glued before or after the XML (the `exec-out uiautomator dump
//! /dev/tty` form), pretty-printed files, several windows under one `<hierarchy>`, and the
//! newer `drawing-order`, `hint`, `display-id` and `visible-to-user` attributes are all fine. What
//! is not a hierarchy gives a typed [`ParseError`], never a panic.

use std::collections::HashMap;

use super::{signature, Bounds, UiElement, MAX_DEPTH};

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
    /// Nested deeper than any real screen; refused before the XML parser (which recurses once
    /// per level) sees it, so no input can exhaust the stack.
    #[error("elements nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// More attributes on one element than any real node has; refused before parsing, as the XML
    /// parser's duplicate check costs the square of their number.
    #[error("an element with more than {MAX_ATTRIBUTES} attributes")]
    TooManyAttributes,
    /// A document type declaration: uiautomator never writes one, and its entities could expand
    /// to anything.
    #[error("a <!DOCTYPE> declaration, which no uiautomator dump has")]
    Doctype,
    /// Element paths (each repeats its ancestors' classes) adding up to far more than the dump
    /// itself: deep chains of long class names over many leaves, which no real screen has.
    #[error("element paths would take more than {0} bytes ({XPATH_BUDGET_RATIO} times the dump)")]
    PathsTooLong(usize),
}

/// Most attributes accepted on one element. Real nodes have 17 to 22.
pub const MAX_ATTRIBUTES: usize = 64;

/// The xpaths of all elements together may take this many times the dump's size (real dumps:
/// at most 1.5), plus [`XPATH_BUDGET_FLOOR`] bytes for tiny dumps.
pub const XPATH_BUDGET_RATIO: usize = 16;
const XPATH_BUDGET_FLOOR: usize = 1 << 20;

/// Parses a dump into elements in document order (`element_id` = position), with every field
/// filled, `signature` included.
pub fn parse(xml: &str) -> Result<Vec<UiElement>, ParseError> {
    let doc = document(xml)?;
    let xpath_limit = xml.len() * XPATH_BUDGET_RATIO + XPATH_BUDGET_FLOOR;
    let mut collector = Collector {
        elements: Vec::new(),
        xpath_limit,
        xpath_budget: xpath_limit,
    };
    collector.children(doc.root_element(), None, 0, "/hierarchy")?;
    let mut elements = collector.elements;
    signature::sign_all(&mut elements);
    Ok(elements)
}

/// The parsed `<hierarchy>` document of a dump (shared with the layout hash).
pub(crate) fn document(input: &str) -> Result<roxmltree::Document<'_>, ParseError> {
    let xml = hierarchy_text(input)?;
    check_shape(xml)?;
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
    Ok(doc)
}

/// Refuses what would make the XML parser recurse too deep or work quadratically, in one linear
/// pass that follows the XML grammar far enough to count element nesting and attributes: tags
/// (quotes respected, so `>` or `/>` in a value is text), comments, CDATA, processing
/// instructions. Input the parser would refuse anyway may pass here; the parser says why.
pub fn check_shape(xml: &str) -> Result<(), ParseError> {
    let bytes = xml.as_bytes();
    let (mut at, mut depth) = (0, 0usize);
    let skip_past = |from: usize, end: &[u8]| {
        bytes[from..]
            .windows(end.len())
            .position(|w| w == end)
            .map_or(bytes.len(), |p| from + p + end.len())
    };
    while let Some(offset) = bytes[at..].iter().position(|&b| b == b'<') {
        let tag = &bytes[at + offset..];
        at += offset;
        if tag.starts_with(b"<!--") {
            at = skip_past(at + 4, b"-->");
        } else if tag.starts_with(b"<![CDATA[") {
            at = skip_past(at + 9, b"]]>");
        } else if tag.starts_with(b"<?") {
            at = skip_past(at + 2, b"?>");
        } else if tag.starts_with(b"<!") {
            return Err(ParseError::Doctype);
        } else if tag.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            at = skip_past(at + 2, b">");
        } else {
            let (end, attributes, empty) = scan_start_tag(bytes, at + 1);
            if attributes > MAX_ATTRIBUTES {
                return Err(ParseError::TooManyAttributes);
            }
            if !empty {
                depth += 1;
                if depth > MAX_DEPTH + 1 {
                    return Err(ParseError::TooDeep);
                }
            }
            at = end;
        }
    }
    Ok(())
}

/// Scans a start tag from just after its `<`: where it ends, how many attributes it has, and
/// whether it closes itself (`/>`).
fn scan_start_tag(bytes: &[u8], from: usize) -> (usize, usize, bool) {
    let (mut at, mut attributes, mut quote) = (from, 0, None);
    while let Some(&b) = bytes.get(at) {
        at += 1;
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'=') => attributes += 1,
            (None, b'>') => return (at, attributes, bytes[at - 2] == b'/'),
            // The parser refuses `<` inside a tag; stop here and let it say so.
            (None, b'<') => return (at - 1, attributes, true),
            _ => {}
        }
    }
    (at, attributes, true)
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
    // The last closing tag after the start: one glued before it is not the end.
    let end = text[start..]
        .rfind("</hierarchy>")
        .map_or(text.len(), |end| start + end + "</hierarchy>".len());
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
        if let Err(refused) = check_shape(text) {
            return refused;
        }
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

/// Elements in document order, and how many more xpath bytes they may take.
struct Collector {
    elements: Vec<UiElement>,
    xpath_limit: usize,
    xpath_budget: usize,
}

impl Collector {
    fn collect(
        &mut self,
        node: roxmltree::Node,
        parent: Option<u32>,
        depth: u32,
        parent_xpath: &str,
        position: usize,
    ) -> Result<(), ParseError> {
        let id = self.elements.len() as u32;
        let element = element_of(node, id, parent, depth, parent_xpath, position)?;
        self.xpath_budget = self
            .xpath_budget
            .checked_sub(element.xpath.len())
            .ok_or(ParseError::PathsTooLong(self.xpath_limit))?;
        let xpath = element.xpath.clone();
        self.elements.push(element);
        self.children(node, Some(id), depth + 1, &xpath)
    }

    /// Collects the `<node>` children of `node`, each with its XPath position among same-class
    /// siblings (counted in a map, so a parent of many classes stays linear).
    fn children(
        &mut self,
        node: roxmltree::Node,
        id: Option<u32>,
        depth: u32,
        xpath: &str,
    ) -> Result<(), ParseError> {
        let mut seen_classes: HashMap<&str, usize> = HashMap::new();
        for child in node.children().filter(is_node) {
            let position = seen_classes.entry(class_of(&child)).or_insert(0);
            *position += 1;
            self.collect(child, id, depth, xpath, *position)?;
        }
        Ok(())
    }
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

/// A `bounds` value that is not `[x1,y1][x2,y2]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bounds must be [x1,y1][x2,y2], not {0:?}")]
pub struct BoundsError(pub String);

/// `[x1,y1][x2,y2]`, as uiautomator writes bounds.
impl std::str::FromStr for Bounds {
    type Err = BoundsError;

    fn from_str(value: &str) -> Result<Bounds, BoundsError> {
        parse_bounds(value).ok_or_else(|| BoundsError(value.to_string()))
    }
}

/// `[x1,y1][x2,y2]`, as uiautomator writes bounds.
impl std::fmt::Display for Bounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{},{}][{},{}]", self.x1, self.y1, self.x2, self.y2)
    }
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
    fn a_closing_tag_before_the_start_is_no_end() {
        // Found by `make fuzz` (seed 2): slicing from the start to an earlier end panicked.
        let glued = format!("<?</hierarchy>xml version='1.0'?>{}", dump(NODE));
        assert_eq!(parse(&glued).unwrap().len(), 1);
        let after = format!("x</hierarchy>{}", dump(NODE));
        assert_eq!(parse(&after).unwrap().len(), 1);
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
        // Far deeper than the XML parser's recursion survives: refused before it runs.
        let abyss = format!(
            "<hierarchy>{}{}</hierarchy>",
            "<node>".repeat(200_000),
            "</node>".repeat(200_000)
        );
        assert_eq!(parse(&abyss), Err(ParseError::TooDeep));
        let unclosed = format!("<hierarchy>{}", "<node a='>' b=\"/>\">".repeat(200_000));
        assert_eq!(parse(&unclosed), Err(ParseError::TooDeep));
    }

    #[test]
    fn paths_many_times_the_dump_are_refused() {
        let class = "c".repeat(200);
        let chain = format!(r#"<node class="{class}" bounds="[0,0][1,1]">"#).repeat(900);
        let leaves = "<node/>".repeat(20_000);
        let dump = format!(
            "<hierarchy>{chain}{leaves}{}</hierarchy>",
            "</node>".repeat(900)
        );
        assert!(matches!(parse(&dump), Err(ParseError::PathsTooLong(_))));
    }

    #[test]
    fn shape_check_follows_the_grammar() {
        let many = format!("<hierarchy><node {}/></hierarchy>", "a=\"1\" ".repeat(100));
        assert_eq!(parse(&many), Err(ParseError::TooManyAttributes));
        let doctype = "<?xml version=\"1.0\"?><!DOCTYPE h [<!ENTITY e \"x\">]><hierarchy/>";
        assert_eq!(parse(doctype), Err(ParseError::Doctype));
        // Markup inside comments, CDATA and values is text, not nesting.
        let hidden = "<node><node><node>".repeat(MAX_DEPTH);
        let quiet = format!(
            "<hierarchy><!--{hidden}--><node text=\"{}\" bounds=\"[0,0][1,1]\"/></hierarchy>",
            "&gt;".repeat(3)
        );
        assert_eq!(parse(&quiet).unwrap().len(), 1);
        assert_eq!(check_shape(&format!("<a><![CDATA[{hidden}]]></a>")), Ok(()));
        assert_eq!(check_shape(&format!("<?pi {hidden}?><a/>")), Ok(()));
        assert_eq!(
            check_shape(&format!("<a b='{}'/>", "=".repeat(500))),
            Ok(())
        );
    }

    #[test]
    fn bounds() {
        assert_eq!(
            parse_bounds("[0,583][1080,1718]"),
            Some(Bounds::from([0, 583, 1080, 1718]))
        );
        assert_eq!(parse_bounds("[0,0][a,1]"), None);
        let bounds: Bounds = "[-5,20][1080,2400]".parse().unwrap();
        assert_eq!(bounds, Bounds::from([-5, 20, 1080, 2400]));
        assert_eq!(bounds.to_string(), "[-5,20][1080,2400]");
        assert_eq!(
            "[1,2]".parse::<Bounds>(),
            Err(BoundsError("[1,2]".to_string()))
        );
        assert_eq!(parse_bounds(""), None);
    }
}
