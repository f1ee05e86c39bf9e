//! The wire vocabulary: the words an event's fields take (what an action does, why it
//! failed, what a note is about), each a closed set of known values that lets any other value
//! through.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Defines a word of the wire vocabulary: an enum of the known values, each with its wire name,
/// and `Other` for any other string, which passes through untouched (a newer producer's word is
/// not an error). Serialised as the plain string.
macro_rules! wire_words {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A value this version does not know, kept as it came.
            Other(String),
        }

        impl $name {
            /// Every known value, in the order they are defined.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// The wire name.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $wire,)+
                    $name::Other(other) => other,
                }
            }

            /// The value of a wire name; `Other` for names this version does not know.
            pub fn parse(name: &str) -> $name {
                match name {
                    $($wire => $name::$variant,)+
                    other => $name::Other(other.to_string()),
                }
            }

            /// Whether this is a value this version knows.
            pub fn is_known(&self) -> bool {
                !matches!(self, $name::Other(_))
            }
        }

        impl Default for $name {
            /// The empty word: no value given.
            fn default() -> $name {
                $name::Other(String::new())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(name: &str) -> $name {
                $name::parse(name)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
                Ok($name::parse(&name))
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let known: Vec<&str> = vec![$($wire),+];
                schemars::json_schema!({
                    "type": "string",
                    "description": format!(
                        "One of {}; other values pass through as they are.",
                        known.join(", ")
                    ),
                    "examples": known,
                })
            }
        }
    };
}

wire_words! {
    /// What an action does.
    ActionType {
        Click = "click",
        Input = "input",
        LongPress = "long_press",
        ScrollUp = "scroll_up",
        ScrollDown = "scroll_down",
        SwipeLeft = "swipe_left",
        SwipeRight = "swipe_right",
        Back = "back",
        Wait = "wait",
        Home = "home",
        Recents = "recents",
        Tap = "tap",
        /// Force-stop the app and start it again (a decision's `relaunch`, as droid-act reports it).
        Relaunch = "relaunch",
    }
}

wire_words! {
    /// Why an action failed (a result's `error_kind`).
    ErrorKind {
        /// The target was unusable (a box off the screen, an unknown ref); the batch went on.
        InvalidBbox = "invalid_bbox",
        /// The action itself was unusable (an unknown type, a wait too long, no package to relaunch).
        InvalidAction = "invalid_action",
        /// An earlier action of the batch failed.
        Skipped = "skipped",
        /// The device failed or went away.
        Device = "device",
        /// Text the device cannot type (non-ASCII without the ADB Keyboard).
        UnsupportedText = "unsupported_text",
    }
}

wire_words! {
    /// What a note is about.
    NoteKind {
        /// A change of the driver's state.
        State = "state",
        /// The same screen again and again.
        Stuck = "stuck",
        /// The app crashed (the stack trace in `data`).
        Crash = "crash",
        /// The app stopped responding.
        Anr = "anr",
        /// The device showed another app.
        ContextLoss = "context_loss",
        /// The app was restarted.
        Relaunch = "relaunch",
        /// Files the run left behind and what they measure (video, pcap, MobSF report, the
        /// APK's declared activities): `data.artifact` names the integration, see
        /// docs/integrations.md.
        Artifact = "artifact",
        Warning = "warning",
        /// A model's answer could not be used.
        InvalidResponse = "invalid_response",
        /// A stage stopped.
        Error = "error",
        /// uiautomator failed to dump the hierarchy.
        UiautomatorCrash = "uiautomator_crash",
        /// Who decides changed (the hybrid decider: the heuristic, the model); `data.decides`
        /// names who decides from this step on.
        Switch = "switch",
    }
}

impl ActionType {
    /// The wire names of the actions a decision may hold.
    pub fn decidable_names() -> Vec<&'static str> {
        ActionType::KNOWN
            .iter()
            .filter(|a| a.is_decidable())
            .map(ActionType::as_str)
            .collect()
    }

    /// The actions a decision may hold (a `relaunch` is a decision's field, not one of its
    /// actions).
    pub fn is_decidable(&self) -> bool {
        self.is_known() && *self != ActionType::Relaunch
    }

    /// Scrolls and swipes: what a scrollable container takes.
    pub const GESTURES: [ActionType; 4] = [
        ActionType::ScrollDown,
        ActionType::ScrollUp,
        ActionType::SwipeLeft,
        ActionType::SwipeRight,
    ];

    pub fn is_gesture(&self) -> bool {
        ActionType::GESTURES.contains(self)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn action_names_round_trip() {
        for action in ActionType::KNOWN {
            assert_eq!(&ActionType::parse(action.as_str()), action);
            let json = serde_json::to_value(action).unwrap();
            assert_eq!(json, Value::from(action.as_str()));
        }
        let fly = ActionType::parse("fly");
        assert_eq!(fly, ActionType::Other("fly".into()));
        assert_eq!(serde_json::to_value(&fly).unwrap(), Value::from("fly"));
        assert!(!fly.is_known() && !ActionType::Relaunch.is_decidable());
        assert!(!ActionType::decidable_names().contains(&"relaunch"));
    }
}
