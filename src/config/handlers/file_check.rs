//! FILE_CHECK: the tracked file and its weight.

use super::*;

pub fn file_track_file(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    // Looked up as it is read (a track_file defined further on is not
    // found): the check then has none, which its end reports.
    if !p.cfg.track_files.iter().any(|t| t.name == s) {
        p.err(ErrClass::GeneralError, format!("track_file {s} not found"));
        return Ok(());
    }
    if let Some(Checker::File(f)) = p.checker.as_mut() {
        f.track_file = Some(s);
    }
    Ok(())
}
pub fn file_weight(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = p.value_or(w, 1, "track file weight missing") else {
        return Ok(());
    };
    let Some(v) = p.read_int(&s, -(i32::MAX as i64), i32::MAX as i64, true) else {
        p.err(
            ErrClass::GeneralError,
            format!("Invalid FILE_CHECK weight {s}"),
        );
        return Ok(());
    };
    let reverse = match w.get(2).map(|x| x.text.as_str()) {
        None => None,
        Some("reverse") => Some(true),
        Some("noreverse") => Some(false),
        Some(o) => {
            p.err(
                ErrClass::GeneralError,
                format!("Unknown FILE_CHECK weight option {o}"),
            );
            None
        }
    };
    if let Some(Checker::File(f)) = p.checker.as_mut() {
        f.weight = Some(v as i32);
        f.reverse = reverse;
    }
    Ok(())
}
