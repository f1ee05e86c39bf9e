//! `run-as PACKAGE [--user UID] [COMMAND...]`: runs a command (or a shell) as a debuggable app.
//! Every app on the simulated phone is a release build (the models are recordings of store
//! apps, and an installed APK's manifest here declares no `android:debuggable`), so it refuses
//! as AOSP's `run-as.cpp` does, with its checks in its order.

use super::procfs::{package_uid, FIRST_APP_UID};
use super::Phone;
use crate::sim::shell::Output;

impl Phone {
    pub(super) fn run_as(&self, args: &[String]) -> Output {
        let refuse = |message: String| Output::error(format!("run-as: {message}\n"), 1);
        let usage =
            || refuse("usage: run-as <package-name> [--user <uid>] <command> [<args>]".into());
        let Some(package) = args.first() else {
            return usage();
        };
        // `--user UID` takes a number; what follows is the command (none: a shell).
        if args.get(1).map(String::as_str) == Some("--user")
            && args
                .get(2)
                .and_then(|uid| uid.parse::<u32>().ok())
                .is_none()
        {
            return usage();
        }
        if !self.world().installed_packages().contains(package) {
            return refuse(format!("unknown package: {package}"));
        }
        if package_uid(package) < FIRST_APP_UID {
            return refuse(format!("package not an application: {package}"));
        }
        refuse(format!("package not debuggable: {package}"))
    }
}
