//! Lexical rules of keepalived.conf: comment removal, splitting a logical line
//! into words, and the brace split that turns `x {` into two lines.
//!
//! First stage of the config pipeline, used by [`super::reader`] (which feeds
//! it physical lines) and by the block parser (which tokenises each logical
//! line). Pure functions, no I/O. The rules are keepalived 2.2.7's
//! (`lib/parser.c`: `decomment()`, `alloc_strvec_r()`, `read_line()`), quirks
//! included; `grammar/lexical.md` writes them out.

use nom::{
    bytes::complete::{is_not, take_till, take_while},
    character::complete::char,
    combinator::{opt, recognize},
    sequence::delimited,
    IResult,
};

/// The rest of a logical line, as bytes: every delimiter is ASCII, so word
/// boundaries are char boundaries and the words are sliced from the `&str`
/// by their byte offsets (the line's length minus the rest's).
pub type Span<'a> = &'a [u8];

/// keepalived's `WHITE_SPACE_STR`.
pub const WHITE_SPACE: &[char] = &[' ', '\t', '\x0c', '\n', '\r', '\x0b'];

fn is_ws(c: char) -> bool {
    WHITE_SPACE.contains(&c)
}

/// Result of [`decomment`]: the cleaned line and whether a `"` was left open.
#[derive(Debug, PartialEq, Eq)]
pub struct Decommented {
    /// The line without comment, leading and trailing blanks.
    pub text: String,
    /// A double quote was not closed (keepalived: "Unterminated quote").
    pub unterminated_quote: bool,
}

/// Removes comments (`#` or `!` outside double quotes), the backslash of `\#`
/// and `\!` outside quotes, and leading/trailing blanks. A trailing lone `\`
/// is kept glued to the text before it, as keepalived does.
/// Whether a line has no quote, escape or comment character, so that
/// decommenting it only trims it. Most lines of a config are so.
pub fn is_plain(s: &str) -> bool {
    !s.bytes().any(|b| matches!(b, b'"' | b'\\' | b'#' | b'!'))
}

/// [`decomment`] on an owned line, reusing its buffer when the line is plain.
pub fn decomment_owned(mut line: String) -> Decommented {
    if !is_plain(&line) {
        return decomment(&line);
    }
    let end = line.trim_end_matches([' ', '\t']).len();
    line.truncate(end);
    let start = line.len() - line.trim_start_matches([' ', '\t']).len();
    line.drain(..start);
    Decommented {
        text: line,
        unterminated_quote: false,
    }
}

pub fn decomment(line: &str) -> Decommented {
    let s = line.trim_start_matches([' ', '\t']);
    if is_plain(s) {
        return Decommented {
            text: s.trim_end_matches([' ', '\t']).to_string(),
            unterminated_quote: false,
        };
    }
    let mut out = String::with_capacity(s.len());
    let mut quote = false;
    let mut cont = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quote = !quote;
                out.push(c);
            }
            '\\' => match chars.peek().copied() {
                None => {
                    cont = true;
                    break;
                }
                Some(n) => {
                    if !quote && (n == '#' || n == '!') {
                        out.push(n);
                    } else {
                        out.push('\\');
                        out.push(n);
                    }
                    chars.next();
                }
            },
            '#' | '!' if !quote => {
                // keepalived takes a line's trailing `\` off before it
                // removes the comment: `# note \` still ends in `\` (a
                // multi-line definition goes on; elsewhere the `\` is a word).
                cont = s.trim_end_matches([' ', '\t']).ends_with('\\');
                break;
            }
            _ => out.push(c),
        }
    }
    // A comment started inside an unterminated quote is not a comment, so the
    // open quote only matters when the line ran to its end.
    let unterminated_quote = quote;
    let trimmed_len = out.trim_end_matches([' ', '\t']).len();
    out.truncate(trimmed_len);
    if cont {
        out.push('\\');
    }
    Decommented {
        text: out,
        unterminated_quote,
    }
}

/// A word of a logical line with its 1-based column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word, quotes removed.
    pub text: String,
    /// 1-based column in the logical line.
    pub column: usize,
}

