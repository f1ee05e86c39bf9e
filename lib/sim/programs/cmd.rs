//! `cmd SERVICE ARGS...`, the shell entry of the system services: `package` is `pm` with the
//! package manager's intent queries (`query-activities`, `resolve-activity`), `activity` is
//! `am`, `settings`, `input` and `window` (`wm`) are those programs; `content` writes and reads
//! the settings provider by its URI.

use super::Phone;
use crate::sim::component::short_component;
use crate::sim::shell::{FsHandle, Output, Session};

/// What `ResolveInfo` prints before its component: a launcher activity's match.
const RESOLVE_LINE: &str =
    "priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false";
const MAIN: &str = "android.intent.action.MAIN";
const LAUNCHER: &str = "android.intent.category.LAUNCHER";

impl Phone {
    pub(super) fn cmd(&self, args: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
        let Some((service, rest)) = args.split_first() else {
            return Output::error(
                "cmd: No service specified; use -l to list all services\n",
                20,
            );
        };
        match service.as_str() {
            "package" => match rest.first().map(String::as_str) {
                Some("query-activities") => self.query_activities(&rest[1..]),
                Some("resolve-activity") => self.resolve_activity(&rest[1..]),
                _ => self.pm(rest, session, fs),
            },
            "activity" => self.am(rest, fs),
            "settings" => self.settings(rest),
            "input" => self.input(rest),
            "window" => self.wm(rest),
            "-l" => Output::ok("Currently running services:\n  activity\n  input\n  package\n  settings\n  window\n"),
            other => Output::error(format!("cmd: Can't find service: {other}\n"), 20),
        }
    }

    /// `cmd package query-activities [--brief] [--components] -a ACTION -c CATEGORY`: the
    /// launcher activities for MAIN / LAUNCHER (the only intent the simulated packages
    /// declare), as `ResolveInfo.dump` prints them.
    fn query_activities(&self, args: &[String]) -> Output {
        let query = Query::parse(args);
        let found = if query.is_launcher() {
            self.world().launcher_activities()
        } else {
            Vec::new()
        };
        if query.brief || query.components {
            return Output::ok(
                found
                    .iter()
                    .map(|(package, activity)| query.brief_info(package, activity))
                    .collect::<String>(),
            );
        }
        let mut out = format!("{} activities found:\n", found.len());
        for (i, (package, activity)) in found.iter().enumerate() {
            out.push_str(&format!(
                "  Activity #{i}:\n    {RESOLVE_LINE}\n    ActivityInfo:\n      name={activity}\n      packageName={package}\n      enabled=true exported=true directBootAware=false\n      taskAffinity={package} targetActivity=null persistableMode=PERSIST_ROOT_ONLY\n"
            ));
        }
        Output::ok(out)
    }

    /// `cmd package resolve-activity [--brief] [--components] [-a ACTION] [-c CATEGORY] PKG`:
    /// the package's launcher activity.
    fn resolve_activity(&self, args: &[String]) -> Output {
        let query = Query::parse(args);
        let found = self
            .world()
            .launcher_activities()
            .into_iter()
            .find(|(package, _)| query.package.as_deref() == Some(package.as_str()));
        match found {
            Some((package, activity)) if query.is_launcher() || query.action.is_none() => {
                if query.brief || query.components {
                    Output::ok(query.brief_info(&package, &activity))
                } else {
                    Output::ok(format!(
                        "{RESOLVE_LINE}\nActivityInfo:\n  name={activity}\n  packageName={package}\n  enabled=true exported=true directBootAware=false\n"
                    ))
                }
            }
            _ => Output::ok("No activity found\n"),
        }
    }

