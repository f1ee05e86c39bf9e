//! The device shell: what `/system/bin/sh` (mksh) does with the command lines the toolkit sends.
//!
//! Supported: words with `'single'`, `"double"` and `\` quoting, `;` and newlines, `&&`, `||`,
//! `|`, redirections `>`, `>>`, `2>`, `2>>`, `2>&1`, `>&2`, `<`, comments, and the `exit [N]` and
//! `cd` builtins, parameters (`$?`, `$NAME`, `${NAME}`; `NAME=value` assignments) expanded when
//! the command runs. Not supported (a syntax error, never a silent misreading): `$(...)`,
//! backquotes, other `${...}` forms, background `&`.
//!
//! The files commands read and write live in a small in-memory [`FileSystem`] whose writable
//! areas are `/data/local/tmp` and `/sdcard` (with its `/storage/emulated/0` aliases).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

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
    fn as_literal(&self) -> Option<String> {
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

    fn describe(&self) -> String {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => text.clone(),
                Part::Param(name) => format!("${{{name}}}"),
            })
            .collect()
    }
}

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

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
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
    fn describe(&self) -> String {
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

fn tokenize(line: &str) -> Result<Vec<Token>, ParseError> {
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

/// What a command wrote and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: i32,
}

impl Output {
    pub fn ok(stdout: impl Into<Vec<u8>>) -> Output {
        Output {
            stdout: stdout.into(),
            ..Output::default()
        }
    }

    pub fn error(stderr: impl Into<Vec<u8>>, status: i32) -> Output {
        Output {
            stderr: stderr.into(),
            status,
            ..Output::default()
        }
    }

    pub fn status(status: i32) -> Output {
        Output {
            status,
            ..Output::default()
        }
    }
}

/// The programs the shell can run (everything but its builtins).
pub trait Programs {
    /// Runs one command with its session (stdin, hangup) on the device filesystem `fs`.
    fn run(&self, argv: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output;
}

/// What a running command sees of the client that started it.
pub trait Session {
    /// The command's whole stdin; the client's stdin is read only when a command asks, once.
    fn stdin(&mut self) -> Vec<u8>;
    /// True once the client has gone away (adbd then sends the process SIGHUP).
    fn hung_up(&mut self) -> bool;
}

/// A session whose stdin is fixed bytes (a pipe, a `<` file) but whose client is the outer one.
struct Fed<'a> {
    input: Option<Vec<u8>>,
    outer: &'a mut dyn Session,
}

impl Session for Fed<'_> {
    fn stdin(&mut self) -> Vec<u8> {
        self.input.take().unwrap_or_default()
    }

    fn hung_up(&mut self) -> bool {
        self.outer.hung_up()
    }
}

/// Where the shell's own output goes (the socket, in the server).
pub trait Sink {
    /// False when the client is gone: the script stops.
    fn write(&mut self, stderr: bool, bytes: &[u8]) -> bool;
}

/// A shared filesystem: commands run concurrently on many connections.
pub type FsHandle = std::sync::Mutex<FileSystem>;

/// The environment of `adb shell` on an Android 13 device, for `$NAME`.
const DEVICE_ENV: &[(&str, &str)] = &[
    ("ANDROID_DATA", "/data"),
    ("ANDROID_ROOT", "/system"),
    ("EXTERNAL_STORAGE", "/sdcard"),
    ("HOME", "/"),
    ("HOSTNAME", "localhost"),
    ("LOGNAME", "shell"),
    (
        "PATH",
        "/product/bin:/apex/com.android.runtime/bin:/apex/com.android.art/bin:/system_ext/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin",
    ),
    ("SHELL", "/bin/sh"),
    ("TMPDIR", "/data/local/tmp"),
    ("USER", "shell"),
];
/// `$$`: the shell's process id.
const SHELL_PID: u32 = 4242;

/// Shell variables and the last exit status, for parameter expansion.
#[derive(Debug, Default)]
struct Env {
    status: i32,
    vars: BTreeMap<String, String>,
}

impl Env {
    fn lookup(&self, name: &str) -> String {
        match name {
            "?" => self.status.to_string(),
            "$" => SHELL_PID.to_string(),
            "0" => "/system/bin/sh".to_string(),
            "#" => "0".to_string(),
            _ => self
                .vars
                .get(name)
                .cloned()
                .or_else(|| {
                    DEVICE_ENV
                        .iter()
                        .find(|(key, _)| *key == name)
                        .map(|(_, value)| value.to_string())
                })
                .unwrap_or_default(),
        }
    }

