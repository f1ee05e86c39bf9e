//! Forms: which fields to fill and with what (test credentials, plausible text), what a field
//! already shows, when a form's submit or an option is worth trying again.

use std::collections::HashSet;

use super::Heuristic;
use crate::decide::graph::ScreenIndex;
use crate::events::{Action, ActionType, Decision};
use crate::screen::{action_on, target_of, ActionKey, Screen, Widget};
use crate::ui::UiElement;

/// Times a field is filled on one screen (forms are emptied when left and entered again).
pub(super) const MAX_FILLS: u32 = 3;

/// Times an action is made worth trying again on one screen: a form's submit after a change to
/// the form, an option owed a try on the form as found (which a click on the form filled, or
/// a walk's blind tap, uses up: once spent, the as-found try is no longer sought).
pub(super) const MAX_RETRIES: u32 = 3;

/// The shortest start of a typed text taken for that text cut short (see
/// [`Heuristic::shows_typed_text`]).
pub(super) const MIN_CUT_TEXT: usize = 3;

/// Editable fields with their action keys.
pub(super) type Fields<'a> = Vec<(&'a UiElement, ActionKey)>;

/// How a form option is clicked (see [`Heuristic::option_as_found`]).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum OptionTry {
    Filled(ActionKey),
    AsFound(ActionKey),
}

impl Heuristic {
    /// Learns a text typed into a field of the current screen: it counts as typed, and the
    /// fill is counted.
    pub(super) fn learn_fill(&mut self, shown: &Screen, action: &Action) {
        let (Some(screen), Some(text)) = (self.current, action.input_text.as_ref()) else {
            return;
        };
        let Some(element) = target_of(shown.observation(), action) else {
            return;
        };
        self.typed.insert(text.clone());
        *self
            .fills
            .entry((screen, ActionKey::of(element)))
            .or_default() += 1;
    }

    /// Makes a form's submit buttons worth trying again.
    pub(super) fn retry_submits(&mut self, screen: ScreenIndex, keys: Vec<ActionKey>) {
        for key in keys {
            self.retry(screen, key);
        }
    }

    /// Makes an action worth trying again, up to [`MAX_RETRIES`] times.
    pub(super) fn retry(&mut self, screen: ScreenIndex, key: ActionKey) {
        let times = self.retries.entry((screen, key.clone())).or_default();
        if *times < MAX_RETRIES {
            *times += 1;
            self.graph.mark_untried(screen, &key);
        }
    }

    /// Notes the text of the app's own each field shows, and returns the fields showing text
    /// they did not show before on this screen.
    pub(super) fn note_prefills(&mut self, screen: ScreenIndex, shown: &Screen) -> HashSet<u32> {
        shown
            .fields()
            .filter(|field| self.shows_new_prefill(screen, field))
            .map(|field| field.element.element_id)
            .collect()
    }

    /// Whether a field shows text of the app's own that it did not show before on this screen.
    pub(super) fn shows_new_prefill(&mut self, screen: ScreenIndex, field: &Widget) -> bool {
        let text = field.element.text.trim();
        if text.is_empty() || self.shows_typed_text(field.element) {
            return false;
        }
        let shown = self
            .prefills
            .entry((screen, field.key.clone()))
            .or_default();
        let new = !shown.is_empty() && !shown.contains(text);
        shown.insert(text.to_string());
        new
    }

    /// On a form filled before and found empty again, an option (a check box, an unchecked
    /// radio button) tried so far only with the form filled, to click once before filling:
    /// what an option does can depend on what the form holds (a checklist needs no title).
    /// Until then the option counts as untried, so the form is worth coming back to.
    pub(super) fn option_as_found<'s, 'o>(
        &self,
        screen: ScreenIndex,
        shown: &'s Screen<'o>,
        fields: &Fields,
    ) -> Option<&'s Widget<'o>> {
        let filled_before = |(field, key): &(&UiElement, ActionKey)| {
            !self.renewed.contains(&field.element_id)
                && self
                    .fills
                    .get(&(screen, key.clone()))
                    .is_some_and(|&n| n > 0)
        };
        if fields.is_empty() || !fields.iter().all(filled_before) {
            return None;
        }
        shown.widgets().iter().find(|w| {
            w.element.checkable
                && !w.element.checked
                && w.control
                && self.owes_as_found(screen, &w.key)
        })
    }

