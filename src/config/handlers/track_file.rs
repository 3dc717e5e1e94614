//! `track_file` blocks: the files FILE_CHECK follows.

use super::*;

pub fn tf_open(p: P, w: &[Word]) -> HandlerResult {
    let name = p.arg(w, 1)?.to_string();
    if w[0].text == "vrrp_track_file" {
        p.err(
            ErrClass::Deprecated,
            "\"vrrp_track_file\" is deprecated, please use \"track_file\"",
        );
    }
    p.track_file = Some(TrackFile {
        name,
        file: None,
        weight: 1,
        reverse: false,
        init_file: None,
        line: p.pos.line,
    });
    Ok(())
}
pub fn tf_file(p: P, w: &[Word]) -> HandlerResult {
    let Some(f) = p.value_or(w, 1, "track file file name missing") else {
        return Ok(());
    };
    if let Some(t) = p.track_file.as_mut() {
        t.file = Some(f);
    }
    Ok(())
}
pub fn tf_weight(p: P, w: &[Word]) -> HandlerResult {
    let name = p
        .track_file
        .as_ref()
        .map(|t| t.name.clone())
        .unwrap_or_default();
    let msg = format!("No weight specified for track file {name} - ignoring");
    let Some(s) = p.value_or(w, 1, &msg) else {
        return Ok(());
    };
    let Some(v) = p.read_int(&s, -254, 254, true) else {
        p.err(
            ErrClass::GeneralError,
            format!("Weight for {} must be between [-254:254]", w[0].text),
        );
        return Ok(());
    };
    let reverse = w.get(2).is_some_and(|x| x.text == "reverse");
    if let Some(t) = p.track_file.as_mut() {
        t.weight = v as i32;
        t.reverse = reverse;
    }
    Ok(())
}
pub fn tf_init_file(p: P, w: &[Word]) -> HandlerResult {
    if let Some(t) = p.track_file.as_mut() {
        t.init_file = Some(w[1..].iter().map(|x| x.text.clone()).collect());
    }
    Ok(())
}
pub fn tf_close(p: P) {
    if let Some(t) = p.track_file.take() {
        if t.file.is_none() {
            p.err(
                ErrClass::GeneralError,
                format!("No file set for track_file {} - ignoring", t.name),
            );
            return;
        }
        p.cfg.track_files.push(t);
    }
}
