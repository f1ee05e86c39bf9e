//! Which view a touch reaches, and which transition of the model answers it, as Android
//! dispatches touches over a uiautomator-described hierarchy.
//!
//! `ViewGroup.dispatchTouchEvent` offers an initial down to its children in reverse drawing order
//! (the topmost first), skipping those whose bounds do not contain the point; a child that
//! returns true from its own dispatch becomes the touch target and the others are never asked.
//! Only when no child takes it does the group offer the touch to its own `onTouchEvent`. A plain
//! `View.onTouchEvent` takes a touch when the view is clickable or long-clickable, and a disabled
//! one still takes it without acting ("a disabled view that is clickable still consumes the touch
//! events, it just doesn't respond to them"); text fields and scrolling containers (`AbsListView`,
//! `RecyclerView`, `ScrollView`, `ViewPager`) take touches by themselves. Drawing order is the
//! order of the dump (a group's children as the group draws them); of several windows the last
//! one is on top, and a window takes every touch inside it.
//!
//! A recorded model names a transition's target, not the view that handled the touch, so the
//! transitions are ranked by where their target sits relative to that view: see [`Touch`].

use std::cmp::Reverse;

use super::model::{Action, Node, Transition};
use crate::ui::Bounds;

/// A node's index in document order (as [`super::model::Screen::nodes`] numbers them) and its
/// parent's.
struct Tree<'a> {
    nodes: Vec<&'a Node>,
    parent: Vec<Option<usize>>,
    children: Vec<Vec<usize>>,
    roots: Vec<usize>,
}

impl<'a> Tree<'a> {
    fn new(roots: &'a [Node]) -> Tree<'a> {
        fn visit<'a>(tree: &mut Tree<'a>, node: &'a Node, parent: Option<usize>) -> usize {
            let me = tree.nodes.len();
            tree.nodes.push(node);
            tree.parent.push(parent);
            tree.children.push(Vec::new());
            for child in &node.children {
                let index = visit(tree, child, Some(me));
                tree.children[me].push(index);
            }
            me
        }
        let mut tree = Tree {
            nodes: Vec::new(),
            parent: Vec::new(),
            children: Vec::new(),
            roots: Vec::new(),
        };
        for root in roots {
            let index = visit(&mut tree, root, None);
            tree.roots.push(index);
        }
        tree
    }

    fn contains(&self, index: usize, x: i32, y: i32) -> bool {
        self.nodes[index].bounds.contains(x, y)
    }

    /// Ancestors of `index`, innermost first.
    fn ancestors(&self, index: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = self.parent[index];
        while let Some(i) = at {
            out.push(i);
            at = self.parent[i];
        }
        out
    }

    /// A group's children, the one drawn last (on top) first. Newer dumps give each node its
    /// `drawing-order` among its siblings, which counts elevation (`buildOrderedChildList` sorts
    /// by Z). Older ones list children as the accessibility layer orders them, by position
    /// (`ChildListForAccessibility` sorts by bounds), which cannot say which of two overlapping
    /// siblings is on top: there a sibling lying inside another's bounds is taken to be drawn
    /// above it (an app bar over the list that scrolls under it, a bottom sheet over its scrim, a
    /// floating button over a list), and the dump's order decides the rest, the later on top.
    fn drawn_last_first(&self, index: usize) -> Vec<usize> {
        let mut children = self.children[index].clone();
        let order = |i: usize| self.nodes[i].attr("drawing-order").parse::<u32>().ok();
        // Stable sorts: ties keep the dump's order.
        if children.iter().all(|&c| order(c).is_some()) {
            children.sort_by_key(|&c| order(c));
        } else {
            let siblings = &self.children[index];
            let containers = |c: usize| {
                let inner = self.nodes[c].bounds;
                siblings
                    .iter()
                    .filter(|&&other| encloses(self.nodes[other].bounds, inner))
                    .count()
            };
            children.sort_by_key(|&c| containers(c));
        }
        children.reverse();
        children
    }

    fn is_inside(&self, index: usize, ancestor: usize) -> bool {
        self.ancestors(index).contains(&ancestor)
    }

    /// The nodes containing the point in the order their `onTouchEvent` would be asked: children
    /// before their group, the topmost child first. Stops after the first node that takes
    /// touches (it ends the dispatch).
    fn offer(&self, index: usize, x: i32, y: i32, out: &mut Vec<usize>) -> Option<usize> {
        for child in self.drawn_last_first(index) {
            if self.contains(child, x, y) {
                if let Some(handler) = self.offer(child, x, y, out) {
                    return Some(handler);
                }
            }
        }
        out.push(index);
        takes_touches(self.nodes[index]).then_some(index)
    }
}

