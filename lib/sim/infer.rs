//! Moves an app makes alike across its states, inferred from the recording.
//!
//! A recording only knows the moves made from each exact state it was in, but an app treats a
//! view alike across its states: the app bar's Settings button opens Settings whatever the search
//! field holds. So when an action on the current screen fires no recorded transition, the view
//! that handled it is looked up on the other screens of the same package and activity (the same
//! activity showing another state), and if every transition recorded there for that action on
//! that view leads to one destination, the move is taken.
//!
//! The same view is the one with the same identifying field: its resource id, else its content
//! description, else its text, naming exactly one element on the current screen and exactly one
//! on each other screen considered (a screen where it names none or several says nothing about
//! it). A transition is "on" that view when its target matches the view or the passive content
//! that belongs to it (a label inside a clickable row), as a tap there would fire it. `back` is
//! never inferred: it has its own rule (the back stack).
//!
//! A borrowed transition keeps its `requires`, checked against the current screen's fields: a
//! move the recording made only with some text in a field is taken only when that field here
//! holds such text.

use super::dispatch::{self, Touch};
use super::model::{Action, AppModel, Destination, Node, Screen, Transition};

/// The actions a move can be inferred for (every one but `back`).
const INFERABLE: [Action; 7] = [
    Action::Click,
    Action::LongClick,
    Action::Input,
    Action::ScrollUp,
    Action::ScrollDown,
    Action::SwipeLeft,
    Action::SwipeRight,
];

/// A move inferred from the recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inferred {
    /// Where it leads.
    pub to: Destination,
    /// The transition borrowed (its index in the model), the first in model order that may fire.
    pub transition: usize,
}

/// The field that identifies a view across screens: `(attribute, value)`.
fn identity(node: &Node) -> Option<(&'static str, &str)> {
    ["resource-id", "content-desc", "text"]
        .into_iter()
        .map(|attr| (attr, node.attr(attr)))
        .find(|(_, value)| !value.is_empty())
}

/// The one node of `nodes` that the identity names, if exactly one.
fn the_one(nodes: &[&Node], (attr, value): (&str, &str)) -> Option<usize> {
    let mut named = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| identity(n).is_some_and(|(a, v)| a == attr && v == value))
        .map(|(i, _)| i);
    match (named.next(), named.next()) {
        (Some(index), None) => Some(index),
        _ => None,
    }
}

/// The move `action` on view `view` (document order) of screen `from` takes by the recording of
/// the same view on the other screens of its package and activity; `None` when those screens
/// record nothing for it, or disagree. `usable` says whether a borrowed transition may fire now
/// (its `requires` hold on the current screen).
pub fn infer(
    model: &AppModel,
    from: usize,
    action: Action,
    view: usize,
    usable: impl Fn(&Transition) -> bool,
) -> Option<Inferred> {
    if action == Action::Back {
        return None;
    }
    let here = model.screen(from);
    let nodes = here.nodes();
    let key = identity(nodes.get(view)?)?;
    the_one(&nodes, key).filter(|&one| one == view)?;
    let mut borrowed = Vec::new();
    for (index, other) in model.screens().iter().enumerate() {
        if index == from || other.package != here.package || other.activity != here.activity {
            continue;
        }
        let other_nodes = other.nodes();
        let Some(same) = the_one(&other_nodes, key) else {
            continue;
        };
        let own = views_of(other, action, same);
        borrowed.extend(
            model
                .transitions()
                .iter()
                .enumerate()
                .filter(|(_, t)| t.from == index && t.action == action)
                .filter(|(_, t)| {
                    t.target
                        .as_ref()
                        .is_some_and(|target| own.iter().any(|&i| target.matches(other_nodes[i])))
                }),
        );
    }
    let (_, first) = borrowed.first()?;
    if borrowed.iter().any(|(_, t)| t.to != first.to) {
        return None;
    }
    borrowed
        .into_iter()
        .find(|(_, t)| usable(t))
        .map(|(transition, t)| Inferred {
            to: t.to.clone(),
            transition,
        })
}

/// The nodes whose recorded transitions of `action` are moves on `view`: for a tap or a long
/// press the view and its passive content (a label inside a clickable row is the row's), for
/// typing and gestures the view alone.
fn views_of(screen: &Screen, action: Action, view: usize) -> Vec<usize> {
    match action {
        Action::Click | Action::LongClick => dispatch::own_views(&screen.roots, view),
        _ => vec![view],
    }
}

/// One move inference adds to a model: `action` on the view `view` of `screen` (indexes), acted
/// on at its centre, leads where `inferred` says although the screen records nothing for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedMove {
    pub screen: usize,
    pub action: Action,
    pub view: usize,
    pub inferred: Inferred,
}

/// Text for `droid-sim --describe`: the model's screens (see [`AppModel::describe`]) and how
/// many moves inference adds to it.
pub fn describe(model: &AppModel) -> String {
    format!(
        "{}moves inference adds (screen, action, view): {}",
        model.describe(),
        added_moves(model).len()
    )
}

