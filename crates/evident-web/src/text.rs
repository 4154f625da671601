//! Making what the agent (or a system it touched) wrote fit to show: control
//! characters and bidirectional overrides made visible, long text cut, times and
//! durations written for people. HTML escaping itself is the templates' (askama escapes
//! every `{{ }}`); nothing here produces markup.

use serde_json::Value;
use time::OffsetDateTime;

/// The most characters of one agent-written field shown in a list row.
pub const SHORT: usize = 120;
/// The most characters of one agent-written field shown on a decision page.
pub const LONG: usize = 4000;
/// The most characters of one JSON value (an expectation, an observation) shown.
pub const VALUE: usize = 2000;

/// One line of agent-written text: control characters and bidi overrides shown as
/// `\u{..}` (the terminal report's rule), and so are the characters a browser draws
/// as nothing or that reorder their neighbours ([`invisible`]), cut to `max`
/// characters with a note saying how much was left out.
pub fn line(s: &str, max: usize) -> String {
    cut(&visible(&evident_pipeline::render::shown(s)), max)
}

/// Characters a page would draw as nothing (zero-width spaces and joiners, word
/// joiner, BOM, soft hyphen, fillers, tags, invisible operators) or that move the text
/// around them (LRM, RLM, ALM), or that break a line (U+2028/2029). Inside an id they
/// make two different strings look the same (`billing\u{200b}-4472`), so the page
/// shows them as `\u{..}`, as the terminal shows controls.
pub fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

fn visible(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(invisible) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if invisible(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Agent-written text that may run over several lines: each line as [`line`], the
/// line breaks kept (the page shows them with `white-space: pre-wrap`).
pub fn lines(s: &str, max: usize) -> String {
    let kept: Vec<String> = s
        .split('\n')
        .map(|l| {
            visible(&evident_pipeline::render::shown(
                l.strip_suffix('\r').unwrap_or(l),
            ))
            .into_owned()
        })
        .collect();
    cut(&kept.join("\n"), max)
}

/// A JSON value as compact JSON, shown as [`line`].
pub fn json(v: &Value, max: usize) -> String {
    line(&serde_json::to_string(v).unwrap_or_default(), max)
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((at, _)) => {
            let rest = s[at..].chars().count();
            format!("{}… ({rest} more characters not shown)", &s[..at])
        }
    }
}

/// `2026-08-27 18:04:05.123Z`: a stored or written time, to the millisecond, in UTC.
pub fn short_time(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// A stored record time (`YYYY-MM-DDTHH:MM:SS.ffffffZ`) as [`short_time`]; anything
/// else as written (cut).
pub fn stored_time(s: &str) -> String {
    match evident_format::Timestamp::parse(s) {
        Ok(t) => short_time(t.instant()),
        Err(_) => line(s, 40),
    }
}

/// A length of time for people: `0.052 s`, `4 min 12 s`, `97 d 17 h`.
pub fn duration(secs: f64) -> String {
    let s = secs.abs();
    if !s.is_finite() {
        return "a very long time".into();
    }
    if s < 1.0 {
        return format!("{:.3} s", s).replace(".000 s", " s");
    }
    if s < 60.0 {
        let t = format!("{s:.1}");
        return format!("{} s", t.strip_suffix(".0").unwrap_or(&t));
    }
    let whole = s as u64;
    let (d, h, m, sec) = (
        whole / 86_400,
        whole % 86_400 / 3600,
        whole % 3600 / 60,
        whole % 60,
    );
    match (d, h, m) {
        (0, 0, _) if sec == 0 => format!("{m} min"),
        (0, 0, _) => format!("{m} min {sec} s"),
        (0, _, 0) => format!("{h} h"),
        (0, _, _) => format!("{h} h {m} min"),
        (_, 0, _) => format!("{d} d"),
        _ => format!("{d} d {h} h"),
    }
}

/// Seconds from `a` to `b` (negative when `b` is earlier).
pub fn seconds_between(a: OffsetDateTime, b: OffsetDateTime) -> f64 {
    (b - a).as_seconds_f64()
}

/// `text` percent-encoded for a URL query value (RFC 3986 unreserved kept).
pub fn query_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_overrides_are_made_visible() {
        assert_eq!(line("a\u{1b}[2Jb", 100), "a\\u{1b}[2Jb");
        assert_eq!(line("abc\u{202e}fed", 100), "abc\\u{202e}fed");
        assert_eq!(lines("one\r\ntwo\u{7}", 100), "one\ntwo\\u{7}");
    }

    #[test]
    fn characters_drawn_as_nothing_are_made_visible() {
        // The attack: each of these inside a task id reads as `billing-4472`.
        for c in [
            '\u{200b}',
            '\u{200c}',
            '\u{200d}',
            '\u{2060}',
            '\u{feff}',
            '\u{ad}',
            '\u{200e}',
            '\u{200f}',
            '\u{61c}',
            '\u{2028}',
            '\u{2029}',
            '\u{3164}',
            '\u{180e}',
            '\u{e0041}',
            '\u{34f}',
            '\u{fe0f}',
        ] {
            let shown = line(&format!("billing{c}-4472"), 100);
            assert_eq!(shown, format!("billing\\u{{{:x}}}-4472", u32::from(c)));
            assert!(!lines(&format!("a{c}\nb"), 100).contains(c));
        }
        // Its honest twin: text in other scripts, accents, symbols and spaces stay as
        // written.
        for honest in [
            "billing-4472",
            "Müller straße",
            "日本語のタスク",
            "שלום עולם",
            "ZIP ✓ 94107",
            "a\u{a0}b",
        ] {
            assert_eq!(line(honest, 100), honest);
        }
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary_and_says_so() {
        let s = "é".repeat(10);
        assert_eq!(cut(&s, 4), "éééé… (6 more characters not shown)");
        assert_eq!(cut("abc", 3), "abc");
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration(0.052), "0.052 s");
        assert_eq!(duration(7.0), "7 s");
        assert_eq!(duration(252.4), "4 min 12 s");
        assert_eq!(duration(3.0 * 3600.0 + 120.0), "3 h 2 min");
        assert_eq!(duration(300.0), "5 min");
        assert_eq!(duration(7200.0), "2 h");
        assert_eq!(duration(86_400.0 * 3.0), "3 d");
        assert_eq!(duration(8_272_351.78), "95 d 17 h");
        assert_eq!(duration(f64::INFINITY), "a very long time");
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(query_value("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert_eq!(query_value("billing-4471"), "billing-4471");
    }
}