/// Whether `inner` lies within `outer` and is not the same rectangle.
fn encloses(outer: Bounds, inner: Bounds) -> bool {
    outer != inner
        && outer.x1 <= inner.x1
        && outer.y1 <= inner.y1
        && outer.x2 >= inner.x2
        && outer.y2 >= inner.y2
}

/// Whether a view's own `onTouchEvent` takes a touch, as far as a dump can tell.
pub fn takes_touches(node: &Node) -> bool {
    node.flag("clickable")
        || node.flag("long-clickable")
        || node.flag("scrollable")
        || node.is_editable()
}

/// Whether the view reacts to a click anywhere on it: its click listener covers the passive
/// views inside it (a scrolling container instead clicks the item under the finger).
fn clicks_as_a_whole(node: &Node) -> bool {
    node.flag("clickable") || node.flag("long-clickable") || node.is_editable()
}

fn enabled(node: &Node) -> bool {
    node.attr("enabled") != "false"
}

/// Where one touch went. Indexes are in document order over the screen's nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Touch {
    /// The view whose `onTouchEvent` took the touch, if any did.
    pub handler: Option<usize>,
    /// False when that view is disabled: it takes the touch and does nothing.
    pub handler_enabled: bool,
    /// Views inside the handler under the point that passed the touch on, deepest first.
    pub inside: Vec<usize>,
    /// The handler's other passive descendants (not under another view that takes touches),
    /// in document order, when the handler reacts as a whole (a clickable row, not a list).
    pub content: Vec<usize>,
    /// The handler's ancestors, innermost first.
    pub ancestors: Vec<usize>,
    /// Views outside the handler that were offered the touch first and passed it on (a passive
    /// icon drawn over a button), in the order they were asked. With no handler: every node
    /// under the point, deepest and topmost first.
    pub passed: Vec<usize>,
}

impl Touch {
    /// Dispatches a touch at `(x, y)` over window roots (the last one on top).
    pub fn at(roots: &[Node], x: i32, y: i32) -> Touch {
        let tree = Tree::new(roots);
        let Some(&window) = tree.roots.iter().rev().find(|&&r| tree.contains(r, x, y)) else {
            return Touch::default();
        };
        let mut offered = Vec::new();
        let Some(handler) = tree.offer(window, x, y, &mut offered) else {
            return Touch {
                passed: offered,
                ..Touch::default()
            };
        };
        offered.pop(); // the handler itself
        let (inside, passed): (Vec<usize>, Vec<usize>) = offered
            .into_iter()
            .partition(|&i| tree.is_inside(i, handler));
        let content = if clicks_as_a_whole(tree.nodes[handler]) {
            passive_content(&tree, handler)
                .into_iter()
                .filter(|i| !inside.contains(i))
                .collect()
        } else {
            Vec::new()
        };
        Touch {
            handler: Some(handler),
            handler_enabled: enabled(tree.nodes[handler]),
            inside,
            content,
            ancestors: tree.ancestors(handler),
            passed,
        }
    }

    /// The view that handled the touch with its passive content: the label under the finger
    /// first, then the handler, then the rest of its content.
    pub fn own(&self) -> Vec<usize> {
        let mut out = self.inside.clone();
        out.extend(self.handler);
        out.extend(&self.content);
        out
    }

    /// Nodes whose transitions a tap or a long press fires, best first: the handler's own views,
    /// then its ancestors (a transition recorded on a container), then views that passed the
    /// touch on. Nothing when a disabled view took it.
    pub fn for_press(&self) -> Vec<usize> {
        if self.handler.is_some() && !self.handler_enabled {
            return Vec::new();
        }
        let mut out = self.own();
        out.extend(&self.ancestors);
        out.extend(&self.passed);
        out
    }

    /// Nodes whose transitions a scroll or swipe starting here fires, best first: the view that
    /// took the down and its ancestors (a scrolling parent intercepts the drag), then the views
    /// under the finger that passed it on.
    pub fn for_gesture(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self.handler.into_iter().collect();
        out.extend(&self.ancestors);
        out.extend(&self.inside);
        out.extend(&self.passed);
        out
    }
}

/// Descendants of `handler` that do not take touches and have no view that does between them
/// and `handler`, in document order.
fn passive_content(tree: &Tree, handler: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut stack: Vec<usize> = tree.children[handler].iter().rev().copied().collect();
    while let Some(i) = stack.pop() {
        if takes_touches(tree.nodes[i]) {
            continue;
        }
        out.push(i);
        stack.extend(tree.children[i].iter().rev());
    }
    out
}

