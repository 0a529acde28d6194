//! `GIT_AUTHOR_DATE` and `GIT_COMMITTER_DATE` read as git reads them: a port of
//! `parse_date_basic` in git's `date.c` (git 2.47), quirks included, so that tern
//! takes exactly the dates `git commit` takes and refuses the ones it refuses. Its
//! own `@SECONDS +HHMM` form, RFC 2822, ISO 8601 (a date without a zone is local
//! time, as `mktime` says), `2005-04-07 22:13`, `07.04.2005`, `20050407T221313` and
//! the rest of what its scanner makes of names, numbers and zones.

/// git's broken-down time: -1 is "not given", as in `date.c`.
#[derive(Clone, Copy)]
struct Tm {
    year: i64,
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i64,
}

impl Tm {
    const UNSET: Tm = Tm {
        year: -1,
        mon: -1,
        mday: -1,
        hour: -1,
        min: -1,
        sec: -1,
    };

    /// git's `nodate`: no field filled in yet (the sign bit set in all of them).
    fn nodate(&self) -> bool {
        (self.year & self.mon & self.mday & self.hour & self.min & self.sec) < 0
    }

    fn is_date_known(&self) -> bool {
        self.year != -1 && self.mon != -1 && self.mday != -1
    }
}

/// A date as git parses `GIT_AUTHOR_DATE`: seconds since the epoch (git's are
/// unsigned) and the zone's offset in minutes; None where git says "invalid date
/// format".
pub(crate) fn parse(date: &[u8]) -> Option<(u64, i32)> {
    let mut tm = Tm::UNSET;
    let mut offset: i64 = -1;
    let mut tm_gmt = false;
    if let Some(rest) = date.strip_prefix(b"@")
        && let Some(found) = object_header_date(rest)
    {
        return Some(found);
    }
    let mut at = 0;
    while let Some(&c) = date.get(at) {
        if c == 0 || c == b'\n' {
            break;
        }
        let rest = date.get(at..).unwrap_or_default();
        let matched = if c.is_ascii_alphabetic() {
            match_alpha(rest, &mut tm, &mut offset)
        } else if c.is_ascii_digit() {
            match_digit(rest, &mut tm, &mut offset, &mut tm_gmt)
        } else if (c == b'-' || c == b'+') && byte(rest, 1).is_ascii_digit() {
            match_tz(rest, &mut offset)
        } else {
            0
        };
        at += matched.max(1);
    }
    let mut timestamp = tm_to_time_t(&tm)?;
    if offset == -1 {
        offset = (timestamp - local::mktime(&tm)?) / 60;
    }
    if !tm_gmt {
        // git (2.46 on) refuses what the zone would take before 1970.
        if offset > 0 && offset * 60 > timestamp {
            return None;
        }
        timestamp -= offset * 60;
    }
    Some((u64::try_from(timestamp).ok()?, i32::try_from(offset).ok()?))
}

