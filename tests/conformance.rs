//! Runs every conformance case: `tests/corpus/vcp/` (the conformance corpus: model replies,
//! several seen in the wild) and `tests/corpus/vcp-extra/` (cases derived rule by rule).
//!
//! A case is `NAME.txt` (the reply, byte for byte) and `NAME.json`:
//! `{"flags": [...], "requests": [{"tool_name", "args", "complete", "request_id"?}],
//!   "diagnostics"?: ["kind", ...]}`. Args are compared in order; `request_id` only where
//! the case gives one; `diagnostics` lists kinds that must be reported.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tool_calling::protocol::vcp::{RequestIdStyle, VcpOptions, VcpProtocol};

fn options(flags: &[Value]) -> VcpOptions {
    let mut options = VcpOptions::default().request_ids(RequestIdStyle::Sequential);
    for flag in flags {
        options = match flag.as_str() {
            Some("--fuzzy") => options.fuzzy_markers(true),
            Some("--skip-fenced") => options.skip_fenced(true),
            Some("--keep-think") => options.keep_reasoning(true),
            other => panic!("unknown flag {other:?}"),
        };
    }
    options
}

fn cases(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(dir);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    cases.sort();
    cases
}

/// Checks one case; returns a description of every mismatch.
fn check(txt: &Path) -> Vec<String> {
    let name = txt.file_stem().unwrap().to_string_lossy().to_string();
    let input = std::fs::read_to_string(txt).unwrap();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(txt.with_extension("json")).unwrap()).unwrap();
    let flags = expected["flags"].as_array().cloned().unwrap_or_default();
    let outcome = VcpProtocol::new(options(&flags)).parse(&input);
    let mut errors = Vec::new();
    let want = expected["requests"].as_array().unwrap();
    if want.len() != outcome.requests.len() {
        errors.push(format!(
            "{name}: expected {} requests, got {}: {:#?}",
            want.len(),
            outcome.requests.len(),
            outcome.requests
        ));
        return errors;
    }
    for (i, (want, got)) in want.iter().zip(&outcome.requests).enumerate() {
        if want["tool_name"] != got.tool_name.as_str() {
            errors.push(format!("{name}[{i}]: tool_name {:?} != {:?}", want["tool_name"], got.tool_name));
        }
        let want_args: Vec<(String, Value)> =
            want["args"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let got_args: Vec<(String, Value)> = got.args.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if want_args != got_args {
            errors.push(format!("{name}[{i}]: args\n  want {want_args:?}\n  got  {got_args:?}"));
        }
        if want["complete"] != got.complete {
            errors.push(format!(
                "{name}[{i}]: complete should be {} (problems: {:?})",
                want["complete"], got.problems
            ));
        }
        if got.complete != got.problems.is_empty() {
            errors.push(format!("{name}[{i}]: complete={} but problems={:?}", got.complete, got.problems));
        }
        if let Some(id) = want.get("request_id") {
            if id != got.request_id.as_str() {
                errors.push(format!("{name}[{i}]: request_id {id} != {:?}", got.request_id));
            }
        } else if got.id_source != tool_calling::RequestIdSource::Assigned {
            errors.push(format!("{name}[{i}]: unexpected model request_id {:?}", got.request_id));
        }
        if got.raw_block(&input).is_none_or(|b| !b.is_empty() && !b.starts_with('<')) {
            errors.push(format!("{name}[{i}]: span {:?} does not cover a block", got.span));
        }
    }
    for kind in expected.get("diagnostics").and_then(Value::as_array).into_iter().flatten() {
        let kind = kind.as_str().unwrap();
        if !outcome.diagnostics.iter().any(|d| d.kind.as_str() == kind) {
            errors.push(format!("{name}: expected a `{kind}` diagnostic, got {:#?}", outcome.diagnostics));
        }
    }
    errors
}

fn run(dir: &str, minimum: usize) {
    let cases = cases(dir);
    assert!(cases.len() >= minimum, "{dir}: only {} cases found", cases.len());
    let errors: Vec<String> = cases.iter().flat_map(|c| check(c)).collect();
    assert!(errors.is_empty(), "{} mismatches in {dir}:\n{}", errors.len(), errors.join("\n"));
}

#[test]
fn conformance_corpus() {
    run("vcp", 31);
}

#[test]
fn spec_rule_corpus() {
    run("vcp-extra", 1);
}
