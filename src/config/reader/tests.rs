//! The preprocessor against keepalived 2.2.7's `read_line()`, line by line.

use super::*;

/// Files in memory under `/c`, the working directory: (name, text).
fn files(of: &[(&str, &[u8])]) -> MemLoader {
    let mut l = MemLoader {
        cwd: PathBuf::from("/c"),
        ..MemLoader::default()
    };
    for (name, text) in of {
        l.files.insert(Path::new("/c").join(name), text.to_vec());
    }
    l
}

fn lines(text: &[u8]) -> (Vec<(String, usize)>, Diagnostics) {
    let l = files(&[("k.conf", text)]);
    let mut r = Reader::new(&l, Path::new("/c/k.conf"), "host", IncludeCheck::default());
    let mut out = Vec::new();
    while let Some(x) = r.next_line() {
        out.push((x.text, x.pos.line));
    }
    (out, r.diags)
}

#[test]
fn last_line_without_newline_has_its_own_number() {
    // keepalived would say line 1 here (fgets counting); see docs/compat.md.
    let (l, _) = lines(b"a 1\nb 2");
    assert_eq!(l, vec![("a 1".into(), 1), ("b 2".into(), 2)]);
}

#[test]
fn too_long_line_is_dropped_and_its_rest_read() {
    let mut text = vec![b'x'; MAXBUF - 1];
    text.extend_from_slice(b"tail\nnext\n");
    let (l, d) = lines(&text);
    assert_eq!(l, vec![("tail".into(), 1), ("next".into(), 2)]);
    assert!(d
        .items()
        .iter()
        .any(|d| d.line == 1 && d.message == "line too long - ignoring"));
}

#[test]
fn definitions_conditionals_and_sequences() {
    let (l, _) = lines(b"$A=${B}\n$B=v\n@host x $A\n@^host y\n~SEQ(i,1,2) s$i {\n");
    let texts: Vec<_> = l.into_iter().map(|x| x.0).collect();
    assert_eq!(texts, vec!["x v", "s1", "{", "s2", "{"]);
}

#[test]
fn the_brace_after_a_block_s_keyword_is_taken_once_by_the_block() {
    // The parser takes the `{` of `keyword ... {` with the keyword
    // (Reader::take_open_brace) instead of reading it as a line of its own.
    let l = files(&[("k.conf", b"vs a {\n x 1\n}\nb\n{\n}\n")]);
    let mut r = Reader::new(&l, Path::new("/c/k.conf"), "host", IncludeCheck::default());
    let next = |r: &mut Reader<'_>| r.next_line().map(|x| x.text);
    assert_eq!(next(&mut r).as_deref(), Some("vs a"));
    assert!(r.take_open_brace());
    // Once: the line after it comes next, not a `{`.
    assert!(!r.take_open_brace());
    assert_eq!(next(&mut r).as_deref(), Some("x 1"));
    assert!(!r.take_open_brace());
    assert_eq!(next(&mut r).as_deref(), Some("}"));
    assert_eq!(next(&mut r).as_deref(), Some("b"));
    // A brace on a line of its own is that line, never taken.
    assert!(!r.take_open_brace());
    assert_eq!(next(&mut r).as_deref(), Some("{"));
    assert_eq!(next(&mut r).as_deref(), Some("}"));
    assert_eq!(next(&mut r), None);
    // The taken brace counted in the balance: no "Extra '}'".
    assert!(r.diags.items().is_empty(), "{:?}", r.diags.items());
}

#[test]
fn random_stays_in_range_and_repeats_for_a_seed() {
    // Values differ from keepalived's random(); see docs/compat.md.
    let (l, _) = lines(b"a ${_RANDOM 5 5}\nb ${_RANDOM 1 3}\n");
    assert_eq!(l[0].0, "a 5");
    let v: u32 = l[1].0[2..].parse().unwrap();
    assert!((1..=3).contains(&v));
    assert_eq!(lines(b"b ${_RANDOM}\n").0, lines(b"b ${_RANDOM}\n").0);
}

