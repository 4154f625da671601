//! Strict RFC 3339 timestamps.
//!
//! The `time` crate alone is too lenient (any separator byte, long fractions
//! truncated), so the form is checked here byte by byte first: `YYYY-MM-DD`, `T` or
//! `t`, `HH:MM:SS`, an optional fraction of 1–9 digits, then `Z`/`z` or `±HH:MM`.
//! A space separator, `+0000`, a missing offset, surrounding spaces and leap seconds
//! (`:60`) are refused. `-00:00` ("offset unknown") is read as UTC.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

/// An instant written as RFC 3339. Compares as an instant; prints as written.
#[derive(Clone, Debug)]
pub struct Timestamp {
    instant: OffsetDateTime,
    text: String,
}

impl Timestamp {
    /// Parses `text` strictly; the error says what is wrong with the form.
    pub fn parse(text: &str) -> Result<Self, TimestampError> {
        parse_rfc3339(text).map(|instant| Timestamp {
            instant,
            text: text.to_string(),
        })
    }

    /// The instant, in the offset it was written with.
    pub fn instant(&self) -> OffsetDateTime {
        self.instant
    }

    /// The text as it was written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// A timestamp for `instant`, written in UTC with `Z`.
    pub fn from_instant(instant: OffsetDateTime) -> Self {
        let utc = instant.to_offset(UtcOffset::UTC);
        let text = utc
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string());
        Timestamp { instant: utc, text }
    }

    /// The current system time (only the CLI calls this; decisions take time as an argument).
    pub fn now() -> Self {
        Self::from_instant(OffsetDateTime::now_utc())
    }
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        self.instant == other.instant
    }
}
impl Eq for Timestamp {}
impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timestamp {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.instant.cmp(&other.instant)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Timestamp {
    type Err = TimestampError;
    fn from_str(s: &str) -> Result<Self, TimestampError> {
        Timestamp::parse(s)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "RFC 3339: T or t between date and time, Z/z or ±HH:MM, at most 9 fractional digits.",
            "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
        })
    }
}

/// Why a text is not a strict RFC 3339 timestamp: the text and what is wrong with its form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an RFC 3339 timestamp: {why}")]
pub struct TimestampError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it, in words.
    pub why: &'static str,
}

fn parse_rfc3339(s: &str) -> Result<OffsetDateTime, TimestampError> {
    let bad = |why: &'static str| {
        Err(TimestampError {
            text: s.to_string(),
            why,
        })
    };
    let b = s.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(range)?;
        if part.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(part).ok()?.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 20 {
        return bad("expected YYYY-MM-DDTHH:MM:SS followed by Z or ±HH:MM");
    }
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return bad("expected the date as YYYY-MM-DD");
    };
    if b[4] != b'-' || b[7] != b'-' {
        return bad("expected the date as YYYY-MM-DD");
    }
    if b[10] != b'T' && b[10] != b't' {
        return bad("expected T between the date and the time");
    }
    let (Some(hour), Some(minute), Some(second)) = (num(11..13), num(14..16), num(17..19)) else {
        return bad("expected the time as HH:MM:SS");
    };
    if b[13] != b':' || b[16] != b':' {
        return bad("expected the time as HH:MM:SS");
    }
    let mut i = 19;
    let mut nanos = 0u32;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = i - start;
        if digits == 0 {
            return bad("expected digits after the decimal point");
        }
        if digits > 9 {
            return bad("more than 9 fractional digits");
        }
        let Ok(frac) = s[start..i].parse::<u32>() else {
            return bad("the fraction is not a number");
        };
        nanos = frac * 10u32.pow(9 - digits as u32);
    }
    let offset_secs: i32 = match &b[i..] {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()) =>
        {
            let h = i32::from(h1 - b'0') * 10 + i32::from(h2 - b'0');
            let m = i32::from(m1 - b'0') * 10 + i32::from(m2 - b'0');
            if h > 23 || m > 59 {
                return bad("the offset is out of range");
            }
            let secs = h * 3600 + m * 60;
            if *sign == b'-' { -secs } else { secs }
        }
        [] => return bad("missing the offset (Z or ±HH:MM)"),
        _ => return bad("expected the offset as Z or ±HH:MM"),
    };
    if second > 59 {
        return bad("seconds must be 00–59 (leap seconds are not accepted)");
    }
    let Ok(month) = Month::try_from(month as u8) else {
        return bad("the month is out of range");
    };
    let Ok(date) = Date::from_calendar_date(year as i32, month, day as u8) else {
        return bad("the date does not exist");
    };
    let Ok(time) = Time::from_hms_nano(hour as u8, minute as u8, second as u8, nanos) else {
        return bad("the time is out of range");
    };
    let Ok(offset) = UtcOffset::from_whole_seconds(offset_secs) else {
        return bad("the offset is out of range");
    };
    Ok(PrimitiveDateTime::new(date, time).assume_offset(offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_rfc_forms() {
        for ok in [
            "2026-08-27T18:04:09Z",
            "2026-08-27t18:04:09z",
            "2026-08-27T20:04:09+02:00",
            "2026-08-27T18:04:09-00:00",
            "2026-08-27T18:04:09.123456789Z",
            "2024-02-29T00:00:00Z",
        ] {
            assert!(Timestamp::parse(ok).is_ok(), "{ok}");
        }
        let a = Timestamp::parse("2026-08-27T20:04:09+02:00").unwrap();
        let b = Timestamp::parse("2026-08-27T18:04:09Z").unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn refuses_near_misses() {
        for bad in [
            "2026-08-27 18:04:09Z",
            "2026-08-27T18:04Z",
            "2026-08-27T18:04:09",
            "2026-08-27T18:04:09+0000",
            " 2026-08-27T18:04:09Z",
            "2026-08-27T18:04:09Z ",
            "2026-08-27T23:59:60Z",
            "2026-08-27T18:04:09.1234567891Z",
            "2026-08-27T18:04:09.Z",
            "2025-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-08-27T24:00:00Z",
            "2026-08-27T18:04:09+24:00",
            "2026-08-27X18:04:09Z",
            "+2026-08-27T18:04:09Z",
            "2026-08-27T18:04:09Z+01:00",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "accepted {bad}");
        }
    }
}
