//! Tests without the test world.

mod api_limits;
mod bench;
mod crash;
mod diagnostics;
mod docs;
mod engine;
mod examples;
mod git_modules;
mod hardening;
mod helm_missing;
mod hostile;
mod language;
mod language_115;
mod layering;
mod local_flow;
mod locks;
mod node_check;
mod provisioners;
mod registry_modules;
mod secrets;
mod terraform;
mod terraform_workflow;
mod upstream;
mod utility;
mod variables;
mod webhook;
