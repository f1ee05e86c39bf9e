//! Text for people's screens: what came from an app, a model or a device is made safe before a
//! terminal (or a report's layout) shows it.

/// Text from an app, a model or a device, safe for a terminal or a layout: control
/// characters (the escape of an escape sequence included) and bidirectional overrides (which
/// can make text read other than it is) dropped, tabs as spaces, newlines kept.
pub fn clean(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c {
            '\n' => Some('\n'),
            '\t' => Some(' '),
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => None,
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_has_no_controls_and_no_overrides() {
        assert_eq!(
            clean("\u{1b}[31mred\u{1b}[0m\tok\r\nline \u{202e}txt.exe\u{200d}"),
            "[31mred[0m ok\nline txt.exe\u{200d}"
        );
    }
}
