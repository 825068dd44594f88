//! User-facing text (README, CHANGELOG, docs/, examples, the library's
//! rustdoc and error messages) speaks to users: no references to the
//! project's own work tracking (issue numbers, planning documents, work
//! sessions, lettered benchmark runs). The lab notebook, `benches/NOTES.md`,
//! is not user-facing and may keep them.

use std::path::{Path, PathBuf};

/// The files a user reads: markdown at the top and in docs/, examples, and
/// the sources of both crates (their doc comments and messages).
fn user_facing() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<PathBuf> = ["README.md", "CHANGELOG.md"]
        .iter()
        .map(|f| root.join(f))
        .filter(|p| p.exists())
        .collect();
    for dir in [
        "docs",
        "examples",
        "redis-entity/src",
        "redis-entity-derive/src",
    ] {
        walk(&root.join(dir), &mut out);
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "rs" || e == "md" || e == "lua")
        {
            out.push(path);
        }
    }
}

/// What in `line` reads as an internal reference, if anything.
fn internal_reference(line: &str) -> Option<&'static str> {
    let lower = line.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '#')
        .filter(|w| !w.is_empty())
        .collect();
    for pair in words.windows(2) {
        let number = |w: &str| {
            let w = w.trim_start_matches('#');
            !w.is_empty() && w.chars().all(|c| c.is_ascii_digit())
        };
        match pair {
            ["issue" | "issues", n] if number(n) => return Some("an issue number"),
            ["seed" | "seeds", n] if number(n) => return Some("a planning document"),
            ["stop", n] if number(n) => return Some("a stop number"),
            ["this" | "next" | "last" | "earlier" | "previous" | "later", "session"] => {
                return Some("a work session")
            }
            _ => {}
        }
    }
    if lower.contains("seeds/") || lower.contains("seed document") {
        return Some("a planning document");
    }
    // A lettered run ("Run S", "run T (above)"): a capital letter alone
    // after the word, not a type parameter (`fn run<T>`).
    let bytes = line.as_bytes();
    for (at, _) in line.match_indices("un ") {
        let word_start = at.checked_sub(1).map(|r| bytes[r]);
        let before = at.checked_sub(2).map(|b| bytes[b]);
        let starts_word = matches!(word_start, Some(b'R' | b'r'))
            && before.is_none_or(|b| !b.is_ascii_alphanumeric());
        let letter = bytes.get(at + 3).copied();
        let after = bytes.get(at + 4).copied();
        if starts_word
            && letter.is_some_and(|l| l.is_ascii_uppercase() && l != b'A')
            && after.is_none_or(|a| b" ,.;:)".contains(&a))
        {
            return Some("a lettered run");
        }
    }
    None
}

#[test]
fn user_facing_text_has_no_internal_references() {
    let mut found = Vec::new();
    for path in user_facing() {
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            if let Some(what) = internal_reference(line) {
                found.push(format!(
                    "{}:{}: {what}: {}",
                    path.display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "internal references:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_each_kind_and_spares_ordinary_words() {
    for line in [
        "as issue 23 measured",
        "see Issue #54",
        "Seeds 000 (section 1.1)",
        "in seeds/README.md",
        "since stop 12",
        "measured in this session",
        "Run S (above)",
        "run T of the same code",
    ] {
        assert!(internal_reference(line).is_some(), "{line}");
    }
    for line in [
        "store.expiry::<Session>() has save_with_ttl",
        "a user session expires after an hour",
        "the cluster's seed nodes",
        "run a query",
        "stop the server",
        "issues a SCAN",
    ] {
        assert_eq!(internal_reference(line), None, "{line}");
    }
}
