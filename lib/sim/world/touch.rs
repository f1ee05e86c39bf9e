//! Touches and gestures: where a tap, long press or swipe goes (by [`dispatch`]), which recorded
//! or inferred move answers it, and what a tap does when none does.

use super::{Front, Stack, World};
use crate::sim::dispatch::{self, Touch};
use crate::sim::infer::{self, Inferred};
use crate::sim::model::{Action, Destination, Node};

/// Moves shorter than this are taps, as the platform's touch slop.
const TOUCH_SLOP: i32 = 24;
/// Presses at least this long are long presses (ViewConfiguration's default timeout).
const LONG_PRESS_MS: u64 = 500;
/// Which touch gesture a swipe was.
enum Gesture {
    Tap,
    LongPress,
    Move(Action),
}

fn classify_swipe(x1: i32, y1: i32, x2: i32, y2: i32, duration_ms: u64) -> Gesture {
    let (dx, dy) = (x2 - x1, y2 - y1);
    if dx.abs() < TOUCH_SLOP && dy.abs() < TOUCH_SLOP {
        return if duration_ms >= LONG_PRESS_MS {
            Gesture::LongPress
        } else {
            Gesture::Tap
        };
    }
    Gesture::Move(if dy.abs() >= dx.abs() {
        if dy < 0 {
            Action::ScrollDown
        } else {
            Action::ScrollUp
        }
    } else if dx < 0 {
        Action::SwipeLeft
    } else {
        Action::SwipeRight
    })
}

impl World {
    pub fn tap(&mut self, x: i32, y: i32) {
        self.log_input("tap", vec![("x", x.into()), ("y", y.into())]);
        self.touch(x, y, Action::Click);
    }

    pub fn long_press(&mut self, x: i32, y: i32) {
        self.log_input("long_press", vec![("x", x.into()), ("y", y.into())]);
        self.touch(x, y, Action::LongClick);
    }

    /// A swipe; a tap or long press when both points are about the same (by the duration),
    /// else a scroll or horizontal swipe by its main direction. `scroll_down` means the finger
    /// moves up (the content further down comes into view).
    pub fn swipe(&mut self, x1: i32, y1: i32, x2: i32, y2: i32, duration_ms: u64) {
        self.log_input(
            "swipe",
            vec![
                ("x1", x1.into()),
                ("y1", y1.into()),
                ("x2", x2.into()),
                ("y2", y2.into()),
                ("duration_ms", duration_ms.into()),
            ],
        );
        match classify_swipe(x1, y1, x2, y2, duration_ms) {
            Gesture::Tap => self.touch(x1, y1, Action::Click),
            Gesture::LongPress => self.touch(x1, y1, Action::LongClick),
            Gesture::Move(action) => self.gesture(x1, y1, action),
        }
    }

    pub(super) fn touch(&mut self, x: i32, y: i32, action: Action) {
        let (width, height) = self.screen_size();
        if x < 0 || y < 0 || x >= width as i32 || y >= height as i32 {
            return; // off the display: no window receives it
        }
        match self.front {
            Front::Launcher => {
                if action == Action::Click {
                    if let Some(package) = self.launcher_hit(x, y) {
                        // Every icon is an installed package.
                        let _ = self.launch_package(&package);
                    }
                }
            }
            Front::Recents => {
                if action == Action::Click {
                    self.recents_tap(x, y);
                }
            }
            Front::App if self.anr_showing => {
                if action == Action::Click {
                    self.anr_tap(x, y);
                }
            }
            Front::App => self.app_touch(x, y, action),
        }
    }

    pub(super) fn app_touch(&mut self, x: i32, y: i32, action: Action) {
        let roots = self.live_roots();
        let touch = Touch::at(&roots, x, y);
        let live: Vec<&Node> = roots.iter().flat_map(Node::walk).collect();
        let Some(from) = self.top_screen_index() else {
            // An external app's generic screen: its only button goes back.
            if action == Action::Click && touch.handler.is_some() {
                self.back();
            }
            return;
        };
        let handler = touch.handler.filter(|_| touch.handler_enabled);
        if let Some(field) = handler.filter(|&h| action == Action::Click && live[h].is_editable()) {
            // A tapped field takes the focus before any click listener runs.
            if let Some(entry) = self.top_entry_mut() {
                entry.focus = Some(field);
            }
        }
        if let Some(to) = self.pick(from, action, &touch.for_press()) {
            self.fire(&to, Stack::Push, None);
            return;
        }
        let Some(handler) = handler else {
            return;
        };
        if let Some(inferred) = self.infer(from, action, handler) {
            self.fire_inferred(inferred, Stack::Push, None);
            return;
        }
        match action {
            // No long click happens on a view that is not long-clickable, so releasing the
            // finger performs its click (View.onTouchEvent).
            Action::LongClick if !live[handler].flag("long-clickable") => {
                self.app_touch(x, y, Action::Click)
            }
            Action::Click => self.default_click(&touch, &live),
            _ => {}
        }
    }

