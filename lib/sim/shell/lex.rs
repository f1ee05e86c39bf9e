//! Lexing: a command line into words (quotes removed, parameters kept for later) and operators.

use thiserror::Error;

/// Why a command line could not be parsed; the message is what mksh prints after `/system/bin/sh: `.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ParseError {
    #[error("no closing quote")]
    UnterminatedQuote,
    #[error("syntax error: '{0}' unexpected")]
    Unexpected(String),
    #[error("syntax error: unexpected end of input after '{0}'")]
    MissingOperand(String),
    #[error("{0}: not supported by this simulated shell")]
    Unsupported(String),
    #[error("{0}: bad substitution")]
    BadSubstitution(String),
}

/// A piece of a word: literal text, or a parameter expanded when the command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Param(String),
}

/// One word of a command line, quotes removed, parameters still to expand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    pub parts: Vec<Part>,
    /// Quoting was used: the word stays (maybe empty) even when its expansion is empty.
    pub quoted: bool,
}

impl Word {
    pub fn literal(text: &str) -> Word {
        Word {
            parts: vec![Part::Text(text.to_string())],
            quoted: false,
        }
    }

    fn push(&mut self, c: char) {
        match self.parts.last_mut() {
            Some(Part::Text(text)) => text.push(c),
            _ => self.parts.push(Part::Text(c.to_string())),
        }
    }

    /// The text when the word has no parameter.
    pub(super) fn as_literal(&self) -> Option<String> {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => Some(text.as_str()),
                Part::Param(_) => None,
            })
            .collect()
    }

    /// The word after expansion; `None` when an unquoted word expanded to nothing (it vanishes,
    /// as `echo $UNSET x` prints `x`).
    pub fn expand(&self, lookup: &dyn Fn(&str) -> String) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Param(name) => out.push_str(&lookup(name)),
            }
        }
        let vanishes = out.is_empty() && !self.quoted && !self.parts.is_empty();
        (!vanishes).then_some(out)
    }

    pub(super) fn describe(&self) -> String {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => text.clone(),
                Part::Param(name) => format!("${{{name}}}"),
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Token {
    Word(Word),
    /// `N>`, `N>>`, `N<`, with the descriptor.
    Redirect {
        fd: u8,
        append: bool,
        input: bool,
    },
    /// `N>&M`.
    Duplicate {
        fd: u8,
        to: u8,
    },
    And,
    Or,
    Pipe,
    /// `;` or a newline (`newline` tells which: only a newline may end an empty statement).
    Separator {
        newline: bool,
    },
}

impl Token {
    pub(super) fn describe(&self) -> String {
        match self {
            Token::Word(word) => word.describe(),
            Token::Redirect { input: true, .. } => "<".into(),
            Token::Redirect { append: true, .. } => ">>".into(),
            Token::Redirect { .. } => ">".into(),
            Token::Duplicate { .. } => ">&".into(),
            Token::And => "&&".into(),
            Token::Or => "||".into(),
            Token::Pipe => "|".into(),
            Token::Separator { .. } => ";".into(),
        }
    }
}

pub(super) fn tokenize(line: &str) -> Result<Vec<Token>, ParseError> {
    let mut tokens = Vec::new();
    let mut chars = line.chars().peekable();
    let mut word = Word::default();
    // A word exists once any character or quote was seen: `''` is an empty argument.
    let mut in_word = false;

    fn finish(tokens: &mut Vec<Token>, word: &mut Word, in_word: &mut bool) {
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
        }
        *in_word = false;
    }

    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => finish(&mut tokens, &mut word, &mut in_word),
            '\n' | ';' => {
                finish(&mut tokens, &mut word, &mut in_word);
                tokens.push(Token::Separator { newline: c == '\n' });
            }
            '#' if !in_word => {
                for next in chars.by_ref() {
                    if next == '\n' {
                        tokens.push(Token::Separator { newline: true });
                        break;
                    }
                }
            }
            '\'' => {
                in_word = true;
                word.quoted = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(other) => word.push(other),
                        None => return Err(ParseError::UnterminatedQuote),
                    }
                }
            }
            '"' => {
                in_word = true;
                word.quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(escaped @ ('"' | '\\' | '$' | '`')) => word.push(escaped),
                            Some('\n') => {}
                            Some(other) => {
                                word.push('\\');
                                word.push(other);
                            }
                            None => return Err(ParseError::UnterminatedQuote),
                        },
                        Some('`') => return Err(ParseError::Unsupported("`...`".into())),
                        Some('$') => match parameter(&mut chars)? {
                            Some(name) => word.parts.push(Part::Param(name)),
                            None => word.push('$'),
                        },
                        Some(other) => word.push(other),
                        None => return Err(ParseError::UnterminatedQuote),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(other) => {
                    in_word = true;
                    word.quoted = true;
                    word.push(other);
                }
                None => {
                    in_word = true;
                    word.push('\\');
                }
            },
            '`' => return Err(ParseError::Unsupported("`...`".into())),
            '$' => {
                in_word = true;
                match parameter(&mut chars)? {
                    Some(name) => word.parts.push(Part::Param(name)),
                    None => word.push('$'),
                }
            }
            '&' => {
                finish(&mut tokens, &mut word, &mut in_word);
                if chars.peek() == Some(&'&') {
                    chars.next();
                    tokens.push(Token::And);
                } else {
                    return Err(ParseError::Unsupported("background jobs (&)".into()));
                }
            }
            '|' => {
                finish(&mut tokens, &mut word, &mut in_word);
                if chars.peek() == Some(&'|') {
                    chars.next();
                    tokens.push(Token::Or);
                } else {
                    tokens.push(Token::Pipe);
                }
            }
            '>' | '<' => {
                // A lone unquoted digit right before the operator names the descriptor.
                let digit = word.as_literal().filter(|_| in_word && !word.quoted);
                let fd = match digit.as_deref() {
                    Some(digit @ ("0" | "1" | "2")) => {
                        word = Word::default();
                        in_word = false;
                        Some(digit.as_bytes()[0] - b'0')
                    }
                    _ => None,
                };
                finish(&mut tokens, &mut word, &mut in_word);
                let input = c == '<';
                let fd = fd.unwrap_or(if input { 0 } else { 1 });
                if !input && chars.peek() == Some(&'&') {
                    chars.next();
                    match chars.next() {
                        Some(to @ ('1' | '2')) => tokens.push(Token::Duplicate {
                            fd,
                            to: to as u8 - b'0',
                        }),
                        _ => return Err(ParseError::Unsupported(">& to that target".into())),
                    }
                } else {
                    let append = !input && chars.peek() == Some(&'>');
                    if append {
                        chars.next();
                    }
                    tokens.push(Token::Redirect { fd, append, input });
                }
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    finish(&mut tokens, &mut word, &mut in_word);
    Ok(tokens)
}

