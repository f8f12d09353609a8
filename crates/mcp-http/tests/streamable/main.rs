//! Streamable HTTP, legacy (session) era: lifecycle, limits, SSE responses,
//! resumability, the standalone stream, bad input, load and shutdown. Each
//! test serves its own endpoint on a loopback port.

mod bad_input;
mod lifecycle;
mod load;
mod streams;

#[path = "../common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;
use mcp_http::ResponseMode;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HOST, ORIGIN};
use serde_json::{Value, json};

const V11: &str = "2025-11-25";
const V06: &str = "2025-06-18";

fn progress_values(messages: &[Value], token: &Value) -> Vec<f64> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(&m["params"]["progressToken"], token, "{m}");
            m["params"]["progress"]
                .as_f64()
                .expect("progress is a number")
        })
        .collect()
}
