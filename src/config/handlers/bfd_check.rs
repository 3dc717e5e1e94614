//! BFD_CHECK: the BFD instance it follows.

use super::*;

pub fn bfd_name(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(Checker::Bfd(b)) = p.checker.as_mut() {
        b.name = Some(s);
    }
    Ok(())
}
