//! `dumpsys`: the system services' dumps, in the shapes an Android 13 (API 33) device prints
//! (samples in `../shared/fixtures/device/dumpsys/`), written from a snapshot of the device so
//! every answer says what the simulator really shows: the windows and their focus, the activity
//! tasks, the display and its power state, the battery, an app's memory, a package.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use sha2::{Digest, Sha256};

use super::procfs::{package_uid, session_uid};
use super::Phone;
use crate::sim::component::{full_class, short_component};
use crate::sim::model::Node;
use crate::sim::packages::apk_dir;
use crate::sim::shell::Output;
use crate::sim::system::LAUNCHER_PACKAGE;
use crate::sim::world::{Foreground, TaskSummary};

pub const DENSITY: u32 = 420;
/// Android 13 (API 33), as the samples in the fixtures.
pub const SDK: &str = "33";
/// The physical display's id, as SurfaceFlinger names the emulator's first display.
pub const DISPLAY_ID: &str = "4619827259835644672";
const LAUNCHER_ACTIVITY: &str = "com.android.launcher3.uioverrides.QuickstepLauncher";
const LAUNCHER_TASK: u32 = 9;

/// What the dumps are written from.
pub struct Snapshot {
    pub foreground: Foreground,
    pub anr: bool,
    /// App tasks, least recent first.
    pub tasks: Vec<TaskSummary>,
    /// `(package, pid)` of running app processes.
    pub pids: Vec<(String, u32)>,
    pub size: (u32, u32),
    pub screen_on: bool,
    /// The hierarchy on screen (for `dumpsys activity top`'s view dump).
    pub roots: Vec<Node>,
}

impl Snapshot {
    /// True when an app (not the launcher or recents) is in front.
    fn app_in_front(&self) -> bool {
        !self.foreground.screen.starts_with("@launcher")
            && !self.foreground.screen.starts_with("@recents")
    }

    fn pid(&self, package: &str) -> Option<u32> {
        self.pids
            .iter()
            .find(|(p, _)| p == package)
            .map(|(_, pid)| *pid)
    }
}

/// Seven hex digits from a name: the identity hashes dumpsys prints (`Window{1651cd4 ...}`).
pub fn short_hash(name: &str) -> String {
    let digest = Sha256::digest(name.as_bytes());
    format!(
        "{:07x}",
        u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) >> 4
    )
}

pub fn task_id(package: &str) -> u32 {
    if package == LAUNCHER_PACKAGE {
        return LAUNCHER_TASK;
    }
    12 + u32::from(Sha256::digest(package.as_bytes())[0] % 64)
}

/// `ActivityRecord{hash u0 pkg/.Cls} tN}`, the API 33 shape (the brace after the component is
/// the platform's).
fn activity_record(package: &str, activity: &str) -> String {
    let component = short_component(package, activity);
    format!(
        "ActivityRecord{{{} u0 {component}}} t{}}}",
        short_hash(&component),
        task_id(package)
    )
}

/// `dumpsys [SERVICE [ARGS]]`: `Err` for a service the device does not have.
pub fn dumpsys(args: &[String], state: &Snapshot) -> Result<String, String> {
    let arg = |i: usize| args.get(i).map(String::as_str);
    let out = match arg(0) {
        None => format!("{}\n{}", window(&[], state), activity(&[], state)),
        Some("window") => window(&args[1..], state),
        Some("activity") => activity(&args[1..], state),
        Some("display") => display(state),
        Some("power") => power(state),
        Some("battery") => battery(),
        Some("meminfo") => meminfo(arg(1), state),
        Some("SurfaceFlinger") => surface_flinger(&args[1..], state),
        Some(service) => return Err(format!("Can't find service: {service}\n")),
    };
    Ok(out)
}

fn focus(state: &Snapshot) -> (String, String) {
    let front = &state.foreground;
    let record = activity_record(&front.package, &front.activity);
    let window = if state.anr {
        format!("Application Not Responding: {}", front.package)
    } else {
        format!(
            "{}/{}",
            front.package,
            full_class(&front.package, &front.activity)
        )
    };
    let window = format!("Window{{{} u0 {window}}}", short_hash(&window));
    (window, record)
}