/// Result of [`tokenize`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    /// The words found.
    pub words: Vec<Word>,
    /// Set when a `"` was not closed; the rest of the line was dropped.
    pub unmatched_quote: bool,
}

fn is_ws_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | 0x0c | b'\n' | b'\r' | 0x0b)
}

/// The words of a line without quotes, as `start..end` byte ranges in
/// order: the runs between whitespace, what [`tokenize_into`] finds there
/// (it and the reader's scan ahead share this).
pub fn plain_words(line: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < line.len() && is_ws_byte(line[i]) {
            i += 1;
        }
        if i == line.len() {
            return None;
        }
        let start = i;
        while i < line.len() && !is_ws_byte(line[i]) {
            i += 1;
        }
        Some((start, i))
    })
}

fn ws(i: Span<'_>) -> IResult<Span<'_>, Span<'_>> {
    take_while(is_ws_byte)(i)
}

/// A quoted word: everything up to the next `"`, no escapes.
fn quoted(i: Span<'_>) -> IResult<Span<'_>, Span<'_>> {
    delimited(char('"'), recognize(opt(is_not(&b"\""[..]))), char('"'))(i)
}

/// A bare word runs until whitespace or a `"` (which starts the next word).
fn bare(i: Span<'_>) -> IResult<Span<'_>, Span<'_>> {
    take_till(|b: u8| is_ws_byte(b) || b == b'"')(i)
}

/// Splits a logical line into words as keepalived's `alloc_strvec_r()`:
/// whitespace separates, a word that starts with `"` runs to the next `"`.
pub fn tokenize(line: &str) -> Tokens {
    let mut words = Vec::new();
    let (n, unmatched_quote) = tokenize_into(line, &mut words);
    words.truncate(n);
    Tokens {
        words,
        unmatched_quote,
    }
}

/// [`tokenize`] into `out`, reusing its words' buffers (the loader reads
/// hundreds of thousands of lines: no allocation per word once warm). The
/// line's words are `out[..n]`; the words after them are spare buffers.
/// Returns `n` and true when a `"` was not closed (the rest of the line
/// dropped).
pub fn tokenize_into(line: &str, out: &mut Vec<Word>) -> (usize, bool) {
    let ascii = line.is_ascii();
    let mut n = 0;
    let mut put = |start: usize, text: &str| {
        // Columns count chars.
        let column = if ascii {
            start + 1
        } else {
            line[..start].chars().count() + 1
        };
        put_word(out, n, text, column);
        n += 1;
    };
    let bytes = line.as_bytes();
    if !bytes.contains(&b'"') {
        // No quote (most lines): the words are the runs between blanks,
        // what the parsers below find, by one loop.
        for (start, end) in plain_words(bytes) {
            put(start, &line[start..end]);
        }
        return (n, false);
    }
    let offset = |rest: Span<'_>| line.len() - rest.len();
    let mut rest: Span<'_> = bytes;
    let mut unmatched = false;
    loop {
        let (r, _) = ws(rest).unwrap_or((rest, rest));
        rest = r;
        if rest.is_empty() {
            break;
        }
        let at = offset(rest);
        if rest[0] == b'"' {
            match quoted(rest) {
                Ok((r, w)) => {
                    let s = at + 1;
                    put(at, &line[s..s + w.len()]);
                    rest = r;
                }
                Err(_) => {
                    unmatched = true;
                    break;
                }
            }
        } else {
            let (r, w) = bare(rest).unwrap_or((rest, rest));
            if w.is_empty() {
                break;
            }
            put(at, &line[at..at + w.len()]);
            rest = r;
        }
    }
    (n, unmatched)
}

/// The words of an ASCII line found already (`start, len` in it, as
/// [`tokenize_into`] would find them: the reader's scan ahead), into `out`
/// as [`tokenize_into`] puts them. Returns their number.
pub fn words_into(line: &str, words: &[(u16, u16)], out: &mut Vec<Word>) -> usize {
    for (n, &(start, len)) in words.iter().enumerate() {
        let start = usize::from(start);
        put_word(out, n, &line[start..start + usize::from(len)], start + 1);
    }
    words.len()
}

