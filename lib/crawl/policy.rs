//! The crawl's policies: what counts as stuck, as a lost context, as an ANR dialog, and how a
//! failed capture is told from a device that is gone. Each from how Android behaves, never from
//! a particular app.

use std::collections::HashSet;

use crate::capture::device::DeviceCaptureError;
use crate::crash::{anr_signature, AnrData, ReproStep};
use crate::events::{Note, NoteKind, Observation};
use crate::screen::{ActionKey, ScreenKey};
use crate::ui::UiElement;

/// Model answers given again on their screen since the crawl last found a screen, each after
/// the last without the heuristic deciding in between, before droid-crawl takes the crawl off
/// them: one step of the heuristic's, then, if the model goes on repeating itself (or the crawl
/// is still stuck on its screen), a relaunch.
pub const MODEL_STUCK_STEPS: u32 = 3;

/// Steps in a row in another app, each answered with back, before the driver relaunches the app
/// under test (the reference design's context-loss rule).
pub const CONTEXT_LOSS_BACKS: u32 = 3;

/// Times a screen may be seen in a row, the actions on it not navigating, before the crawl is
/// stuck there.
const SAME_SCREEN_TIMES: u32 = 2;

/// ANRs on one screen answered with "Wait" before the app is closed instead.
const WAITS_PER_SCREEN: u32 = 2;

/// The system dialog's buttons (AOSP's `aerr_*` ids, the same on every Android since 4.x).
const ANR_WAIT: &str = "android:id/aerr_wait";
const ANR_CLOSE: &str = "android:id/aerr_close";

/// A stuck state, for the observation and its note.
pub struct StuckState {
    pub reason: String,
    /// Detected at this step (a note is due).
    pub detected: bool,
}

/// Consecutive visits to one screen whose actions did not navigate.
#[derive(Debug, Default)]
pub struct Stuck {
    last: Option<ScreenKey>,
    times: u32,
    /// The last step's actions changed the activity.
    navigated: bool,
    /// The step stuck was detected at, while stuck.
    since: Option<u64>,
    /// Left the screen it was stuck on, at the step it was detected at.
    recovered: Option<u64>,
}

impl Stuck {
    /// Takes in the screen of `step`: the stuck state when the screen has been seen more than
    /// twice in a row and the actions on it did not navigate.
    pub fn observe(&mut self, key: &ScreenKey, step: u64) -> Option<StuckState> {
        let same = self.last.as_ref() == Some(key) && !self.navigated;
        if same {
            self.times += 1;
        } else {
            if let Some(since) = self.since.take() {
                self.recovered = Some(since);
            }
            self.last = Some(key.clone());
            self.times = 1;
        }
        if self.times <= SAME_SCREEN_TIMES {
            return None;
        }
        let detected = self.since.is_none();
        self.since.get_or_insert(step);
        Some(StuckState {
            reason: format!(
                "the same screen {} times in a row; the actions tried here did not navigate",
                self.times
            ),
            detected,
        })
    }

    /// Whether the step's actions navigated away.
    pub fn acted(&mut self, navigated: bool) {
        self.navigated = navigated;
    }

    /// The step stuck was detected at, while stuck.
    pub fn since(&self) -> Option<u64> {
        self.since
    }

    /// The step stuck was detected at, once the crawl left that screen (taken once).
    pub fn take_recovery(&mut self) -> Option<u64> {
        self.recovered.take()
    }
}

/// How droid-crawl takes the crawl off a screen a model keeps it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// One step decided by the heuristic.
    Heuristic,
    /// The heuristic's step did not get out: the app is relaunched.
    Relaunch,
}

/// A model repeating itself (see [`MODEL_STUCK_STEPS`]). A model trying what it has not tried
/// on a screen (a dial pad's next key) explores it; one giving an answer again on a screen since
/// anything was found keeps the crawl where it is: back where back changes nothing, or a cycle
/// of two screens it takes in turn.
#[derive(Debug, Default)]
pub struct ModelStuck {
    times: u32,
    /// The heuristic took its step to get out.
    escaped: bool,
    /// The model's answers since the crawl last found a screen: the screen and the keys of the
    /// answer's actions (`None` for an action that targets nothing on it).
    answers: HashSet<(ScreenKey, Vec<Option<ActionKey>>)>,
    /// Whether the last step was decided by a model, and by an answer given there before.
    last: Option<bool>,
}