    /// Whether the form option `key` was clicked on the form filled and not yet as found.
    pub(super) fn owes_as_found(&self, screen: ScreenIndex, key: &ActionKey) -> bool {
        let option = (screen, key.clone());
        self.options_filled.contains(&option) && !self.as_found.contains(&option)
    }

    /// The editable fields to fill now, those to fill again only when nothing else on the
    /// screen is untried (filled here before, showing text this heuristic did not type, fewer
    /// than [`MAX_FILLS`] times), and those this visit passes over (to be marked tried).
    pub(super) fn fields_to_fill<'o>(
        &self,
        screen: ScreenIndex,
        shown: &Screen<'o>,
        untried_control: bool,
    ) -> (Fields<'o>, Fields<'o>, Vec<ActionKey>) {
        let (mut fields, mut refills, mut passed) = (Vec::new(), Vec::new(), Vec::new());
        for field in shown.fields() {
            let key = field.key.clone();
            let fills = self.fills.get(&(screen, key.clone())).copied().unwrap_or(0);
            let typed = self.shows_typed_text(field.element);
            // Filling again on a later visit only helps a form with controls left to try, or
            // a field showing text new to this screen (the screen is in another state).
            let again = untried_control || self.renewed.contains(&field.element.element_id);
            let worth = fills == 0 || (fills < MAX_FILLS && again);
            let room = fields.len() + 1 < Decision::MAX_ACTIONS;
            if !typed && worth && room {
                fields.push((field.element, key));
                continue;
            }
            if !typed && fills < MAX_FILLS && refills.len() < Decision::MAX_ACTIONS {
                refills.push((field.element, key.clone()));
            }
            passed.push(key);
        }
        (fields, refills, passed)
    }

    /// The field already shows what this heuristic typed (or password dots): it needs no filling.
    /// The start of a typed text counts: a length limit, or a screen that changed with the first
    /// word (notes' editor), cuts it short.
    pub(super) fn shows_typed_text(&self, field: &UiElement) -> bool {
        let text = field.text.trim();
        let dots = !text.is_empty() && text.chars().all(|c| matches!(c, '•' | '*' | '●'));
        let cut = |typed: &String| text.chars().count() >= MIN_CUT_TEXT && typed.starts_with(text);
        dots || self
            .typed
            .iter()
            .any(|typed| text.contains(typed.as_str()) || cut(typed))
    }

    pub(super) fn fill(&self, element: &UiElement) -> Action {
        let mut action = action_on(&[], element, ActionType::Input, "fill the field");
        action.input_text = Some(self.text_for(element));
        action
    }

    /// Test credentials for e-mail, user name and password fields, plausible text otherwise.
    pub(super) fn text_for(&self, element: &UiElement) -> String {
        // The id's entry name only: the package part (`com.example.mail:id/...`) is no hint.
        let id = element.resource_id.rsplit('/').next().unwrap_or_default();
        let words = format!(
            "{id} {} {} {}",
            element.hint, element.content_desc, element.text
        )
        .to_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| words.contains(n));
        let creds = &self.credentials;
        let pick = |given: &Option<String>, fallback: &str| {
            given.clone().unwrap_or_else(|| fallback.to_string())
        };
        if has(&["cvc", "cvv", "security code"]) {
            "123".into()
        } else if element.password || has(&["password", "passwd", "pwd", "pin"]) {
            pick(&creds.password, "Droid-Test-1234")
        } else if has(&["mail"]) {
            pick(&creds.email, "droid.tester@example.com")
        } else if has(&["user", "login", "account"]) {
            pick(&creds.username, "droidtester")
        } else if has(&["card"]) && !has(&["name", "holder"]) {
            "4111111111111111".into()
        } else if has(&["mm/yy", "expir", "exp_", "expiry"]) {
            "12/30".into()
        } else if has(&["phone", "tel", "mobile"]) {
            "5551234567".into()
        } else if has(&["url", "website", "link"]) {
            "https://example.com".into()
        } else if has(&[
            "zip", "postal", "code", "age", "amount", "number", "qty", "quantity",
        ]) {
            "42".into()
        } else if has(&["search", "find", "query"]) {
            "test".into()
        } else if has(&["name"]) {
            "Alex Tester".into()
        } else {
            "Hello from droid".into()
        }
    }
}
