//! MISC_CHECK: the script, its timeout, `misc_dynamic`, its user.

use super::*;

/// A MISC_CHECK removed while being read (its user could not be set):
/// keepalived's MISC_CHECK keywords then act on nothing and say nothing;
/// the common checker keywords are still read and checked.
fn removed(p: &P) -> bool {
    matches!(p.checker.as_ref(), Some(Checker::Misc(m)) if m.removed)
}

pub fn misc_path(p: P, w: &[Word]) -> HandlerResult {
    // Without a value keepalived says nothing here: the end of the block
    // reports the missing script.
    if removed(&p) || w.len() < 2 {
        return Ok(());
    }
    let s = p.script(w)?;
    if let Some(Checker::Misc(m)) = p.checker.as_mut() {
        m.misc_path = s.map(|s| s.args);
    }
    Ok(())
}
pub fn misc_timeout(p: P, w: &[Word]) -> HandlerResult {
    if removed(&p) {
        return Ok(());
    }
    let s = p.arg(w, 1)?.to_string();
    match p.read_unsigned(&s, 0, U32MAX / TIMER_HZ, true) {
        Some(v) => {
            if let Some(Checker::Misc(m)) = p.checker.as_mut() {
                m.misc_timeout = Some(v * TIMER_HZ);
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Invalid misc_timeout value '{s}'"),
        ),
    }
    Ok(())
}
pub fn misc_dynamic(p: P, _w: &[Word]) -> HandlerResult {
    if let Some(Checker::Misc(m)) = p.checker.as_mut() {
        m.misc_dynamic = true;
    }
    Ok(())
}
pub fn misc_user(p: P, w: &[Word]) -> HandlerResult {
    let Some(Checker::Misc(m)) = p.checker.as_mut() else {
        return Ok(());
    };
    if m.removed {
        return Ok(());
    }
    // misc_user_handler() checks the word count itself: not keepalived's
    // missing-parameter error (exit 2), a general one.
    let Some(u) = w.get(1).map(|x| x.text.to_string()) else {
        let cmd = misc_cmd(m);
        p.err(
            ErrClass::GeneralError,
            format!("No user specified for misc checker script {cmd}"),
        );
        return Ok(());
    };
    let g = w.get(2).map(|x| x.text.trim_start_matches(':').to_string());
    let Some(Checker::Misc(m)) = p.checker.as_mut() else {
        return Ok(());
    };
    if !crate::config::parser::user_exists(&u, g.as_deref()) {
        let cmd = misc_cmd(m);
        p.err(
            ErrClass::GeneralError,
            format!("Failed to set uid/gid for misc checker script {cmd} - removing"),
        );
        // dequeue_new_checker(): the rest of the block is read into nothing.
        p.checker = Some(Checker::Misc(Box::new(MiscCheck {
            removed: true,
            ..MiscCheck::default()
        })));
        return Ok(());
    }
    m.user = Some((u, g));
    Ok(())
}

/// keepalived's `cmd_str()` of a MISC_CHECK's script: quoted, or nothing
/// when no `misc_path` was read yet.
pub(super) fn misc_cmd(m: &MiscCheck) -> String {
    match &m.misc_path {
        Some(a) if !a.is_empty() => format!("'{}'", a.join(" ")),
        _ => String::new(),
    }
}
