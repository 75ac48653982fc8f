//! Compile-fail checks of the `#[tool]` and `#[tool_fn]` macros: each case must fail
//! with a readable message pointing at the offending code (`tests/ui/*.stderr`).
//!
//! The cases name the macros through this crate, not through `tool_calling` (which
//! re-exports them): each error is raised by the macro before any code that needs the
//! library is written, so trybuild's project needs this crate alone (with syn, quote,
//! proc-macro2 and trybuild's own few dependencies), not the whole library with every
//! feature and dev-dependency.

#[test]
fn macro_compile_errors() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
