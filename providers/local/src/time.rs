//! hashicorp/time: `time_static`, `time_offset`, `time_rotating` and `time_sleep`, with the
//! provider's arguments and attributes. "Now" is the plan's time, recorded in the plan, so
//! that the plan shows what apply records; dates move as Go's `AddDate` moves them (January
//! 31st plus a month is March 3rd or 2nd).

use crate::state_only::{applied, attr, integer, keepers, object, plan_made, text, with};
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, Diagnostic,
    ImportResourceRequest, ImportResourceResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ProviderFactory, ProviderSchema, ReadDataSourceRequest,
    ReadDataSourceResponse, ReadResourcesRequest, ReadResourcesResponse, ResourceMode, Schema,
    Type, Value,
};
use gpustack_provider_sdk::check::{Checker, provider_config};
use gpustack_provider_sdk::family::{Factory, Family};
use std::sync::Arc;

#[derive(Clone, Copy)]
pub(crate) struct Time;

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Time))
}

/// An instant: seconds since the epoch, and the offset from UTC it is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Instant {
    pub(crate) unix: i64,
    pub(crate) offset: i64,
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = month;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// RFC 3339 as Go's `time.RFC3339` parses it (fractional seconds dropped).
pub(crate) fn parse_rfc3339(text: &str) -> Option<Instant> {
    let b = text.as_bytes();
    let num =
        |range: std::ops::Range<usize>| -> Option<i64> { text.get(range)?.parse::<i64>().ok() };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && matches!(&zone[..1], "+" | "-") && &zone[3..4] == ":" => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let hours: i64 = zone[1..3].parse().ok()?;
            let minutes: i64 = zone[4..6].parse().ok()?;
            sign * (hours * 3600 + minutes * 60)
        }
        _ => return None,
    };
    let days_in_month = days_from_civil(year + i64::from(month == 12), month % 12 + 1, 1)
        - days_from_civil(year, month, 1);
    if day > days_in_month {
        return None;
    }
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Some(Instant {
        unix: local - offset,
        offset,
    })
}

/// The parts of an instant as written in its offset: year, month, day, hour, minute, second.
fn parts(t: Instant) -> (i64, i64, i64, i64, i64, i64) {
    let local = t.unix + t.offset;
    let (year, month, day) = civil_from_days(local.div_euclid(86_400));
    let seconds = local.rem_euclid(86_400);
    (
        year,
        month,
        day,
        seconds / 3600,
        seconds % 3600 / 60,
        seconds % 60,
    )
}

/// As Go's `Format(time.RFC3339)`: `Z` for UTC.
pub(crate) fn format_rfc3339(t: Instant) -> String {
    let (year, month, day, hour, minute, second) = parts(t);
    let zone = if t.offset == 0 {
        "Z".to_owned()
    } else {
        let sign = if t.offset < 0 { '-' } else { '+' };
        let abs = t.offset.abs();
        format!("{sign}{:02}:{:02}", abs / 3600, abs % 3600 / 60)
    };
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{zone}")
}

/// Go's `AddDate(years, months, days)` then `Add(seconds)`: months and days past their
/// ends roll over into the next.
fn add(t: Instant, years: i64, months: i64, days: i64, seconds: i64) -> Instant {
    let (year, month, day, hour, minute, second) = parts(t);
    let total_months = (year + years) * 12 + (month - 1) + months;
    let (year, month) = (total_months.div_euclid(12), total_months.rem_euclid(12) + 1);
    let days_since = days_from_civil(year, month, 1) + (day - 1) + days;
    let local = days_since * 86_400 + hour * 3600 + minute * 60 + second;
    Instant {
        unix: local - t.offset + seconds,
        offset: t.offset,
    }
}