/// Word `n` of `out`, its buffer reused.
fn put_word(out: &mut Vec<Word>, n: usize, text: &str, column: usize) {
    match out.get_mut(n) {
        Some(w) => {
            w.text.clear();
            w.text.push_str(text);
            w.column = column;
        }
        None => out.push(Word {
            text: text.to_string(),
            column,
        }),
    }
}

/// [`split_brace`] on an owned line, reusing its buffer for the head.
pub fn split_brace_owned(mut buf: String) -> (String, Option<String>) {
    // Blanks are ASCII: byte loops, not char patterns (a loader's hot path).
    let trim = |s: &str| {
        let b = s.as_bytes();
        let mut n = b.len();
        while n > 0 && matches!(b[n - 1], b' ' | b'\t') {
            n -= 1;
        }
        n
    };
    match brace_at(&buf) {
        None => {
            buf.truncate(trim(&buf));
            (buf, None)
        }
        Some(0) => {
            let after = &buf[1..];
            let lead = after
                .bytes()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
            let rest = &after[lead..];
            let rest = &rest[..trim(rest)];
            let residue = (!rest.is_empty()).then(|| rest.to_string());
            buf.truncate(1);
            (buf, residue)
        }
        Some(p) => {
            let rest = &buf[p..];
            let residue = rest[..trim(rest)].to_string();
            buf.truncate(trim(&buf[..p]));
            (buf, Some(residue))
        }
    }
}

/// Where [`split_brace`] splits: the first `{` or `}` outside double quotes.
fn brace_at(buf: &str) -> Option<usize> {
    let bytes = buf.as_bytes();
    if bytes.first() == Some(&b'{') || bytes.first() == Some(&b'}') {
        return Some(0);
    }
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'}' => return Some(i),
            b'"' => match buf[i + 1..].find('"') {
                Some(end) => i = i + 1 + end + 1,
                None => return None,
            },
            _ => i += 1,
        }
    }
    None
}

/// Splits a decommented line at its first `{` or `}` outside double quotes,
/// as keepalived's `read_line()`: text before the brace, then the brace alone,
/// then the rest; returns the line to hand out now and the residue to read next.
pub fn split_brace(buf: &str) -> (String, Option<String>) {
    split_brace_owned(buf.to_string())
}

