//! The device shell: what `/system/bin/sh` (mksh) does with the command lines the toolkit sends.
//!
//! Supported: words with `'single'`, `"double"` and `\` quoting, `;` and newlines, `&&`, `||`,
//! `|`, redirections `>`, `>>`, `2>`, `2>>`, `2>&1`, `>&2`, `<`, comments, and the `exit [N]` and
//! `cd` builtins. Not supported (a syntax error, never a silent misreading): `$(...)`, backquotes,
//! background `&`. Parameter expansion is not performed; `$` is a literal character.
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
    File(String),
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

/// A command name with its arguments (already unquoted) and redirections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    pub argv: Vec<String>,
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
    Word(String),
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
            Token::Word(word) => word.clone(),
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
    let mut word = String::new();
    // A word exists once any character or quote was seen: `''` is an empty argument.
    let mut in_word = false;
    let mut quoted = false;

    fn finish(tokens: &mut Vec<Token>, word: &mut String, in_word: &mut bool, quoted: &mut bool) {
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
        }
        *in_word = false;
        *quoted = false;
    }

    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => finish(&mut tokens, &mut word, &mut in_word, &mut quoted),
            '\n' | ';' => {
                finish(&mut tokens, &mut word, &mut in_word, &mut quoted);
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
                quoted = true;
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
                quoted = true;
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
                        Some('$') if chars.peek() == Some(&'(') => {
                            return Err(ParseError::Unsupported("$(...)".into()))
                        }
                        Some(other) => word.push(other),
                        None => return Err(ParseError::UnterminatedQuote),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(other) => {
                    in_word = true;
                    quoted = true;
                    word.push(other);
                }
                None => {
                    in_word = true;
                    word.push('\\');
                }
            },
            '`' => return Err(ParseError::Unsupported("`...`".into())),
            '$' if chars.peek() == Some(&'(') => {
                return Err(ParseError::Unsupported("$(...)".into()))
            }
            '&' => {
                finish(&mut tokens, &mut word, &mut in_word, &mut quoted);
                if chars.peek() == Some(&'&') {
                    chars.next();
                    tokens.push(Token::And);
                } else {
                    return Err(ParseError::Unsupported("background jobs (&)".into()));
                }
            }
            '|' => {
                finish(&mut tokens, &mut word, &mut in_word, &mut quoted);
                if chars.peek() == Some(&'|') {
                    chars.next();
                    tokens.push(Token::Or);
                } else {
                    tokens.push(Token::Pipe);
                }
            }
            '>' | '<' => {
                // A lone unquoted digit right before the operator names the descriptor.
                let fd = match word.as_str() {
                    "0" | "1" | "2" if in_word && !quoted => {
                        let fd = word.as_bytes()[0] - b'0';
                        word.clear();
                        in_word = false;
                        Some(fd)
                    }
                    _ => None,
                };
                finish(&mut tokens, &mut word, &mut in_word, &mut quoted);
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
    finish(&mut tokens, &mut word, &mut in_word, &mut quoted);
    Ok(tokens)
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
        if command.argv.is_empty() && command.redirects.is_empty() {
            return Err(ParseError::Unexpected(operator.describe()));
        }
        pipeline.commands.push(std::mem::take(command));
        Ok(())
    };

    while let Some(token) = iter.next() {
        match token {
            Token::Word(word) => command.argv.push(word),
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
                if command.argv.is_empty() && command.redirects.is_empty() {
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
    if command.argv.is_empty() && command.redirects.is_empty() {
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

/// Runs a parsed script; returns its exit status (0..=255).
pub fn execute(
    script: &Script,
    programs: &dyn Programs,
    fs: &FsHandle,
    session: &mut dyn Session,
    sink: &mut dyn Sink,
) -> u8 {
    let mut status = 0;
    for (connector, pipeline) in &script.items {
        let run = match connector {
            Connector::Always => true,
            Connector::And => status == 0,
            Connector::Or => status != 0,
        };
        if !run {
            continue;
        }
        match run_pipeline(pipeline, programs, fs, session, sink) {
            Flow::Next(next) => status = next,
            Flow::Exit(code) => return (code & 0xff) as u8,
        }
    }
    (status & 0xff) as u8
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
        let output = match run_simple(command, programs, fs, input, session) {
            Ok(Step::Exit(code)) => return Flow::Exit(code),
            Ok(Step::Done(output)) => output,
            Err(message) => Output::error(message, 1),
        };
        status = output.status;
        let routed = match route(command, output, fs) {
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

enum Step {
    Done(Output),
    Exit(i32),
}

fn run_simple(
    command: &SimpleCommand,
    programs: &dyn Programs,
    fs: &FsHandle,
    input: Option<Vec<u8>>,
    session: &mut dyn Session,
) -> Result<Step, String> {
    // Output targets must be creatable before the command runs, as with a real shell.
    for redirect in &command.redirects {
        if let RedirectTarget::File(path) = &redirect.target {
            let fs = lock(fs);
            let check = if redirect.fd == 0 {
                fs.read(path).map(|_| ())
            } else {
                fs.check_writable(path)
            };
            if let Err(err) = check {
                let verb = if redirect.fd == 0 {
                    "can't open"
                } else {
                    "can't create"
                };
                return Err(format!("/system/bin/sh: {verb} {path}: {err}\n"));
            }
        }
    }
    let Some(name) = command.argv.first() else {
        return Ok(Step::Done(Output::default()));
    };
    match name.as_str() {
        "exit" => {
            let code = match command.argv.get(1) {
                None => 0,
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
        _ => {}
    }
    let file_input = command
        .redirects
        .iter()
        .rev()
        .find_map(|r| match &r.target {
            RedirectTarget::File(path) if r.fd == 0 => Some(path.clone()),
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
fn route(command: &SimpleCommand, output: Output, fs: &FsHandle) -> Result<Routed, String> {
    #[derive(Clone)]
    enum Dest {
        Out,
        Err,
        File(String, bool),
    }
    let mut fd1 = Dest::Out;
    let mut fd2 = Dest::Err;
    for redirect in &command.redirects {
        let dest = match &redirect.target {
            RedirectTarget::File(path) => Dest::File(path.clone(), redirect.append),
            RedirectTarget::Descriptor(1) => fd1.clone(),
            RedirectTarget::Descriptor(_) => fd2.clone(),
        };
        match redirect.fd {
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

    fn words(line: &str) -> Vec<Vec<String>> {
        parse(line)
            .unwrap()
            .items
            .into_iter()
            .flat_map(|(_, p)| p.commands.into_iter().map(|c| c.argv))
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
        assert_eq!(ls.argv, vec!["ls"]);
        assert_eq!(
            ls.redirects,
            vec![
                Redirect {
                    fd: 2,
                    target: RedirectTarget::File("/dev/null".into()),
                    append: false
                },
                Redirect {
                    fd: 1,
                    target: RedirectTarget::File("/sdcard/l".into()),
                    append: true
                },
            ]
        );
    }

    #[test]
    fn a_quoted_digit_is_not_a_descriptor() {
        let script = parse("echo '2'>f").unwrap();
        let command = &script.items[0].1.commands[0];
        assert_eq!(command.argv, vec!["echo", "2"]);
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
        let status = execute(&parse(line).unwrap(), &Echo, fs, &mut Gone, &mut sink);
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
