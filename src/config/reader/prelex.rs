//! The physical lines of a large file scanned ahead, on a thread of their
//! own, while the reader and the block parser work on the lines before.
//!
//! Part of the preprocessor ([`super::Reader`]). What is scanned is a pure
//! function of a line's bytes, the same [`scan`] the reader runs itself for
//! a small file: where the `fgets` chunk ends, the byte classes it holds,
//! its text without the blanks around it; and, for a line the reader takes
//! as it is (no quote, comment, `$`, NUL, CR, only ASCII), where its first
//! brace is and the words of the text before it. The reader still decides
//! every line itself; it only skips the scanning. A reload at tens of
//! thousands of real servers spends a third of its loading there, and the
//! checker's thread (or a second CPU) is idle meanwhile.

use super::{BLANK, BRACE, BYTE_CLASS, GENERAL, MAXBUF};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

/// Files smaller than this are scanned by the reader itself: a thread
/// costs more than it saves there. The unit tests scan every file ahead, so
/// that each of their configurations checks the scan against the reader's
/// own (the parser compares the words in a debug build).
pub(super) const MIN_BYTES: usize = if cfg!(test) { 1 } else { 256 * 1024 };

/// Lines per batch handed over (a few batches are in flight at most).
const BATCH: usize = 2048;

/// Set in a line's class when it has a byte outside ASCII: its words are
/// then counted in characters, and left to the tokenizer.
pub(super) const HIGH: u8 = 64;

/// No brace / no blank-free text.
pub(super) const NONE: u32 = u32::MAX;

/// One `fgets` chunk: keepalived reads a physical line in pieces of at most
/// `MAXBUF - 1` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Chunk {
    /// Bytes it takes, its newline included.
    pub len: u32,
    /// It ends at a newline (not at `MAXBUF - 1` bytes or the file's end).
    pub has_nl: bool,
    /// The byte classes of its text (newline excluded), [`HIGH`] included.
    pub class: u8,
    /// Its text without the blanks around it: `first..last` of the chunk,
    /// `first` [`NONE`] when it is blank.
    pub first: u32,
    pub last: u32,
}

/// The chunk at the start of `rest` (not empty).
pub(super) fn scan(rest: &[u8]) -> Chunk {
    let limit = rest.len().min(MAXBUF - 1);
    let end = memchr::memchr(b'\n', &rest[..limit]).unwrap_or(limit);
    let body = &rest[..end];
    let class = body.iter().fold(0, |c, &b| {
        c | BYTE_CLASS[b as usize] | if b >= 0x80 { HIGH } else { 0 }
    });
    let text = |b: &u8| BYTE_CLASS[*b as usize] & BLANK == 0;
    let (first, last) = match body.iter().position(text) {
        Some(f) => (f, body.iter().rposition(text).map_or(f, |l| l + 1)),
        None => (NONE as usize, 0),
    };
    Chunk {
        len: (if end < limit { end + 1 } else { limit }) as u32,
        has_nl: end < limit,
        class,
        first: first as u32,
        last: last as u32,
    }
}

/// A chunk scanned ahead, with what the reader's plain path needs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lexed {
    pub chunk: Chunk,
    /// The first brace in the text, from `first` ([`NONE`]: none).
    pub brace: u32,
    /// The words of the text before the brace (all of it without one), as
    /// `start, len` from `first`: `words..words + n` of the batch's list.
    /// `n` is [`u16::MAX`] when they are left to the tokenizer.
    words: u32,
    n: u16,
}

struct Batch {
    lines: Vec<Lexed>,
    words: Vec<(u16, u16)>,
}

/// The lines of one file, scanned ahead, taken in order.
pub(super) struct Prelex {
    rx: Receiver<Batch>,
    cur: Batch,
    at: usize,
}

