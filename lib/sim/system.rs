//! Screens the device draws itself: the launcher, recents, the ANR dialog, a generic screen
//! for apps the model has none for, and the crash log the runtime writes.

use std::fmt::Write as _;

use super::model::{Node, Screen};
use crate::ui::Bounds;

/// The launcher every simulated device has.
pub const LAUNCHER_PACKAGE: &str = "com.android.launcher3";
const LAUNCHER_ACTIVITY: &str = "com.android.launcher3.uioverrides.QuickstepLauncher";

/// The home screen: an icon (label as text and description) per app, four to a row.
pub fn launcher(apps: &[(String, String)], (width, height): (u32, u32)) -> Screen {
    let (w, h) = (width as i32, height as i32);
    let cell_w = w / 4;
    let cell_h = h / 8;
    let icons = apps
        .iter()
        .enumerate()
        .map(|(i, (_, label))| {
            let (col, row) = (i as i32 % 4, i as i32 / 4);
            let bounds = Bounds {
                x1: col * cell_w,
                y1: h / 8 + row * cell_h,
                x2: (col + 1) * cell_w,
                y2: h / 8 + (row + 1) * cell_h,
            };
            synthetic(
                i,
                "android.widget.TextView",
                LAUNCHER_PACKAGE,
                &[("text", label), ("content-desc", label)],
                bounds,
                true,
                vec![],
            )
        })
        .collect();
    let workspace = synthetic(
        0,
        "android.view.ViewGroup",
        LAUNCHER_PACKAGE,
        &[("resource-id", "com.android.launcher3:id/workspace")],
        full(width, height),
        false,
        icons,
    );
    Screen {
        id: "@launcher".to_string(),
        package: LAUNCHER_PACKAGE.to_string(),
        activity: LAUNCHER_ACTIVITY.to_string(),
        secure: false,
        roots: vec![frame(LAUNCHER_PACKAGE, width, height, vec![workspace])],
    }
}

/// Recents: a card per task (labels most recent first), and "Clear all" (or "No recent
/// items").
pub fn recents(labels: &[String], (width, height): (u32, u32)) -> Screen {
    let (w, h) = (width as i32, height as i32);
    let card_h = h / 6;
    let mut children: Vec<Node> = labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let bounds = Bounds {
                x1: w / 10,
                y1: h / 10 + i as i32 * (card_h + h / 40),
                x2: w - w / 10,
                y2: h / 10 + i as i32 * (card_h + h / 40) + card_h,
            };
            synthetic(
                i,
                "android.widget.FrameLayout",
                LAUNCHER_PACKAGE,
                &[
                    ("resource-id", "com.android.launcher3:id/snapshot"),
                    ("content-desc", label),
                ],
                bounds,
                true,
                vec![],
            )
        })
        .collect();
    let clear_text = if labels.is_empty() {
        "No recent items"
    } else {
        "Clear all"
    };
    children.push(synthetic(
        children.len(),
        "android.widget.Button",
        LAUNCHER_PACKAGE,
        &[
            ("text", clear_text),
            ("resource-id", "com.android.launcher3:id/clear_all"),
        ],
        Bounds {
            x1: w / 3,
            y1: h - h / 8,
            x2: w - w / 3,
            y2: h - h / 16,
        },
        !labels.is_empty(),
        vec![],
    ));
    let overview = synthetic(
        0,
        "androidx.recyclerview.widget.RecyclerView",
        LAUNCHER_PACKAGE,
        &[("resource-id", "com.android.launcher3:id/overview_panel")],
        full(width, height),
        false,
        children,
    );
    Screen {
        id: "@recents".to_string(),
        package: LAUNCHER_PACKAGE.to_string(),
        activity: LAUNCHER_ACTIVITY.to_string(),
        secure: false,
        roots: vec![frame(LAUNCHER_PACKAGE, width, height, vec![overview])],
    }
}