    fn expand(&self, word: &Word) -> Option<String> {
        word.expand(&|name| self.lookup(name))
    }

    /// `NAME=value` (a word starting with a valid name and `=`), expanded.
    fn assignment(&self, word: &Word) -> Option<(String, String)> {
        let Some(Part::Text(first)) = word.parts.first() else {
            return None;
        };
        let (name, _) = first.split_once('=')?;
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return None;
        }
        let expanded = self.expand(word)?;
        Some((name.to_string(), expanded[name.len() + 1..].to_string()))
    }
}

/// How a script ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finish {
    /// The exit status, 0..=255.
    pub status: u8,
    /// The `exit` builtin ended it (an interactive shell then closes).
    pub exited: bool,
}

/// Runs a parsed script.
pub fn execute(
    script: &Script,
    programs: &dyn Programs,
    fs: &FsHandle,
    session: &mut dyn Session,
    sink: &mut dyn Sink,
) -> Finish {
    let mut env = Env::default();
    for (connector, pipeline) in &script.items {
        let run = match connector {
            Connector::Always => true,
            Connector::And => env.status == 0,
            Connector::Or => env.status != 0,
        };
        if !run {
            continue;
        }
        match run_pipeline(pipeline, programs, fs, session, sink, &mut env) {
            Flow::Next(next) => env.status = next,
            Flow::Exit(code) => {
                return Finish {
                    status: (code & 0xff) as u8,
                    exited: true,
                }
            }
        }
    }
    Finish {
        status: (env.status & 0xff) as u8,
        exited: false,
    }
}

enum Flow {
    Next(i32),
    Exit(i32),
}

fn run_pipeline(
    pipeline: &Pipeline,
    programs: &dyn Programs,
    fs: &FsHandle,
    session: &mut dyn Session,
    sink: &mut dyn Sink,
    env: &mut Env,
) -> Flow {
    let mut piped: Option<Vec<u8>> = None;
    let mut status = 0;
    let last = pipeline.commands.len().saturating_sub(1);
    for (index, command) in pipeline.commands.iter().enumerate() {
        // Only the first command reads the client's stdin; later ones read the pipe.
        let input = match piped.take() {
            Some(bytes) => Some(bytes),
            None if index == 0 => None,
            None => Some(Vec::new()),
        };
        let prepared = prepare(command, env);
        let output = match run_simple(&prepared, programs, fs, input, session, env) {
            Ok(Step::Exit(code)) => return Flow::Exit(code),
            Ok(Step::Done(output)) => output,
            Err(message) => Output::error(message, 1),
        };
        status = output.status;
        let routed = match route(&prepared.redirects, output, fs) {
            Ok(routed) => routed,
            Err(message) => {
                status = 1;
                Routed {
                    stderr: message.into_bytes(),
                    ..Routed::default()
                }
            }
        };
        if !routed.stderr.is_empty() && !sink.write(true, &routed.stderr) {
            return Flow::Exit(status);
        }
        if index == last {
            if !routed.stdout.is_empty() && !sink.write(false, &routed.stdout) {
                return Flow::Exit(status);
            }
        } else {
            piped = Some(routed.stdout);
        }
    }
    Flow::Next(status)
}

/// A redirection after expansion.
#[derive(Debug, Clone)]
enum Target {
    File(String),
    Descriptor(u8),
}

/// A simple command after expansion.
struct Prepared {
    assignments: Vec<(String, String)>,
    argv: Vec<String>,
    redirects: Vec<(u8, Target, bool)>,
}

fn prepare(command: &SimpleCommand, env: &Env) -> Prepared {
    let mut words = command.words.iter().peekable();
    let mut assignments = Vec::new();
    while let Some(assignment) = words.peek().and_then(|word| env.assignment(word)) {
        assignments.push(assignment);
        words.next();
    }
    let argv = words.filter_map(|word| env.expand(word)).collect();
    let redirects = command
        .redirects
        .iter()
        .map(|redirect| {
            let target = match &redirect.target {
                RedirectTarget::File(word) => Target::File(env.expand(word).unwrap_or_default()),
                RedirectTarget::Descriptor(fd) => Target::Descriptor(*fd),
            };
            (redirect.fd, target, redirect.append)
        })
        .collect();
    Prepared {
        assignments,
        argv,
        redirects,
    }
}

