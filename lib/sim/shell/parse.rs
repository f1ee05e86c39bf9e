//! Parsing: tokens into a [`Script`] of pipelines joined by `;`, `&&` and `||`.

use super::lex::{tokenize, ParseError, Token, Word};

/// How a pipeline joins the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connector {
    /// `;`, a newline, or the first pipeline.
    Always,
    /// `&&`: only after success.
    And,
    /// `||`: only after failure.
    Or,
}

/// Where a redirection points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedirectTarget {
    File(Word),
    /// `N>&M`: duplicate the other descriptor.
    Descriptor(u8),
}

/// One redirection of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// 0 for `<`, 1 or 2 for output.
    pub fd: u8,
    pub target: RedirectTarget,
    pub append: bool,
}

/// A command name with its arguments and redirections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

/// Commands joined by `|`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pipeline {
    pub commands: Vec<SimpleCommand>,
}

/// A whole command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    pub items: Vec<(Connector, Pipeline)>,
}

/// Parses one command line the way mksh would, for the supported subset.
pub fn parse(line: &str) -> Result<Script, ParseError> {
    let tokens = tokenize(line)?;
    let mut script = Script::default();
    let mut connector = Connector::Always;
    let mut pipeline = Pipeline::default();
    let mut command = SimpleCommand::default();
    let mut iter = tokens.into_iter();
    let mut last_operator: Option<Token> = None;

    let finish_command = |pipeline: &mut Pipeline,
                          command: &mut SimpleCommand,
                          operator: &Token|
     -> Result<(), ParseError> {
        if command.words.is_empty() && command.redirects.is_empty() {
            return Err(ParseError::Unexpected(operator.describe()));
        }
        pipeline.commands.push(std::mem::take(command));
        Ok(())
    };

    while let Some(token) = iter.next() {
        match token {
            Token::Word(word) => command.words.push(word),
            Token::Redirect { fd, append, input } => match iter.next() {
                Some(Token::Word(path)) => command.redirects.push(Redirect {
                    fd,
                    target: RedirectTarget::File(path),
                    append,
                }),
                Some(other) => return Err(ParseError::Unexpected(other.describe())),
                None => {
                    let op = Token::Redirect { fd, append, input };
                    return Err(ParseError::MissingOperand(op.describe()));
                }
            },
            Token::Duplicate { fd, to } => command.redirects.push(Redirect {
                fd,
                target: RedirectTarget::Descriptor(to),
                append: false,
            }),
            Token::Pipe => {
                finish_command(&mut pipeline, &mut command, &Token::Pipe)?;
                last_operator = Some(Token::Pipe);
                continue;
            }
            Token::Separator { newline } => {
                if command.words.is_empty() && command.redirects.is_empty() {
                    // A blank line, or a line ending in `&&`/`|`, continues; an empty `;` is an
                    // error, as in mksh.
                    if newline {
                        continue;
                    }
                    return Err(ParseError::Unexpected(";".into()));
                }
                finish_command(&mut pipeline, &mut command, &Token::Separator { newline })?;
                script
                    .items
                    .push((connector, std::mem::take(&mut pipeline)));
                connector = Connector::Always;
                last_operator = None;
                continue;
            }
            op @ (Token::And | Token::Or) => {
                finish_command(&mut pipeline, &mut command, &op)?;
                script
                    .items
                    .push((connector, std::mem::take(&mut pipeline)));
                connector = if op == Token::And {
                    Connector::And
                } else {
                    Connector::Or
                };
                last_operator = Some(op);
                continue;
            }
        }
        last_operator = None;
    }
    if command.words.is_empty() && command.redirects.is_empty() {
        if let Some(op) = last_operator {
            return Err(ParseError::MissingOperand(op.describe()));
        }
    } else {
        pipeline.commands.push(command);
        script.items.push((connector, pipeline));
    }
    Ok(script)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words as text, parameters shown as `${NAME}`.
    fn literal(words: &[Word]) -> Vec<String> {
        words.iter().map(Word::describe).collect()
    }

    fn words(line: &str) -> Vec<Vec<String>> {
        parse(line)
            .unwrap()
            .items
            .into_iter()
            .flat_map(|(_, p)| p.commands.into_iter().map(|c| literal(&c.words)))
            .collect()
    }

    #[test]
    fn quotes_are_removed_and_keep_spaces() {
        assert_eq!(
            words(r#"input text 'it'\''s a "test"' "two words" a\ b"#),
            vec![vec![
                "input",
                "text",
                r#"it's a "test""#,
                "two words",
                "a b"
            ]]
        );
        assert_eq!(words("echo '' x"), vec![vec!["echo", "", "x"]]);
    }

    #[test]
    fn shell_syntax_inside_quotes_stays_text() {
        assert_eq!(
            words("input text 'a; rm -rf / && echo $(id) | x > y'"),
            vec![vec!["input", "text", "a; rm -rf / && echo $(id) | x > y"]]
        );
    }

    #[test]
    fn connectors_and_redirections_parse() {
        let script = parse("uiautomator dump /data/local/tmp/d.xml && cat /data/local/tmp/d.xml; ls 2>/dev/null >> /sdcard/l || exit 3").unwrap();
        let connectors: Vec<Connector> = script.items.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            connectors,
            vec![
                Connector::Always,
                Connector::And,
                Connector::Always,
                Connector::Or
            ]
        );
        let ls = &script.items[2].1.commands[0];
        assert_eq!(literal(&ls.words), vec!["ls"]);
        assert_eq!(
            ls.redirects,
            vec![
                Redirect {
                    fd: 2,
                    target: RedirectTarget::File(Word::literal("/dev/null")),
                    append: false
                },
                Redirect {
                    fd: 1,
                    target: RedirectTarget::File(Word::literal("/sdcard/l")),
                    append: true
                },
            ]
        );
    }

    #[test]
    fn parameters_parse_outside_single_quotes() {
        assert_eq!(
            words(r#"echo $? "${HOME}x" '$HOME' \$HOME $ a$"#),
            vec![vec![
                "echo", "${?}", "${HOME}x", "$HOME", "$HOME", "$", "a$"
            ]]
        );
        assert_eq!(
            parse("echo ${HOME"),
            Err(ParseError::BadSubstitution("${HOME".into()))
        );
        assert!(matches!(
            parse("echo ${HOME:-x}"),
            Err(ParseError::BadSubstitution(_))
        ));
    }

    #[test]
    fn a_quoted_digit_is_not_a_descriptor() {
        let script = parse("echo '2'>f").unwrap();
        let command = &script.items[0].1.commands[0];
        assert_eq!(literal(&command.words), vec!["echo", "2"]);
        assert_eq!(command.redirects[0].fd, 1);
    }

    #[test]
    fn syntax_errors_are_reported_not_guessed() {
        assert_eq!(parse("echo 'x"), Err(ParseError::UnterminatedQuote));
        assert_eq!(parse("&& ls"), Err(ParseError::Unexpected("&&".into())));
        assert_eq!(parse("ls &&"), Err(ParseError::MissingOperand("&&".into())));
        assert_eq!(parse("ls >"), Err(ParseError::MissingOperand(">".into())));
        assert!(matches!(
            parse("echo $(id)"),
            Err(ParseError::Unsupported(_))
        ));
        assert!(matches!(
            parse("sleep 1 &"),
            Err(ParseError::Unsupported(_))
        ));
        assert_eq!(parse("ls; ;"), Err(ParseError::Unexpected(";".into())));
        assert_eq!(parse("  ").unwrap(), Script::default());
    }
}