/// Every (screen, action, view) move inference adds to `model`: for each view that handles a
/// touch at its centre (each text field, for typing) where no recorded transition answers, the
/// move [`infer`] finds, whatever text the fields hold (`requires` are not checked).
pub fn added_moves(model: &AppModel) -> Vec<AddedMove> {
    let mut added = Vec::new();
    for (from, screen) in model.screens().iter().enumerate() {
        let nodes = screen.nodes();
        for (view, node) in nodes.iter().enumerate() {
            for action in INFERABLE {
                let Some(ranked) = ranked_at_centre(screen, action, view, node) else {
                    continue;
                };
                let answered =
                    dispatch::choose(model.transitions(), from, action, &nodes, &ranked, |_| true)
                        .is_some()
                        || action.is_gesture()
                            && model.transitions().iter().any(|t| {
                                t.from == from && t.action == action && t.target.is_none()
                            });
                if answered {
                    continue;
                }
                if let Some(inferred) = infer(model, from, action, view, |_| true) {
                    added.push(AddedMove {
                        screen: from,
                        action,
                        view,
                        inferred,
                    });
                }
            }
        }
    }
    added
}

/// The nodes whose transitions answer `action` when `view` handles it at its centre, best
/// first; `None` when `view` does not handle it there (another view does, or it is disabled,
/// or it is not a text field for typing).
fn ranked_at_centre(
    screen: &Screen,
    action: Action,
    view: usize,
    node: &Node,
) -> Option<Vec<usize>> {
    if action == Action::Input {
        return node
            .is_editable()
            .then(|| dispatch::for_field(&screen.roots, view));
    }
    let (x, y) = node.bounds.center();
    let touch = Touch::at(&screen.roots, x, y);
    if touch.handler != Some(view) || !touch.handler_enabled {
        return None;
    }
    Some(match action {
        Action::Click | Action::LongClick => touch.for_press(),
        _ => touch.for_gesture(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two states of one activity (a search field empty or filled) and a settings screen: the
    /// recording tapped Settings only from the first state.
    const STATES: &str = r#"{
        "package": "p.q", "screen_size": [100, 300], "start": "empty",
        "screens": [
            {"id": "empty", "activity": "p.q.Main", "elements": [
                {"resource_id": "p.q:id/settings", "clickable": true, "bounds": [0, 0, 50, 50]},
                {"class": "android.widget.EditText", "resource_id": "p.q:id/search", "bounds": [0, 50, 100, 100]}]},
            {"id": "filled", "activity": "p.q.Main", "elements": [
                {"resource_id": "p.q:id/settings", "clickable": true, "bounds": [0, 0, 50, 50]},
                {"class": "android.widget.EditText", "resource_id": "p.q:id/search", "bounds": [0, 50, 100, 100]}]},
            {"id": "settings", "activity": "p.q.Settings", "elements": []}
        ],
        "transitions": [
            {"from": "empty", "action": "input", "target": {"resource_id": "p.q:id/search"}, "to": "filled"},
            {"from": "empty", "action": "click", "target": {"resource_id": "p.q:id/settings"}, "to": "settings"}
        ]
    }"#;

    #[test]
    fn a_view_recorded_in_one_state_moves_alike_in_another() {
        let model = AppModel::parse(STATES, "m", None).unwrap();
        let filled = model.screen_index("filled").unwrap();
        let settings = model.screen_index("settings").unwrap();
        assert_eq!(
            infer(&model, filled, Action::Click, 1, |_| true),
            Some(Inferred {
                to: Destination::Screen(settings),
                transition: 1
            })
        );
        assert_eq!(infer(&model, filled, Action::Back, 1, |_| true), None);
        assert_eq!(infer(&model, filled, Action::LongClick, 1, |_| true), None);
        assert_eq!(infer(&model, filled, Action::Click, 1, |_| false), None);
        let added = added_moves(&model);
        assert_eq!(added.len(), 2, "{added:?}");
        assert!(added
            .iter()
            .any(|m| m.screen == filled && m.action == Action::Click && m.view == 1));
        assert!(
            added
                .iter()
                .any(|m| m.screen == filled && m.action == Action::Input && m.view == 2),
            "typing into the filled field again"
        );
    }

    #[test]
    fn identity_is_the_resource_id_else_the_description_else_the_text() {
        let node = |attrs: &[(&str, &str)]| Node {
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            bounds: crate::ui::Bounds::from([0, 0, 1, 1]),
            children: Vec::new(),
        };
        let full = node(&[("text", "t"), ("content-desc", "d"), ("resource-id", "r")]);
        assert_eq!(identity(&full), Some(("resource-id", "r")));
        assert_eq!(
            identity(&node(&[("text", "t"), ("content-desc", "d")])),
            Some(("content-desc", "d"))
        );
        assert_eq!(identity(&node(&[("text", "t")])), Some(("text", "t")));
        assert_eq!(identity(&node(&[("class", "c")])), None);
    }
}
