//! The UI hierarchy: `uiautomator dump` XML parsed into [`UiElement`]s.

pub mod parse;
pub mod signature;
pub mod tree;

pub use parse::{parse, parse_bounds, BoundsError, ParseError};
pub use signature::{possible_actions, signature, PossibleAction};
pub use tree::{is_actionable, prune, prune_report, Pruned};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Deepest nesting of a hierarchy: [`parse()`] refuses a dump nested deeper, and every walk down
/// the elements (signatures, the pruned tree) stops there, so no input recurses past it. Real
/// dumps stay under 100 levels.
pub const MAX_DEPTH: usize = 1000;

/// The element's own words: its text (never a password field's), else its content description.
pub fn own_label(e: &UiElement) -> &str {
    let text = if e.password { "" } else { e.text.trim() };
    [text, e.content_desc.trim()]
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or("")
}

/// What the element is called: its [`own_label`], else its hint (an empty field's placeholder).
pub fn label(e: &UiElement) -> &str {
    match own_label(e) {
        "" => e.hint.trim(),
        own => own,
    }
}

/// A rectangle in device pixels: `[x1, y1, x2, y2]`, right and bottom exclusive as uiautomator
/// reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(from = "[i32; 4]", into = "[i32; 4]")]
pub struct Bounds {
    pub x1: i32,
    pub y1: i32,
    pub x2: i32,
    pub y2: i32,
}

impl From<[i32; 4]> for Bounds {
    fn from([x1, y1, x2, y2]: [i32; 4]) -> Self {
        Bounds { x1, y1, x2, y2 }
    }
}

impl From<Bounds> for [i32; 4] {
    fn from(b: Bounds) -> Self {
        [b.x1, b.y1, b.x2, b.y2]
    }
}

impl Bounds {
    pub fn width(&self) -> i32 {
        (self.x2 - self.x1).max(0)
    }
    pub fn height(&self) -> i32 {
        (self.y2 - self.y1).max(0)
    }
    pub fn area(&self) -> i64 {
        i64::from(self.width()) * i64::from(self.height())
    }
    pub fn center(&self) -> (i32, i32) {
        ((self.x1 + self.x2) / 2, (self.y1 + self.y2) / 2)
    }
    pub fn contains(&self, x: i32, y: i32) -> bool {
        x >= self.x1 && x < self.x2 && y >= self.y1 && y < self.y2
    }
}

/// One node of the hierarchy, flattened in document order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UiElement {
    /// Position in document order, from 0; stable for a given dump.
    pub element_id: u32,
    /// `element_id` of the parent node; absent for window roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
    /// Depth below the `<hierarchy>` element (window roots are 0).
    #[serde(default)]
    pub depth: u32,
    pub bounds: Bounds,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub content_desc: String,
    #[serde(default)]
    pub class_name: String,
    #[serde(default)]
    pub package: String,
    #[serde(default)]
    pub resource_id: String,
    /// The `hint` attribute of newer dumps (an empty field's placeholder).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hint: String,
    #[serde(default)]
    pub clickable: bool,
    #[serde(default)]
    pub long_clickable: bool,
    #[serde(default)]
    pub scrollable: bool,
    /// A text field: EditText and subclasses, or a focusable text input.
    #[serde(default)]
    pub editable: bool,
    #[serde(default)]
    pub checkable: bool,
    #[serde(default)]
    pub checked: bool,
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub focusable: bool,
    #[serde(default)]
    pub focused: bool,
    #[serde(default)]
    pub selected: bool,
    #[serde(default)]
    pub password: bool,
    /// On screen: `visible-to-user` when the dump has it, else a non-empty area.
    #[serde(default)]
    pub visible: bool,
    /// Absolute XPath-like path, e.g. `/hierarchy/android.widget.FrameLayout[1]/...`.
    #[serde(default)]
    pub xpath: String,
    pub center_x: i32,
    pub center_y: i32,
    /// Widget signature: the same widget across visits has the same signature.
    #[serde(default)]
    pub signature: String,
    /// The `[ref=N]` of this element in the pruned tree, when it has one.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub ref_id: Option<u32>,
}
