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

mod exec;
mod fs;
mod lex;
mod parse;

pub use exec::{execute, Finish, Output, Programs, Session, Sink, SHELL_PID};
pub use fs::{lock, Entry, FileSystem, FsError, FsHandle, Stat};
pub use lex::{ParseError, Part, Word};
pub use parse::{parse, Connector, Pipeline, Redirect, RedirectTarget, Script, SimpleCommand};