fn display_contents(state: &Snapshot) -> String {
    let (width, height) = state.size;
    format!(
        "  Display: mDisplayId=0 rootTasks=4\n    init={width}x{height} {DENSITY}dpi cur={width}x{height} app={width}x{} rng={width}x{width}-{height}x{height}\n    deferred=false mLayoutNeeded=false mTouchExcludeRegion=SkRegion((0,0,{width},{height}))\n\n",
        height.saturating_sub(126)
    )
}

fn window(args: &[String], state: &Snapshot) -> String {
    let (window, record) = focus(state);
    let displays = format!(
        "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n{}  mCurrentFocus={window}\n  mFocusedApp={record}\n\n  displayId=0\n",
        display_contents(state)
    );
    // API 29+ no longer print the focus in this section (see the fixtures).
    let windows = format!(
        "WINDOW MANAGER WINDOWS (dumpsys window windows)\n  Window #0 Window{{{} u0 NavigationBar0}}:\n    mDisplayId=0 rootTaskId=1 mSession=Session{{5fcd691 820:u0a10086}}\n    mOwnerUid=10086 showForAllUsers=true package=com.android.systemui appop=NONE\n  Window #1 Window{{{} u0 StatusBar}}:\n    mDisplayId=0 rootTaskId=1 mSession=Session{{5fcd691 820:u0a10086}}\n    mOwnerUid=10086 showForAllUsers=true package=com.android.systemui appop=NONE\n  Window #2 {window}:\n    mDisplayId=0 rootTaskId={} mSession=Session{{8d1c2a0 {}:{}}}\n    mOwnerUid={} showForAllUsers=false package={} appop=NONE\n    mViewVisibility=0x0 mHaveFrame=true mObscured=false\n\n  mTopFocusedDisplayId=0\n  mSystemBooted=true mDisplayEnabled=true\n",
        short_hash("NavigationBar0"),
        short_hash("StatusBar"),
        task_id(&state.foreground.package),
        state.pid(&state.foreground.package).unwrap_or(0),
        session_uid(package_uid(&state.foreground.package)),
        package_uid(&state.foreground.package),
        state.foreground.package,
    );
    match args.first().map(String::as_str) {
        Some("windows" | "w") => windows,
        Some("displays" | "d") => displays,
        // `dumpsys window` dumps every section, display contents before windows.
        None | Some("-a") => format!("{displays}\n{windows}"),
        Some(_) => displays,
    }
}

/// The home task, then the app tasks least recent first; the one in front last.
fn task_order(state: &Snapshot) -> Vec<TaskSummary> {
    let home = TaskSummary {
        package: LAUNCHER_PACKAGE.to_string(),
        activities: vec![(LAUNCHER_PACKAGE.to_string(), LAUNCHER_ACTIVITY.to_string())],
    };
    let mut order = state.tasks.clone();
    if state.app_in_front() {
        order.insert(0, home);
    } else {
        order.push(home);
    }
    order
}

fn activity(args: &[String], state: &Snapshot) -> String {
    match args.first().map(String::as_str) {
        None | Some("activities" | "a") => activities(state),
        Some("top") => top(state),
        Some("recents" | "r") => recents(state),
        Some(other) => format!(
            "Unknown command: {other}\nBad activity command, or no activities match: {other}\nUse -h for help.\n"
        ),
    }
}

fn activities(state: &Snapshot) -> String {
    let (window, record) = focus(state);
    let mut out = String::from(
        "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\nDisplay #0 (activities from top to bottom):\n",
    );
    for task in task_order(state).iter().rev() {
        let id = task_id(&task.package);
        let kind = if task.package == LAUNCHER_PACKAGE {
            "home"
        } else {
            "standard"
        };
        let front = task.package == state.foreground.package;
        let _ = writeln!(
            out,
            "  * Task{{{} #{id} type={kind} A={}:{} U=0 visible={front} visibleRequested={front} mode=fullscreen translucent=false sz={}}}",
            short_hash(&task.package),
            package_uid(&task.package),
            task.package,
            task.activities.len()
        );
        for (index, (package, activity)) in task.activities.iter().enumerate().rev() {
            let _ = writeln!(
                out,
                "    * Hist  #{index}: {}\n      packageName={package} processName={package}",
                activity_record(package, activity)
            );
        }
        out.push('\n');
    }
    let _ = write!(
        out,
        "  Resumed activities in task display areas (from top to bottom):\n    Resumed: {record}\n\n  ResumedActivity: {record}\n\nActivityTaskSupervisor state:\n{}  mCurrentFocus={window}\n  mFocusedApp={record}\n",
        display_contents(state)
    );
    out
}

