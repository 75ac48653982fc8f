//! Compile-fail checks of the `#[tool]` macros: each case must fail with a readable
//! message pointing at the offending code (`tests/ui/*.stderr`).

#[test]
fn macro_compile_errors() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
