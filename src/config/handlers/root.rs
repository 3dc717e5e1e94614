//! The root-level settings outside any block (`net_namespace`, `instance`,
//! `use_pid_dir`, ...).

use super::*;

pub fn net_namespace(p: P, w: &[Word]) -> HandlerResult {
    let Some(n) = p.value_or(w, 1, "net_namespace name missing - ignoring") else {
        return Ok(());
    };
    // keepalived's -t stops here without a word when the namespace is
    // missing (and its daemon exits): ours says so, and reads on.
    let at = std::path::Path::new("/run/netns").join(&n);
    if !at.exists() {
        p.err(
            ErrClass::GeneralError,
            format!(
                "net_namespace {n}: {} does not exist (ip netns add {n})",
                at.display()
            ),
        );
    }
    p.cfg.root.net_namespace = Some(n);
    Ok(())
}
pub fn net_namespace_ipvs(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.root.net_namespace_ipvs = Some(w.get(1).map(|x| x.text.clone()).unwrap_or_default());
    Ok(())
}
pub fn namespace_with_ipsets(p: P, _w: &[Word]) -> HandlerResult {
    p.cfg.root.namespace_with_ipsets = true;
    Ok(())
}
pub fn use_pid_dir(p: P, _w: &[Word]) -> HandlerResult {
    p.cfg.root.use_pid_dir = true;
    Ok(())
}
pub fn instance(p: P, w: &[Word]) -> HandlerResult {
    let Some(n) = p.value_or(w, 1, "instance name missing - ignoring") else {
        return Ok(());
    };
    p.cfg.root.instance = Some(n);
    Ok(())
}
pub fn child_wait_time(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(v) = p.read_unsigned(&s, 1, 1000, true) {
        p.cfg.root.child_wait_time = Some(v as u32);
    } else {
        p.err(
            ErrClass::GeneralError,
            format!("Invalid child_wait_time {s}"),
        );
    }
    Ok(())
}
pub fn linkbeat_use_polling(p: P, _w: &[Word]) -> HandlerResult {
    p.cfg.root.linkbeat_use_polling = true;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_net_namespace_is_an_error_and_the_rest_is_checked() {
        let l = crate::config::load_str(
            "net_namespace kr-no-such-namespace\nvrrp_instance VI_1 {\n bogus_keyword\n}\n",
        );
        let msgs = l.diagnostics.lines_and_messages();
        assert!(
            msgs.iter()
                .any(|(l, m)| *l == 1
                    && m.contains("/run/netns/kr-no-such-namespace does not exist")),
            "{msgs:?}"
        );
        assert!(
            msgs.iter()
                .any(|(l, m)| *l == 3 && m.contains("bogus_keyword")),
            "{msgs:?}"
        );
        assert_eq!(
            l.config.root.net_namespace.as_deref(),
            Some("kr-no-such-namespace")
        );
    }
}