/// The system's "LABEL isn't responding" dialog, as its own window.
pub fn anr_dialog(label: &str, (width, height): (u32, u32)) -> Node {
    let (w, h) = (width as i32, height as i32);
    let title = format!("{label} isn't responding");
    let (x1, x2) = (w / 12, w - w / 12);
    let (y1, y2) = (h * 2 / 5, h * 3 / 5);
    let row = (y2 - y1) / 4;
    let text = |i: usize, class: &str, id: &str, text: &str, y: i32, clickable: bool| {
        synthetic(
            i,
            class,
            "android",
            &[("text", text), ("resource-id", id)],
            Bounds {
                x1: x1 + w / 20,
                y1: y,
                x2: x2 - w / 20,
                y2: y + row - h / 100,
            },
            clickable,
            vec![],
        )
    };
    let children = vec![
        text(
            0,
            "android.widget.TextView",
            "android:id/alertTitle",
            &title,
            y1 + h / 100,
            false,
        ),
        text(
            1,
            "android.widget.Button",
            "android:id/aerr_close",
            "Close app",
            y1 + row * 2,
            true,
        ),
        text(
            2,
            "android.widget.Button",
            "android:id/aerr_wait",
            "Wait",
            y1 + row * 3,
            true,
        ),
    ];
    synthetic(
        0,
        "android.widget.FrameLayout",
        "android",
        &[],
        Bounds { x1, y1, x2, y2 },
        false,
        children,
    )
}

fn full(width: u32, height: u32) -> Bounds {
    Bounds {
        x1: 0,
        y1: 0,
        x2: width as i32,
        y2: height as i32,
    }
}

fn frame(package: &str, width: u32, height: u32, children: Vec<Node>) -> Node {
    synthetic(
        0,
        "android.widget.FrameLayout",
        package,
        &[],
        full(width, height),
        false,
        children,
    )
}

/// A node of a screen the world draws itself (launcher, recents, dialogs, other apps).
fn synthetic(
    index: usize,
    class: &str,
    package: &str,
    fields: &[(&str, &str)],
    bounds: Bounds,
    clickable: bool,
    children: Vec<Node>,
) -> Node {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(key, _)| *key == name)
            .map_or("", |(_, value)| *value)
            .to_string()
    };
    let flag = |v: bool| v.to_string();
    let attrs = vec![
        ("index", index.to_string()),
        ("text", field("text")),
        ("resource-id", field("resource-id")),
        ("class", class.to_string()),
        ("package", package.to_string()),
        ("content-desc", field("content-desc")),
        ("checkable", flag(false)),
        ("checked", flag(false)),
        ("clickable", flag(clickable)),
        ("enabled", flag(true)),
        ("focusable", flag(clickable)),
        ("focused", flag(false)),
        ("scrollable", flag(false)),
        ("long-clickable", flag(false)),
        ("password", flag(false)),
        ("selected", flag(false)),
        ("bounds", bounds.to_string()),
    ];
    Node {
        attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        bounds,
        children,
    }
}

/// "com.android.chrome" → "Chrome".
pub fn package_label(package: &str) -> String {
    let last = package.rsplit('.').next().unwrap_or(package);
    let mut chars = last.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => package.to_string(),
    }
}

/// A generic screen for an app the model has no screen for: a title bar, the package name, and
/// one button.
pub fn external_screen(package: &str, (width, height): (u32, u32)) -> Screen {
    let (w, h) = (width as i32, height as i32);
    let label = package_label(package);
    let title = synthetic(
        0,
        "android.widget.TextView",
        package,
        &[
            ("text", &label),
            ("resource-id", &format!("{package}:id/title")),
        ],
        Bounds {
            x1: 0,
            y1: h / 30,
            x2: w,
            y2: h / 10,
        },
        false,
        vec![],
    );
    let body = synthetic(
        1,
        "android.webkit.WebView",
        package,
        &[("text", package)],
        Bounds {
            x1: 0,
            y1: h / 10,
            x2: w,
            y2: h - h / 8,
        },
        false,
        vec![],
    );
    let close = synthetic(
        2,
        "android.widget.Button",
        package,
        &[
            ("text", "Close"),
            ("resource-id", &format!("{package}:id/close")),
        ],
        Bounds {
            x1: w / 4,
            y1: h - h / 9,
            x2: w - w / 4,
            y2: h - h / 30,
        },
        true,
        vec![],
    );
    Screen {
        id: format!("@external:{package}"),
        package: package.to_string(),
        activity: format!("{package}.MainActivity"),
        secure: false,
        roots: vec![frame(package, width, height, vec![title, body, close])],
    }
}

