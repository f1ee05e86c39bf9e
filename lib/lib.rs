//! droid: explore Android apps on their own.
//!
//! Data flows one way: device → observation → decision → result → record → report.
//! Every stage is a function over a reader and a writer of event lines (see [`events`]).

pub mod act;
pub mod adb;
pub mod apk;
pub mod capture;
pub mod config;
pub mod crash;
pub mod crawl;
pub mod decide;
pub mod device;
pub mod events;
pub mod explore;
pub mod filter;
pub mod fixtures;
pub mod hash;
pub mod integrations;
pub mod mcp;
pub mod record;
pub mod report;
pub mod repro;
pub mod screen;
pub mod secret;
pub mod session;
pub mod sim;
pub mod store;
pub mod terminal;
pub mod ui;