enum Step {
    Done(Output),
    Exit(i32),
}

fn run_simple(
    command: &Prepared,
    programs: &dyn Programs,
    fs: &FsHandle,
    input: Option<Vec<u8>>,
    session: &mut dyn Session,
    env: &mut Env,
) -> Result<Step, String> {
    // Output targets must be creatable before the command runs, as with a real shell.
    for (fd, target, _) in &command.redirects {
        if let Target::File(path) = target {
            let fs = lock(fs);
            let check = if *fd == 0 {
                fs.read(path).map(|_| ())
            } else {
                fs.check_writable(path)
            };
            if let Err(err) = check {
                let verb = if *fd == 0 {
                    "can't open"
                } else {
                    "can't create"
                };
                return Err(format!("/system/bin/sh: {verb} {path}: {err}\n"));
            }
        }
    }
    let Some(name) = command.argv.first() else {
        // Assignments alone set shell variables; with a command they would only be its
        // environment, which no simulated program reads.
        env.vars.extend(command.assignments.iter().cloned());
        return Ok(Step::Done(Output::default()));
    };
    match name.as_str() {
        "exit" => {
            let code = match command.argv.get(1) {
                None => env.status,
                Some(arg) => match arg.parse::<i64>() {
                    Ok(code) => (code & 0xff) as i32,
                    Err(_) => {
                        return Err(format!("/system/bin/sh: exit: {arg}: bad number\n"));
                    }
                },
            };
            return Ok(Step::Exit(code));
        }
        "cd" => return Ok(Step::Done(Output::default())),
        "export" => {
            for word in &command.argv[1..] {
                if let Some((name, value)) = env.assignment(&Word::literal(word)) {
                    env.vars.insert(name, value);
                }
            }
            return Ok(Step::Done(Output::default()));
        }
        _ => {}
    }
    let file_input = command
        .redirects
        .iter()
        .rev()
        .find_map(|(fd, target, _)| match target {
            Target::File(path) if *fd == 0 => Some(path.clone()),
            _ => None,
        });
    let input = match file_input {
        Some(path) => Some(lock(fs).read(&path).map(<[u8]>::to_vec).unwrap_or_default()),
        None => input,
    };
    let output = match input {
        Some(input) => {
            let mut fed = Fed {
                input: Some(input),
                outer: session,
            };
            programs.run(&command.argv, &mut fed, fs)
        }
        None => programs.run(&command.argv, session, fs),
    };
    Ok(Step::Done(output))
}

#[derive(Default)]
struct Routed {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Applies output redirections in order, as `dup2` would.
fn route(
    redirects: &[(u8, Target, bool)],
    output: Output,
    fs: &FsHandle,
) -> Result<Routed, String> {
    #[derive(Clone)]
    enum Dest {
        Out,
        Err,
        File(String, bool),
    }
    let mut fd1 = Dest::Out;
    let mut fd2 = Dest::Err;
    for (fd, target, append) in redirects {
        let dest = match target {
            Target::File(path) => Dest::File(path.clone(), *append),
            Target::Descriptor(1) => fd1.clone(),
            Target::Descriptor(_) => fd2.clone(),
        };
        match fd {
            1 => fd1 = dest,
            2 => fd2 = dest,
            _ => {}
        }
    }
    let mut routed = Routed::default();
    let mut truncated: BTreeSet<String> = BTreeSet::new();
    for (dest, bytes) in [(fd1, output.stdout), (fd2, output.stderr)] {
        match dest {
            Dest::Out => routed.stdout.extend(bytes),
            Dest::Err => routed.stderr.extend(bytes),
            Dest::File(path, append) => {
                // Both streams into one file (`> f 2>&1`): the second one appends.
                let append = append || !truncated.insert(path.clone());
                lock(fs)
                    .write(&path, &bytes, append)
                    .map_err(|err| format!("/system/bin/sh: can't create {path}: {err}\n"))?;
            }
        }
    }
    Ok(routed)
}

/// Locks the filesystem, surviving a panicked holder (the data stays consistent per call).
pub fn lock(fs: &FsHandle) -> std::sync::MutexGuard<'_, FileSystem> {
    fs.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Why a file operation failed; the message is the errno text toybox prints.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FsError {
    #[error("No such file or directory")]
    NotFound,
    #[error("Is a directory")]
    IsDirectory,
    #[error("Not a directory")]
    NotDirectory,
    #[error("Read-only file system")]
    ReadOnly,
    #[error("Permission denied")]
    PermissionDenied,
    #[error("Directory not empty")]
    NotEmpty,
    #[error("No space left on device")]
    NoSpace,
    #[error("File exists")]
    Exists,
}

/// What `stat` tells about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub is_dir: bool,
    pub size: u64,
    pub mtime: u32,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub stat: Stat,
}