#[test]
fn include_loops_end_with_keepalived_s_open_problem() {
    // A file that includes itself, a pair that include each other, and a
    // glob that matches its own file (keepalived: EMFILE, or no end).
    let l = files(&[
        ("k.conf", b"a 1\ninclude /c/*.inc\nb 2\n"),
        ("x.inc", b"x 1\ninclude /c/*.inc\n"),
        ("y.inc", b"y 1\ninclude /c/k.conf\n"),
    ]);
    let mut r = Reader::new(&l, Path::new("/c/k.conf"), "host", IncludeCheck::default());
    let mut out = Vec::new();
    while let Some(x) = r.next_line() {
        out.push(x.text);
        assert!(out.len() < 100, "no end: {out:?}");
    }
    // k, then x (its own include: x loops, y is read), then y (k loops).
    assert_eq!(out, ["a 1", "x 1", "y 1", "y 1", "b 2"]);
    let loops: Vec<&str> = r
        .diags
        .items()
        .iter()
        .filter(|d| d.message.contains("Too many open files"))
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        loops,
        [
            "Configuration file '/c/x.inc' open problem (Too many open files) - skipping",
            // Twice at y.inc's line 2, reported once.
            "Configuration file '/c/k.conf' open problem (Too many open files) - skipping",
        ]
    );
    assert!(r.diags.items().iter().all(|d| d.class == ErrClass::Ok));
}

#[test]
fn a_seq_with_a_wide_character_after_its_variable_does_not_panic() {
    // Found by the fuzz target: a separator that is not one byte.
    let (l, _) = lines("~SEQ(i \u{e9}1,2) x $i\nafter 1\n".as_bytes());
    assert!(l.iter().any(|(t, _)| t == "after 1"), "{l:?}");
}

#[test]
fn a_seq_of_more_than_a_million_lines_is_refused_at_once() {
    // keepalived would spin on it; found by the fuzz target.
    let l = crate::config::load_str(
        "~SEQ(i, 166666666666666666666, 0) virtual_server 192.0.2.$i 80 {\n}\n",
    );
    assert!(
        l.diagnostics
            .items()
            .iter()
            .any(|d| d.message.contains("~SEQ would repeat")),
        "{:?}",
        l.diagnostics.items()
    );
    assert!(l.config.virtual_servers.is_empty());
}

#[test]
fn a_definition_that_refers_to_itself_ends_with_an_error() {
    // keepalived spins on it for ever; found by the fuzz target.
    let l = crate::config::load_str(
        "$RS=${RS}\nvirtual_server 192.0.2.1 80 {\n real_server ${RS} 80 {\n }\n}\n",
    );
    assert!(
        l.diagnostics.items().iter().any(|d| d
            .message
            .contains("does not end (a definition refers to itself)")),
        "{:?}",
        l.diagnostics.items()
    );
}

#[test]
fn a_multi_line_definition_that_uses_itself_ends_with_an_error() {
    // Each use opened one more level for ever; found by the fuzz target.
    let l = crate::config::load_str(
        "$CHECK=TCP_CHECK { \\\n  connect_timeout 3 $CHECK\nvirtual_server 192.0.2.1 80 {\n real_server 192.0.2.2 80 {\n  $CHECK\n }\n}\n",
    );
    let nested = l
        .diagnostics
        .items()
        .iter()
        .filter(|d| d.message.contains("$CHECK is used inside its own lines"))
        .count();
    assert_eq!(nested, 1, "{:?}", l.diagnostics.items());
    // The lines before the limit are read as keepalived reads them.
    assert_eq!(l.config.virtual_servers.len(), 1);
}

/// The one-pass reading of plain lines gives what keepalived's steps give
/// one after the other: the line up to a NUL, CR/LF off, decommented twice,
/// split at its braces (every logical line of the split, in order).
fn by_steps(text: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split(|&b| b == b'\n') {
        let raw = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
        let line = String::from_utf8_lossy(raw);
        let line = line.trim_end_matches(['\n', '\r']);
        let mut buf = decomment(&decomment(line).text).text;
        while !buf.is_empty() {
            let (head, rest) = super::super::lexer::split_brace(&buf);
            out.push(head);
            buf = rest.unwrap_or_default();
        }
    }
    out
}

proptest::proptest! {
    #[test]
    fn one_pass_lines_match_the_steps(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "a", "bc", " ", "\t", "\r", "{", "}", "#", "!", "\"", "\\", "é", "\0", "\n", "12",
            ]),
            0..60,
        )
    ) {
        let text = parts.concat();
        let (got, _) = lines(text.as_bytes());
        let got: Vec<String> = got.into_iter().map(|(t, _)| t).collect();
        proptest::prop_assert_eq!(got, by_steps(text.as_bytes()));
    }
}
