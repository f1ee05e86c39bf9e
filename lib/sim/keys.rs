//! Android key codes as `input keyevent` takes them: `KEYCODE_BACK`, `BACK` or `4`.

pub const KEY_HOME: u32 = 3;
pub const KEY_BACK: u32 = 4;
pub const KEY_DEL: u32 = 67;
pub const KEY_APP_SWITCH: u32 = 187;

/// Android key codes by their `KEYCODE_` name (the ones `input keyevent` users reach for).
const KEYCODES: &[(&str, u32)] = &[
    ("SOFT_LEFT", 1),
    ("SOFT_RIGHT", 2),
    ("HOME", 3),
    ("BACK", 4),
    ("CALL", 5),
    ("ENDCALL", 6),
    ("STAR", 17),
    ("POUND", 18),
    ("DPAD_UP", 19),
    ("DPAD_DOWN", 20),
    ("DPAD_LEFT", 21),
    ("DPAD_RIGHT", 22),
    ("DPAD_CENTER", 23),
    ("VOLUME_UP", 24),
    ("VOLUME_DOWN", 25),
    ("POWER", 26),
    ("CAMERA", 27),
    ("CLEAR", 28),
    ("COMMA", 55),
    ("PERIOD", 56),
    ("ALT_LEFT", 57),
    ("ALT_RIGHT", 58),
    ("SHIFT_LEFT", 59),
    ("SHIFT_RIGHT", 60),
    ("TAB", 61),
    ("SPACE", 62),
    ("SYM", 63),
    ("EXPLORER", 64),
    ("ENVELOPE", 65),
    ("ENTER", 66),
    ("DEL", 67),
    ("GRAVE", 68),
    ("MINUS", 69),
    ("EQUALS", 70),
    ("LEFT_BRACKET", 71),
    ("RIGHT_BRACKET", 72),
    ("BACKSLASH", 73),
    ("SEMICOLON", 74),
    ("APOSTROPHE", 75),
    ("SLASH", 76),
    ("AT", 77),
    ("NUM", 78),
    ("HEADSETHOOK", 79),
    ("FOCUS", 80),
    ("PLUS", 81),
    ("MENU", 82),
    ("NOTIFICATION", 83),
    ("SEARCH", 84),
    ("MEDIA_PLAY_PAUSE", 85),
    ("MEDIA_STOP", 86),
    ("MEDIA_NEXT", 87),
    ("MEDIA_PREVIOUS", 88),
    ("MUTE", 91),
    ("PAGE_UP", 92),
    ("PAGE_DOWN", 93),
    ("ESCAPE", 111),
    ("FORWARD_DEL", 112),
    ("CTRL_LEFT", 113),
    ("CTRL_RIGHT", 114),
    ("MOVE_HOME", 122),
    ("MOVE_END", 123),
    ("INSERT", 124),
    ("VOLUME_MUTE", 164),
    ("APP_SWITCH", 187),
    ("SLEEP", 223),
    ("WAKEUP", 224),
    ("ASSIST", 219),
];

/// The key code for a name (`KEYCODE_BACK`, `BACK`) or a number (`4`).
pub fn keycode(key: &str) -> Option<u32> {
    if let Ok(code) = key.parse::<u32>() {
        return Some(code);
    }
    let name = key.strip_prefix("KEYCODE_").unwrap_or(key);
    if let Some(&(_, code)) = KEYCODES.iter().find(|(n, _)| *n == name) {
        return Some(code);
    }
    let mut chars = name.chars();
    match (chars.next(), chars.next()) {
        (Some(d @ '0'..='9'), None) => Some(7 + (d as u32 - '0' as u32)),
        (Some(l @ 'A'..='Z'), None) => Some(29 + (l as u32 - 'A' as u32)),
        _ => None,
    }
}

/// The character a key types without modifiers.
pub fn typed_char(code: u32) -> Option<char> {
    match code {
        7..=16 => char::from_digit(code - 7, 10),
        29..=54 => char::from_u32('a' as u32 + code - 29),
        55 => Some(','),
        56 => Some('.'),
        62 => Some(' '),
        68 => Some('`'),
        69 => Some('-'),
        70 => Some('='),
        71 => Some('['),
        72 => Some(']'),
        73 => Some('\\'),
        74 => Some(';'),
        75 => Some('\''),
        76 => Some('/'),
        77 => Some('@'),
        81 => Some('+'),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keycodes_by_name_short_name_and_number() {
        assert_eq!(keycode("KEYCODE_BACK"), Some(KEY_BACK));
        assert_eq!(keycode("BACK"), Some(4));
        assert_eq!(keycode("4"), Some(4));
        assert_eq!(keycode("KEYCODE_APP_SWITCH"), Some(KEY_APP_SWITCH));
        assert_eq!(keycode("KEYCODE_A"), Some(29));
        assert_eq!(keycode("KEYCODE_9"), Some(16));
        assert_eq!(keycode("KEYCODE_NOPE"), None);
        assert_eq!(typed_char(29 + 25), Some('z'));
        assert_eq!(typed_char(keycode("SPACE").unwrap_or(0)), Some(' '));
    }
}