/// After a `$`: the parameter's name, or `None` when the `$` is a literal character.
fn parameter(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
) -> Result<Option<String>, ParseError> {
    let is_name_start = |c: &char| c.is_ascii_alphabetic() || *c == '_';
    let is_name = |c: &char| c.is_ascii_alphanumeric() || *c == '_';
    match chars.peek().copied() {
        Some('(') => Err(ParseError::Unsupported("$(...)".into())),
        Some('{') => {
            chars.next();
            let mut name = String::new();
            loop {
                match chars.next() {
                    Some('}') => break,
                    Some(c) => name.push(c),
                    None => return Err(ParseError::BadSubstitution(format!("${{{name}"))),
                }
            }
            let special = matches!(name.as_str(), "?" | "$" | "#" | "!")
                || (name.len() == 1 && name.chars().all(|c| c.is_ascii_digit()));
            let plain = name.chars().next().is_some_and(|c| is_name_start(&c))
                && name.chars().all(|c| is_name(&c));
            if special || plain {
                Ok(Some(name))
            } else {
                Err(ParseError::BadSubstitution(format!("${{{name}}}")))
            }
        }
        Some(c @ ('?' | '$' | '#' | '!' | '0'..='9')) => {
            chars.next();
            Ok(Some(c.to_string()))
        }
        Some(c) if is_name_start(&c) => {
            let mut name = String::new();
            while let Some(c) = chars.next_if(is_name) {
                name.push(c);
            }
            Ok(Some(name))
        }
        _ => Ok(None),
    }
}
