//! Execution: runs a parsed [`Script`] with the device's programs, builtins, parameters,
//! pipes and redirections.

use std::collections::{BTreeMap, BTreeSet};

use super::fs::{lock, FsHandle};
use super::lex::{Part, Word};
use super::parse::{Connector, Pipeline, RedirectTarget, Script, SimpleCommand};

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
    /// At most `limit` bytes of stdin, read only as far as they go (`pm install -S SIZE`: the
    /// client sends the file and waits for the answer without closing).
    fn stdin_up_to(&mut self, limit: usize) -> Vec<u8> {
        let mut all = self.stdin();
        all.truncate(limit);
        all
    }
    /// True once the client has gone away (adbd then sends the process SIGHUP).
    fn hung_up(&mut self) -> bool;
    /// True once the client has gone away or, on a terminal, typed Ctrl-C (the line discipline
    /// then sends the process SIGINT): a program that runs until stopped stops.
    fn interrupted(&mut self) -> bool {
        self.hung_up()
    }
    /// Writes to the command's stdout while it runs, for a program that streams (`logcat`):
    /// `None` when its stdout does not go straight to the client (a pipe, a file), and the
    /// program hands its output back when it ends; `Some(false)` once the client is gone.
    fn write_live(&mut self, _bytes: &[u8]) -> Option<bool> {
        None
    }
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

    fn interrupted(&mut self) -> bool {
        self.outer.interrupted()
    }
}

/// The session of the last command of a pipeline whose stdout is not redirected: what it
/// writes while it runs goes to the client at once.
struct Live<'a> {
    inner: &'a mut dyn Session,
    sink: &'a mut dyn Sink,
}

impl Session for Live<'_> {
    fn stdin(&mut self) -> Vec<u8> {
        self.inner.stdin()
    }

    fn stdin_up_to(&mut self, limit: usize) -> Vec<u8> {
        self.inner.stdin_up_to(limit)
    }

    fn hung_up(&mut self) -> bool {
        self.inner.hung_up()
    }

    fn interrupted(&mut self) -> bool {
        self.inner.interrupted()
    }

    fn write_live(&mut self, bytes: &[u8]) -> Option<bool> {
        Some(self.sink.write(false, bytes))
    }
}

/// Where the shell's own output goes (the socket, in the server).
pub trait Sink {
    /// False when the client is gone: the script stops.
    fn write(&mut self, stderr: bool, bytes: &[u8]) -> bool;
}

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
pub const SHELL_PID: u32 = 4242;

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
        // The last command writes to the client unless its stdout is redirected.
        let live = (index == last && !prepared.redirects.iter().any(|(fd, _, _)| *fd == 1))
            .then_some(&mut *sink);
        let mut replaced = false;
        let output = match run_simple(&prepared, programs, fs, input, session, live, env) {
            Ok(Step::Exit(code)) => return Flow::Exit(code),
            Ok(Step::Done(output)) => output,
            Ok(Step::Replaced(output)) => {
                replaced = true;
                output
            }
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
        if replaced {
            return Flow::Exit(status);
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
    /// `exec COMMAND`: the command's output, then the shell ends with its status.
    Replaced(Output),
}

fn run_simple(
    command: &Prepared,
    programs: &dyn Programs,
    fs: &FsHandle,
    input: Option<Vec<u8>>,
    session: &mut dyn Session,
    live: Option<&mut (dyn Sink + '_)>,
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
        // `exec` alone only applies its redirections to the shell.
        "exec" if command.argv.len() == 1 => return Ok(Step::Done(Output::default())),
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
    // `exec COMMAND` runs the command in the shell's place: the shell ends with it.
    let (argv, replaces) = match name.as_str() {
        "exec" => (&command.argv[1..], true),
        _ => (&command.argv[..], false),
    };
    let output = match input {
        Some(input) => {
            let mut fed = Fed {
                input: Some(input),
                outer: session,
            };
            run_program(programs, argv, &mut fed, live, fs)
        }
        None => run_program(programs, argv, session, live, fs),
    };
    Ok(match replaces {
        true => Step::Replaced(output),
        false => Step::Done(output),
    })
}

/// Runs a program, its stdout live to the client when `live` is the client's sink.
fn run_program(
    programs: &dyn Programs,
    argv: &[String],
    session: &mut dyn Session,
    live: Option<&mut (dyn Sink + '_)>,
    fs: &FsHandle,
) -> Output {
    match live {
        Some(sink) => programs.run(
            argv,
            &mut Live {
                inner: session,
                sink,
            },
            fs,
        ),
        None => programs.run(argv, session, fs),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::shell::parse;

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
        assert_eq!(
            run("export T=x; exec false; echo after", &fs),
            (1, String::new()),
            "exec ends the shell with its command"
        );
        assert_eq!(run("exec echo a b; echo c", &fs), (0, "a b\n".into()));
        assert_eq!(run("exec; echo c", &fs), (0, "c\n".into()));
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
}
