//! The runtime's layers only point down (docs/architecture.md): a module of
//! `redis-entity/src` names only modules of its own layer or of layers below
//! it, by their real path (`crate::store::Store`, never the lib.rs re-export
//! `crate::Store`), so that the real dependencies are the visible ones.
//!
//! Read from the sources: every `crate::<module>` outside comments and
//! string literals. A new upward import fails this test, naming the file,
//! the line and both layers.

use std::path::Path;

/// Bottom to top: each layer's modules (files or folders of `src`).
const LAYERS: &[(&str, &[&str])] = &[
    ("base", &["error", "seen", "conn"]),
    ("schema", &["schema"]),
    ("keyspace", &["keyspace"]),
    ("script", &["script"]),
    ("plan", &["plan"]),
    ("near cache", &["near"]),
    ("store", &["store", "any"]),
    ("front", &["blocking", "admin"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

/// The line without its comment and its string literals.
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '/' if chars.peek() == Some(&'/') => break,
            _ => out.push(c),
        }
    }
    out
}

/// Every `crate::<segment>` the code of `line` names.
fn named(line: &str) -> Vec<String> {
    let code = code_of(line);
    code.match_indices("crate::")
        .map(|(i, _)| {
            code[i + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '{')
                .collect()
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The violations in the runtime's sources: (file:line, what is wrong).
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    walk(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = top.trim_end_matches(".rs");
        if module == "lib" {
            continue; // the public surface: it re-exports from every layer
        }
        let own = layer_of(module)
            .unwrap_or_else(|| panic!("{}: module `{module}` is in no layer", rel.display()));
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for segment in named(line) {
                let at = format!("{}:{}", rel.display(), n + 1);
                match layer_of(&segment) {
                    Some(l) if l <= own => {}
                    Some(l) => found.push(format!(
                        "{at}: `{}` ({}) imports `crate::{segment}` ({}), a layer above",
                        module, LAYERS[own].0, LAYERS[l].0
                    )),
                    None => found.push(format!(
                        "{at}: `crate::{segment}` is not a module of a layer (a lib.rs \
                         re-export or a grouped import): name the real path"
                    )),
                }
            }
        }
    }
    found
}

#[test]
fn the_runtime_layers_only_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("redis-entity/src");
    let found = violations(&src);
    assert!(
        found.is_empty(),
        "{} upward imports:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_check_sees_an_upward_import_and_a_re_export() {
    // The checker itself, on lines as they would be written.
    assert_eq!(named("use crate::store::Store; // crate::near"), ["store"]);
    assert_eq!(
        named(r#"let s = "crate::Store"; crate::Entity"#),
        ["Entity"]
    );
    assert_eq!(layer_of("plan"), Some(4));
    assert!(layer_of("Store").is_none());
    let dir = std::env::temp_dir().join(format!("layers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("schema")).unwrap();
    std::fs::write(
        dir.join("schema/field.rs"),
        "use crate::store::Store;\nuse crate::Error;\n",
    )
    .unwrap();
    let found = violations(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("schema/field.rs:1") && found[0].contains("a layer above"));
    assert!(found[1].contains("schema/field.rs:2") && found[1].contains("re-export"));
}