/// The simulated storage: writable under `/data/local/tmp` and `/sdcard`, bounded in size.
#[derive(Debug, Clone)]
pub struct FileSystem {
    files: BTreeMap<String, (Vec<u8>, u32)>,
    dirs: BTreeSet<String>,
    used: usize,
    capacity: usize,
    /// When the device "booted": the time directories report.
    booted: u32,
}

const WRITABLE_ROOTS: &[&str] = &["/data/local/tmp", "/sdcard"];
const SDCARD_ALIASES: &[&str] = &[
    "/storage/emulated/0",
    "/storage/self/primary",
    "/mnt/sdcard",
    "/mnt/user/0/primary",
];
const INITIAL_DIRS: &[&str] = &[
    "/",
    "/data",
    "/data/local",
    "/data/local/tmp",
    "/dev",
    "/sdcard",
    "/sdcard/DCIM",
    "/sdcard/Download",
    "/sdcard/Movies",
    "/sdcard/Pictures",
    "/storage",
    "/storage/emulated",
    "/system",
];

impl Default for FileSystem {
    fn default() -> Self {
        FileSystem::with_capacity(256 * 1024 * 1024)
    }
}

fn now_secs() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
}

impl FileSystem {
    /// An empty device storage holding at most `capacity` bytes of file data.
    pub fn with_capacity(capacity: usize) -> FileSystem {
        FileSystem {
            files: BTreeMap::new(),
            dirs: INITIAL_DIRS.iter().map(|d| d.to_string()).collect(),
            used: 0,
            capacity,
            booted: now_secs(),
        }
    }