/// `dumpsys activity top`: each task's top activity, the home task first and the one in front
/// last, with the app's own dump of its views.
fn top(state: &Snapshot) -> String {
    let mut out = String::new();
    let order = task_order(state);
    for (index, task) in order.iter().enumerate() {
        let Some((package, activity)) = task.activities.last() else {
            continue;
        };
        let affinity = if task.package == LAUNCHER_PACKAGE {
            "null".to_string()
        } else {
            format!("{}:{}", package_uid(&task.package), task.package)
        };
        if index > 0 {
            out.push('\n');
        }
        let pid = if package == LAUNCHER_PACKAGE {
            Some(super::procfs::RESIDENT_APPS[2].0)
        } else {
            state.pid(package)
        };
        let pid = pid.map_or_else(|| "(not running)".to_string(), |p| p.to_string());
        let component = short_component(package, activity);
        let resumed = index + 1 == order.len();
        let _ = writeln!(
            out,
            "TASK {affinity} id={} userId=0\n  ACTIVITY {component} {} pid={pid}\n    Local Activity {} State:\n      mResumed={resumed} mStopped={} mFinished=false\n      mIsInMultiWindowMode=false mIsInPictureInPictureMode=false\n      mChangingConfigurations=false",
            task_id(&task.package),
            short_hash(&format!("record {component}")),
            short_hash(&format!("activity {component}")),
            !resumed
        );
        if resumed && package == &state.foreground.package {
            let class = activity.rsplit('.').next().unwrap_or(activity);
            let _ = writeln!(
                out,
                "    View Hierarchy:\n      DecorView@{}[{class}]",
                short_hash(&format!("decor {component}"))
            );
            for root in &state.roots {
                view_lines(&mut out, root, None, 4);
            }
        }
    }
    out
}

/// One view per line as `View.toString()` writes it: class, flags, bounds relative to the
/// parent, id.
fn view_lines(out: &mut String, node: &Node, parent: Option<&Node>, depth: usize) {
    let (left, top) = parent.map_or((0, 0), |p| (p.bounds.x1, p.bounds.y1));
    let b = &node.bounds;
    let flag = |on: bool, c: char| if on { c } else { '.' };
    let clickable = node.flag("clickable");
    let flags: String = [
        'V',
        flag(clickable || node.is_editable(), 'F'),
        flag(node.attr("enabled") != "false", 'E'),
        'D',
        '.',
        flag(node.flag("scrollable"), 'V'),
        flag(clickable, 'C'),
        flag(node.flag("long-clickable"), 'L'),
        '.',
    ]
    .iter()
    .collect();
    let focused = flag(node.flag("focused"), 'F');
    let id = match node.attr("resource-id") {
        "" => String::new(),
        id => {
            let number = u32::from_str_radix(&short_hash(id)[..4], 16).unwrap_or(0);
            let shown = match id.split_once(":id/") {
                Some(("android", _)) | None => id.to_string(),
                Some((_, name)) => format!("app:id/{name}"),
            };
            format!(" #7f0a{number:04x} {shown}")
        }
    };
    let _ = writeln!(
        out,
        "{}{}{{{} {flags} {focused}....... {},{}-{},{}{id}}}",
        "  ".repeat(depth),
        node.attr("class"),
        short_hash(&format!("{}{:?}", node.attr("class"), b)),
        b.x1 - left,
        b.y1 - top,
        b.x2 - left,
        b.y2 - top,
    );
    for child in &node.children {
        view_lines(out, child, Some(node), depth + 1);
    }
}

