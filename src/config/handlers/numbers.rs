//! The numeric keywords shared by virtual servers, real servers and
//! checkers (`delay_loop`, `retry`, `connect_timeout`, ...), with
//! keepalived's ranges and messages.

use super::*;

num_kw!(
    vs_delay_loop,
    vs.delay_loop,
    Timer,
    1,
    0,
    Some("virtual server delay loop '{}' invalid - ignoring"),
    Some
);
num_kw!(
    vs_connect_timeout,
    vs.connect_timeout,
    Timer,
    1,
    U32MAX,
    None,
    Some
);
num_kw!(
    vs_retry_value,
    vs.retry,
    Unsigned,
    1,
    U32MAX,
    Some("retry value invalid - {}"),
    some_u32
);
num_kw!(
    vs_delay_before_retry,
    vs.delay_before_retry,
    Timer,
    0,
    0,
    Some("Delay before retry value invalid - {}"),
    Some
);
num_kw!(
    vs_warmup,
    vs.warmup,
    Timer,
    0,
    0,
    Some("Warmup value invalid - {}"),
    Some
);

num_kw!(
    rs_retry,
    rs.retry,
    Unsigned,
    1,
    U32MAX,
    Some("retry value invalid - {}"),
    some_u32
);
num_kw!(
    rs_uthreshold,
    rs_seldom.uthreshold,
    Unsigned,
    0,
    U32MAX,
    Some("Invalid real_server uthreshold '{}' - ignoring"),
    |v| v as u32
);
num_kw!(
    rs_lthreshold,
    rs_seldom.lthreshold,
    Unsigned,
    0,
    U32MAX,
    Some("Invalid real_server lthreshold '{}' - ignoring"),
    |v| v as u32
);
num_kw!(
    rs_delay_before_retry,
    rs.delay_before_retry,
    Timer,
    0,
    0,
    Some("Delay before retry value invalid - {}"),
    Micros::from_us
);
num_kw!(
    rs_warmup,
    rs.warmup,
    Timer,
    0,
    0,
    Some("Warmup value invalid - {}"),
    Micros::from_us
);
num_kw!(
    rs_connect_timeout,
    rs.connect_timeout,
    Timer,
    1,
    U32MAX,
    Some("Connect timeout value invalid - {}"),
    Micros::from_us
);
num_kw!(
    rs_delay_loop,
    rs.delay_loop,
    Timer,
    1,
    0,
    Some("real server delay_loop '{}' invalid - ignoring"),
    Micros::from_us
);

num_kw!(
    ck_connect_port,
    common.connect_port,
    Unsigned,
    1,
    65535,
    Some("Invalid checker connect_port '{}'"),
    some_u16
);
num_kw!(
    ck_bind_port,
    source.bind_port,
    Unsigned,
    1,
    65535,
    Some("Invalid bind_port '{}'"),
    some_u16
);
num_kw!(
    ck_fwmark,
    source.fwmark,
    Unsigned,
    0,
    U32MAX,
    Some("Invalid fwmark connection value '{}'"),
    some_u32
);
num_kw!(
    ck_connect_timeout,
    common.connect_timeout,
    Timer,
    1,
    U32MAX,
    Some("Invalid connect_timeout value '{}'"),
    Micros::from_us
);
num_kw!(
    ck_retry_value,
    common.retry,
    Unsigned,
    0,
    U32MAX,
    Some("Invalid retry connection value '{}'"),
    some_u32
);
num_kw!(
    ck_delay_before_retry,
    common.delay_before_retry,
    Timer,
    0,
    0,
    Some("Invalid delay_before_retry connection value '{}'"),
    Micros::from_us
);
num_kw!(
    ck_delay_loop,
    common.delay_loop,
    Timer,
    1,
    0,
    Some("delay_loop '{}' is invalid - ignoring"),
    Micros::from_us
);
num_kw!(
    ck_warmup,
    common.warmup,
    Timer,
    0,
    0,
    Some("Invalid warmup value '{}'"),
    Micros::from_us
);
