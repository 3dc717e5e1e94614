//! `packaging/man/keepalived.conf.5` is generated from the keyword reference
//! `grammar/keywords.md` (itself checked against the parser's tables by
//! `tests/grammar_reference.rs`), so the page never drifts from what the
//! parser accepts. Regenerate with `UPDATE_MAN=1 cargo test --test manpage`.

use std::fmt::Write as _;

const MARK: &str = "<!-- generated: keyword tables -->";

/// roff-safe text: backslashes and leading dots/quotes escaped, markdown
/// code ticks dropped.
fn roff(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('`', "").replace("\\e|", "|");
    let s = s.replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

fn cells(line: &str) -> Vec<String> {
    // Cells split on '|' not escaped as '\|'.
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.trim().trim_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&'|') {
            cur.push('|');
            chars.next();
        } else if c == '|' {
            out.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    out.push(cur.trim().to_string());
    out
}

/// The table rows (cells) after the header line starting with `header`.
/// The rows of every table under `header`, in order.
fn tables(md: &str, header: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut rest = md;
    while let Some(at) = rest.find(header) {
        rest = &rest[at..];
        rows.extend(table(rest, header));
        rest = &rest[header.len()..];
    }
    rows
}

fn table(md: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = md.lines().skip_while(|l| !l.starts_with(header));
    lines.next();
    lines.next();
    lines
        .take_while(|l| l.starts_with('|'))
        .map(cells)
        .collect()
}

fn render(md: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        ".\\\" Generated from grammar/keywords.md by tests/manpage.rs; do not edit.\n\
         .TH KEEPALIVED.CONF 5 \"2026-11-30\" \"keepalived-rs 0.1.0\" \"File Formats\"\n\
         .SH NAME\n\
         keepalived.conf \\- configuration file of keepalived (keepalived-rs)\n\
         .SH DESCRIPTION\n\
         The file keepalived 2.2.7 reads, read the same way. Keywords are separated by\n\
         blanks; a block is a keyword followed by {{ on the same line, closed by }}.\n\
         ! and # start comments. \\fBinclude\\fR PATTERN reads other files (glob);\n\
         \\fB$NAME=VALUE\\fR defines and \\fB$NAME\\fR substitutes; a line starting with\n\
         \\fB@ID\\fR is read only when the config id (\\-i, default the host name) is ID,\n\
         \\fB@^ID\\fR only when it is not; \\fB~SEQ(VAR, START, STEP, END)\\fR repeats a line.\n\
         Times are seconds with up to six decimals.\n\
         .PP\n\
         Problems are reported by \\fBkeepalived \\-t\\fR with file, line and a hint.\n\
         VRRP instances and BFD sessions run as keepalived runs them (see VRRP and\n\
         bfd_instance below); with enable_snmp_vrrp/rfcv2/rfcv3 an AgentX subagent serves\n\
         the VRRP side's MIBs through the master at snmp_socket; the rest of SNMP is read\n\
         and checked, but not acted on yet."
    );
    let _ = writeln!(o, ".SH \"KEYWORDS WITH VALUES\"");
    for row in table(md, "| keyword (block) |") {
        if row.len() < 5 {
            continue;
        }
        let _ = writeln!(o, ".TP\n.B {}", roff(&row[0]));
        let mut parts = vec![format!("Arguments: {}.", roff(&row[1]))];
        if !row[2].is_empty() {
            parts.push(format!("Range: {}.", roff(&row[2])));
        }
        if !row[3].is_empty() {
            parts.push(format!("Default: {}.", roff(&row[3])));
        }
        if !row[4].is_empty() {
            parts.push(format!("Inherited: {}.", roff(&row[4])));
        }
        let _ = writeln!(o, "{}", parts.join(" "));
    }
    let _ = writeln!(o, ".SH VRRP");
    let _ = writeln!(
        o,
        "The VRRP blocks' values and keepalived 2.2.7's checks of them, each refusal with keepalived's message."
    );
    for row in table(md, "| keyword (block) | value | checks |") {
        if row.len() < 3 {
            continue;
        }
        let mut text = String::new();
        if !row[1].is_empty() {
            text.push_str(&format!("Value: {}.", roff(&row[1])));
        }
        if !row[2].is_empty() {
            text.push_str(&format!(" Checks: {}.", roff(&row[2])));
        }
        let _ = writeln!(o, ".TP\n.B {}\n{}", roff(&row[0]), text.trim());
    }
    let ext = tables(md, "| keyword | arguments | default | meaning |");
    // The keyword is the first word in backticks ("`half_open` (TCP_CHECK, VS)").
    let ext_names: Vec<String> = ext
        .iter()
        .map(|r| r[0].split('`').nth(1).unwrap_or(&r[0]).to_string())
        .collect();
    let _ = writeln!(o, ".SH \"EXTENSIONS OF KEEPALIVED\\-RS\"");
    let _ = writeln!(
        o,
        "keepalived 2.2.7 does not know these keywords (it reports them as unknown); where\n\
         they are not written, keepalived's behaviour holds."
    );
    for row in &ext {
        if row.len() < 4 {
            continue;
        }
        let _ = writeln!(
            o,
            ".TP\n.B {} \\fI{}\\fR\n{} (default: {}).",
            roff(&row[0]),
            roff(&row[1]),
            roff(&row[3]),
            roff(&row[2])
        );
    }
    let _ = writeln!(o, ".SH BLOCKS");
    let _ = writeln!(
        o,
        "Every keyword each block accepts; those that open a block of their own are marked {{ }}."
    );
    let generated = md.split(MARK).nth(1).unwrap_or("");
    let mut section: Option<String> = None;
    let mut words: Vec<String> = Vec::new();
    let flush = |o: &mut String, section: &Option<String>, words: &mut Vec<String>| {
        if let Some(s) = section {
            let _ = writeln!(o, ".SS {}\n{}", roff(s), words.join(", "));
        }
        words.clear();
    };
    for l in generated.lines() {
        if let Some(s) = l.strip_prefix("### `").and_then(|s| s.strip_suffix('`')) {
            flush(&mut o, &section, &mut words);
            section = Some(s.to_string());
        } else if let Some(rest) = l.strip_prefix("| `") {
            let (k, tail) = rest.split_once('`').unwrap_or((rest, ""));
            let mut w = format!("\\fB{}\\fR", roff(k));
            if tail.contains("yes") {
                w.push_str(" { }");
            }
            if ext_names.iter().any(|e| e == k) {
                w.push_str(" (keepalived\\-rs extension)");
            }
            words.push(w);
        }
    }
    flush(&mut o, &section, &mut words);
    let _ = writeln!(
        o,
        ".SH \"SEE ALSO\"\n.BR keepalived (8),\n.BR genhash (1),\n.BR ipvsadm (8)"
    );
    o
}

#[test]
fn config_man_page_is_generated_from_the_keyword_reference() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let md = std::fs::read_to_string(root.join("grammar/keywords.md")).expect("keywords.md");
    let page = render(&md);
    let path = root.join("packaging/man/keepalived.conf.5");
    if std::env::var("UPDATE_MAN").is_ok() {
        std::fs::write(&path, &page).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == page,
        "packaging/man/keepalived.conf.5 is out of date: UPDATE_MAN=1 cargo test --test manpage"
    );
    // What the page must hold: every section, and the extensions marked.
    assert!(page.contains(".SS global_defs"));
    assert!(page.contains(".SS virtual_server"));
    assert!(page.contains("\\fBstatus_socket\\fR (keepalived\\-rs extension)"));
    assert!(page.contains("\\fBreal_server\\fR { }"));
}