/// The computed parts every time resource has, of `t`.
fn time_parts(t: Instant) -> [(&'static str, Value); 7] {
    let (year, month, day, hour, minute, second) = parts(t);
    [
        ("year", Value::number(year as f64)),
        ("month", Value::number(month as f64)),
        ("day", Value::number(day as f64)),
        ("hour", Value::number(hour as f64)),
        ("minute", Value::number(minute as f64)),
        ("second", Value::number(second as f64)),
        ("unix", Value::number(t.unix as f64)),
    ]
}

/// A Go duration (`30s`, `1h30m`, `1.5m`, `300ms`): its length; None when it is not one or is
/// negative.
pub(crate) fn parse_duration(text: &str) -> Option<std::time::Duration> {
    if text == "0" {
        return Some(std::time::Duration::ZERO);
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() || rest.starts_with('-') {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * seconds;
    }
    Some(std::time::Duration::from_secs_f64(total))
}

fn parts_schema(schema: Schema) -> Schema {
    ["year", "month", "day", "hour", "minute", "second", "unix"]
        .into_iter()
        .fold(schema, |s, name| {
            s.attr(name, Attribute::computed(Type::Number))
        })
}

fn schemas() -> ProviderSchema {
    let base = |name: &str| {
        Attribute::optional_computed(Type::String)
            .force_new()
            .describe(format!("{name} (RFC 3339); default the time of the plan."))
    };
    let number = || Attribute::optional(Type::Number);
    let static_ = parts_schema(
        Schema::new("A time, fixed when the resource is made.")
            .attr("rfc3339", base("The time"))
            .attr("triggers", keepers("triggers"))
            .attr("id", Attribute::computed(Type::String)),
    );
    let offset = parts_schema(
        Schema::new("A time offset from a base time.")
            .attr("base_rfc3339", base("The base time"))
            .attr("offset_years", number())
            .attr("offset_months", number())
            .attr("offset_days", number())
            .attr("offset_hours", number())
            .attr("offset_minutes", number())
            .attr("offset_seconds", number())
            .attr("triggers", keepers("triggers"))
            .attr("rfc3339", Attribute::computed(Type::String))
            .attr("id", Attribute::computed(Type::String)),
    );
    let rotating = parts_schema(
        Schema::new("A time that is replaced once its rotation time has passed.")
            .attr("rfc3339", base("The base time"))
            .attr("rotation_years", number())
            .attr("rotation_months", number())
            .attr("rotation_days", number())
            .attr("rotation_hours", number())
            .attr("rotation_minutes", number())
            .attr("triggers", keepers("triggers"))
            .attr("rotation_rfc3339", Attribute::computed(Type::String))
            .attr("id", Attribute::computed(Type::String)),
    );
    let sleep =
        Schema::new("Waits when it is made (create_duration) and destroyed (destroy_duration).")
            .attr(
                "create_duration",
                Attribute::optional(Type::String)
                    .describe("How long creating waits (a Go duration: 30s, 5m)."),
            )
            .attr(
                "destroy_duration",
                Attribute::optional(Type::String).describe("How long destroying waits."),
            )
            .attr("triggers", keepers("triggers"))
            .attr("id", Attribute::computed(Type::String));
    ProviderSchema {
        name: "time".into(),
        config: provider_config("hashicorp/time: times kept in the state, and waits."),
        resources: [
            ("time_static".to_owned(), static_),
            ("time_offset".to_owned(), offset),
            ("time_rotating".to_owned(), rotating),
            ("time_sleep".to_owned(), sleep),
        ]
        .into(),
        data_sources: Default::default(),
    }
}

#[async_trait::async_trait]
impl Family for Time {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types(
            "time",
            &["time_static", "time_offset", "time_rotating", "time_sleep"],
            &[],
        )
    }

    fn schema(&self) -> ProviderSchema {
        schemas()
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        for name in ["rfc3339", "base_rfc3339"] {
            if let Some(t) = check.str(name)
                && parse_rfc3339(t).is_none()
            {
                check.error(
                    name,
                    "Invalid RFC 3339 time",
                    format!("\"{t}\" is not an RFC 3339 time such as 2026-01-31T12:00:00Z."),
                );
            }
        }
        if type_name == "time_sleep" {
            for name in ["create_duration", "destroy_duration"] {
                if let Some(d) = check.str(name)
                    && parse_duration(d).is_none()
                {
                    check.error(
                        name,
                        "Invalid duration",
                        format!("\"{d}\" is not a duration such as 30s, 5m or 1h30m."),
                    );
                }
            }
        }
        if type_name == "time_rotating"
            && [
                "rotation_years",
                "rotation_months",
                "rotation_days",
                "rotation_hours",
                "rotation_minutes",
            ]
            .iter()
            .all(|name| check.get(name).is_none_or(Value::is_null))
        {
            check.error(
                "rotation_days",
                "Missing rotation",
                "time_rotating needs one of rotation_years, rotation_months, rotation_days, rotation_hours or rotation_minutes.".into(),
            );
        }
    }

    async fn connect(&self, _: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        Ok(Arc::new(*self))
    }
}

/// The configured base time, or the plan's.
fn base(config: &Value, name: &str, plan_time: &str) -> Result<Instant, String> {
    let written = text(config, name);
    let t = written.as_deref().unwrap_or(plan_time);
    parse_rfc3339(t).ok_or_else(|| format!("\"{t}\" is not an RFC 3339 time"))
}

/// What the offsets or rotations of `config` add to `t`.
fn moved(config: &Value, t: Instant, prefix: &str) -> Instant {
    let n = |unit: &str| integer(config, &format!("{prefix}_{unit}"), 0);
    add(
        t,
        n("years"),
        n("months"),
        n("days"),
        n("hours") * 3600 + n("minutes") * 60 + n("seconds"),
    )
}

fn make(type_name: &str, config: &Value, plan_time: &str) -> Result<Value, String> {
    match type_name {
        "time_static" => {
            let t = base(config, "rfc3339", plan_time)?;
            let written = text(config, "rfc3339").unwrap_or_else(|| format_rfc3339(t));
            let mut computed = vec![
                ("rfc3339", Value::String(written.clone())),
                ("id", Value::String(written)),
            ];
            computed.extend(time_parts(t));
            Ok(with(config, computed))
        }
        "time_offset" => {
            let t = base(config, "base_rfc3339", plan_time)?;
            let written = text(config, "base_rfc3339").unwrap_or_else(|| format_rfc3339(t));
            let to = moved(config, t, "offset");
            let mut computed = vec![
                ("base_rfc3339", Value::String(written.clone())),
                ("rfc3339", Value::String(format_rfc3339(to))),
                ("id", Value::String(written)),
            ];
            computed.extend(time_parts(to));
            Ok(with(config, computed))
        }
        "time_rotating" => {
            let t = base(config, "rfc3339", plan_time)?;
            let written = text(config, "rfc3339").unwrap_or_else(|| format_rfc3339(t));
            let mut computed = vec![
                ("rfc3339", Value::String(written.clone())),
                (
                    "rotation_rfc3339",
                    Value::String(format_rfc3339(moved(config, t, "rotation"))),
                ),
                ("id", Value::String(written)),
            ];
            computed.extend(time_parts(t));
            Ok(with(config, computed))
        }
        "time_sleep" => Ok(with(config, [("id", Value::string(plan_time))])),
        other => Err(format!(
            "the time provider has no resource type \"{other}\""
        )),
    }
}

/// Waits `duration`, or until the run is told to stop.
async fn sleep(duration: std::time::Duration, stop: &gpustack_protocol::StopSignal) {
    let until = std::time::Instant::now() + duration;
    while std::time::Instant::now() < until && !stop.is_set() {
        let left = until.saturating_duration_since(std::time::Instant::now());
        tokio::time::sleep(left.min(std::time::Duration::from_millis(200))).await;
    }
}

#[async_trait::async_trait]
impl Provider for Time {
    /// Only a rotating time changes by itself: past its rotation time, it is gone, and the
    /// plan makes it again.
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let states = request
            .states
            .into_iter()
            .map(|state| {
                let due = request.type_name == "time_rotating"
                    && text(&state, "rotation_rfc3339")
                        .and_then(|t| parse_rfc3339(&t))
                        .is_some_and(|t| now >= t.unix);
                (!due).then_some(state)
            })
            .collect();
        ReadResourcesResponse {
            states,
            ..ReadResourcesResponse::default()
        }
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let schema = schemas()
            .into_type(ResourceMode::Managed, &request.type_name)
            .unwrap_or_default();
        let mut response = plan_made(&schema, &request, |config| {
            make(&request.type_name, config, &request.plan_time)
        });
        // Offsets and rotations change in place: what they compute follows.
        if let Some(prior) = &request.prior_state
            && response.requires_replace.is_empty()
            && matches!(request.type_name.as_str(), "time_offset" | "time_rotating")
        {
            let base_name = if request.type_name == "time_offset" {
                "base_rfc3339"
            } else {
                "rfc3339"
            };
            let mut config = response.planned_state.clone();
            gpustack_provider_sdk::check::set(&mut config, base_name, attr(prior, base_name));
            match make(&request.type_name, &config, &request.plan_time) {
                Ok(planned) => response.planned_state = planned,
                Err(e) => response
                    .diagnostics
                    .push(Diagnostic::error("Invalid configuration", e)),
            }
        }
        response
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        if request.type_name == "time_sleep" {
            let wait = match (&request.prior_state, &request.planned_state) {
                (None, Some(planned)) => text(planned, "create_duration"),
                (Some(prior), None) => text(prior, "destroy_duration"),
                _ => None,
            };
            if let Some(duration) = wait.as_deref().and_then(parse_duration) {
                sleep(duration, &request.stop).await;
            }
        }
        ApplyResourceChangeResponse {
            new_state: applied(&request),
            diagnostics: vec![],
        }
    }

    /// As the provider imports: a static time by its RFC 3339 text; an offset as
    /// `BASE,YEARS,MONTHS,DAYS,HOURS,MINUTES,SECONDS`; a rotating time as
    /// `BASE,YEARS,MONTHS,DAYS,HOURS,MINUTES`.
    async fn import_resource(&self, request: ImportResourceRequest) -> ImportResourceResponse {
        let imported = || -> Result<Value, String> {
            let fields: Vec<&str> = request.id.split(',').collect();
            let base_time = fields[0];
            parse_rfc3339(base_time)
                .ok_or_else(|| format!("\"{base_time}\" is not an RFC 3339 time"))?;
            let numbers = |names: &[&'static str]| -> Result<Vec<(&'static str, Value)>, String> {
                if fields.len() != names.len() + 1 {
                    return Err(format!(
                        "\"{}\" is not BASE,{}",
                        request.id,
                        names.join(",").to_uppercase()
                    ));
                }
                names
                    .iter()
                    .zip(&fields[1..])
                    .map(|(name, text)| {
                        let n: i64 = text
                            .parse()
                            .map_err(|_| format!("\"{text}\" is not a whole number"))?;
                        Ok((
                            *name,
                            if n == 0 {
                                Value::Null
                            } else {
                                Value::number(n as f64)
                            },
                        ))
                    })
                    .collect()
            };
            let (config, plan_time) = match request.type_name.as_str() {
                "time_static" => (object([("rfc3339", Value::string(base_time))]), base_time),
                "time_offset" => {
                    let mut pairs = numbers(&[
                        "offset_years",
                        "offset_months",
                        "offset_days",
                        "offset_hours",
                        "offset_minutes",
                        "offset_seconds",
                    ])?;
                    pairs.push(("base_rfc3339", Value::string(base_time)));
                    (object(pairs), base_time)
                }
                "time_rotating" => {
                    let mut pairs = numbers(&[
                        "rotation_years",
                        "rotation_months",
                        "rotation_days",
                        "rotation_hours",
                        "rotation_minutes",
                    ])?;
                    pairs.push(("rfc3339", Value::string(base_time)));
                    (object(pairs), base_time)
                }
                other => return Err(format!("{other} cannot be imported")),
            };
            make(&request.type_name, &config, plan_time)
        };
        crate::state_only::import_answer(imported())
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        crate::state_only::no_data_source("time", request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_with_its_offset() {
        for text in [
            "2026-01-31T12:00:00Z",
            "2024-02-29T23:59:59+05:30",
            "1969-12-31T00:00:00-08:00",
        ] {
            let t = parse_rfc3339(text).unwrap();
            assert_eq!(format_rfc3339(t), text);
        }
        assert_eq!(
            parse_rfc3339("2026-01-01T00:00:00Z").unwrap().unix,
            1_767_225_600
        );
        assert_eq!(parse_rfc3339("2026-02-29T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("2026-01-01 00:00:00Z"), None);
        assert_eq!(
            parse_rfc3339("2026-01-01T00:00:00.123Z").unwrap().unix,
            1_767_225_600
        );
    }

    #[test]
    fn dates_roll_over_as_gos_add_date() {
        let t = parse_rfc3339("2026-01-31T10:00:00Z").unwrap();
        assert_eq!(format_rfc3339(add(t, 0, 1, 0, 0)), "2026-03-03T10:00:00Z");
        assert_eq!(format_rfc3339(add(t, 1, -1, 0, 0)), "2026-12-31T10:00:00Z");
        assert_eq!(
            format_rfc3339(add(t, 0, 0, 1, 3600 * 15)),
            "2026-02-02T01:00:00Z"
        );
        let leap = parse_rfc3339("2024-02-29T00:00:00Z").unwrap();
        assert_eq!(
            format_rfc3339(add(leap, 1, 0, 0, 0)),
            "2025-03-01T00:00:00Z"
        );
    }

    #[test]
    fn go_durations() {
        assert_eq!(
            parse_duration("1h30m"),
            Some(std::time::Duration::from_secs(5400))
        );
        assert_eq!(
            parse_duration("1.5s"),
            Some(std::time::Duration::from_millis(1500))
        );
        assert_eq!(
            parse_duration("300ms"),
            Some(std::time::Duration::from_millis(300))
        );
        assert_eq!(parse_duration("0"), Some(std::time::Duration::ZERO));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("-1s"), None);
        assert_eq!(parse_duration("1d"), None);
    }

    #[test]
    fn an_offset_moves_from_the_plans_time_and_updates_in_place() {
        let config = object([("offset_days", Value::number(7.0))]);
        let planned = make("time_offset", &config, "2026-12-05T10:00:00Z").unwrap();
        assert_eq!(
            attr(&planned, "rfc3339"),
            Value::string("2026-12-12T10:00:00Z")
        );
        assert_eq!(attr(&planned, "id"), Value::string("2026-12-05T10:00:00Z"));
        let request = PlanResourceChangeRequest {
            type_name: "time_offset".into(),
            prior_state: Some(planned),
            config: object([("offset_days", Value::number(1.0))]),
            for_apply: false,
            preview: true,
            sensitive_paths: vec![],
            owner: String::new(),
            seed: Some([0; 32]),
            plan_time: "2027-01-01T00:00:00Z".into(),
        };
        let response = futures::executor::block_on(Time.plan_resource_change(request));
        assert!(response.requires_replace.is_empty());
        assert_eq!(
            attr(&response.planned_state, "rfc3339"),
            Value::string("2026-12-06T10:00:00Z")
        );
    }
}