/// The activity manager's lines for an app that stopped responding to input, as Android logs
/// them under `E ActivityManager` when it raises the "isn't responding" dialog.
pub fn anr_block(package: &str, component: &str, pid: u32) -> Vec<String> {
    vec![
        format!("ANR in {package} ({component})"),
        format!("PID: {pid}"),
        "Reason: Input dispatching timed out (Waiting to send non-key event because the touched \
         window has not finished processing certain input events that were delivered to it over \
         500.0ms ago.  Wait queue length: 2.  Wait queue head age: 5006.3ms.)"
            .to_string(),
        "Load: 1.52 / 1.31 / 1.10".to_string(),
        "CPU usage from 0ms to 5012ms later:".to_string(),
        format!("  92% {pid}/{package}: 88% user + 4% kernel / faults: 312 minor"),
    ]
}

/// The lines `AndroidRuntime` logs for an app's uncaught exception (its FATAL EXCEPTION block).
pub fn fatal_exception_lines(
    package: &str,
    pid: u32,
    activity: &str,
    exception: &str,
) -> Vec<String> {
    let class = activity.rsplit('.').next().unwrap_or(activity);
    vec![
        "FATAL EXCEPTION: main".to_string(),
        format!("Process: {package}, PID: {pid}"),
        exception.to_string(),
        format!("\tat {activity}.onClick({class}.java:42)"),
        "\tat android.view.View.performClick(View.java:7448)".to_string(),
        "\tat android.view.View.performClickInternal(View.java:7425)".to_string(),
        "\tat android.view.View$PerformClick.run(View.java:28305)".to_string(),
        "\tat android.os.Handler.handleCallback(Handler.java:938)".to_string(),
        "\tat android.os.Handler.dispatchMessage(Handler.java:99)".to_string(),
        "\tat android.os.Looper.loopOnce(Looper.java:201)".to_string(),
        "\tat android.os.Looper.loop(Looper.java:288)".to_string(),
        "\tat android.app.ActivityThread.main(ActivityThread.java:7839)".to_string(),
        "\tat java.lang.reflect.Method.invoke(Native Method)".to_string(),
        "\tat com.android.internal.os.RuntimeInit$MethodAndArgsCaller.run(RuntimeInit.java:548)"
            .to_string(),
        "\tat com.android.internal.os.ZygoteInit.main(ZygoteInit.java:1003)".to_string(),
    ]
}

/// Lines of one process in logcat's default (threadtime) format, stamped `stamp`.
pub fn threadtime_lines(
    stamp: &chrono::DateTime<chrono::Utc>,
    pid: u32,
    priority: char,
    tag: &str,
    lines: &[String],
) -> String {
    let stamp = stamp.format("%m-%d %H:%M:%S%.3f");
    let mut out = String::new();
    for line in lines {
        let _ = writeln!(out, "{stamp} {pid:>5} {pid:>5} {priority} {tag}: {line}");
    }
    out
}

/// A FATAL EXCEPTION block in logcat's default (threadtime) format, stamped now.
pub fn fatal_exception_block(package: &str, pid: u32, activity: &str, exception: &str) -> String {
    threadtime_lines(
        &chrono::Utc::now(),
        pid,
        'E',
        "AndroidRuntime",
        &fatal_exception_lines(package, pid, activity, exception),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_labels_come_from_the_last_segment() {
        assert_eq!(package_label("com.android.chrome"), "Chrome");
    }

    #[test]
    fn crash_blocks_are_threadtime_lines() {
        let block = fatal_exception_block("p.q", 4321, "p.q.Main", "java.lang.Error: x");
        let lines: Vec<&str> = block.lines().collect();
        assert!(lines[0].ends_with(" 4321  4321 E AndroidRuntime: FATAL EXCEPTION: main"));
        assert!(lines[1].ends_with("E AndroidRuntime: Process: p.q, PID: 4321"));
        assert!(lines[3].ends_with("E AndroidRuntime: \tat p.q.Main.onClick(Main.java:42)"));
    }

    #[test]
    fn the_launcher_lays_out_one_icon_per_app() {
        let apps = vec![("a.b".to_string(), "B".to_string()); 5];
        let screen = launcher(&apps, (400, 800));
        let icons = &screen.roots[0].children[0].children;
        assert_eq!(icons.len(), 5);
        assert_eq!(icons[4].bounds, Bounds::from([0, 200, 100, 300]));
    }
}