    /// A tap no transition answers, besides focusing a field: a checkable widget toggles, an up
    /// arrow goes back.
    pub(super) fn default_click(&mut self, touch: &Touch, live: &[&Node]) {
        let own = touch.own();
        if touch.handler.is_some_and(|h| live[h].is_editable()) {
            // Focused already.
        } else if let Some(&toggle) = own.iter().find(|&&i| live[i].flag("checkable")) {
            let was = live[toggle].flag("checked");
            if let Some(entry) = self.top_entry_mut() {
                entry.checked.insert(toggle, !was);
            }
        } else if own
            .iter()
            .any(|&i| live[i].attr("content-desc") == "Navigate up")
        {
            // An up arrow with no transition of its own behaves as back.
            self.back();
        }
    }

    pub(super) fn gesture(&mut self, x: i32, y: i32, action: Action) {
        if self.front != Front::App || self.anr_showing {
            return;
        }
        let Some(from) = self.top_screen_index() else {
            return;
        };
        let touch = Touch::at(&self.live_roots(), x, y);
        let targeted = self.pick(from, action, &touch.for_gesture());
        let fired = targeted.or_else(|| self.first_untargeted(from, action));
        if let Some(to) = fired {
            self.fire(&to, Stack::Replace, None);
            return;
        }
        let handler = touch.handler.filter(|_| touch.handler_enabled);
        if let Some(inferred) = handler.and_then(|h| self.infer(from, action, h)) {
            self.fire_inferred(inferred, Stack::Replace, None);
        }
    }

    /// The move the recording of the same view on the activity's other screens makes, unless the
    /// device fires recorded transitions only.
    pub(super) fn infer(&self, from: usize, action: Action, view: usize) -> Option<Inferred> {
        if self.options.recorded_only {
            return None;
        }
        infer::infer(&self.model, from, action, view, |t| {
            self.requirements_hold(from, &t.requires)
        })
    }

    /// Carries out an inferred move; the truth line of what it shows names the transition
    /// borrowed.
    pub(super) fn fire_inferred(
        &mut self,
        inferred: Inferred,
        push: Stack,
        carried: Option<(String, String)>,
    ) {
        self.borrowed = Some(inferred.transition);
        self.fire(&inferred.to, push, carried);
    }

    /// The destination of the transition from `from` for `action` that the `ranked` nodes
    /// choose (see [`dispatch::choose`]), among those whose `requires` hold.
    pub(super) fn pick(
        &self,
        from: usize,
        action: Action,
        ranked: &[usize],
    ) -> Option<Destination> {
        let nodes = self.model.screen(from).nodes();
        let transitions = self.model.transitions();
        dispatch::choose(transitions, from, action, &nodes, ranked, |t| {
            self.requirements_hold(from, &t.requires)
        })
        .map(|index| transitions[index].to.clone())
    }

    pub(super) fn first_untargeted(&self, from: usize, action: Action) -> Option<Destination> {
        self.model
            .transitions()
            .iter()
            .filter(|t| t.from == from && t.action == action && t.target.is_none())
            .find(|t| self.requirements_hold(from, &t.requires))
            .map(|t| t.to.clone())
    }

    pub(super) fn requirements_hold(
        &self,
        screen: usize,
        requires: &[(String, regex::Regex)],
    ) -> bool {
        let nodes = self.model.screen(screen).nodes();
        requires.iter().all(|(field, regex)| {
            nodes
                .iter()
                .position(|n| n.attr("resource-id") == field)
                .is_some_and(|i| regex.is_match(&self.field_text(i)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swipes_classify_by_distance_duration_and_direction() {
        assert!(matches!(classify_swipe(0, 0, 5, 5, 100), Gesture::Tap));
        assert!(matches!(
            classify_swipe(0, 0, 5, 5, 800),
            Gesture::LongPress
        ));
        assert!(matches!(
            classify_swipe(500, 1500, 500, 500, 300),
            Gesture::Move(Action::ScrollDown)
        ));
        assert!(matches!(
            classify_swipe(500, 500, 500, 1500, 300),
            Gesture::Move(Action::ScrollUp)
        ));
        assert!(matches!(
            classify_swipe(900, 500, 100, 520, 300),
            Gesture::Move(Action::SwipeLeft)
        ));
    }
}
