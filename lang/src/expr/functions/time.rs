//! Date and time functions with Terraform's formats: RFC 3339 timestamps, Go duration strings
//! (`timeadd`) and Terraform's own `formatdate` verbs. `timestamp()` and `plantimestamp()` are
//! called by the evaluator, not through the pure library: their value depends on when the plan
//! runs.

use super::*;

/// An instant with the offset it was written in.
struct Time {
    /// Seconds since 1970-01-01T00:00:00Z.
    seconds: i64,
    nanos: u32,
    /// Seconds east of UTC.
    offset: i32,
}

fn digits(s: &str, at: usize, n: usize) -> Option<u32> {
    let part = s.get(at..at + n)?;
    part.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| part.parse().ok())?
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// An RFC 3339 timestamp, as Go's `time.Parse(time.RFC3339, ...)` reads it.
fn parse_time(a: &Args<'_>, i: usize) -> CallResult<Time> {
    let s = a.string(i)?;
    let invalid = || a.error(i, format!("not a valid RFC3339 timestamp: \"{s}\""));
    let year = digits(&s, 0, 4).ok_or_else(invalid)?;
    let month = digits(&s, 5, 2).ok_or_else(invalid)?;
    let day = digits(&s, 8, 2).ok_or_else(invalid)?;
    let hour = digits(&s, 11, 2).ok_or_else(invalid)?;
    let minute = digits(&s, 14, 2).ok_or_else(invalid)?;
    let second = digits(&s, 17, 2).ok_or_else(invalid)?;
    let bytes = s.as_bytes();
    if bytes.get(4) != Some(&b'-')
        || bytes.get(7) != Some(&b'-')
        || bytes.get(10) != Some(&b'T')
        || bytes.get(13) != Some(&b':')
        || bytes.get(16) != Some(&b':')
    {
        return Err(invalid());
    }
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(i64::from(year), month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return Err(invalid());
    }
    let mut at = 19;
    let mut nanos = 0u32;
    if bytes.get(at) == Some(&b'.') {
        let start = at + 1;
        let mut end = start;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == start || end - start > 9 {
            return Err(invalid());
        }
        let fraction = &s[start..end];
        nanos = format!("{fraction:0<9}").parse().map_err(|_| invalid())?;
        at = end;
    }
    let offset = match &s[at..] {
        "Z" => 0,
        zone if zone.len() == 6 && (zone.starts_with('+') || zone.starts_with('-')) => {
            let h = digits(zone, 1, 2).ok_or_else(invalid)?;
            let m = digits(zone, 4, 2).ok_or_else(invalid)?;
            if zone.as_bytes()[3] != b':' || h > 23 || m > 59 {
                return Err(invalid());
            }
            let east = (h * 3600 + m * 60) as i32;
            if zone.starts_with('-') { -east } else { east }
        }
        _ => return Err(invalid()),
    };
    let local = days_from_civil(i64::from(year), month, day) * 86_400
        + i64::from(hour * 3600 + minute * 60 + second);
    Ok(Time {
        seconds: local - i64::from(offset),
        nanos,
        offset,
    })
}

/// The civil fields of an instant in its own offset.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    weekday: usize,
    hour: u32,
    minute: u32,
    second: u32,
}

fn civil(t: &Time) -> Civil {
    let local = t.seconds + i64::from(t.offset);
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400) as u32;
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        // 1970-01-01 was a Thursday.
        weekday: (days + 4).rem_euclid(7) as usize,
        hour: secs / 3600,
        minute: secs / 60 % 60,
        second: secs % 60,
    }
}

fn zone(offset: i32, colon: bool) -> String {
    let sign = if offset < 0 { '-' } else { '+' };
    let (h, m) = (offset.abs() / 3600, offset.abs() / 60 % 60);
    if colon {
        format!("{sign}{h:02}:{m:02}")
    } else {
        format!("{sign}{h:02}{m:02}")
    }
}