    /// The absolute, alias-free form of a path (the shell's working directory is `/`).
    pub fn normalize(path: &str) -> String {
        let mut parts: Vec<&str> = Vec::new();
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                other => parts.push(other),
            }
        }
        let joined = format!("/{}", parts.join("/"));
        for alias in SDCARD_ALIASES {
            if joined == *alias {
                return "/sdcard".to_string();
            }
            if let Some(rest) = joined.strip_prefix(alias).filter(|r| r.starts_with('/')) {
                return format!("/sdcard{rest}");
            }
        }
        joined
    }

    fn parent(path: &str) -> &str {
        match path.rfind('/') {
            Some(0) | None => "/",
            Some(index) => &path[..index],
        }
    }

    fn writable_area(path: &str) -> bool {
        WRITABLE_ROOTS.iter().any(|root| {
            path.strip_prefix(root)
                .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    pub fn stat(&self, path: &str) -> Option<Stat> {
        let path = Self::normalize(path);
        if self.dirs.contains(&path) {
            return Some(Stat {
                is_dir: true,
                size: 4096,
                mtime: self.booted,
            });
        }
        self.files.get(&path).map(|(data, mtime)| Stat {
            is_dir: false,
            size: data.len() as u64,
            mtime: *mtime,
        })
    }

    pub fn read(&self, path: &str) -> Result<&[u8], FsError> {
        let path = Self::normalize(path);
        if path == "/dev/null" {
            return Ok(&[]);
        }
        if self.dirs.contains(&path) {
            return Err(FsError::IsDirectory);
        }
        self.files
            .get(&path)
            .map(|(data, _)| data.as_slice())
            .ok_or(FsError::NotFound)
    }

    /// Whether `write(path)` would be allowed (the parent exists, the area is writable).
    pub fn check_writable(&self, path: &str) -> Result<(), FsError> {
        let path = Self::normalize(path);
        if path == "/dev/null" {
            return Ok(());
        }
        if self.dirs.contains(&path) {
            return Err(FsError::IsDirectory);
        }
        if !Self::writable_area(&path) {
            return Err(if path.starts_with("/data") {
                FsError::PermissionDenied
            } else {
                FsError::ReadOnly
            });
        }
        let parent = Self::parent(&path);
        if self.files.contains_key(parent) {
            return Err(FsError::NotDirectory);
        }
        if !self.dirs.contains(parent) {
            return Err(FsError::NotFound);
        }
        Ok(())
    }

    /// Writes (or appends to) a file.
    pub fn write(&mut self, path: &str, data: &[u8], append: bool) -> Result<(), FsError> {
        self.check_writable(path)?;
        let path = Self::normalize(path);
        if path == "/dev/null" {
            return Ok(());
        }
        let old_len = self.files.get(&path).map_or(0, |(old, _)| old.len());
        let new_len = if append {
            old_len + data.len()
        } else {
            data.len()
        };
        let used = self.used - old_len + new_len;
        if used > self.capacity {
            return Err(FsError::NoSpace);
        }
        self.used = used;
        let entry = self.files.entry(path).or_default();
        if !append {
            entry.0.clear();
        }
        entry.0.extend_from_slice(data);
        entry.1 = now_secs();
        Ok(())
    }

    /// `mkdir [-p]`.
    pub fn mkdir(&mut self, path: &str, parents: bool) -> Result<(), FsError> {
        let path = Self::normalize(path);
        if self.dirs.contains(&path) {
            return if parents {
                Ok(())
            } else {
                Err(FsError::Exists)
            };
        }
        if parents && !self.dirs.contains(Self::parent(&path)) {
            self.mkdir(Self::parent(&path), true)?;
        }
        self.check_writable(&path)?;
        self.dirs.insert(path);
        Ok(())
    }

    /// `rm [-r] [-f]` of one path.
    pub fn remove(&mut self, path: &str, recursive: bool) -> Result<(), FsError> {
        let path = Self::normalize(path);
        if self.dirs.contains(&path) {
            if !recursive {
                return Err(FsError::IsDirectory);
            }
            if !Self::writable_area(&path) {
                return Err(FsError::PermissionDenied);
            }
            let prefix = format!("{path}/");
            let doomed: Vec<String> = self
                .files
                .keys()
                .filter(|name| name.starts_with(&prefix))
                .cloned()
                .collect();
            for name in doomed {
                if let Some((data, _)) = self.files.remove(&name) {
                    self.used -= data.len();
                }
            }
            self.dirs
                .retain(|dir| dir != &path && !dir.starts_with(&prefix));
            return Ok(());
        }
        if !self.files.contains_key(&path) {
            return Err(FsError::NotFound);
        }
        if !Self::writable_area(&path) {
            return Err(FsError::PermissionDenied);
        }
        if let Some((data, _)) = self.files.remove(&path) {
            self.used -= data.len();
        }
        Ok(())
    }

    /// The entries of a directory, sorted by name; a file lists as itself.
    pub fn list(&self, path: &str) -> Result<Vec<Entry>, FsError> {
        let path = Self::normalize(path);
        if let Some((data, mtime)) = self.files.get(&path) {
            return Ok(vec![Entry {
                name: path.clone(),
                stat: Stat {
                    is_dir: false,
                    size: data.len() as u64,
                    mtime: *mtime,
                },
            }]);
        }
        if !self.dirs.contains(&path) {
            return Err(FsError::NotFound);
        }
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        let direct = |name: &String| {
            name.strip_prefix(&prefix)
                .filter(|rest| !rest.is_empty() && !rest.contains('/'))
                .map(str::to_string)
        };
        let mut entries: Vec<Entry> = self
            .dirs
            .iter()
            .filter_map(|dir| {
                direct(dir).map(|name| Entry {
                    name,
                    stat: Stat {
                        is_dir: true,
                        size: 4096,
                        mtime: self.booted,
                    },
                })
            })
            .chain(self.files.iter().filter_map(|(file, (data, mtime))| {
                direct(file).map(|name| Entry {
                    name,
                    stat: Stat {
                        is_dir: false,
                        size: data.len() as u64,
                        mtime: *mtime,
                    },
                })
            }))
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
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

    struct Echo;
    impl Programs for Echo {
        fn run(&self, argv: &[String], session: &mut dyn Session, _: &FsHandle) -> Output {
            match argv[0].as_str() {
                "echo" => Output::ok(format!("{}\n", argv[1..].join(" "))),
                "false" => Output::status(1),
                "cat" => Output::ok(session.stdin()),
                "hungup" => Output::ok(format!("{}\n", session.hung_up())),
                "warn" => Output::error("warned\n", 0),
                other => Output::error(format!("{other}: not found\n"), 127),
            }
        }
    }

    /// A client that typed `IN` and has hung up.
    struct Gone;
    impl Session for Gone {
        fn stdin(&mut self) -> Vec<u8> {
            b"IN".to_vec()
        }
        fn hung_up(&mut self) -> bool {
            true
        }
    }

    #[derive(Default)]
    struct Collect(Vec<(bool, Vec<u8>)>);
    impl Sink for Collect {
        fn write(&mut self, stderr: bool, bytes: &[u8]) -> bool {
            self.0.push((stderr, bytes.to_vec()));
            true
        }
    }

    fn run(line: &str, fs: &FsHandle) -> (u8, String) {
        let mut sink = Collect::default();
        let status = execute(&parse(line).unwrap(), &Echo, fs, &mut Gone, &mut sink).status;
        let text = sink
            .0
            .iter()
            .map(|(err, b)| {
                format!(
                    "{}{}",
                    if *err { "E:" } else { "" },
                    String::from_utf8_lossy(b)
                )
            })
            .collect();
        (status, text)
    }

    #[test]
    fn and_or_exit_follow_status() {
        let fs = FsHandle::default();
        assert_eq!(
            run("false && echo no || echo yes", &fs),
            (0, "yes\n".into())
        );
        assert_eq!(run("echo a; exit 3; echo b", &fs), (3, "a\n".into()));
        assert_eq!(run("exit 300", &fs), (44, String::new()));
        assert_eq!(run("nope", &fs), (127, "E:nope: not found\n".into()));
        assert_eq!(run("cat | cat", &fs), (0, "IN".into()));
        assert_eq!(run("false; echo $?; echo $?", &fs), (0, "1\n0\n".into()));
        assert_eq!(run("false; exit", &fs), (1, String::new()));
        assert_eq!(
            run("X=1; echo $X \"$UNSET\" $UNSET $HOME ${TMPDIR}/f", &fs),
            (0, "1  / /data/local/tmp/f\n".into())
        );
        assert_eq!(run("export Y=2 && echo $Y", &fs), (0, "2\n".into()));
        run("echo v > $EXTERNAL_STORAGE/var", &fs);
        assert_eq!(lock(&fs).read("/sdcard/var").unwrap(), b"v\n");
        assert_eq!(run("echo x | cat", &fs), (0, "x\n".into()));
        assert_eq!(run("echo x | hungup", &fs), (0, "true\n".into()));
    }

    #[test]
    fn redirections_write_the_filesystem() {
        let fs = FsHandle::default();
        assert_eq!(run("echo a > /sdcard/f; echo b >> /sdcard/f", &fs).0, 0);
        assert_eq!(lock(&fs).read("/storage/emulated/0/f").unwrap(), b"a\nb\n");
        assert_eq!(run("warn 2>&1 > /sdcard/g", &fs), (0, "warned\n".into()));
        assert_eq!(run("warn > /sdcard/g 2>&1", &fs), (0, String::new()));
        assert_eq!(lock(&fs).read("/sdcard/g").unwrap(), b"warned\n");
        assert_eq!(run("cat < /sdcard/f", &fs), (0, "a\nb\n".into()));
        let (status, text) = run("echo x > /system/x && echo no", &fs);
        assert_eq!(status, 1);
        assert_eq!(
            text,
            "E:/system/bin/sh: can't create /system/x: Read-only file system\n"
        );
        let (status, _) = run("echo x > /sdcard/missing/x", &fs);
        assert_eq!(status, 1);
    }

    #[test]
    fn filesystem_bounds_and_listing() {
        let mut fs = FileSystem::with_capacity(10);
        fs.write("/data/local/tmp/a", b"12345", false).unwrap();
        assert_eq!(
            fs.write("/data/local/tmp/b", b"123456", false),
            Err(FsError::NoSpace)
        );
        fs.write("/data/local/tmp/a", b"1234567890", false).unwrap();
        fs.mkdir("/sdcard/x/y", true).unwrap();
        let names: Vec<String> = fs
            .list("/sdcard")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert!(names.contains(&"x".to_string()) && names.contains(&"Download".to_string()));
        assert_eq!(fs.remove("/sdcard/x", false), Err(FsError::IsDirectory));
        fs.remove("/sdcard/x", true).unwrap();
        assert_eq!(fs.stat("/sdcard/x/y"), None);
        assert_eq!(fs.remove("/system", true), Err(FsError::PermissionDenied));
        assert_eq!(fs.read("/nope"), Err(FsError::NotFound));
        assert_eq!(
            FileSystem::normalize("/storage/emulated/0/../0/a//b"),
            "/sdcard/a/b"
        );
    }
}
