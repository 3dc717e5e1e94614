//! The reader's short way for most lines of a large file: the next physical
//! line, as its scan ahead ([`super::prelex`]) found it, when the general
//! path of [`Reader::next_text`] would do nothing with it but trim it and
//! split it at its brace.
//!
//! Part of the preprocessor. It reads nothing the general path would read
//! otherwise: a line it does not take is left where it is, for that path.

use super::prelex::{self, Prelex};
use super::{Reader, Residue, BRACE, GENERAL, MAXBUF};

impl Reader<'_> {
    /// The next logical line when it is a plain line (no quote, comment,
    /// `$`, NUL or CR; not blank, not an `@`, `~` or include line) of a
    /// file scanned ahead, with nothing pending before it (no brace split's
    /// rest, repetition, multi-line definition or definition going on).
    /// `None`, and nothing read, otherwise.
    pub(super) fn plain_line(&mut self) -> Option<String> {
        if !matches!(self.residue, Residue::None)
            || self.repeats.len() > self.multiline_seq_depth
            || self.multiline.is_some()
            || self.defining.is_some()
        {
            return None;
        }
        let f = self.files.last_mut()?;
        let (Some(p), Ok(data)) = (f.prelex.as_mut(), &f.data) else {
            return None;
        };
        if f.offset >= data.len() {
            return None;
        }
        let l = p.peek()?;
        let c = l.chunk;
        let end = f.offset + c.len as usize;
        // A chunk keepalived drops (a line too long) is the general path's.
        let too_long = !c.has_nl && c.len as usize == MAXBUF - 1 && end < data.len();
        if too_long || c.first == prelex::NONE || c.class & GENERAL != 0 {
            return None;
        }
        let text = data.get(f.offset + c.first as usize..f.offset + c.last as usize)?;
        if matches!(text.as_bytes()[0], b'@' | b'~') || text.starts_with("include") {
            return None;
        }
        p.advance();
        f.offset = end;
        if c.has_nl || end >= data.len() {
            f.line_no += 1;
        }
        self.last_pos.follow(&f.name, f.line_no);
        let mut buf = std::mem::take(&mut self.spare);
        buf.clear();
        buf.push_str(text);
        // The scan found the brace of every plain line, and the words of
        // every plain ASCII one.
        let brace = (c.class & BRACE != 0).then_some(l.brace as usize);
        self.words = Prelex::word_range(&l);
        self.lexed = None;
        Some(self.split_plain(buf, brace))
    }
}
