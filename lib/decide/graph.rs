//! The exploration graph a decider keeps in memory: screens (identified by activity plus their
//! actionable widgets' signatures, or the perceptual hash when they have none), the actions each
//! offers (by widget signature), which were tried, and the edges learned from what followed an
//! action.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use sha2::{Digest, Sha256};

use super::widgets::{
    is_actionable, is_risky, is_unmarked_list, label_in, primary_action, signature,
};
use crate::events::Observation;
use crate::hash;

/// Index of a screen in the graph.
pub type ScreenId = usize;

/// An action on a screen: `click:<signature>`, `input:<signature>`, ..., or `back`.
pub type ActionKey = String;

/// The key of the system back action, available on every screen.
pub const BACK: &str = "back";

/// The key of scrolling a whole screen down, offered on lists without a scrollable container.
pub const SCROLL: &str = "scroll_down";

/// The key of `action` on an element with `signature`.
pub fn action_key(action: crate::events::ActionType, signature: &str) -> ActionKey {
    format!("{action}:{signature}")
}

#[derive(Debug, Clone)]
struct Screen {
    phash: Option<u64>,
    structure: String,
    /// Digest of the actionable widgets' signatures; empty when there are none.
    widgets: String,
    /// Every action seen on this screen, with whether it is risky.
    actions: BTreeMap<ActionKey, bool>,
    tried: BTreeSet<ActionKey>,
    /// Learned edges: action → target screen → times seen.
    edges: BTreeMap<ActionKey, BTreeMap<ScreenId, u32>>,
    visits: u32,
    /// A screen of another app: never a goal of exploration.
    outside: bool,
}

impl Screen {
    fn untried(&self, risky: bool) -> bool {
        !self.outside
            && self
                .actions
                .iter()
                .any(|(key, is_risky)| *is_risky == risky && !self.tried.contains(key))
    }
}

/// Screens, actions and edges of one exploration.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    screens: Vec<Screen>,
    by_activity: HashMap<String, Vec<ScreenId>>,
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    pub fn screen_count(&self) -> usize {
        self.screens.len()
    }

    /// The screen an observation shows, added when new; its actions are merged in and its
    /// visit counted.
    pub fn observe(&mut self, observation: &Observation) -> ScreenId {
        let activity = observation
            .activity
            .clone()
            .or_else(|| observation.package.clone())
            .unwrap_or_default();
        let hash = observation.hash.as_ref();
        let phash = hash
            .and_then(|h| h.phash.as_deref())
            .and_then(|p| hash::parse_phash(p).ok());
        let structure = hash
            .and_then(|h| h.structure_hash.clone())
            .unwrap_or_else(|| structure_of(observation));
        let widgets = widgets_of(observation);
        let id = self
            .find(&activity, phash, &structure, &widgets)
            .unwrap_or_else(|| {
                let id = self.screens.len();
                self.screens.push(Screen {
                    phash,
                    structure,
                    widgets,
                    actions: BTreeMap::new(),
                    tried: BTreeSet::new(),
                    edges: BTreeMap::new(),
                    visits: 0,
                    outside: false,
                });
                self.by_activity.entry(activity).or_default().push(id);
                id
            });
        let screen = &mut self.screens[id];
        screen.visits += 1;
        for element in observation.elements.iter().filter(|e| is_actionable(e)) {
            let key = action_key(primary_action(element), &signature(element));
            let risky = is_risky(element, label_in(&observation.elements, element));
            screen.actions.entry(key).or_insert(risky);
        }
        if is_unmarked_list(&observation.elements) {
            screen.actions.entry(SCROLL.to_string()).or_insert(false);
        }
        id
    }

    /// The known screen an observation shows: same activity and the same actionable widgets
    /// (signatures leave typed text out, so a filled form is the screen it was); without
    /// actionable widgets, the perceptual-hash rule, else the structure.
    fn find(
        &self,
        activity: &str,
        phash: Option<u64>,
        structure: &str,
        widgets: &str,
    ) -> Option<ScreenId> {
        let candidates = self.by_activity.get(activity)?;
        candidates.iter().copied().find(|&id| {
            let screen = &self.screens[id];
            if !widgets.is_empty() || !screen.widgets.is_empty() {
                return screen.widgets == widgets;
            }
            match (screen.phash, phash) {
                (Some(a), Some(b)) => hash::hamming(a, b) <= hash::SAME_SCREEN_DISTANCE,
                _ => screen.structure == structure,
            }
        })
    }

    /// Marks a screen as belonging to another app, so paths never aim at it.
    pub fn mark_outside(&mut self, screen: ScreenId) {
        if let Some(screen) = self.screens.get_mut(screen) {
            screen.outside = true;
        }
    }

    pub fn mark_tried(&mut self, screen: ScreenId, key: &str) {
        if let Some(screen) = self.screens.get_mut(screen) {
            screen.tried.insert(key.to_string());
        }
    }

    pub fn is_tried(&self, screen: ScreenId, key: &str) -> bool {
        self.screens
            .get(screen)
            .is_some_and(|s| s.tried.contains(key))
    }

    /// Records that `key` on `from` led to `to`.
    pub fn record_edge(&mut self, from: ScreenId, key: &str, to: ScreenId) {
        if let Some(screen) = self.screens.get_mut(from) {
            screen.tried.insert(key.to_string());
            *screen
                .edges
                .entry(key.to_string())
                .or_default()
                .entry(to)
                .or_default() += 1;
        }
    }

    /// Whether the screen offers `key` (seen on it at least once).
    pub fn offers(&self, screen: ScreenId, key: &str) -> bool {
        self.screens
            .get(screen)
            .is_some_and(|s| s.actions.contains_key(key))
    }

    /// Times the screen was seen.
    pub fn visits(&self, screen: ScreenId) -> u32 {
        self.screens.get(screen).map_or(0, |s| s.visits)
    }

    /// The first action of the shortest known path from `from` to the nearest other screen with
    /// untried actions (non-risky ones first), with that screen. Each edge follows the target
    /// seen most often for its action.
    pub fn path_to_unexplored(&self, from: ScreenId) -> Option<(ActionKey, ScreenId)> {
        [false, true]
            .into_iter()
            .find_map(|risky| self.bfs(from, |s| s.untried(risky)))
    }

    fn bfs(&self, from: ScreenId, goal: impl Fn(&Screen) -> bool) -> Option<(ActionKey, ScreenId)> {
        let mut first_step: Vec<Option<&str>> = vec![None; self.screens.len()];
        let mut seen = vec![false; self.screens.len()];
        let mut queue = VecDeque::from([from]);
        *seen.get_mut(from)? = true;
        while let Some(at) = queue.pop_front() {
            if at != from && goal(&self.screens[at]) {
                return first_step[at].map(|key| (key.to_string(), at));
            }
            for (key, targets) in &self.screens[at].edges {
                let most_seen = targets
                    .iter()
                    .max_by_key(|(id, n)| (**n, std::cmp::Reverse(**id)));
                let Some((&to, _)) = most_seen else {
                    continue;
                };
                if !seen[to] {
                    seen[to] = true;
                    first_step[to] = first_step[at].or(Some(key.as_str()));
                    queue.push_back(to);
                }
            }
        }
        None
    }
}