fn recents(state: &Snapshot) -> String {
    let mut out =
        String::from("ACTIVITY MANAGER RECENT TASKS (dumpsys activity recents)\n  Recent tasks:\n");
    for (index, task) in state.tasks.iter().rev().enumerate() {
        let _ = writeln!(
            out,
            "  * Recent #{index}: Task{{{} #{} type=standard A={}:{} U=0 visible={} mode=fullscreen translucent=false sz={}}}",
            short_hash(&task.package),
            task_id(&task.package),
            package_uid(&task.package),
            task.package,
            index == 0 && state.app_in_front(),
            task.activities.len()
        );
    }
    out
}

/// `dumpsys display`: the DisplayManagerService dump; the display never rotates (every
/// simulated app and the launcher are portrait-only), its state follows the screen power.
fn display(state: &Snapshot) -> String {
    let (width, height) = state.size;
    let power = if state.screen_on { "ON" } else { "OFF" };
    let dpi = format!("{DENSITY}.0");
    format!(
        "DISPLAY MANAGER (dumpsys display)\n  mOnlyCore=false\n  mSafeMode=false\n  mPendingTraversal=false\n  mViewports=[DisplayViewport{{type=INTERNAL, valid=true, isActive=true, displayId=0, uniqueId='local:{DISPLAY_ID}', physicalPort=0, orientation=0, logicalFrame=Rect(0, 0 - {width}, {height}), physicalFrame=Rect(0, 0 - {width}, {height}), deviceWidth={width}, deviceHeight={height}}}]\n  mDefaultDisplayDefaultColorMode=0\n  mWifiDisplayScanRequestCount=0\n  mStableDisplaySize=Point({width}, {height})\n  mMinimumBrightnessCurve=[(0.0, 0.0), (2000.0, 50.0), (4000.0, 90.0)]\n\nDisplay States: size=1\n  Display Id=0\n  Display State={power}\n  Display Brightness=0.39763778\n  Display SdrBrightness=0.39763778\n\nDisplay Adapter: LocalDisplayAdapter\n\nDisplay Devices: size=1\n  DisplayDeviceInfo{{\"Built-in Screen\": uniqueId=\"local:{DISPLAY_ID}\", {width} x {height}, modeId 1, defaultModeId 1, supportedModes [{{id=1, width={width}, height={height}, fps=60.0, alternativeRefreshRates=[]}}], density {DENSITY}, {dpi} x {dpi} dpi, appVsyncOff 1000000, presDeadline 16666666, touch INTERNAL, rotation 0, type INTERNAL, address {{port=0, model=0x0}}, deviceProductInfo=null, state {power}, committedState {power}, FLAG_ALLOWED_TO_BE_DEFAULT_DISPLAY, FLAG_ROTATES_WITH_CONTENT, FLAG_SECURE, FLAG_SUPPORTS_PROTECTED_BUFFERS}}\n    mAdapter=LocalDisplayAdapter\n    mUniqueId=local:{DISPLAY_ID}\n    mDisplayToken=android.os.BinderProxy@8c4f3d2\n    mCurrentLayerStack=0\n    mCurrentOrientation=0\n    mCurrentDisplayRect=Rect(0, 0 - {width}, {height})\n\nLogical Displays: size=1\n  Display 0:\n    mDisplayId=0\n    mIsEnabled=true\n    mLayerStack=0\n    mHasContent=true\n    mBaseDisplayInfo=DisplayInfo{{\"Built-in Screen\", displayId 0, displayGroupId 0, FLAG_SECURE, FLAG_SUPPORTS_PROTECTED_BUFFERS, FLAG_TRUSTED, real {width} x {height}, largest app {width} x {height}, smallest app {width} x {height}, appVsyncOff 1000000, presDeadline 16666666, mode 1, defaultMode 1, modes [{{id=1, width={width}, height={height}, fps=60.0, alternativeRefreshRates=[]}}], rotation 0, type INTERNAL, address {{port=0, model=0x0}}, density {DENSITY} ({dpi} x {dpi}) dpi, layerStack 0, state {power}, uniqueId \"local:{DISPLAY_ID}\"}}\n"
    )
}