impl Prelex {
    /// Starts scanning `text` on a thread; `None` when no thread could be
    /// made (the reader then scans itself).
    pub fn start(text: Arc<String>) -> Option<Prelex> {
        let (tx, rx) = sync_channel(2);
        std::thread::Builder::new()
            .name("config-prelex".into())
            .spawn(move || {
                let data = text.as_bytes();
                let mut offset = 0;
                while offset < data.len() {
                    let mut b = Batch {
                        lines: Vec::with_capacity(BATCH),
                        words: Vec::with_capacity(BATCH * 3),
                    };
                    while offset < data.len() && b.lines.len() < BATCH {
                        let chunk = scan(&data[offset..]);
                        b.lines.push(lex(&data[offset..], chunk, &mut b.words));
                        offset += chunk.len as usize;
                    }
                    // The reader stopped (an include failed, or it is done):
                    // nothing more is wanted.
                    if tx.send(b).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(Prelex {
            rx,
            cur: Batch {
                lines: Vec::new(),
                words: Vec::new(),
            },
            at: 0,
        })
    }

    /// The next chunk of the file; `None` if the scanning thread is gone
    /// (the reader then scans on from where it is).
    pub fn next(&mut self) -> Option<Lexed> {
        let l = self.peek()?;
        self.advance();
        Some(l)
    }

    /// The next chunk, left to be taken ([`Prelex::advance`]).
    pub fn peek(&mut self) -> Option<Lexed> {
        if self.at == self.cur.lines.len() {
            self.cur = self.rx.recv().ok()?;
            self.at = 0;
        }
        self.cur.lines.get(self.at).copied()
    }

    /// Takes the chunk [`Prelex::peek`] returned.
    pub fn advance(&mut self) {
        self.at += 1;
    }

    /// Where the words of a line [`Prelex::next`] returned last are, if
    /// scanned ([`Prelex::words_at`] reads them until the next call).
    pub fn word_range(l: &Lexed) -> Option<(u32, u16)> {
        (l.n != u16::MAX).then_some((l.words, l.n))
    }

    /// The words at a [`Prelex::word_range`] of the line returned last.
    pub fn words_at(&self, (at, n): (u32, u16)) -> &[(u16, u16)] {
        &self.cur.words[at as usize..][..usize::from(n)]
    }
}

/// The brace and words of a chunk the reader takes as it is.
fn lex(rest: &[u8], chunk: Chunk, words: &mut Vec<(u16, u16)>) -> Lexed {
    let mut l = Lexed {
        chunk,
        brace: NONE,
        words: words.len() as u32,
        n: u16::MAX,
    };
    // Only a line the reader takes as it is has its brace and words read
    // here; one with a byte outside ASCII has its words left to the
    // tokenizer (which counts columns in characters).
    if chunk.first == NONE || chunk.class & GENERAL != 0 {
        return l;
    }
    let text = &rest[chunk.first as usize..chunk.last as usize];
    let head = if chunk.class & BRACE != 0 {
        let p = memchr::memchr2(b'{', b'}', text).expect("a brace");
        l.brace = p as u32;
        if p == 0 {
            &text[..1]
        } else {
            let mut e = p;
            while e > 0 && matches!(text[e - 1], b' ' | b'\t') {
                e -= 1;
            }
            &text[..e]
        }
    } else {
        text
    };
    if chunk.class & HIGH != 0 {
        return l;
    }
    // The tokenizer's words of a quote-free line.
    let mut n = 0u16;
    for (s, e) in crate::config::lexer::plain_words(head) {
        words.push((s as u16, (e - s) as u16));
        n += 1;
    }
    l.n = n;
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::lexer::tokenize;

    /// Every chunk and every word the thread hands over is what the reader
    /// and the tokenizer find themselves.
    #[test]
    fn lines_scanned_ahead_are_the_lines_read() {
        let mut text = String::new();
        for i in 0..3000 {
            text.push_str(&format!("  real_server 192.0.2.{} 80 {{\n", i % 250));
            text.push_str("\tweight\x0b 1  \n\n   \n}\n");
            text.push_str("x{y } \"q\" # c\n$V=1\n}} {\n\u{e9}t\u{e9} 1\n");
        }
        text.push_str(&"long ".repeat(400));
        text.push_str("\nlast {");
        let data = text.as_bytes();
        let mut p = Prelex::start(Arc::new(text.clone())).unwrap();
        let mut offset = 0;
        let mut with_words = 0;
        while offset < data.len() {
            let l = p.next().expect("a chunk");
            assert_eq!(l.chunk, scan(&data[offset..]), "at {offset}");
            if let Some(ws) = Prelex::word_range(&l).map(|r| p.words_at(r)) {
                with_words += 1;
                let c = l.chunk;
                let t = &text[offset + c.first as usize..offset + c.last as usize];
                let head = match l.brace {
                    NONE => t,
                    0 => &t[..1],
                    b => t[..b as usize].trim_end_matches([' ', '\t']),
                };
                let words: Vec<(usize, &str)> = ws
                    .iter()
                    .map(|&(s, n)| (s as usize + 1, &head[s as usize..][..n as usize]))
                    .collect();
                let tokens = tokenize(head);
                let expected: Vec<(usize, &str)> = tokens
                    .words
                    .iter()
                    .map(|w| (w.column, w.text.as_str()))
                    .collect();
                assert_eq!(words, expected, "{t:?}");
            }
            offset += l.chunk.len as usize;
        }
        assert!(p.next().is_none(), "no chunk after the file's end");
        assert!(with_words > 9000, "{with_words} lines with their words");
    }
}
