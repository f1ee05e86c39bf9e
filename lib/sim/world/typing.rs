//! Text and keys: what `input text`, the ADB Keyboard and key events type into the focused
//! field, and the keys that navigate.

use super::{Front, InputError, Stack, World, ADB_KEYBOARD_IME};
use crate::sim::dispatch;
use crate::sim::keys::{keycode, typed_char, KEY_APP_SWITCH, KEY_BACK, KEY_DEL, KEY_HOME};
use crate::sim::model::Action;
impl World {
    /// `input text` after the device shell has unquoted it: only what a real device can type
    /// (ASCII printable; `%s` means space) reaches the focused field. Anything else makes the
    /// whole command fail, typing nothing, as the real one does.
    pub fn input_text(&mut self, text: &str) -> Result<(), InputError> {
        self.log_input("text", vec![("text", text.into())]);
        let text = text.replace("%s", " ");
        if !text.chars().all(|c| c == ' ' || c.is_ascii_graphic()) {
            return Err(InputError::Untypable(text));
        }
        self.type_text(&text);
        Ok(())
    }

    /// Text through the ADB Keyboard IME (any Unicode); error when that IME is not installed
    /// and selected.
    pub fn ime_text(&mut self, text: &str) -> Result<(), InputError> {
        self.log_input("ime_text", vec![("text", text.into())]);
        if !self.adb_keyboard_installed() || self.ime_current != ADB_KEYBOARD_IME {
            return Err(InputError::ImeNotActive);
        }
        self.type_text(text);
        Ok(())
    }

    /// `KEYCODE_BACK`, `BACK`, `4`, `KEYCODE_HOME`, `3`, `KEYCODE_APP_SWITCH`, `187`,
    /// `KEYCODE_SPACE`, `KEYCODE_DEL`, `KEYCODE_ENTER`, letters and digits...; unknown names are
    /// an error, as the real `input` reports one.
    pub fn key(&mut self, key: &str) -> Result<(), InputError> {
        self.log_input("key", vec![("key", key.into())]);
        let code = keycode(key).ok_or_else(|| InputError::UnknownKey(key.to_string()))?;
        match code {
            KEY_HOME => self.go_home(),
            KEY_BACK => self.back(),
            KEY_APP_SWITCH => {
                self.anr_showing = false;
                self.front = if self.front == Front::Recents {
                    self.front_after_leaving_recents()
                } else {
                    Front::Recents
                };
                self.shown();
            }
            KEY_DEL => self.delete_char(),
            _ => {
                if let Some(c) = typed_char(code) {
                    self.type_text(&c.to_string());
                }
            }
        }
        Ok(())
    }

    /// The field's current content in the top entry: what was typed, else empty (the text a
    /// dump recorded in an untouched field is taken as its placeholder).
    pub(super) fn field_text(&self, index: usize) -> String {
        self.top_entry()
            .and_then(|e| e.typed.get(&index).cloned())
            .unwrap_or_default()
    }

    /// The focused field of the top entry: the one tapped last, else the one the dump marks
    /// focused.
    pub(super) fn focused_field(&self) -> Option<usize> {
        if self.front != Front::App || self.anr_showing {
            return None;
        }
        let entry = self.top_entry()?;
        if entry.focus.is_some() {
            return entry.focus;
        }
        let screen = self.screen_for(&entry.view);
        screen
            .nodes()
            .iter()
            .position(|n| n.is_editable() && n.flag("focused"))
    }

    pub(super) fn type_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let Some(field) = self.focused_field() else {
            return;
        };
        let content = self.field_text(field) + text;
        if let Some(entry) = self.top_entry_mut() {
            entry.typed.insert(field, content.clone());
            entry.focus = Some(field);
        }
        let Some(from) = self.top_screen_index() else {
            return;
        };
        let screen = self.model.screen(from);
        let resource_id = screen.nodes()[field].attr("resource-id").to_string();
        let ranked = dispatch::for_field(&screen.roots, field);
        if let Some(to) = self.pick(from, Action::Input, &ranked) {
            self.fire(&to, Stack::Push, Some((resource_id, content)));
        } else if let Some(inferred) = self.infer(from, Action::Input, field) {
            self.fire_inferred(inferred, Stack::Push, Some((resource_id, content)));
        }
    }

    pub(super) fn delete_char(&mut self) {
        let Some(field) = self.focused_field() else {
            return;
        };
        let mut content = self.field_text(field);
        content.pop();
        if let Some(entry) = self.top_entry_mut() {
            entry.typed.insert(field, content);
        }
    }
}