impl ModelStuck {
    /// Takes in a step: whether the crawl is stuck on its screen and whether the screen is new
    /// to the run. The escape due at this step, if any.
    pub fn observe(&mut self, stuck: bool, found: bool) -> Option<Escape> {
        if found {
            *self = ModelStuck::default();
            return None;
        }
        if self.escaped {
            return match (stuck, self.last) {
                (true, _) | (_, Some(true)) => {
                    *self = ModelStuck::default();
                    Some(Escape::Relaunch)
                }
                (false, Some(false)) => {
                    (self.times, self.escaped) = (0, false);
                    None
                }
                (false, None) => None,
            };
        }
        self.times = match self.last {
            Some(true) => self.times + 1,
            Some(false) => self.times,
            None => 0,
        };
        (self.times >= MODEL_STUCK_STEPS).then(|| {
            self.escaped = true;
            Escape::Heuristic
        })
    }

    /// Takes in the step's decision on `screen`: the keys of the model's answer, or `None` when
    /// no model decided it.
    pub fn decided(&mut self, screen: &ScreenKey, answer: Option<Vec<Option<ActionKey>>>) {
        self.last = answer.map(|answer| !self.answers.insert((screen.clone(), answer)));
    }
}

/// Steps in a row another app was in front, and whether the app was left by back.
#[derive(Debug, Default)]
pub struct ContextLoss {
    times: u32,
    left_by_back: bool,
}

impl ContextLoss {
    /// Another app is in front once more: how many steps in a row now.
    pub fn lost(&mut self, _package: &str) -> u32 {
        self.times += 1;
        self.times
    }

    /// What the last step did in the app: whether its last action was back. Back that leaves
    /// the app finishes its task (or moves it behind the launcher): no back in the app in
    /// front brings it again, a relaunch does.
    pub fn acted_in_app(&mut self, last_was_back: bool) {
        self.left_by_back = last_was_back;
    }

    /// Whether the app in front came up after back in the app under test, on the first step
    /// out of it.
    pub fn left_by_back(&self) -> bool {
        self.left_by_back && self.times == 1
    }

    /// The app is in front: `Some(steps it was out)` when it had been lost.
    pub fn back_in_app(&mut self) -> Option<u32> {
        (self.times > 0).then(|| std::mem::take(&mut self.times))
    }

    pub fn reset(&mut self) {
        self.times = 0;
        self.left_by_back = false;
    }
}

/// The system's "isn't responding" dialog.
#[derive(Debug, Default)]
pub struct AnrDialog {
    /// ANRs answered per screen of the app (the last one seen before the dialog).
    waits: std::collections::HashMap<String, u32>,
}

impl AnrDialog {
    /// The button to press when the observation shows the dialog: "Wait", or "Close app"
    /// after [`WAITS_PER_SCREEN`] waits for the same app.
    pub fn button<'o>(&mut self, observation: &'o Observation) -> Option<&'o UiElement> {
        let find = |id: &str| observation.elements.iter().find(|e| e.resource_id == id);
        let wait = find(ANR_WAIT);
        let close = find(ANR_CLOSE);
        wait.or(close)?;
        let title = observation
            .elements
            .iter()
            .find(|e| !e.text.is_empty())
            .map(|e| e.text.clone())
            .unwrap_or_default();
        let waited = self.waits.entry(title).or_default();
        *waited += 1;
        match (*waited > WAITS_PER_SCREEN, wait, close) {
            (true, _, Some(close)) | (false, None, Some(close)) => Some(close),
            (_, Some(wait), _) => Some(wait),
            (_, None, None) => None,
        }
    }
}

/// How the crawl answers the system's runtime permission dialog for the app under test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Permissions {
    /// Allow: what lies behind a permission is part of the app (the default).
    #[default]
    Grant,
    /// Deny: how the app copes without it.
    Deny,
    /// Neither: the dialog is another app in front (back, then a relaunch).
    Leave,
}

