//! keepalived 2.2.7's VRRP timer arithmetic (`vrrp.h` macros,
//! `vrrp_scheduler.c`), in µs: the skew, the master-down interval, the
//! advert interval each version can carry. Pure.

/// µs per second, keepalived's `TIMER_HZ`.
pub const SECOND_US: u64 = 1_000_000;

/// Skew_Time: v2 `(256 − priority)/256` s, **not** scaled by the advert
/// interval (RFC 3768); v3 `(256 − priority) × Master_Adver_Interval/256`
/// (RFC 5798). Integer µs as keepalived computes them.
pub fn skew_us(version: u8, priority: u8, master_adver_int_us: u64) -> u64 {
    let weight = 256 - u64::from(priority);
    if version == 3 {
        weight * master_adver_int_us / 256
    } else {
        weight * SECOND_US / 256
    }
}

/// Master_Down_Interval: `down_timer_adverts` (3) intervals plus the skew.
pub fn master_down_us(
    version: u8,
    priority: u8,
    master_adver_int_us: u64,
    down_timer_adverts: u32,
) -> u64 {
    u64::from(down_timer_adverts) * master_adver_int_us
        + skew_us(version, priority, master_adver_int_us)
}

/// The interval field of an advert, in centiseconds: v2 whole seconds
/// (×100), v3 centiseconds below 4096.
pub fn adver_int_cs(version: u8, adver_int_us: u64) -> u16 {
    if version == 2 {
        ((adver_int_us / SECOND_US).clamp(1, 255) * 100) as u16
    } else {
        (adver_int_us / 10_000).clamp(1, 4095) as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timings_keepalived_shows() {
        // vrrp.md §2: priority 100 waits 3.609 s, 150 waits 3.414 s, a
        // priority-0 advert leaves 0.609 s (v2, advert_int 1).
        assert_eq!(master_down_us(2, 100, SECOND_US, 3), 3_609_375);
        assert_eq!(master_down_us(2, 150, SECOND_US, 3), 3_414_062);
        assert_eq!(skew_us(2, 100, SECOND_US), 609_375);
        assert_eq!(
            skew_us(2, 150, 5 * SECOND_US),
            414_062,
            "v2 skew is not scaled"
        );
        // v3 scales the skew with the interval: 50 cs at priority 100.
        assert_eq!(skew_us(3, 100, 500_000), 304_687);
        assert_eq!(master_down_us(3, 100, 500_000, 3), 1_804_687);
        assert_eq!(adver_int_cs(2, SECOND_US), 100);
        assert_eq!(adver_int_cs(3, 500_000), 50);
        assert_eq!(adver_int_cs(3, 41 * SECOND_US), 4095);
    }
}
