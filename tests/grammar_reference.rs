//! `grammar/keywords.md` and the parser's keyword tables must agree: every
//! keyword of every block is listed under its section, and nothing else.
//! Regenerate the section lists with `UPDATE_GRAMMAR=1 cargo test --test grammar_reference`
//! (hand-written notes below the generated marker are kept).

use keepalived::config::keywords::keyword_paths;
use std::collections::BTreeMap;

const MARK: &str = "<!-- generated: keyword tables -->";

fn from_code() -> BTreeMap<String, Vec<(String, bool)>> {
    let mut m: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    for (section, kw, block) in keyword_paths() {
        let s = if section.is_empty() {
            "(root)".to_string()
        } else {
            section
        };
        m.entry(s).or_default().push((kw, block));
    }
    m
}

fn render(m: &BTreeMap<String, Vec<(String, bool)>>) -> String {
    let mut out = String::new();
    for (section, kws) in m {
        out.push_str(&format!(
            "\n### `{section}`\n\n| keyword | opens a block |\n|---|---|\n"
        ));
        for (k, b) in kws {
            out.push_str(&format!("| `{k}` | {} |\n", if *b { "yes" } else { "" }));
        }
    }
    out
}

fn parse(md: &str) -> BTreeMap<String, Vec<(String, bool)>> {
    let mut m: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    let mut cur = None;
    for l in md.split(MARK).nth(1).unwrap_or("").lines() {
        if let Some(s) = l.strip_prefix("### `").and_then(|s| s.strip_suffix('`')) {
            cur = Some(s.to_string());
        } else if let (Some(c), Some(rest)) = (&cur, l.strip_prefix("| `")) {
            let (k, tail) = rest.split_once('`').unwrap();
            m.entry(c.clone())
                .or_default()
                .push((k.to_string(), tail.contains("yes")));
        }
    }
    m
}

#[test]
fn keyword_reference_matches_code() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("grammar/keywords.md");
    let md = std::fs::read_to_string(&path).unwrap_or_default();
    let code = from_code();
    if std::env::var("UPDATE_GRAMMAR").is_ok() {
        let head = md.split(MARK).next().unwrap_or("").to_string();
        std::fs::write(&path, format!("{head}{MARK}\n{}", render(&code))).unwrap();
        return;
    }
    let doc = parse(&md);
    let mut problems = Vec::new();
    for (s, kws) in &code {
        for k in kws {
            if !doc.get(s).is_some_and(|d| d.contains(k)) {
                problems.push(format!(
                    "in code, not in grammar/keywords.md: {s} / {} (block: {})",
                    k.0, k.1
                ));
            }
        }
    }
    for (s, kws) in &doc {
        for k in kws {
            if !code.get(s).is_some_and(|c| c.contains(k)) {
                problems.push(format!(
                    "in grammar/keywords.md, not in code: {s} / {}",
                    k.0
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
