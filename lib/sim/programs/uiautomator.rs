//! `uiautomator dump`: the hierarchy of the active window into a file.

use super::Phone;
use crate::sim::shell::{lock, FsHandle, Output};

impl Phone {
    pub(super) fn uiautomator(&self, args: &[String], fs: &FsHandle) -> Output {
        if args.first().map(String::as_str) != Some("dump") {
            return Output::error(
                "Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\nhelp: displays help message\n\nruntest: executes UI automation tests\n\ndump: creates an XML dump of current UI hierarchy\n\nevents: prints out accessibility events until terminated\n",
                0,
            );
        }
        let path = args[1..]
            .iter()
            .rfind(|arg| !arg.starts_with('-'))
            .cloned()
            .unwrap_or_else(|| "/sdcard/window_dump.xml".to_string());
        if self.faults.dump_fails() {
            return Output::error("ERROR: could not get idle state.\n", 0);
        }
        let xml = self.world().hierarchy_xml();
        let done = format!("UI hierchary dumped to: {path}\n");
        if path == "/dev/tty" || path == "/dev/stdout" {
            return Output::ok(format!("{xml}{done}"));
        }
        match lock(fs).write(&path, xml.as_bytes(), false) {
            Ok(()) => Output::ok(done),
            Err(err) => Output::error(
                format!("java.io.FileNotFoundException: {path}: open failed: {err}\n"),
                1,
            ),
        }
    }
}
