//! Compile-time layout checks: each file in tests/ui must fail to compile with
//! the message recorded beside it. Regenerate expectations deliberately
//! (`TRYBUILD=overwrite cargo test --test compile_fail`) and read the diff.

#[test]
fn layout_checks() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