/// RFC 3339 as Go's `Format(time.RFC3339)` writes it: whole seconds, `Z` for a zero offset.
fn rfc3339(t: &Time) -> String {
    let c = civil(t);
    let zone = if t.offset == 0 {
        "Z".to_owned()
    } else {
        zone(t.offset, true)
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{zone}",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// The instant this process first asked for the time, in RFC 3339: `timestamp()` and
/// `plantimestamp()` in a plan. One instant for the whole plan, so that apply (which never
/// re-evaluates) does what the plan showed, where Terraform leaves `timestamp()` unknown until
/// apply.
pub fn plan_timestamp() -> String {
    static AT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    AT.get_or_init(|| {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        rfc3339(&Time {
            seconds: i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX),
            nanos: 0,
            offset: 0,
        })
    })
    .clone()
}

/// A Go duration string (`1h30m`, `-10m`, `1.5h`, `300ms`) in nanoseconds.
fn duration(a: &Args<'_>, i: usize) -> CallResult<i128> {
    let s = a.string(i)?;
    let invalid = || a.error(i, format!("time: invalid duration \"{s}\""));
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(&s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let (number, tail) = rest.split_at(number_end);
        if number.is_empty() || number == "." {
            return Err(invalid());
        }
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(invalid()),
        };
        total += number.parse::<f64>().map_err(|_| invalid())? * scale;
        rest = tail;
    }
    // Go's durations are int64 nanoseconds.
    if total > i64::MAX as f64 {
        return Err(invalid());
    }
    let nanos = total as i128;
    Ok(if negative { -nanos } else { nanos })
}

pub(super) fn timeadd(a: &Args<'_>) -> CallResult {
    let t = parse_time(a, 0)?;
    let d = duration(a, 1)?;
    let total = i128::from(t.seconds) * 1_000_000_000 + i128::from(t.nanos) + d;
    let seconds = total.div_euclid(1_000_000_000) as i64;
    let nanos = total.rem_euclid(1_000_000_000) as u32;
    ok_string(rfc3339(&Time {
        seconds,
        nanos,
        offset: t.offset,
    }))
}

pub(super) fn timecmp(a: &Args<'_>) -> CallResult {
    let (x, y) = (parse_time(a, 0)?, parse_time(a, 1)?);
    let order = (x.seconds, x.nanos).cmp(&(y.seconds, y.nanos));
    Ok(Value::number(i64::from(order as i8)))
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
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Terraform's `formatdate`: runs of one letter are verbs, text in single quotes is literal
/// (`''` is a quote), anything else is copied.
pub(super) fn formatdate(a: &Args<'_>) -> CallResult {
    let spec = a.string(0)?;
    let t = parse_time(a, 1)?;
    let c = civil(&t);
    let hour12 = match c.hour % 12 {
        0 => 12,
        h => h,
    };
    let mut out = String::new();
    let chars: Vec<char> = spec.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        if ch == '\'' {
            if chars.get(i + 1) == Some(&'\'') {
                out.push('\'');
                i += 2;
                continue;
            }
            let mut j = i + 1;
            loop {
                match chars.get(j) {
                    None => return Err(a.error(0, "unterminated literal '")),
                    Some('\'') if chars.get(j + 1) == Some(&'\'') => {
                        out.push('\'');
                        j += 2;
                    }
                    Some('\'') => break,
                    Some(&c) => {
                        out.push(c);
                        j += 1;
                    }
                }
            }
            i = j + 1;
            continue;
        }
        if !ch.is_alphabetic() {
            out.push(ch);
            i += 1;
            continue;
        }
        let mut j = i;
        while chars.get(j) == Some(&ch) {
            j += 1;
        }
        let verb: String = chars[i..j].iter().collect();
        let text = match verb.as_str() {
            "YYYY" => format!("{:04}", c.year),
            "YY" => format!("{:02}", c.year.rem_euclid(100)),
            "MMMM" => MONTHS[c.month as usize - 1].to_owned(),
            "MMM" => MONTHS[c.month as usize - 1][..3].to_owned(),
            "MM" => format!("{:02}", c.month),
            "M" => c.month.to_string(),
            "DD" => format!("{:02}", c.day),
            "D" => c.day.to_string(),
            "EEEE" => WEEKDAYS[c.weekday].to_owned(),
            "EEE" => WEEKDAYS[c.weekday][..3].to_owned(),
            "hh" => format!("{:02}", c.hour),
            "h" => c.hour.to_string(),
            "HH" => format!("{hour12:02}"),
            "H" => hour12.to_string(),
            "AA" => if c.hour < 12 { "AM" } else { "PM" }.to_owned(),
            "aa" => if c.hour < 12 { "am" } else { "pm" }.to_owned(),
            "mm" => format!("{:02}", c.minute),
            "m" => c.minute.to_string(),
            "ss" => format!("{:02}", c.second),
            "s" => c.second.to_string(),
            "ZZZZZ" => zone(t.offset, true),
            "ZZZZ" => zone(t.offset, false),
            "ZZZ" if t.offset == 0 => "UTC".to_owned(),
            "ZZZ" => zone(t.offset, false),
            "Z" if t.offset == 0 => "Z".to_owned(),
            "Z" => zone(t.offset, true),
            _ => {
                return Err(a.error(0, format!("invalid date format verb \"{verb}\"")));
            }
        };
        out.push_str(&text);
        i = j;
    }
    ok_string(out)
}

