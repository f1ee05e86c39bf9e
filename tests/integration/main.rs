//! One integration test binary; a module per stage (ripgrep's layout).

mod act;
mod adb;
mod apk;
mod capture;
mod capture_device;
mod common;
#[path = "../support/coverage_tables.rs"]
mod coverage_tables;
mod crawl;
#[path = "../support/crawl.rs"]
mod crawled;
mod decide_from_store;
mod decide_heuristic;
mod decide_openai_compat;
mod decide_providers;
mod device;
mod docs;
mod errors;
mod events;
#[path = "../support/explore.rs"]
mod explore;
mod fuzz;
mod hash;
mod integrations;
mod mcp_server;
#[path = "../support/mcp_stdio.rs"]
mod mcp_stdio;
mod media;
mod model_runs;
mod one_graph;
mod record;
mod report;
mod repro;
mod sim_adb;
mod sim_check;
mod sim_clients;
mod sim_console;
mod sim_dispatch;
mod sim_infer;
mod sim_install;
mod sim_mcp;
mod sim_programs;
mod sim_protocol;
mod sim_world;
mod stage_contract;
#[path = "../support/stand_in.rs"]
mod stand_in;
mod ui;