/// `dumpsys power`: the PowerManagerService state; the display suspend blocker is held while
/// the screen is on (what `is_screen_on` checks on a device).
fn power(state: &Snapshot) -> String {
    let on = state.screen_on;
    let wakefulness = if on { "Awake" } else { "Asleep" };
    let display = if on { "ON" } else { "OFF" };
    format!(
        "POWER MANAGER (dumpsys power)\n\nPower Manager State:\n  mDirty=0x0\n  mWakefulness={wakefulness}\n  mWakefulnessChanging=false\n  mIsPowered=true\n  mPlugType=1\n  mBatteryLevel=100\n  mBatteryLevelWhenDreamStarted=0\n  mDockState=0\n  mStayOn=false\n  mProximityPositive=false\n  mBootCompleted=true\n  mSystemReady=true\n  mHalAutoSuspendModeEnabled=false\n  mHalInteractiveModeEnabled={on}\n  mWakeLockSummary=0x{}\n  mNotifyLongScheduled=(none)\n  mNotifyLongDispatched=(none)\n  mNotifyLongNextCheck=(none)\n  mUserActivitySummary=0x{}\n  mRequestWaitForNegativeProximity=false\n  mSandmanScheduled=false\n  mBatteryLevelLow=false\n  mLightDeviceIdleMode=false\n  mDeviceIdleMode=false\n  mScreenBrightnessBoostInProgress=false\n  mHoldingWakeLockSuspendBlocker=false\n  mHoldingDisplaySuspendBlocker={on}\n\nDisplay Power: state={display}\n",
        if on { "0" } else { "1" },
        if on { "1" } else { "0" },
    )
}

/// `dumpsys battery`: the emulator's battery, full and on AC power.
fn battery() -> String {
    "Current Battery Service state:\n  AC powered: true\n  USB powered: false\n  Wireless powered: false\n  Max charging current: 0\n  Max charging voltage: 0\n  Charge counter: 10000\n  status: 2\n  health: 2\n  present: true\n  level: 100\n  scale: 100\n  voltage: 5000\n  temperature: 250\n  technology: Li-ion\n".to_string()
}

/// `dumpsys meminfo PKG`: the API 33 table (with its Rss column) for a running app, sized by
/// how many views and activities it holds.
fn meminfo(package: Option<&str>, state: &Snapshot) -> String {
    let Some(package) = package else {
        return "Applications Memory Usage (in Kilobytes):\nUptime: 0 Realtime: 0\n".to_string();
    };
    let Some(pid) = state.pid(package) else {
        return format!("No process found for: {package}\n");
    };
    let activities: usize = state
        .tasks
        .iter()
        .flat_map(|t| &t.activities)
        .filter(|(p, _)| p == package)
        .count();
    let views = if state.foreground.package == package {
        state.roots.iter().map(|r| r.walk().len()).sum()
    } else {
        0
    };
    let java = 2048 + 96 * views as u64 + 512 * activities as u64;
    let native = 4868 + 48 * views as u64;
    let code = 5932;
    let (stack, other) = (544, 1344);
    let pss = java + native + code + stack + other;
    let rss = pss * 3;
    format!(
        "Applications Memory Usage (in Kilobytes):\nUptime: 0 Realtime: 0\n\n** MEMINFO in pid {pid} [{package}] **\n                   Pss  Private  Private  SwapPss      Rss     Heap     Heap     Heap\n                 Total    Dirty    Clean    Dirty    Total     Size    Alloc     Free\n                ------   ------   ------   ------   ------   ------   ------   ------\n  Native Heap {native:>8} {native:>8}        0        0 {:>8} {:>8} {native:>8} {:>8}\n  Dalvik Heap {java:>8} {java:>8}        0        0 {:>8} {:>8} {java:>8} {:>8}\n        TOTAL {pss:>8} {:>8} {code:>8}        0 {rss:>8} {:>8} {:>8} {:>8}\n \n App Summary\n                       Pss(KB)                        Rss(KB)\n                        ------                         ------\n           Java Heap: {java:>8}                       {:>8}\n         Native Heap: {native:>8}                       {:>8}\n                Code: {code:>8}                       {:>8}\n               Stack: {stack:>8}                       {stack:>8}\n\n           TOTAL PSS: {pss:>8}            TOTAL RSS: {rss:>8}      TOTAL SWAP PSS:        0\n \n Objects\n               Views: {views:>8}         ViewRootImpl:        1\n         AppContexts: {:>8}           Activities: {activities:>8}\n",
        native + 1672,
        native * 2,
        native,
        java * 2,
        java * 2,
        java,
        pss - code,
        native * 2 + java * 2,
        native + java,
        native + java,
        java * 2,
        native + 1672,
        code * 9,
        activities + 2,
    )
}