/// Splits a script command line into argv as keepalived's
/// `alloc_strvec_quoted_escaped()`: `"` and `'` quote, adjacent parts join,
/// backslash escapes (`\n`, `\t`, `\xHH`, `\NNN`, `\cC`, `\C`) are processed.
/// Returns `None` on an unterminated quote or a trailing lone backslash.
pub fn split_quoted_escaped(src: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    loop {
        while i < chars.len() && is_ws(chars[i]) {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let mut cur = String::new();
        let mut quote: Option<char> = None;
        while i < chars.len() {
            let c = chars[i];
            match quote {
                Some(q) if c == q => {
                    quote = None;
                    i += 1;
                }
                None if c == '"' || c == '\'' => {
                    quote = Some(c);
                    i += 1;
                }
                None if is_ws(c) => break,
                _ if c == '\\' => {
                    i += 1;
                    let &e = chars.get(i)?;
                    if e == 'x' && chars.get(i + 1).is_some_and(|c| c.is_ascii_hexdigit()) {
                        i += 1;
                        let mut v: u32 = 0;
                        while let Some(d) = chars.get(i).and_then(|c| c.to_digit(16)) {
                            v = (v << 4 | d) & 0xff;
                            i += 1;
                        }
                        cur.push(char::from(v as u8));
                    } else if e == 'c' && i + 1 < chars.len() {
                        cur.push(char::from((chars[i + 1] as u32 & 0x1f) as u8));
                        i += 2;
                    } else if ('0'..='7').contains(&e) {
                        let mut v: u32 = 0;
                        let mut n = 0;
                        while n < 3 && chars.get(i).is_some_and(|c| ('0'..='7').contains(c)) {
                            v = v * 8 + (chars[i] as u32 - '0' as u32);
                            i += 1;
                            n += 1;
                        }
                        cur.push(char::from((v & 0xff) as u8));
                    } else {
                        cur.push(match e {
                            'a' => '\x07',
                            'b' => '\x08',
                            'E' => '\x1b',
                            'f' => '\x0c',
                            'n' => '\n',
                            'r' => '\r',
                            't' => '\t',
                            'v' => '\x0b',
                            other => other,
                        });
                        i += 1;
                    }
                }
                _ => {
                    cur.push(c);
                    i += 1;
                }
            }
        }
        if quote.is_some() {
            return None;
        }
        words.push(cur);
    }
    Some(words)
}

/// Splits a raw keyword line into words where both `"` and `'` quote and
/// adjacent quoted/unquoted parts join, backslashes kept (keepalived's
/// `alloc_strvec_quoted()`, used for script keywords).
pub fn split_quoted(src: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in src.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if is_ws(c) => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            None => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        tokenize(s).words.into_iter().map(|w| w.text).collect()
    }

    #[test]
    fn comments_and_escapes() {
        assert_eq!(decomment("  lb_algo rr # c").text, "lb_algo rr");
        assert_eq!(decomment("a \"b # c\" ! d").text, "a \"b # c\"");
        assert_eq!(decomment("a\\#b").text, "a#b");
        assert_eq!(decomment("lb_algo rr \\").text, "lb_algo rr\\");
        assert!(decomment("a \"b").unterminated_quote);
        // The trailing `\` outlives the comment (keepalived 2.2.7): a
        // comment line inside a multi-line definition continues it.
        assert_eq!(decomment("# a note \\").text, "\\");
        assert_eq!(decomment("! a note \\  ").text, "\\");
        assert_eq!(decomment("lb_algo rr # x \\").text, "lb_algo rr\\");
        assert_eq!(decomment("lb_algo rr \\ # x").text, "lb_algo rr \\");
    }

    #[test]
    fn quoting() {
        assert_eq!(words("a\"b c\"d"), vec!["a", "b c", "d"]);
        assert_eq!(words("lb_algo 'x y'"), vec!["lb_algo", "'x", "y'"]);
        assert_eq!(words("x \"\" y"), vec!["x", "", "y"]);
        let t = tokenize("a \"b");
        assert!(t.unmatched_quote);
        assert_eq!(t.words.len(), 1);
        assert_eq!(tokenize("  ab  cd").words[1].column, 7);
    }

    #[test]
    fn brace_split() {
        assert_eq!(
            split_brace("real_server 1.2.3.4 80 { weight 1"),
            (
                "real_server 1.2.3.4 80".to_string(),
                Some("{ weight 1".to_string())
            )
        );
        assert_eq!(
            split_brace("{ weight 1"),
            ("{".to_string(), Some("weight 1".to_string()))
        );
        assert_eq!(split_brace("a \"{\" b"), ("a \"{\" b".to_string(), None));
        assert_eq!(split_brace("}"), ("}".to_string(), None));
    }

    #[test]
    fn script_words() {
        assert_eq!(
            split_quoted_escaped("/bin/echo 'a b' \"c\\td\" e\\x41").unwrap(),
            vec!["/bin/echo", "a b", "c\td", "eA"]
        );
        assert_eq!(
            split_quoted("notify_up \"/bin/x a\" root").unwrap(),
            vec!["notify_up", "/bin/x a", "root"]
        );
    }
}

#[cfg(test)]
mod column_tests {
    use super::*;

    #[test]
    fn columns_count_chars_not_bytes() {
        let t = tokenize("é \"x y\" z");
        let got: Vec<(&str, usize)> = t
            .words
            .iter()
            .map(|w| (w.text.as_str(), w.column))
            .collect();
        assert_eq!(got, vec![("é", 1), ("x y", 3), ("z", 9)]);
        let t = tokenize("  a\tbc  \"d");
        let got: Vec<(&str, usize)> = t
            .words
            .iter()
            .map(|w| (w.text.as_str(), w.column))
            .collect();
        assert_eq!(got, vec![("a", 3), ("bc", 5)]);
        assert!(t.unmatched_quote);
    }
}