impl Permissions {
    /// What a tap of this answer did to the request, as the driver's reasoning says it.
    pub fn done(self) -> &'static str {
        match self {
            Permissions::Grant => "granted",
            Permissions::Deny => "denied",
            Permissions::Leave => "left",
        }
    }
}

/// The packages that show Android's runtime permission dialog: the permission controller
/// (Android 10 and later, AOSP's and Google's builds) and the package installer before it.
const PERMISSION_PACKAGES: [&str; 4] = [
    "com.android.permissioncontroller",
    "com.google.android.permissioncontroller",
    "com.android.packageinstaller",
    "com.google.android.packageinstaller",
];

/// The dialog's buttons (AOSP's ids, the same since Android 6), in the order each answer
/// prefers them: a grant that lasts before one for this time only, a plain deny before
/// "don't ask again".
const ALLOW_BUTTONS: [&str; 4] = [
    "permission_allow_button",
    "permission_allow_foreground_only_button",
    "permission_allow_always_button",
    "permission_allow_one_time_button",
];
const DENY_BUTTONS: [&str; 2] = [
    "permission_deny_button",
    "permission_deny_and_dont_ask_again_button",
];

/// The system's permission dialog, answered once per request: a dialog still showing the same
/// request right after its answer (a tap that did nothing) is left as another app in front.
#[derive(Debug, Default)]
pub struct PermissionDialog {
    /// The request answered last, while the app under test has not been in front since.
    answered: Option<String>,
}

impl PermissionDialog {
    /// The button to tap when the observation shows the dialog and `answer` says to tap one,
    /// with the request it answers (the dialog's message).
    pub fn button<'o>(
        &mut self,
        observation: &'o Observation,
        answer: Permissions,
    ) -> Option<(&'o UiElement, String)> {
        let ids: &[&str] = match answer {
            Permissions::Grant => &ALLOW_BUTTONS,
            Permissions::Deny => &DENY_BUTTONS,
            Permissions::Leave => return None,
        };
        let button = ids.iter().find_map(|id| {
            observation
                .elements
                .iter()
                .find(|e| is_permission_widget(&e.resource_id, id))
        })?;
        let request = observation
            .elements
            .iter()
            .find(|e| is_permission_widget(&e.resource_id, "permission_message"))
            .map_or_else(|| "a permission".to_string(), |e| e.text.clone());
        if self.answered.as_ref() == Some(&request) {
            return None;
        }
        self.answered = Some(request.clone());
        Some((button, request))
    }

    /// The app under test is in front: its next request is answered, the same one too.
    pub fn back_in_app(&mut self) {
        self.answered = None;
    }
}

/// Whether the observation shows the system's permission dialog (one of its buttons).
pub fn shows_permission_dialog(observation: &Observation) -> bool {
    observation.elements.iter().any(|e| {
        ALLOW_BUTTONS
            .iter()
            .chain(&DENY_BUTTONS)
            .any(|name| is_permission_widget(&e.resource_id, name))
    })
}

/// Whether `resource_id` is the permission dialog's widget `name` (`package:id/name` of one of
/// [`PERMISSION_PACKAGES`]): an app's own widget of that name is not the system's dialog.
fn is_permission_widget(resource_id: &str, name: &str) -> bool {
    resource_id
        .split_once(":id/")
        .is_some_and(|(package, id)| id == name && PERMISSION_PACKAGES.contains(&package))
}

/// Whether the observation shows the system's "isn't responding" dialog.
pub fn shows_anr_dialog(observation: &Observation) -> bool {
    observation
        .elements
        .iter()
        .any(|e| e.resource_id == ANR_WAIT || e.resource_id == ANR_CLOSE)
}