/// ISO 8601 year and week of a civil date (`days` since 1970-01-01, `weekday` 0 = Sunday):
/// the week's Thursday decides both, as Go's `ISOWeek`.
fn iso_week(days: i64, weekday: usize) -> (i64, i64) {
    let monday_based = (weekday as i64 + 6) % 7;
    let thursday = days - monday_based + 3;
    let (year, _, _) = civil_from_days(thursday);
    let year_day = thursday - days_from_civil(year, 1, 1);
    (year, year_day / 7 + 1)
}

/// The fields hashicorp/time's parse functions give of an instant, in its own offset.
fn time_fields(t: &Time) -> IndexMap<String, Value> {
    let c = civil(t);
    let days = (t.seconds + i64::from(t.offset)).div_euclid(86_400);
    let (iso_year, iso_week) = iso_week(days, c.weekday);
    let year_day = days - days_from_civil(c.year, 1, 1) + 1;
    let mut out = IndexMap::new();
    let mut put = |name: &str, value: Value| {
        out.insert(name.to_owned(), value);
    };
    put("year", Value::number(c.year));
    put("year_day", Value::number(year_day));
    put("day", Value::number(i64::from(c.day)));
    put("month", Value::number(i64::from(c.month)));
    put("month_name", Value::string(MONTHS[c.month as usize - 1]));
    put("weekday", Value::number(c.weekday as i64));
    put("weekday_name", Value::string(WEEKDAYS[c.weekday]));
    put("hour", Value::number(i64::from(c.hour)));
    put("minute", Value::number(i64::from(c.minute)));
    put("second", Value::number(i64::from(c.second)));
    put("iso_year", Value::number(iso_year));
    put("iso_week", Value::number(iso_week));
    out
}

/// `provider::time::rfc3339_parse(timestamp)`: the parts of the instant, in its own offset,
/// and `unix`.
pub(super) fn rfc3339_parse(a: &Args<'_>) -> CallResult {
    let t = parse_time(a, 0)?;
    let mut fields = time_fields(&t);
    fields.insert("unix".into(), Value::number(t.seconds));
    Ok(Value::Object(fields))
}

/// `provider::time::unix_timestamp_parse(unix_timestamp)`: the parts of the instant in UTC,
/// and its `rfc3339`.
pub(super) fn unix_timestamp_parse(a: &Args<'_>) -> CallResult {
    let t = Time {
        seconds: a.int(0)?,
        nanos: 0,
        offset: 0,
    };
    let mut fields = time_fields(&t);
    fields.insert("rfc3339".into(), Value::String(rfc3339(&t)));
    Ok(Value::Object(fields))
}

/// `provider::time::duration_parse(duration)`: the duration in each unit, as Go's `Hours()`,
/// `Minutes()`, `Seconds()` (fractions) and `Milliseconds()`, `Microseconds()`,
/// `Nanoseconds()` (whole, truncated).
pub(super) fn duration_parse(a: &Args<'_>) -> CallResult {
    let nanos = duration(a, 0)?;
    let whole = |unit: i128| Value::number((nanos / unit) as i64);
    // Go splits a duration into whole units and the rest, so that the float is exact where
    // it can be.
    let fraction = |unit: i128| {
        let (whole, rest) = (nanos / unit, nanos % unit);
        let value = whole as f64 + rest as f64 / unit as f64;
        Number::from_f64(value).map_or(Value::Null, Value::number)
    };
    let mut out = IndexMap::new();
    out.insert("hours".to_owned(), fraction(3_600_000_000_000));
    out.insert("minutes".to_owned(), fraction(60_000_000_000));
    out.insert("seconds".to_owned(), fraction(1_000_000_000));
    out.insert("milliseconds".to_owned(), whole(1_000_000));
    out.insert("microseconds".to_owned(), whole(1_000));
    out.insert("nanoseconds".to_owned(), whole(1));
    Ok(Value::Object(out))
}
