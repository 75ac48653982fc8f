//! Procedural macros for `tool-calling`.
//!
//! This crate reserves its place in the workspace; the tool attribute macro arrives
//! with the tool-registration work. It exports nothing yet.
