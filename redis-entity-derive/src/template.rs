//! Key templates: `"user:userid:{id}"`, `"red_package:{program_id}_{task_id}_{uid}"`.
//!
//! The placeholders are the pk fields. On one server the key is the template
//! as written (`user:userid:9`, `red_package:1_2_3`); on Redis Cluster the
//! span from the first placeholder to the last is one hash tag
//! (`user:userid:{9}`, `red_package:{1_2_3}`), so every key of one entity
//! lands in one slot, and the tag is fixed by the template, never by a value
//! (values are escaped and cannot contain braces).

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Lit(String),
    Field(String),
}

/// Characters a template literal may not contain: glob syntax in SCAN
/// patterns, the escape character of key values, and `@`, which starts the
/// names of the runtime's own key families (`user:@ids`, `user:@country:DE`).
const FORBIDDEN: &str = "*?[]\\%@";

pub fn parse(s: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => return Err(format!("unclosed `{{{name}` in the key template")),
                    }
                }
                let ident_like = name
                    .chars()
                    .enumerate()
                    .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
                if name.is_empty() || !ident_like {
                    return Err(format!("`{{{name}}}` in the key template must name a `#[pk]` field"));
                }
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
                parts.push(Part::Field(name));
            }
            '}' => return Err("unmatched `}` in the key template".into()),
            '@' => {
                return Err(
                    "`@` may not appear in a key template: it marks the runtime's own keys (`user:@ids`)"
                        .into(),
                )
            }
            c if FORBIDDEN.contains(c) => {
                return Err(format!(
                    "`{c}` may not appear in a key template: it is SCAN glob syntax or the escape character"
                ))
            }
            c => lit.push(c),
        }
    }
    if !lit.is_empty() {
        parts.push(Part::Lit(lit));
    }
    match parts.first() {
        Some(Part::Lit(_)) => {}
        _ => {
            return Err("the key template must start with a literal prefix such as `user:`".into())
        }
    }
    for w in parts.windows(2) {
        if let [Part::Field(a), Part::Field(b)] = w {
            return Err(format!(
                "`{{{a}}}` and `{{{b}}}` need a separator between them, such as `_` or `:`"
            ));
        }
    }
    for w in parts.windows(3) {
        if let [Part::Field(_), Part::Lit(sep), Part::Field(_)] = w {
            if sep.chars().any(|c| c.is_alphanumeric() || c == '-') {
                return Err(format!(
                    "separator `{sep}` between pk fields may not contain letters, digits or `-`: numbers would run into it"
                ));
            }
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_composite_templates() {
        assert_eq!(
            parse("red_package:{program_id}_{task_id}").unwrap(),
            vec![
                Part::Lit("red_package:".into()),
                Part::Field("program_id".into()),
                Part::Lit("_".into()),
                Part::Field("task_id".into()),
            ]
        );
    }

    #[test]
    fn rejects_bad_templates() {
        assert!(parse("{id}").is_err());
        assert!(parse("user:{id}{name}").is_err());
        assert!(parse("user:{id}x{name}").is_err());
        assert!(parse("user:*:{id}").is_err());
        assert!(parse("user:{id").is_err());
        assert!(parse("user:{1d}").is_err());
        assert!(
            parse("user:@x:{id}").is_err(),
            "`@` marks the runtime's keys"
        );
    }
}
