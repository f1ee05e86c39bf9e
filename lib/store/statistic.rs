//! The run statistics, one table: each one's name (the reference design's), the group the
//! reports show it in, and how it is computed. The `run_stats` schema, the projection that fills
//! it, the report's data and every report format read their names, groups and kinds here.

use std::fmt;

/// The groups the reports show statistics in, in the reference design's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    Progress,
    Discovery,
    Actions,
    Model,
    Batching,
    Recovery,
    Device,
    Security,
    Coverage,
}

impl Group {
    pub const ALL: [Group; 9] = [
        Group::Progress,
        Group::Discovery,
        Group::Actions,
        Group::Model,
        Group::Batching,
        Group::Recovery,
        Group::Device,
        Group::Security,
        Group::Coverage,
    ];

    /// The group's heading in the reports.
    pub fn title(self) -> &'static str {
        match self {
            Group::Progress => "Crawl progress",
            Group::Discovery => "Screen discovery",
            Group::Actions => "Actions",
            Group::Model => "Model performance",
            Group::Batching => "Multi-action batching",
            Group::Recovery => "Errors and recovery",
            Group::Device => "Device and session",
            Group::Security => "Network and security",
            Group::Coverage => "Coverage",
        }
    }

    /// The group's statistics, in their order.
    pub fn statistics(self) -> impl Iterator<Item = Statistic> {
        Statistic::ALL
            .iter()
            .copied()
            .filter(move |s| s.group() == self)
    }
}

/// How a statistic is computed, and where it is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Computed {
    /// By the projection, into the `run_stats` column of the statistic's name, of this SQL type.
    Column(&'static str),
    /// By the projection, as a JSON object in the `<name>_json` column of `run_stats`.
    JsonColumn,
    /// By the report from the run's rows when it is read (derived from other statistics or
    /// from the run itself): not stored.
    Report,
}

