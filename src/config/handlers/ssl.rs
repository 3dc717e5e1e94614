//! The `SSL` block: SSL_GET's client certificate, key and CA.

use super::*;

pub fn ssl_block_open(p: P, _w: &[Word]) -> HandlerResult {
    p.cfg.ssl.get_or_insert_with(SslBlock::default);
    Ok(())
}
pub(super) fn ssl_mut<'a>(p: &'a mut Parser<'_, '_>) -> &'a mut SslBlock {
    p.cfg.ssl.get_or_insert_with(SslBlock::default)
}
pub fn ssl_password(p: P, w: &[Word]) -> HandlerResult {
    let Some(v) = p.value_or(w, 1, "SSL password missing") else {
        return Ok(());
    };
    ssl_mut(p).password = Some(v);
    Ok(())
}
pub fn ssl_ca(p: P, w: &[Word]) -> HandlerResult {
    let Some(v) = p.value_or(w, 1, "SSL cafile missing") else {
        return Ok(());
    };
    ssl_mut(p).ca = Some(v);
    Ok(())
}
pub fn ssl_certificate(p: P, w: &[Word]) -> HandlerResult {
    let Some(v) = p.value_or(w, 1, "SSL certfile missing") else {
        return Ok(());
    };
    ssl_mut(p).certificate = Some(v);
    Ok(())
}
pub fn ssl_key(p: P, w: &[Word]) -> HandlerResult {
    let Some(v) = p.value_or(w, 1, "SSL keyfile missing") else {
        return Ok(());
    };
    ssl_mut(p).key = Some(v);
    Ok(())
}
