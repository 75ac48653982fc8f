//! Checks of the module's layout: a format is one file that imports no other format, and
//! every list of the formats agrees with the registry.

use std::collections::BTreeSet;
use std::path::Path;

use super::format::{Escape, Marker};
use super::{IDS, TextFormat, auto, escape};
use crate::protocol::TEXT_PROTOCOL_IDS;
use crate::protocol::{BuiltinOptions, BuiltinProtocol, ProtocolRegistry};

/// The format files, by name (without `.rs`), with their text.
fn format_files() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/protocol/textfmt/formats");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|x| x == "rs"))
        .filter_map(|path| {
            let name = path.file_stem()?.to_str()?.to_string();
            let text = std::fs::read_to_string(&path).ok()?;
            Some((name, text))
        })
        .filter(|(name, _)| name != "mod")
        .collect();
    files.sort();
    files
}

/// The modules `text` names after `super::`, `super::super::` or a path through
/// `formats::`: the places a file of `formats/` could reach another format by.
fn reached(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for prefix in ["super::super::", "super::", "formats::"] {
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let after = rest.get(at + prefix.len()..).unwrap_or_default();
            let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                found.insert(name);
            }
            rest = after;
        }
    }
    found
}

/// The `use` paths of `text` and every path it names through `super::` or `formats::`
/// (doc links included) that leads to a format file other than `own`.
fn other_formats(own: &str, text: &str, formats: &BTreeSet<String>) -> Vec<String> {
    reached(text).into_iter().filter(|name| name != own && formats.contains(name)).collect()
}

#[test]
fn no_format_file_imports_another() {
    let files = format_files();
    let names: BTreeSet<String> = files.iter().map(|(name, _)| name.clone()).collect();
    let mut offenders = Vec::new();
    for (name, text) in &files {
        for other in other_formats(name, text, &names) {
            offenders.push(format!("formats/{name}.rs reaches formats/{other}.rs"));
        }
    }
    assert!(
        offenders.is_empty(),
        "a format imports readers, the driver and the trait, never a format:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_check_sees_an_import_of_another_format() {
    let names: BTreeSet<String> = ["hermes", "glm45", "longcat"].iter().map(|s| s.to_string()).collect();
    for text in [
        "use super::hermes::Rules;",
        "use super::super::glm45::FORMAT;",
        "use crate::protocol::textfmt::formats::hermes;",
        "//! As [`hermes`](super::hermes) reads it.",
    ] {
        assert!(!other_formats("longcat", text, &names).is_empty(), "{text}");
    }
    for text in [
        "use super::*;",
        "use crate::protocol::textfmt::readers::tagged::Tagged;",
        "use super::super::driver::Reading;",
    ] {
        assert!(other_formats("longcat", text, &names).is_empty(), "{text}");
    }
}

#[test]
fn one_file_per_format_and_the_registry_lists_each_once() {
    let files: BTreeSet<String> = format_files().into_iter().map(|(name, _)| name).collect();
    let ids: BTreeSet<String> = IDS.iter().map(|id| id.to_string()).collect();
    assert_eq!(ids.len(), IDS.len(), "an id is listed twice");
    assert_eq!(files, ids, "formats/ holds one file per registered format, named by its id");
    assert_eq!(TextFormat::ALL.len(), IDS.len());
    for (format, id) in TextFormat::ALL.into_iter().zip(IDS) {
        assert_eq!(format.id(), id);
        assert_eq!(TextFormat::from_id(id), Some(format));
    }
}

#[test]
fn the_model_layer_lists_vcp_then_every_format() {
    let ids: Vec<&str> = std::iter::once("vcp").chain(TextFormat::ALL.map(TextFormat::id)).collect();
    assert_eq!(ids, TEXT_PROTOCOL_IDS);
}

#[test]
fn every_format_is_a_builtin_protocol() {
    let options = BuiltinOptions::default();
    for format in TextFormat::ALL {
        let built = ProtocolRegistry::builtin(format.id(), &options);
        assert!(matches!(&built, Ok(BuiltinProtocol::TextFormat(p)) if p.format() == format), "{format}");
        assert!(ProtocolRegistry::builtin_ids().contains(&format.id()), "{format}");
        if let Ok(built) = built {
            assert_eq!(built.as_protocol().id(), format.id());
        }
    }
}

#[test]
fn auto_knows_every_marker_of_every_format() {
    let (openings, call_list) = auto::openings_and_call_list();
    for format in TextFormat::ALL {
        for marker in format.format().markers {
            match *marker {
                Marker::Token(token) | Marker::Shared { token, .. } => {
                    assert!(
                        auto::formats_of(token).contains(&format),
                        "{format}: {token:?} is not in auto's table"
                    );
                }
                Marker::Opening(pieces) => {
                    assert!(openings.contains(&(pieces, format)), "{format}: opening {pieces:?}");
                }
                Marker::CallList => assert_eq!(call_list, Some(format), "{format}: call lists"),
            }
        }
        for other in format.format().same_markup {
            assert_ne!(*other, format, "{format} names itself");
        }
    }
    // A token one format declares alone decides that format alone.
    for format in TextFormat::ALL {
        for marker in format.format().markers {
            if let Marker::Token(token) = marker {
                assert_eq!(auto::formats_of(token), [format], "{token:?} is declared twice");
            }
        }
    }
}

#[test]
fn neutralize_tokens_covers_every_format() {
    for format in TextFormat::ALL {
        for escape in format.format().escapes {
            assert!(escape::covers(escape), "{format}: {escape:?}");
            if let Escape::Tag(tag) = escape {
                let text = format!("<{tag}");
                assert!(super::neutralize_tokens(&text).starts_with("&lt;"), "{format}: {text}");
            }
        }
    }
}
