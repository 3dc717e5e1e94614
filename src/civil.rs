//! UTC calendar fields of a Unix time, for the dates keepalived prints
//! (the SMTP `Date:` header, the VRRP data file's timers). Pure.

/// A Unix time's UTC calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    /// 1..12.
    pub month: u32,
    /// 1..31.
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// 0 = Sunday.
    pub wday: u32,
}

const WD: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MN: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

impl Civil {
    /// The fields of `secs` since 1970-01-01 UTC (Howard Hinnant's
    /// civil-from-days).
    pub fn of(secs: u64) -> Civil {
        let days = secs / 86_400;
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        Civil {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day,
            hour: (secs % 86_400 / 3600) as u32,
            minute: (secs % 3600 / 60) as u32,
            second: (secs % 60) as u32,
            // 1970-01-01 was a Thursday.
            wday: ((days + 4) % 7) as u32,
        }
    }

    /// ctime(3)'s `Tue Dec  1 07:32:14.608329 2026`, with `usecs` after
    /// the seconds (keepalived's timeval dates).
    pub fn ctime_usecs(&self, usecs: u64) -> String {
        format!(
            "{} {} {:2} {:02}:{:02}:{:02}.{usecs:06} {}",
            self.weekday(),
            self.month(),
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.year
        )
    }

    /// `Mon`.
    pub fn weekday(&self) -> &'static str {
        WD[self.wday as usize]
    }

    /// `Jan`.
    pub fn month(&self) -> &'static str {
        MN[(self.month - 1) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keepalived_s_dates() {
        // The data file's "1796110334.608329 (Tue Dec  1 07:32:14.608329 2026)".
        let c = Civil::of(1_796_110_334);
        assert_eq!(c.ctime_usecs(608_329), "Tue Dec  1 07:32:14.608329 2026");
    }
}