/// `dumpsys SurfaceFlinger --display-id`: the one physical display.
fn surface_flinger(args: &[String], state: &Snapshot) -> String {
    if args.iter().any(|a| a == "--display-id") {
        format!(
            "Display {DISPLAY_ID} (HWC display 0): port=0 pnpId=GGL displayName=\"EMU_display_0\"\n"
        )
    } else {
        let (width, height) = state.size;
        format!(
            "Display {DISPLAY_ID} (HWC display 0): port=0 pnpId=GGL displayName=\"EMU_display_0\"\n  {width}x{height} @ 60Hz, density {DENSITY}\n"
        )
    }
}

/// The facts `dumpsys package PKG` tells about one installed package.
pub struct PackageFacts<'a> {
    pub package: &'a str,
    pub version_name: &'a str,
    pub apk_dir: &'a str,
    pub system: bool,
    /// The MAIN / LAUNCHER activity, fully qualified, if the package has one.
    pub launcher: Option<&'a str>,
}

/// `dumpsys package PKG` (the per-package block, API 33 shape).
pub fn package(facts: &PackageFacts) -> String {
    let PackageFacts {
        package,
        version_name,
        apk_dir,
        system,
        launcher,
    } = facts;
    // The intent filters the package declares, as the activity resolver lists them.
    let resolver = match launcher {
        Some(activity) => format!(
            "Activity Resolver Table:\n  Non-Data Actions:\n      android.intent.action.MAIN:\n        {} {} filter {}\n          Action: \"android.intent.action.MAIN\"\n          Category: \"android.intent.category.LAUNCHER\"\n\n",
            short_hash(activity),
            short_component(package, activity),
            short_hash(&format!("filter {activity}")),
        ),
        None => String::new(),
    };
    let flags = if *system {
        "SYSTEM HAS_CODE ALLOW_CLEAR_USER_DATA ALLOW_BACKUP"
    } else {
        "HAS_CODE ALLOW_CLEAR_USER_DATA ALLOW_BACKUP"
    };
    let (min_sdk, stamp) = if *system {
        (SDK, "2009-01-01 00:00:00")
    } else {
        ("24", "2026-01-01 00:00:00")
    };
    format!(
        "{resolver}Packages:\n  Package [{package}] ({}):\n    userId={}\n    pkg=Package{{{} {package}}}\n    codePath={apk_dir}\n    resourcePath={apk_dir}\n    versionCode=1 minSdk={min_sdk} targetSdk={SDK}\n    versionName={version_name}\n    splits=[base]\n    apkSigningVersion=3\n    flags=[ {flags} ]\n    dataDir=/data/user/0/{package}\n    timeStamp={stamp}\n    lastUpdateTime={stamp}\n    signatures=PackageSignatures{{{} version:3, signatures:[{}], past signatures:[]}}\n    pkgFlags=[ {flags} ]\n    User 0: ceDataInode=3252550 installed=true hidden=false suspended=false distractionFlags=0 stopped=false notLaunched=false enabled=0 instant=false virtual=false\n      installReason=0\n      firstInstallTime={stamp}\n      uninstallReason=0\n",
        short_hash(package),
        package_uid(package),
        short_hash(apk_dir),
        short_hash(&format!("sig {package}")),
        short_hash(&format!("cert {package}")),
    )
}

