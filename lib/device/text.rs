//! Turning text into device shell commands that type it, and nothing else.
//!
//! Text may come from an LLM, so it is untrusted: every piece reaches the device shell inside
//! single quotes (the only quoting with no special characters inside; `'` itself becomes
//! `'\''`), and only after the `input text` quirks are neutralised:
//!
//! - `input text` cannot type a space (the argument is one shell word on older devices), so
//!   words go one by one with `input keyevent KEYCODE_SPACE` between them, one per space.
//! - `input text` rewrites `%s` to a space (Input.java's `sendText`). A literal `%` followed by
//!   `s` is therefore split across two `input text` calls (`…%` then `s…`): the rewrite only
//!   looks inside one argument. This is the split the `type.pl` adb typing script uses
//!   (`split(/(?<=%)(?=s)/)`); `%` anywhere else is typed as it is.
//! - Newline and tab become `KEYCODE_ENTER` and `KEYCODE_TAB`; other control characters are
//!   refused.
//! - Non-ASCII text cannot be typed by `input text` on real devices (it drops or garbles it), so
//!   it goes whole through the ADB Keyboard IME's base64 broadcast, or is refused.

use base64::Engine;

/// Why text cannot be typed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TextError {
    #[error("text contains control character U+{0:04X}, which cannot be typed")]
    ControlCharacter(u32),
}

/// Wraps a string in single quotes for the device shell: nothing inside is interpreted.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Whether `input text` can type this text (printable ASCII, newline, tab).
pub fn is_plain_ascii(text: &str) -> bool {
    text.chars()
        .all(|c| c == '\n' || c == '\t' || (' '..='~').contains(&c))
}

/// The shell commands that type printable-ASCII `text` through `input text`, in order.
pub fn ascii_commands(text: &str) -> Result<Vec<String>, TextError> {
    let mut commands = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, commands: &mut Vec<String>| {
        for piece in split_percent_s(word) {
            commands.push(format!("input text {}", shell_quote(piece)));
        }
        word.clear();
    };
    for c in text.chars() {
        let key = match c {
            ' ' => Some("KEYCODE_SPACE"),
            '\n' => Some("KEYCODE_ENTER"),
            '\t' => Some("KEYCODE_TAB"),
            c if (' '..='~').contains(&c) => None,
            c => return Err(TextError::ControlCharacter(u32::from(c))),
        };
        match key {
            Some(key) => {
                flush(&mut word, &mut commands);
                commands.push(format!("input keyevent {key}"));
            }
            None => word.push(c),
        }
    }
    flush(&mut word, &mut commands);
    Ok(commands)
}

/// Splits a word between every `%` and a following `s`, so no piece contains `%s`.
fn split_percent_s(word: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (i, _) in word.match_indices("%s") {
        pieces.push(&word[start..=i]);
        start = i + 1;
    }
    if start < word.len() {
        pieces.push(&word[start..]);
    }
    pieces
}

/// The broadcast that makes the ADB Keyboard IME type `text` (any Unicode).
pub fn ime_broadcast_command(text: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!(
        "am broadcast -a ADB_INPUT_B64 --es msg {}",
        shell_quote(&encoded)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a POSIX shell makes of one single-quoted word (enough of sh to check our quoting).
    fn unquote_sh(word: &str) -> String {
        let mut out = String::new();
        let mut chars = word.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\'' => {
                    for inner in chars.by_ref() {
                        if inner == '\'' {
                            break;
                        }
                        out.push(inner);
                    }
                }
                '\\' => out.extend(chars.next()),
                c => out.push(c),
            }
        }
        out
    }

    /// Replays commands the way a device would: what `input text` and KEYCODE_SPACE produce.
    fn typed(commands: &[String]) -> String {
        let mut out = String::new();
        for command in commands {
            if let Some(arg) = command.strip_prefix("input text ") {
                out.push_str(&unquote_sh(arg).replace("%s", " "));
            } else {
                out.push(match command.as_str() {
                    "input keyevent KEYCODE_SPACE" => ' ',
                    "input keyevent KEYCODE_ENTER" => '\n',
                    "input keyevent KEYCODE_TAB" => '\t',
                    other => panic!("unexpected {other}"),
                });
            }
        }
        out
    }

    #[test]
    fn hostile_text_round_trips_through_quoting_and_input_rules() {
        for text in [
            "a\"b",
            "it's",
            "a;reboot",
            "x && id",
            "a|b",
            "$(id)",
            "`id`",
            r"back\slash",
            "<tag>",
            "100%sure",
            "%%s%",
            "two  spaces   three",
            " lead and trail ",
            "line\nbreak\ttab",
            "'''",
        ] {
            let commands = ascii_commands(text).unwrap();
            assert_eq!(typed(&commands), text, "{commands:?}");
            for command in &commands {
                if let Some(arg) = command.strip_prefix("input text ") {
                    assert!(arg.starts_with('\'') && arg.ends_with('\''), "{arg}");
                    assert!(!unquote_sh(arg).contains("%s"), "{arg}");
                }
            }
        }
    }

    #[test]
    fn words_and_spaces() {
        assert_eq!(
            ascii_commands("hi  there").unwrap(),
            [
                "input text 'hi'",
                "input keyevent KEYCODE_SPACE",
                "input keyevent KEYCODE_SPACE",
                "input text 'there'"
            ]
        );
        assert_eq!(ascii_commands("it's").unwrap(), [r"input text 'it'\''s'"]);
        assert_eq!(
            ascii_commands("5%sale").unwrap(),
            ["input text '5%'", "input text 'sale'"]
        );
        assert!(ascii_commands("").unwrap().is_empty());
    }

    #[test]
    fn control_characters_are_refused() {
        assert_eq!(
            ascii_commands("a\u{7}b"),
            Err(TextError::ControlCharacter(7))
        );
    }

    #[test]
    fn ascii_detection_and_ime_broadcast() {
        assert!(is_plain_ascii("hello world\n"));
        assert!(!is_plain_ascii("héllo"));
        assert!(!is_plain_ascii("你好"));
        assert_eq!(
            ime_broadcast_command("你好"),
            "am broadcast -a ADB_INPUT_B64 --es msg '5L2g5aW9'"
        );
    }
}
