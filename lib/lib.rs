//! droid: explore Android apps on their own.
//!
//! Data flows one way: device → observation → decision → result → record → report.
//! Every stage is a function over a reader and a writer of event lines (see [`events`]).

pub mod act;
pub mod adb;
pub mod apk;
pub mod capture;
pub mod config;
pub mod decide;
pub mod device;
pub mod events;
pub mod explore;
pub mod filter;
pub mod hash;
pub mod integrations;
pub mod record;
pub mod screen;
pub mod secret;
pub mod sim;
pub mod store;
pub mod ui;