/// The `anr` note for the dialog on `observation`: the ANR block of the system log when there
/// is one for the app, else what the dialog says.
pub fn anr_note(
    package: &str,
    observation: &Observation,
    system_log: &str,
    since_launch: &[ReproStep],
) -> Note {
    let logged = crate::crash::parse_anrs(system_log)
        .into_iter()
        .find(|anr| anr.package == package);
    let texts: Vec<&str> = observation
        .elements
        .iter()
        .map(|e| e.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    let mut anr = logged.unwrap_or_else(|| {
        let reason = texts
            .first()
            .copied()
            .unwrap_or("not responding")
            .to_string();
        AnrData {
            package: package.to_string(),
            signature: anr_signature(package, "", &reason),
            trace: texts.join("\n"),
            reason,
            ..AnrData::default()
        }
    });
    anr.repro_steps = since_launch.to_vec();
    anr.screenshot_path = observation.screenshot_path.clone();
    anr.recovered = true;
    Note::now(NoteKind::Anr, format!("ANR: {}", anr.reason))
        .with_data(serde_json::to_value(&anr).ok())
}

/// Whether a capture failed in uiautomator (its idle-state or null-root errors, a dump that
/// was not XML): worth trying again, where a device that is gone is not.
pub fn is_dump_failure(error: &DeviceCaptureError) -> bool {
    match error {
        DeviceCaptureError::Hierarchy(_) => true,
        DeviceCaptureError::Device(device) => matches!(
            device,
            crate::device::DeviceError::Dump { .. } | crate::device::DeviceError::NullRoot
        ),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::ActionType;

    fn key(name: &str) -> ScreenKey {
        ScreenKey::from_stored(name)
    }

    #[test]
    fn stuck_after_the_third_visit_without_navigating_and_recovered_on_leaving() {
        let mut stuck = Stuck::default();
        assert!(stuck.observe(&key("a"), 1).is_none());
        stuck.acted(false);
        assert!(stuck.observe(&key("a"), 2).is_none());
        stuck.acted(false);
        let state = stuck.observe(&key("a"), 3).unwrap();
        assert!(state.detected && state.reason.contains("3 times"));
        stuck.acted(false);
        assert!(!stuck.observe(&key("a"), 4).unwrap().detected);
        stuck.acted(false);
        assert!(stuck.observe(&key("b"), 5).is_none());
        assert_eq!(stuck.take_recovery(), Some(3));
        assert_eq!(stuck.take_recovery(), None);
        // Actions that navigate (to another activity and back) are no sign of being stuck.
        stuck.acted(true);
        assert!(stuck.observe(&key("b"), 6).is_none());
        stuck.acted(true);
        assert!(stuck.observe(&key("b"), 7).is_none());
    }

    #[test]
    fn a_model_repeating_its_answers_gets_a_heuristic_step_then_a_relaunch() {
        let (here, there) = (key("a"), key("b"));
        let back = || Some(vec![Some(ActionKey::back())]);
        let tap = |n: u32| Some(vec![Some(ActionKey::on(ActionType::Click, n.to_string()))]);
        let mut model = ModelStuck::default();
        // Back where back changes nothing: the first answer is new, each one again counts.
        model.decided(&here, back());
        for _ in 0..MODEL_STUCK_STEPS {
            assert_eq!(model.observe(true, false), None);
            model.decided(&here, back());
        }
        assert_eq!(model.observe(true, false), Some(Escape::Heuristic));
        model.decided(&here, None);
        assert_eq!(model.observe(true, false), Some(Escape::Relaunch));
        model.decided(&here, None);
        // A model trying what it has not tried on the screen is exploring it.
        for n in 0..10 {
            assert_eq!(model.observe(true, false), None);
            model.decided(&here, tap(n));
        }
        // A step the heuristic decided starts the count again; a screen found forgets the
        // answers.
        for _ in 1..MODEL_STUCK_STEPS {
            assert_eq!(model.observe(true, false), None);
            model.decided(&here, tap(0));
        }
        assert_eq!(model.observe(true, false), None);
        model.decided(&here, None);
        assert_eq!(model.observe(true, false), None);
        model.decided(&here, tap(0));
        assert_eq!(model.observe(false, true), None);
        model.decided(&there, tap(0));
        assert_eq!(model.observe(false, false), None);
        // Two screens taken in turn: the heuristic steps in; the model repeating itself after
        // that relaunches.
        model.decided(&here, tap(0));
        for turn in 0..MODEL_STUCK_STEPS {
            assert_eq!(model.observe(false, false), None);
            let screen = [&there, &here][turn as usize % 2];
            model.decided(screen, tap(0));
        }
        assert_eq!(model.observe(false, false), Some(Escape::Heuristic));
        model.decided(&here, None);
        assert_eq!(model.observe(false, false), None);
        model.decided(&there, tap(0));
        assert_eq!(model.observe(false, false), Some(Escape::Relaunch));
        // After the heuristic's step, a new answer ends the escape.
        model.decided(&here, None);
        for _ in 0..=MODEL_STUCK_STEPS {
            assert_eq!(model.observe(false, false), None);
            model.decided(&here, back());
        }
        assert_eq!(model.observe(false, false), Some(Escape::Heuristic));
        model.decided(&there, None);
        assert_eq!(model.observe(false, false), None);
        model.decided(&there, tap(7));
        assert_eq!(model.observe(false, false), None);
        model.decided(&here, back());
        assert_eq!(model.observe(false, false), None);
    }

    /// Android's permission dialog as a dump shows it (`controller`'s ids), with `buttons`.
    fn permission_dialog(controller: &str, message: &str, buttons: &[(&str, &str)]) -> Observation {
        let element = |id: &str, text: &str| UiElement {
            resource_id: format!("{controller}:id/{id}"),
            text: text.to_string(),
            clickable: buttons.iter().any(|(b, _)| *b == id),
            ..UiElement::default()
        };
        let mut elements = vec![element("permission_message", message)];
        elements.extend(buttons.iter().map(|(id, text)| element(id, text)));
        Observation {
            package: Some(controller.to_string()),
            elements,
            ..Observation::default()
        }
    }

    #[test]
    fn the_permission_dialog_is_answered_once_per_request_as_asked() {
        let q = permission_dialog(
            "com.android.permissioncontroller",
            "Allow Camera to take pictures and record video?",
            &[
                (
                    "permission_allow_foreground_only_button",
                    "While using the app",
                ),
                ("permission_allow_one_time_button", "Only this time"),
                ("permission_deny_button", "Don't allow"),
            ],
        );
        let mut dialog = PermissionDialog::default();
        let (button, request) = dialog.button(&q, Permissions::Grant).unwrap();
        assert_eq!(button.text, "While using the app");
        assert_eq!(request, "Allow Camera to take pictures and record video?");
        // Still showing the same request right after its answer: not tapped again.
        assert!(dialog.button(&q, Permissions::Grant).is_none());
        // Another request in a row is answered; after the app was in front, the same one too.
        let contacts = permission_dialog(
            "com.google.android.permissioncontroller",
            "Allow Calendar to access your contacts?",
            &[
                ("permission_allow_button", "Allow"),
                ("permission_deny_button", "Deny"),
            ],
        );
        assert_eq!(
            dialog.button(&contacts, Permissions::Grant).unwrap().0.text,
            "Allow"
        );
        dialog.back_in_app();
        assert!(shows_permission_dialog(&q) && shows_permission_dialog(&contacts));
        let mut denied = PermissionDialog::default();
        assert_eq!(
            denied.button(&q, Permissions::Deny).unwrap().0.text,
            "Don't allow"
        );
        assert!(PermissionDialog::default()
            .button(&q, Permissions::Leave)
            .is_none());
        // Android 6 to 9: the package installer shows it.
        let old = permission_dialog(
            "com.android.packageinstaller",
            "Allow Notes to access photos, media, and files on your device?",
            &[("permission_allow_button", "ALLOW")],
        );
        assert_eq!(
            dialog.button(&old, Permissions::Grant).unwrap().0.text,
            "ALLOW"
        );
    }

    #[test]
    fn an_apps_own_widget_named_like_the_dialogs_is_no_permission_dialog() {
        let own = permission_dialog(
            "com.example.app",
            "Allow access?",
            &[("permission_allow_button", "Allow")],
        );
        assert!(PermissionDialog::default()
            .button(&own, Permissions::Grant)
            .is_none());
        assert!(!shows_permission_dialog(&own));
    }

    #[test]
    fn context_loss_counts_steps_in_a_row() {
        let mut loss = ContextLoss::default();
        assert_eq!(loss.back_in_app(), None);
        assert_eq!((loss.lost("x"), loss.lost("x")), (1, 2));
        assert_eq!(loss.back_in_app(), Some(2));
        assert_eq!(loss.lost("x"), 1);
    }
}