/// The byte at `i`, NUL past the end (C's terminator).
fn byte(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

/// git's `tm_to_time_t`: like `mktime` in UTC, only for 1970-2099; None for -1.
fn tm_to_time_t(tm: &Tm) -> Option<i64> {
    const MDAYS: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let year = tm.year - 70;
    let month = tm.mon;
    let mut day = tm.mday;
    if !(0..=129).contains(&year) {
        return None;
    }
    let days_before = *MDAYS.get(usize::try_from(month).ok()?)?;
    if month < 2 || (year + 2) % 4 != 0 {
        day -= 1;
    }
    if tm.hour < 0 || tm.min < 0 || tm.sec < 0 {
        return None;
    }
    let t = (year * 365 + (year + 1) / 4 + days_before + day) * 24 * 60 * 60
        + tm.hour * 60 * 60
        + tm.min * 60
        + tm.sec;
    (t != -1).then_some(t)
}

/// C's `strtol`/`strtoul` on `s` from `at`: leading white space, a sign, digits; the
/// value (saturated) and where it stopped (`at` itself when there are no digits).
fn strtol(s: &[u8], at: usize) -> (i64, usize) {
    let mut i = at;
    while matches!(byte(s, i), b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let negative = byte(s, i) == b'-';
    if matches!(byte(s, i), b'-' | b'+') {
        i += 1;
    }
    let start = i;
    let mut value: i64 = 0;
    while byte(s, i).is_ascii_digit() {
        let digit = i64::from(byte(s, i) - b'0');
        value = value.saturating_mul(10).saturating_add(digit);
        i += 1;
    }
    if i == start {
        return (0, at);
    }
    (if negative { -value } else { value }, i)
}

/// git's `parse_timestamp` (`strtoumax`) on digits: the value, saturated at the
/// type's most (`TIME_MAX`), and the digits' end.
fn strtou(s: &[u8], at: usize) -> (u64, usize) {
    let mut i = at;
    let mut value: u64 = 0;
    while byte(s, i).is_ascii_digit() {
        let digit = u64::from(byte(s, i) - b'0');
        value = value.saturating_mul(10).saturating_add(digit);
        i += 1;
    }
    (value, i)
}

/// git's `match_object_header_date`: `SECONDS +HHMM` and nothing else after `@`.
fn object_header_date(date: &[u8]) -> Option<(u64, i32)> {
    if !byte(date, 0).is_ascii_digit() {
        return None;
    }
    let (stamp, end) = strtou(date, 0);
    if byte(date, end) != b' ' || stamp == u64::MAX || !matches!(byte(date, end + 1), b'+' | b'-') {
        return None;
    }
    let zone = end + 2;
    let (ofs, stop) = strtol(date, zone);
    if !matches!(byte(date, stop), 0 | b'\n') || stop != zone + 4 {
        return None;
    }
    let mut ofs = (ofs / 100) * 60 + (ofs % 100);
    if byte(date, zone - 1) == b'-' {
        ofs = -ofs;
    }
    Some((stamp, i32::try_from(ofs).ok()?))
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

const WEEKDAYS: [&str; 7] = [
    "Sundays",
    "Mondays",
    "Tuesdays",
    "Wednesdays",
    "Thursdays",
    "Fridays",
    "Saturdays",
];

/// git's zone names: the name, its offset in hours and whether it is summer time
/// (git adds the hour: "we like summer").
const ZONES: &[(&str, i64, i64)] = &[
    ("IDLW", -12, 0),
    ("NT", -11, 0),
    ("CAT", -10, 0),
    ("HST", -10, 0),
    ("HDT", -10, 1),
    ("YST", -9, 0),
    ("YDT", -9, 1),
    ("PST", -8, 0),
    ("PDT", -8, 1),
    ("MST", -7, 0),
    ("MDT", -7, 1),
    ("CST", -6, 0),
    ("CDT", -6, 1),
    ("EST", -5, 0),
    ("EDT", -5, 1),
    ("AST", -3, 0),
    ("ADT", -3, 1),
    ("WAT", -1, 0),
    ("GMT", 0, 0),
    ("UTC", 0, 0),
    ("Z", 0, 0),
    ("WET", 0, 0),
    ("BST", 0, 1),
    ("CET", 1, 0),
    ("MET", 1, 0),
    ("MEWT", 1, 0),
    ("MEST", 1, 1),
    ("CEST", 1, 1),
    ("MESZ", 1, 1),
    ("FWT", 1, 0),
    ("FST", 1, 1),
    ("EET", 2, 0),
    ("EEST", 2, 1),
    ("WAST", 7, 0),
    ("WADT", 7, 1),
    ("CCT", 8, 0),
    ("JST", 9, 0),
    ("EAST", 10, 0),
    ("EADT", 10, 1),
    ("GST", 10, 0),
    ("NZT", 12, 0),
    ("NZST", 12, 0),
    ("NZDT", 12, 1),
    ("IDLE", 12, 0),
];

/// git's `match_string`: how many leading bytes of `date` match `word` (ignoring
/// case) before a non-alphanumeric byte; 0 when an alphanumeric one differs.
fn match_string(date: &[u8], word: &str) -> usize {
    let word = word.as_bytes();
    let mut i = 0;
    while let Some(&d) = date.get(i) {
        if d == 0 {
            break;
        }
        let w = byte(word, i);
        if d.eq_ignore_ascii_case(&w) {
            i += 1;
            continue;
        }
        if !d.is_ascii_alphanumeric() {
            break;
        }
        return 0;
    }
    i
}

/// git's `match_alpha`: a month, a weekday, a zone name, AM or PM; any other word
/// is skipped.
fn match_alpha(date: &[u8], tm: &mut Tm, offset: &mut i64) -> usize {
    for (i, name) in MONTHS.iter().enumerate() {
        let n = match_string(date, name);
        if n >= 3 {
            tm.mon = i as i64;
            return n;
        }
    }
    for name in WEEKDAYS {
        let n = match_string(date, name);
        if n >= 3 {
            return n;
        }
    }
    for (name, hours, dst) in ZONES {
        let n = match_string(date, name);
        if n >= 3 || n == name.len() {
            if *offset == -1 {
                *offset = 60 * (hours + dst);
            }
            return n;
        }
    }
    if match_string(date, "PM") == 2 {
        tm.hour = (tm.hour % 12) + 12;
        return 2;
    }
    if match_string(date, "AM") == 2 {
        tm.hour %= 12;
        return 2;
    }
    let mut i = 1;
    while byte(date, i).is_ascii_alphabetic() {
        i += 1;
    }
    i
}

/// git's `set_date`: true (git's 0) when month and day make a date, the year is
/// given (or, with `now`, this year) and, with `now`, not more than ten days ahead.
/// Without `now` it writes into `tm` as it goes, as git's does, even when it fails.
fn set_date(year: i64, month: i64, day: i64, now: Option<(i64, i64)>, tm: &mut Tm) -> bool {
    if !(month > 0 && month < 13 && day > 0 && day < 32) {
        return false;
    }
    let mut check = *tm;
    let r = if now.is_some() { &mut check } else { &mut *tm };
    r.mon = month - 1;
    r.mday = day;
    if year == -1 {
        // Without `now`, git returns 1, which its callers take as "not a date".
        let Some((_, now_year)) = now else {
            return false;
        };
        r.year = now_year;
    } else if (1970..2100).contains(&year) {
        r.year = year - 1900;
    } else if year > 70 && year < 100 {
        r.year = year;
    } else if year < 38 {
        r.year = year + 100;
    } else {
        return false;
    }
    let Some((now, _)) = now else {
        return true;
    };
    if tm_to_time_t(&check).is_some_and(|specified| now + 10 * 24 * 3600 < specified) {
        return false;
    }
    tm.mon = check.mon;
    tm.mday = check.mday;
    if year != -1 {
        tm.year = check.year;
    }
    true
}

/// git's `set_time` (a 61st second for a leap second).
fn set_time(hour: i64, minute: i64, second: i64, tm: &mut Tm) -> bool {
    if (0..=24).contains(&hour) && (0..60).contains(&minute) && (0..=60).contains(&second) {
        tm.hour = hour;
        tm.min = minute;
        tm.sec = second;
        return true;
    }
    false
}

/// Now, and the year (since 1900) it is in UTC.
fn now() -> (i64, i64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    (now, civil(now).map_or(-1, |t| t.year))
}

/// git's `match_multi_number`: `num` then `c` then more numbers, a time (`:`) or a
/// date (`-`, `/`, `.`); the bytes used, 0 for neither.
fn match_multi_number(num: u64, c: u8, date: &[u8], end: usize, tm: &mut Tm) -> usize {
    let (num2, mut end) = strtol(date, end + 1);
    let mut num3 = -1;
    if byte(date, end) == c && byte(date, end + 1).is_ascii_digit() {
        (num3, end) = strtol(date, end + 1);
    }
    if c == b':' {
        // (git's `set_time` takes `long`s.)
        if !set_time(num as i64, num2, num3.max(0), tm) {
            return 0;
        }
        // Fractional seconds after a known date are dropped.
        if byte(date, end) == b'.' && byte(date, end + 1).is_ascii_digit() && tm.is_date_known() {
            end = strtol(date, end + 1).1;
        }
        return end;
    }
    let refuse_future = Some(now());
    // git's `set_date` takes `int`s: what does not fit is cut to 32 bits, as there.
    let (big, num, num2, num3) = (
        num > 70,
        num as i32 as i64,
        num2 as i32 as i64,
        num3 as i32 as i64,
    );
    let found = (big
        && (set_date(num, num2, num3, None, tm) || set_date(num, num3, num2, None, tm)))
        || (c != b'.' && set_date(num3, num, num2, refuse_future, tm))
        || set_date(num3, num2, num, refuse_future, tm)
        || (c == b'.' && set_date(num3, num, num2, refuse_future, tm));
    if found { end } else { 0 }
}

/// git's `match_digit`: a number is seconds since 1970 (nine digits or more, first),
/// the start of a time or date, a compact ISO 8601 date or time, a year or zone, a
/// day, a two-digit year or a month.
fn match_digit(date: &[u8], tm: &mut Tm, offset: &mut i64, tm_gmt: &mut bool) -> usize {
    let (num, end) = strtou(date, 0);
    if num >= 100_000_000
        && tm.nodate()
        && let Some(t) = civil(num as i64)
    {
        *tm = t;
        *tm_gmt = true;
        return end;
    }
    if matches!(byte(date, end), b':' | b'.' | b'/' | b'-') && byte(date, end + 1).is_ascii_digit()
    {
        let matched = match_multi_number(num, byte(date, end), date, end, tm);
        if matched > 0 {
            return matched;
        }
    }
    let n = end;
    if n == 8 || n == 6 {
        let (a, b, c) = (
            (num / 10000) as i64,
            ((num % 10000) / 100) as i64,
            (num % 100) as i64,
        );
        let mut end = end;
        if n == 8 {
            set_date(a, b, c, None, tm);
        } else if set_time(a, b, c, tm)
            && byte(date, end) == b'.'
            && byte(date, end + 1).is_ascii_digit()
        {
            end = strtou(date, end + 1).1;
        }
        return end;
    }
    if n == 4 {
        if num <= 1400 && *offset == -1 {
            *offset = (num / 100 * 60 + num % 100) as i64;
        } else if num > 1900 && num < 2100 {
            tm.year = num as i64 - 1900;
        }
        return n;
    }
    if n > 2 {
        return n;
    }
    let num = num as i64;
    if num > 0 && num < 32 && tm.mday < 0 {
        tm.mday = num;
        return n;
    }
    if n == 2 && tm.year < 0 {
        if num < 10 && tm.mday >= 0 {
            tm.year = num + 100;
            return n;
        }
        if num >= 70 {
            tm.year = num;
            return n;
        }
    }
    if num > 0 && num < 13 && tm.mon < 0 {
        tm.mon = num - 1;
    }
    n
}

/// git's `match_tz`: `+HHMM`, `+HH` or `+HH:MM`, hours below 24 and minutes below
/// 60; anything else is skipped.
fn match_tz(date: &[u8], offset: &mut i64) -> usize {
    let (hour, mut end) = strtou(date, 1);
    let (mut hour, n) = (hour as i64, end - 1);
    let mut min = 0;
    if n == 4 {
        min = hour % 100;
        hour /= 100;
    } else if n != 2 {
        min = 99;
    } else if byte(date, end) == b':' {
        // (`strtoul`, which takes white space and a sign too; cut to an `int`.)
        let (m, stop) = strtol(date, end + 1);
        (min, end) = (m as i32 as i64, stop);
        if end - 1 != 5 {
            min = 99;
        }
    }
    if min < 60 && hour < 24 {
        let minutes = hour * 60 + min;
        *offset = if byte(date, 0) == b'-' {
            -minutes
        } else {
            minutes
        };
    }
    end
}

/// `gmtime_r`: `t` seconds since 1970 as a UTC date and time (None when the year
/// does not fit C's `int`, where `gmtime_r` fails).
fn civil(t: i64) -> Option<Tm> {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    i32::try_from(year - 1900).ok()?;
    Some(Tm {
        year: year - 1900,
        mon: month - 1,
        mday: day,
        hour: secs / 3600,
        min: secs % 3600 / 60,
        sec: secs % 60,
    })
}

/// The local zone, as git asks it (`mktime`, which reads `TZ`).
mod local {
    use super::Tm;

    /// `mktime`: `tm` read as local time (summer time as the zone says), in seconds
    /// since 1970; None when it cannot say.
    pub(super) fn mktime(tm: &Tm) -> Option<i64> {
        let int = |v: i64| libc::c_int::try_from(v).ok();
        let mut c = libc::tm {
            tm_sec: int(tm.sec)?,
            tm_min: int(tm.min)?,
            tm_hour: int(tm.hour)?,
            tm_mday: int(tm.mday)?,
            tm_mon: int(tm.mon)?,
            tm_year: int(tm.year)?,
            tm_wday: 0,
            tm_yday: 0,
            tm_isdst: -1,
            tm_gmtoff: 0,
            tm_zone: std::ptr::null(),
        };
        // SAFETY: `c` is a valid, exclusively borrowed `struct tm`; mktime reads and
        // normalizes it and reads the zone (TZ, /etc/localtime) as git does.
        let t = unsafe { libc::mktime(&mut c) };
        // (time_t is narrower than i64 on some targets.)
        #[allow(clippy::useless_conversion)]
        Some(i64::from(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gmtime_as_c_does() {
        let t = civil(1_112_904_793).unwrap();
        assert_eq!(
            (t.year, t.mon, t.mday, t.hour, t.min, t.sec),
            (105, 3, 7, 20, 13, 13)
        );
        let t = civil(-1).unwrap();
        assert_eq!((t.year, t.mon, t.mday, t.hour), (69, 11, 31, 23));
        assert!(civil(i64::MAX).is_none());
    }

    #[test]
    fn zones_as_git_writes_them() {
        assert_eq!(parse(b"@0 +9959"), Some((0, 5999)));
        assert_eq!(parse(b"1700000000 +0130").map(|d| d.1), Some(90));
        assert_eq!(
            parse(b"Thu, 07 Apr 2005 22:13:13 +0200"),
            Some((1_112_904_793, 120))
        );
        assert_eq!(parse(b"2005-04-07T22:13:13Z"), Some((1_112_911_993, 0)));
        assert_eq!(parse(b"-5 +0000"), None);
        assert_eq!(parse(b"@0"), None);
    }
}