macro_rules! statistics {
    ($($(#[$meta:meta])* $variant:ident = $name:literal, $group:ident, $computed:expr;)+) => {
        /// A run statistic (see the module documentation).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Statistic {
            $($(#[$meta])* $variant,)+
        }

        impl Statistic {
            /// Every statistic, grouped, in the order the reports show them.
            pub const ALL: &'static [Statistic] = &[$(Statistic::$variant),+];

            /// The statistic's name (the reference design's, a key of `--format json`'s
            /// `run_stats`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Statistic::$variant => $name,)+
                }
            }

            pub fn group(self) -> Group {
                match self {
                    $(Statistic::$variant => Group::$group,)+
                }
            }

            pub fn computed(self) -> Computed {
                match self {
                    $(Statistic::$variant => $computed,)+
                }
            }
        }
    };
}

use Computed::{Column, JsonColumn, Report};

const INTEGER: Computed = Column("INTEGER");
const REAL: Computed = Column("REAL");
const TEXT: Computed = Column("TEXT");

statistics! {
    TotalSteps = "total_steps", Progress, INTEGER;
    SuccessfulSteps = "successful_steps", Progress, INTEGER;
    FailedSteps = "failed_steps", Progress, INTEGER;
    CrawlDurationSeconds = "crawl_duration_seconds", Progress, REAL;
    AvgStepDurationMs = "avg_step_duration_ms", Progress, REAL;
    UniqueScreensVisited = "unique_screens_visited", Discovery, INTEGER;
    TotalScreenVisits = "total_screen_visits", Discovery, INTEGER;
    /// Unique screens per minute of the crawl.
    ScreensPerMinute = "screens_per_minute", Discovery, Report;
    DeepestNavigationDepth = "deepest_navigation_depth", Discovery, INTEGER;
    MostVisitedScreenId = "most_visited_screen_id", Discovery, INTEGER;
    MostVisitedScreenCount = "most_visited_screen_count", Discovery, INTEGER;
    ActionsByType = "actions_by_type", Actions, JsonColumn;
    SuccessfulActionsByType = "successful_actions_by_type", Actions, JsonColumn;
    FailedActionsByType = "failed_actions_by_type", Actions, JsonColumn;
    AvgActionDurationMs = "avg_action_duration_ms", Actions, REAL;
    MinActionDurationMs = "min_action_duration_ms", Actions, REAL;
    MaxActionDurationMs = "max_action_duration_ms", Actions, REAL;
    TotalAiCalls = "total_ai_calls", Model, INTEGER;
    AvgAiResponseTimeMs = "avg_ai_response_time_ms", Model, REAL;
    MinAiResponseTimeMs = "min_ai_response_time_ms", Model, REAL;
    MaxAiResponseTimeMs = "max_ai_response_time_ms", Model, REAL;
    AiTimeoutCount = "ai_timeout_count", Model, INTEGER;
    AiErrorCount = "ai_error_count", Model, INTEGER;
    AiRetryCount = "ai_retry_count", Model, INTEGER;
    InvalidResponseCount = "invalid_response_count", Model, INTEGER;
    TotalAiTokensUsed = "total_ai_tokens_used", Model, INTEGER;
    /// What the model calls cost: their tokens at the model's price per million (null when no
    /// call had a price and reported tokens).
    TotalAiCost = "total_ai_cost", Model, REAL;
    /// The model calls' cost per unique screen of the run.
    AiCostPerNewScreen = "ai_cost_per_new_screen", Model, Report;
    /// Model calls per unique screen of the run.
    AiCallsPerNewScreen = "ai_calls_per_new_screen", Model, Report;
    /// Decisions the heuristic made because the model failed.
    HeuristicFallbackCount = "heuristic_fallback_count", Model, INTEGER;
    MultiActionBatchCount = "multi_action_batch_count", Batching, INTEGER;
    SingleActionCount = "single_action_count", Batching, INTEGER;
    TotalBatchActions = "total_batch_actions", Batching, INTEGER;
    AvgBatchSize = "avg_batch_size", Batching, REAL;
    MaxBatchSize = "max_batch_size", Batching, INTEGER;
    /// Successful steps, in percent of the steps that ended.
    BatchSuccessRate = "batch_success_rate", Batching, Report;
    StuckDetectionCount = "stuck_detection_count", Recovery, INTEGER;
    StuckRecoverySuccess = "stuck_recovery_success", Recovery, INTEGER;
    AppCrashCount = "app_crash_count", Recovery, INTEGER;
    AppRelaunchCount = "app_relaunch_count", Recovery, INTEGER;
    /// Losses of context (another app in front), each counted once however long it lasted.
    ContextLossCount = "context_loss_count", Recovery, Report;
    ContextRecoveryCount = "context_recovery_count", Recovery, INTEGER;
    InvalidBboxCount = "invalid_bbox_count", Recovery, INTEGER;
    UiautomatorCrashCount = "uiautomator_crash_count", Recovery, INTEGER;
    UiautomatorRecoveryCount = "uiautomator_recovery_count", Recovery, INTEGER;
    AvgRecoveryTimeMs = "avg_recovery_time_ms", Recovery, REAL;
    DeviceId = "device_id", Device, Report;
    DeviceModel = "device_model", Device, TEXT;
    AndroidVersion = "android_version", Device, TEXT;
    /// `WIDTHxHEIGHT`.
    ScreenResolution = "screen_resolution", Device, Report;
    ScreenWidth = "screen_width", Device, INTEGER;
    ScreenHeight = "screen_height", Device, INTEGER;
    AppPackage = "app_package", Device, Report;
    AppVersion = "app_version", Device, TEXT;
    SessionStartTime = "session_start_time", Device, Report;
    SessionEndTime = "session_end_time", Device, Report;
    PcapFileSizeBytes = "pcap_file_size_bytes", Security, INTEGER;
    PcapPacketCount = "pcap_packet_count", Security, INTEGER;
    MobsfSecurityScore = "mobsf_security_score", Security, REAL;
    MobsfHighIssues = "mobsf_high_issues", Security, INTEGER;
    MobsfMediumIssues = "mobsf_medium_issues", Security, INTEGER;
    MobsfLowIssues = "mobsf_low_issues", Security, INTEGER;
    VideoFileSizeBytes = "video_file_size_bytes", Security, INTEGER;
    VideoDurationSeconds = "video_duration_seconds", Security, REAL;
    /// Screens of the run with widget actions never tried.
    ScreensWithUnexploredElements = "screens_with_unexplored_elements", Coverage, Report;
    UniqueActivitiesVisited = "unique_activities_visited", Coverage, INTEGER;
    TransitionCount = "transition_count", Coverage, INTEGER;
    UniqueTransitions = "unique_transitions", Coverage, INTEGER;
    /// Distinct (from, to) screen pairs of the run's transitions.
    NavigationGraphEdges = "navigation_graph_edges", Coverage, Report;
}

impl Statistic {
    /// The statistic of a name.
    pub fn named(name: &str) -> Option<Statistic> {
        Statistic::ALL.iter().copied().find(|s| s.name() == name)
    }

    /// Its `run_stats` column, when the projection stores it.
    pub fn column(self) -> Option<String> {
        match self.computed() {
            Column(_) => Some(self.name().to_string()),
            JsonColumn => Some(format!("{}_json", self.name())),
            Report => None,
        }
    }
}

impl fmt::Display for Statistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_stats_table_has_a_column_for_each_stored_statistic_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("crawler.db")).unwrap();
        let columns: Vec<(String, String)> = store
            .conn
            .prepare("SELECT name, type FROM pragma_table_info('run_stats') ORDER BY cid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut stored: Vec<(String, String)> = Statistic::ALL
            .iter()
            .filter_map(|s| {
                let kind = match s.computed() {
                    Column(kind) => kind,
                    JsonColumn => "TEXT",
                    Report => return None,
                };
                Some((s.column()?, kind.to_string()))
            })
            .collect();
        let mut found: Vec<(String, String)> = columns
            .into_iter()
            .filter(|(name, _)| name != "id" && name != "run_id")
            .collect();
        stored.sort();
        found.sort();
        assert_eq!(found, stored);
    }

    #[test]
    fn names_are_unique_and_groups_keep_the_table_order() {
        let mut names: Vec<&str> = Statistic::ALL.iter().map(|s| s.name()).collect();
        let grouped: Vec<Statistic> = Group::ALL.iter().flat_map(|g| g.statistics()).collect();
        assert_eq!(grouped, Statistic::ALL);
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Statistic::ALL.len());
        assert_eq!(Statistic::named("total_steps"), Some(Statistic::TotalSteps));
    }
}