/// A digest of the actionable widgets' action keys, sorted; empty when there are none.
fn widgets_of(observation: &Observation) -> String {
    let mut keys: Vec<String> = observation
        .elements
        .iter()
        .filter(|e| is_actionable(e))
        .map(|e| action_key(primary_action(e), &signature(e)))
        .collect();
    if keys.is_empty() {
        return String::new();
    }
    keys.sort();
    keys.dedup();
    let mut hasher = Sha256::new();
    for key in &keys {
        hasher.update(key.as_bytes());
        hasher.update([0]);
    }
    hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A text-free key of the hierarchy (classes and ids in document order), used when the
/// observation carries no structure hash.
fn structure_of(observation: &Observation) -> String {
    let mut hasher = Sha256::new();
    for element in &observation.elements {
        hasher.update(element.depth.to_le_bytes());
        hasher.update(element.class_name.as_bytes());
        hasher.update([0]);
        hasher.update(element.resource_id.as_bytes());
        hasher.update([0]);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{ActionType, ScreenHash};
    use crate::ui::{Bounds, UiElement};

    pub fn screen(activity: &str, phash: &str, buttons: &[&str]) -> Observation {
        Observation {
            activity: Some(activity.into()),
            hash: Some(ScreenHash {
                phash: Some(phash.into()),
                ..ScreenHash::default()
            }),
            elements: buttons
                .iter()
                .enumerate()
                .map(|(i, text)| UiElement {
                    element_id: i as u32,
                    text: text.to_string(),
                    class_name: "android.widget.Button".into(),
                    resource_id: format!("id/{text}"),
                    clickable: true,
                    enabled: true,
                    bounds: Bounds::from([0, i as i32 * 100, 100, i as i32 * 100 + 90]),
                    ..UiElement::default()
                })
                .collect(),
            ..Observation::default()
        }
    }

    #[test]
    fn screens_are_the_same_activity_with_the_same_widgets() {
        let mut graph = Graph::new();
        let a = graph.observe(&screen("Main", "ffff000000000000", &["A", "B"]));
        let again = graph.observe(&screen("Main", "0000ffffffff0000", &["B", "A"]));
        let close_but_other = graph.observe(&screen("Main", "ffff000000000001", &["C"]));
        let other = graph.observe(&screen("Other", "ffff000000000000", &["A", "B"]));
        assert_eq!(a, again);
        assert_ne!(a, close_but_other);
        assert_ne!(a, other);
        assert_eq!(graph.visits(a), 2);
        // Without actionable widgets (a secure screen, a splash), the perceptual hash decides.
        let blank = graph.observe(&screen("Splash", "ffff000000000000", &[]));
        let blank_again = graph.observe(&screen("Splash", "ffff00000000001f", &[]));
        assert_eq!(blank, blank_again);
    }

    #[test]
    fn path_leads_to_the_nearest_screen_with_untried_actions() {
        let mut graph = Graph::new();
        let home = graph.observe(&screen("Home", "0000000000000000", &["Go"]));
        let middle = graph.observe(&screen("Middle", "0000000000000000", &["Next"]));
        let far = graph.observe(&screen("Far", "0000000000000000", &["X", "Y"]));
        let go = action_key(ActionType::Click, "android.widget.Button|id/Go||Go");
        let next = action_key(ActionType::Click, "android.widget.Button|id/Next||Next");
        let x = action_key(ActionType::Click, "android.widget.Button|id/X||X");
        graph.record_edge(home, &go, middle);
        graph.record_edge(middle, &next, far);
        graph.record_edge(far, &x, home);
        assert_eq!(graph.path_to_unexplored(home), Some((go.clone(), far)));
        let y = action_key(ActionType::Click, "android.widget.Button|id/Y||Y");
        graph.mark_tried(far, &y);
        assert_eq!(graph.path_to_unexplored(home), None);
    }
}