    /// `content insert|update --uri content://settings/NAMESPACE --bind name:s:KEY --bind
    /// value:T:VALUE`, `content query --uri content://settings/NAMESPACE [--where "name='KEY'"]`.
    pub(super) fn content(&self, args: &[String]) -> Output {
        let usage = || Output::error("Error: unknown or invalid content command\n", 1);
        let Some(verb) = args.first().map(String::as_str) else {
            return usage();
        };
        let mut uri = None;
        let mut name = None;
        let mut value = None;
        let mut filter = None;
        let mut iter = args[1..].iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "--uri" => uri = iter.next(),
                "--bind" => {
                    let Some(bind) = iter.next() else {
                        return usage();
                    };
                    // COLUMN:TYPE:VALUE, the value may hold colons.
                    let mut parts = bind.splitn(3, ':');
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some("name"), Some(_), Some(v)) => name = Some(v.to_string()),
                        (Some("value"), Some(_), Some(v)) => value = Some(v.to_string()),
                        _ => return usage(),
                    }
                }
                "--where" => filter = iter.next(),
                "--user" | "--projection" | "--sort" => {
                    iter.next();
                }
                _ => return usage(),
            }
        }
        let namespace = match uri.and_then(|u| u.strip_prefix("content://settings/")) {
            Some(ns @ ("system" | "secure" | "global")) => ns,
            _ => {
                let uri = uri.map_or("", String::as_str);
                return Output::error(
                    format!("Error while accessing provider:{uri}\njava.lang.IllegalArgumentException: Unknown URI {uri}\n"),
                    1,
                );
            }
        };
        match verb {
            "insert" | "update" => match (name, value) {
                (Some(key), Some(value)) => {
                    self.settings(&["put".to_string(), namespace.to_string(), key, value]);
                    Output::default()
                }
                _ => usage(),
            },
            "query" => {
                let wanted = filter.and_then(|w| {
                    w.strip_prefix("name='")
                        .and_then(|rest| rest.strip_suffix('\''))
                        .map(str::to_string)
                });
                let listing = self.settings(&["list".to_string(), namespace.to_string()]);
                let text = String::from_utf8_lossy(&listing.stdout).into_owned();
                let rows: Vec<String> = text
                    .lines()
                    .filter_map(|line| line.split_once('='))
                    .filter(|(key, _)| wanted.as_deref().is_none_or(|w| w == *key))
                    .enumerate()
                    .map(|(i, (key, value))| format!("Row: {i} name={key}, value={value}\n"))
                    .collect();
                if rows.is_empty() {
                    Output::ok("No result found.\n")
                } else {
                    Output::ok(rows.concat())
                }
            }
            _ => usage(),
        }
    }
}

/// An intent query's flags: `-a`, `-c`, `--brief`, `--components`, and a package.
#[derive(Debug, Default)]
struct Query {
    action: Option<String>,
    categories: Vec<String>,
    package: Option<String>,
    brief: bool,
    components: bool,
}

impl Query {
    fn parse(args: &[String]) -> Query {
        let mut query = Query::default();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "-a" => query.action = iter.next().cloned(),
                "-c" => query.categories.extend(iter.next().cloned()),
                "--brief" => query.brief = true,
                "--components" => query.components = true,
                "--user" | "--query-flags" | "-f" => {
                    iter.next();
                }
                flag if flag.starts_with('-') => {}
                package => query.package = Some(package.to_string()),
            }
        }
        query
    }

    fn is_launcher(&self) -> bool {
        self.action.as_deref() == Some(MAIN) && self.categories.iter().all(|c| c == LAUNCHER)
    }

    /// `--brief`: the match line and the component; `--components`: the component alone.
    fn brief_info(&self, package: &str, activity: &str) -> String {
        let component = short_component(package, activity);
        if self.components {
            format!("{component}\n")
        } else {
            format!("{RESOLVE_LINE}\n{component}\n")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_read_actions_categories_and_a_package() {
        let args: Vec<String> =
            "--brief -a android.intent.action.MAIN -c android.intent.category.LAUNCHER com.a"
                .split(' ')
                .map(String::from)
                .collect();
        let query = Query::parse(&args);
        assert!(query.brief && query.is_launcher());
        assert_eq!(query.package.as_deref(), Some("com.a"));
        assert_eq!(
            query.brief_info("com.a", "com.a.Main"),
            format!("{RESOLVE_LINE}\ncom.a/.Main\n")
        );
        assert!(!Query::parse(&["-a".into(), "android.intent.action.VIEW".into()]).is_launcher());
    }
}