impl Phone {
    fn snapshot(&self) -> Snapshot {
        let pids = self.app_pids();
        let world = self.world();
        // The dump is the world's own serialisation: it parses; an empty view dump otherwise.
        let roots = crate::sim::model::parse_hierarchy(&world.hierarchy_xml()).unwrap_or_default();
        Snapshot {
            foreground: world.foreground(),
            anr: world.anr_showing(),
            tasks: world.tasks(),
            pids,
            size: world.screen_size(),
            screen_on: self.screen_on.load(Ordering::SeqCst),
            roots,
        }
    }

    pub(super) fn dumpsys(&self, args: &[String]) -> Output {
        if args.first().map(String::as_str) == Some("package") {
            return match args.get(1) {
                Some(package) => self.dumpsys_package(package),
                None => Output::ok("Packages:\n"),
            };
        }
        match dumpsys(args, &self.snapshot()) {
            Ok(out) => Output::ok(out),
            // dumpsys reports a missing service on stderr and still exits 0.
            Err(message) => Output::error(message, 0),
        }
    }

    fn dumpsys_package(&self, package: &str) -> Output {
        let world = self.world();
        let Some(version) = world.version_name(package) else {
            return Output::ok("");
        };
        let apk_dir = apk_dir(package);
        let launcher = world
            .launcher_activities()
            .into_iter()
            .find(|(p, _)| p == package)
            .map(|(_, activity)| activity);
        Output::ok(self::package(&PackageFacts {
            package,
            version_name: &version,
            apk_dir: &apk_dir,
            system: world.is_system_package(package),
            launcher: launcher.as_deref(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(screen: &str, package: &str, activity: &str) -> Snapshot {
        Snapshot {
            foreground: Foreground {
                package: package.to_string(),
                activity: activity.to_string(),
                screen: screen.to_string(),
            },
            anr: false,
            tasks: vec![TaskSummary {
                package: "com.a".to_string(),
                activities: vec![
                    ("com.a".to_string(), "com.a.Main".to_string()),
                    ("com.a".to_string(), "com.a.Detail".to_string()),
                ],
            }],
            pids: vec![("com.a".to_string(), 4321)],
            size: (1080, 2400),
            screen_on: true,
            roots: Vec::new(),
        }
    }

    #[test]
    fn components_print_like_activity_records() {
        assert_eq!(short_component("com.a", "com.a.Main"), "com.a/.Main");
        assert_eq!(short_component("com.a", "org.b.Main"), "com.a/org.b.Main");
        assert_eq!(full_class("com.a", ".Main"), "com.a.Main");
        assert_eq!(short_hash("x").len(), 7);
        assert!(activity_record("com.a", "com.a.Main").contains(" u0 com.a/.Main} t"));
    }

    #[test]
    fn top_lists_the_home_task_first_and_the_front_app_last() {
        let out = top(&state("detail", "com.a", "com.a.Detail"));
        let lines: Vec<&str> = out
            .lines()
            .filter(|l| l.trim_start().starts_with("ACTIVITY "))
            .collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].contains("com.android.launcher3/.uioverrides.QuickstepLauncher"));
        assert!(lines[1].contains("ACTIVITY com.a/.Detail ") && lines[1].ends_with(" pid=4321"));
        let home = top(&state("@launcher", LAUNCHER_PACKAGE, LAUNCHER_ACTIVITY));
        let last = home.lines().rfind(|l| l.contains("ACTIVITY ")).unwrap();
        assert!(last.contains("com.android.launcher3/"), "{home}");
    }

    #[test]
    fn display_and_power_follow_the_screen() {
        let mut on = state("detail", "com.a", "com.a.Detail");
        assert!(display(&on).contains("orientation=0,"));
        assert!(power(&on).contains("mHoldingDisplaySuspendBlocker=true"));
        on.screen_on = false;
        assert!(power(&on).contains("mHoldingDisplaySuspendBlocker=false"));
        assert!(display(&on).contains("Display State=OFF"));
    }

    #[test]
    fn resumed_activity_has_the_api_33_shape() {
        let out = activities(&state("detail", "com.a", "com.a.Detail"));
        let line = out
            .lines()
            .find(|l| l.starts_with("  ResumedActivity: "))
            .unwrap();
        assert!(line.contains(" u0 com.a/.Detail} t"), "{line}");
    }
}
