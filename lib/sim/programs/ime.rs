//! `ime`: input methods.

use super::Phone;
use crate::sim::component::full_class;
use crate::sim::shell::Output;

impl Phone {
    pub(super) fn ime(&self, args: &[String]) -> Output {
        let mut world = self.world();
        match args.first().map(String::as_str) {
            Some("list") => {
                let all = args.iter().any(|a| a == "-a");
                let ids = if all { world.ime_list() } else { world.ime_enabled() };
                if args.iter().any(|a| a == "-s") {
                    Output::ok(ids.iter().map(|id| format!("{id}\n")).collect::<String>())
                } else {
                    Output::ok(
                        ids.iter()
                            .map(|id| {
                                let (package, service) = id.split_once('/').unwrap_or((id, ""));
                                format!("{id}:\n  mId={id} mSettingsActivity=null\n  Service:\n    ServiceInfo:\n      name={} packageName={package}\n", full_class(package, service))
                            })
                            .collect::<String>(),
                    )
                }
            }
            Some("enable") => match args.get(1) {
                Some(id) if world.ime_enable(id) => Output::ok(format!("Input method {id}: now enabled for user #0\n")),
                Some(id) => Output::error(format!("Unknown input method {id} cannot be enabled for user #0\n"), 255),
                None => Output::error("Error: no input method id given\n", 255),
            },
            Some("set") => match args.get(1) {
                Some(id) if world.ime_set(id) => Output::ok(format!("Input method {id} selected for user #0\n")),
                Some(id) => Output::error(format!("Unknown input method {id} cannot be selected for user #0\n"), 255),
                None => Output::error("Error: no input method id given\n", 255),
            },
            _ => Output::error("ime <command>:\n  list [-a] [-s]\n  enable [--user <USER_ID>] <ID>\n  set [--user <USER_ID>] <ID>\n", 255),
        }
    }
}
