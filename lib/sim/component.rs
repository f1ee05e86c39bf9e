//! Android component names: an activity as a manifest or `am start -n` writes it (`.Cls`
//! relative to its package, or fully qualified) and as the activity manager prints it.

/// `pkg/.Cls` when the class is in the package, as ActivityRecord prints it.
pub fn short_component(package: &str, activity: &str) -> String {
    let class = activity
        .strip_prefix(package)
        .filter(|rest| rest.starts_with('.'));
    match class {
        Some(rest) => format!("{package}/{rest}"),
        None => format!("{package}/{activity}"),
    }
}

/// `pkg.Cls` for `.Cls`; a fully qualified class as it is.
pub fn full_class(package: &str, activity: &str) -> String {
    match activity.strip_prefix('.') {
        Some(rest) => format!("{package}.{rest}"),
        None => activity.to_string(),
    }
}