/// The view and what belongs to it wherever it is touched: its passive content when it clicks
/// as a whole (a clickable row's labels), else nothing more.
pub fn own_views(roots: &[Node], view: usize) -> Vec<usize> {
    let tree = Tree::new(roots);
    if view >= tree.nodes.len() {
        return Vec::new();
    }
    let mut out = vec![view];
    if clicks_as_a_whole(tree.nodes[view]) {
        out.extend(passive_content(&tree, view));
    }
    out
}

/// Nodes whose `input` transitions typing into `field` fires, best first: the field, then its
/// ancestors.
pub fn for_field(roots: &[Node], field: usize) -> Vec<usize> {
    let tree = Tree::new(roots);
    if field >= tree.nodes.len() {
        return Vec::new();
    }
    let mut out = vec![field];
    out.extend(tree.ancestors(field));
    out
}

/// The transition that answers `action` over `ranked` nodes: the one whose target matches the
/// best-ranked node; among those matching the same node, the most specific target (more fields
/// given), then model order. `nodes` are the screen's nodes as the model recorded them; `usable`
/// says whether a transition may fire now (its `requires` hold). Returns the transition's index.
pub fn choose(
    transitions: &[Transition],
    from: usize,
    action: Action,
    nodes: &[&Node],
    ranked: &[usize],
    usable: impl Fn(&Transition) -> bool,
) -> Option<usize> {
    transitions
        .iter()
        .enumerate()
        .filter(|(_, t)| t.from == from && t.action == action)
        .filter_map(|(index, t)| {
            let target = t.target.as_ref()?;
            let rank = ranked
                .iter()
                .position(|&i| nodes.get(i).is_some_and(|n| target.matches(n)))?;
            Some(((rank, Reverse(target.specificity()), index), t))
        })
        .filter(|(_, t)| usable(t))
        .min_by_key(|(key, _)| *key)
        .map(|((_, _, index), _)| index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::model::parse_hierarchy;

    fn node(attrs: &str, children: &str) -> String {
        format!("<node {attrs}>{children}</node>")
    }

    fn roots(body: &str) -> Vec<Node> {
        parse_hierarchy(&format!("<hierarchy>{body}</hierarchy>")).unwrap()
    }

    /// A row (clickable, `right` wide) with a label, an expand button, and an icon (`icon`
    /// attributes) drawn over the button, as list rows with swipe affordances are built.
    fn row(right: i32, icon: &str) -> Vec<Node> {
        let label = node(r#"text="Milk" bounds="[0,0][800,100]""#, "");
        let expand = node(
            r#"content-desc="Expand" clickable="true" bounds="[800,0][1000,100]""#,
            "",
        );
        let content = node(r#"bounds="[0,0][1000,100]""#, &(label + &expand));
        let icon = node(&format!(r#"{icon} bounds="[850,20][950,80]""#), "");
        let bounds = format!(r#"bounds="[0,0][{right},100]""#);
        let row = node(&format!(r#"clickable="true" {bounds}"#), &(content + &icon));
        roots(&node(&format!(r#"bounds="[0,0][{right},1000]""#), &row))
    }

    #[test]
    fn the_topmost_view_that_takes_touches_handles_them() {
        // Document order: 0 window, 1 row, 2 content, 3 label, 4 expand, 5 icon.
        let roots = row(1000, r#"resource-id="delete""#);
        let on_button = Touch::at(&roots, 900, 50);
        assert_eq!(
            on_button.handler,
            Some(4),
            "the icon over the button passes it on"
        );
        assert_eq!(on_button.passed, [5]);
        assert_eq!(on_button.ancestors, [2, 1, 0]);
        let on_label = Touch::at(&roots, 100, 50);
        assert_eq!(on_label.handler, Some(1), "the label is the row's");
        assert_eq!(on_label.inside, [3, 2]);
        assert_eq!(on_label.own(), [3, 2, 1, 5], "the icon is the row's too");
        assert_eq!(Touch::at(&roots, 100, 500).handler, None);
        assert_eq!(Touch::at(&roots, 100, 500).passed, [0]);
        assert_eq!(Touch::at(&roots, 2000, 50), Touch::default());
    }

    #[test]
    fn a_tap_on_the_row_reaches_its_labels_but_not_its_buttons() {
        let roots = row(1000, "");
        let touch = Touch::at(&roots, 820, 10); // on the button, outside the icon
        assert_eq!(touch.handler, Some(4));
        assert!(touch.content.is_empty(), "a button has no passive content");
        let row_only = Touch::at(&roots, 999, 99);
        assert_eq!(row_only.handler, Some(4));
        let roots = row(1010, r#"long-clickable="true""#);
        let margin = Touch::at(&roots, 1005, 50);
        assert_eq!(margin.handler, Some(1));
        assert_eq!(
            margin.content,
            [2, 3],
            "content and label, not the button or the icon"
        );
    }

    #[test]
    fn a_disabled_view_takes_the_touch_and_does_nothing() {
        let button = node(
            r#"clickable="true" enabled="false" bounds="[0,0][100,100]""#,
            "",
        );
        let roots = roots(&node(
            r#"clickable="true" bounds="[0,0][500,500]""#,
            &button,
        ));
        let touch = Touch::at(&roots, 50, 50);
        assert_eq!(touch.handler, Some(1));
        assert!(!touch.handler_enabled);
        assert!(touch.for_press().is_empty(), "the parent never sees it");
        assert_eq!(Touch::at(&roots, 300, 300).for_press(), [0]);
    }

    #[test]
    fn scrolling_containers_take_touches_but_click_only_the_item_under_the_finger() {
        let a = node(r#"text="a" bounds="[0,0][100,50]""#, "");
        let b = node(r#"text="b" bounds="[0,50][100,100]""#, "");
        let list = node(r#"scrollable="true" bounds="[0,0][100,100]""#, &(a + &b));
        let roots = roots(&node(r#"clickable="true" bounds="[0,0][100,200]""#, &list));
        let touch = Touch::at(&roots, 10, 10);
        assert_eq!(touch.handler, Some(1));
        assert_eq!(touch.own(), [2, 1], "item b is not reached from a");
        assert_eq!(touch.for_gesture(), [1, 0, 2]);
    }

    #[test]
    fn the_last_window_is_on_top_and_keeps_its_touches() {
        let below = node(r#"clickable="true" bounds="[0,0][100,100]""#, "");
        let dialog = node(r#"bounds="[0,0][50,50]""#, "");
        let roots = roots(&(below + &dialog));
        assert_eq!(Touch::at(&roots, 10, 10).handler, None);
        assert_eq!(Touch::at(&roots, 10, 10).passed, [1]);
        assert_eq!(Touch::at(&roots, 70, 70).handler, Some(0));
    }

    #[test]
    fn a_dumped_drawing_order_puts_an_elevated_bar_over_the_list_after_it() {
        let button = node(r#"clickable="true" bounds="[0,0][100,100]""#, "");
        let bar = node(r#"drawing-order="2" bounds="[0,0][1000,100]""#, &button);
        let list = node(
            r#"drawing-order="1" scrollable="true" bounds="[0,0][1000,1000]""#,
            "",
        );
        let roots = roots(&node(r#"bounds="[0,0][1000,1000]""#, &(bar + &list)));
        assert_eq!(
            Touch::at(&roots, 50, 50).handler,
            Some(2),
            "the bar is drawn on top"
        );
        assert_eq!(Touch::at(&roots, 500, 50).handler, Some(3));
        let unordered = roots_without_order(&roots);
        assert_eq!(
            Touch::at(&unordered, 50, 50).handler,
            Some(2),
            "without it, the bar inside the list's bounds is taken to be on top"
        );
        let side_by_side = node(r#"clickable="true" bounds="[0,0][1000,100]""#, "")
            + &node(r#"scrollable="true" bounds="[0,50][1000,1000]""#, "");
        let overlapping = self::roots(&node(r#"bounds="[0,0][1000,1000]""#, &side_by_side));
        assert_eq!(
            Touch::at(&overlapping, 50, 70).handler,
            Some(2),
            "neither inside the other: the later one"
        );
    }

    fn roots_without_order(roots: &[Node]) -> Vec<Node> {
        let mut roots = roots.to_vec();
        for child in &mut roots[0].children {
            child.attrs.retain(|(key, _)| key != "drawing-order");
        }
        roots
    }

    #[test]
    fn typing_reaches_the_field_then_its_ancestors() {
        let field = node(
            r#"class="android.widget.EditText" bounds="[0,0][10,10]""#,
            "",
        );
        let roots = roots(&node(r#"bounds="[0,0][100,100]""#, &field));
        assert_eq!(for_field(&roots, 1), [1, 0]);
        assert!(for_field(&roots, 7).is_empty());
    }
}
