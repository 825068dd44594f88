//! Expansion snapshots: representative entities expanded and pretty-printed,
//! compared with `tests/expand/*.expanded.rs`. A change to generated code
//! shows up as a diff there; regenerate deliberately with
//! `UPDATE_EXPECT=1 cargo test -p redis-entity-derive` and read the diff.

use expect_test::{expect_file, ExpectFile};

fn assert_expansion(input: &str, expected: ExpectFile) {
    let input: syn::DeriveInput = match syn::parse_str(input) {
        Ok(input) => input,
        Err(e) => panic!("test input does not parse: {e}"),
    };
    let tokens = crate::derive(&input);
    let file: syn::File = match syn::parse2(tokens.clone()) {
        Ok(file) => file,
        Err(e) => panic!("expansion is not a file of items: {e}\n{tokens}"),
    };
    expected.assert_eq(&prettyplease::unparse(&file));
}

#[test]
fn hash_layout_with_every_index_kind_and_a_map() {
    assert_expansion(
        r#"
        struct User {
            #[pk]
            id: u64,
            #[index(unique)]
            username: String,
            #[index]
            country: String,
            #[index(sorted)]
            level: i64,
            #[index(sorted)]
            born: Option<u32>,
            #[index(prefix)]
            name: String,
            #[index]
            tags: BTreeSet<String>,
            #[redis(rename = "mail")]
            email: Option<String>,
            #[redis(json)]
            extra: Vec<u8>,
            #[redis(default)]
            score: u32,
            #[hash]
            settings: BTreeMap<String, String>,
            #[redis(skip)]
            cache: Vec<String>,
        }
        "#,
        expect_file!["../tests/expand/hash_layout.expanded.rs"],
    );
}

#[test]
fn strings_layout_with_key_template_and_ttl() {
    assert_expansion(
        r#"
        #[redis(layout = "strings", key = "session:id:{id}", ttl = 3600)]
        pub struct Session {
            #[pk]
            #[redis(pad = 8)]
            id: u32,
            user: String,
            #[redis(ttl = 60)]
            code: Option<String>,
            #[hash]
            flags: HashMap<String, String>,
        }
        "#,
        expect_file!["../tests/expand/strings_layout.expanded.rs"],
    );
}

#[test]
fn json_layout() {
    assert_expansion(
        r#"
        #[redis(layout = "json", prefix = "doc")]
        struct Document {
            #[pk]
            id: String,
            title: String,
            body: Option<String>,
            tags: Vec<String>,
            meta: BTreeMap<String, u32>,
        }
        "#,
        expect_file!["../tests/expand/json_layout.expanded.rs"],
    );
}

#[test]
fn composite_pk_with_an_indexed_pk_field() {
    assert_expansion(
        r#"
        #[redis(key = "red_package:{program_id}_{task_id}_{uid}", crate = "::re")]
        pub(crate) struct RedPackage {
            #[pk]
            #[index]
            program_id: u64,
            #[pk]
            task_id: u64,
            #[pk]
            #[index]
            uid: String,
            status: u8,
        }
        "#,
        expect_file!["../tests/expand/composite_pk.expanded.rs"],
    );
}

#[test]
fn version_column() {
    assert_expansion(
        r#"
        #[hash]
        struct Account {
            #[pk]
            id: u64,
            balance: i64,
            #[version]
            version: u64,
        }
        "#,
        expect_file!["../tests/expand/version.expanded.rs"],
    );
}

/// On error: the `compile_error!`s, then the stub that keeps `User::NICK`,
/// `User::key` and `impl Entity` in place for the rest of the user's code.
#[test]
fn one_bad_attribute_gives_its_error_and_a_stub() {
    assert_expansion(
        r#"
        struct User {
            #[pk]
            id: u64,
            #[index(unique)]
            username: String,
            #[redis(renam = "n")]
            nick: String,
        }
        "#,
        expect_file!["../tests/expand/stub_on_error.expanded.rs"],
    );
}

/// Without a pk the stub's `Pk` is `()`: the error says what to add.
#[test]
fn no_pk_stub() {
    assert_expansion(
        r#"
        struct User {
            name: String,
        }
        "#,
        expect_file!["../tests/expand/stub_without_pk.expanded.rs"],
    );
}
