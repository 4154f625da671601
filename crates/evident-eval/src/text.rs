//! Small text helpers that reproduce the peer's Python behaviour exactly: `str.strip()`
//! whitespace, `json.dumps` string escaping and `repr(float)`.

/// Python's `str.isspace()`: Rust's Unicode `White_Space` plus U+001C..U+001F, which
/// Python also counts (they are bidi class B/S). Parity needs the exact set: a value of
/// `"\u001f"` is empty evidence in the peer.
pub use evident_traces::is_py_space;

/// Python's `s.strip()`.
#[inline]
pub fn py_strip(s: &str) -> &str {
    // Fast path: most strings are ASCII with no surrounding space at all.
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (None, _) => return s,
        (Some(&f), Some(&l)) if f > b' ' && f < 0x7f && l > b' ' && l < 0x7f => return s,
        _ => {}
    }
    s.trim_matches(is_py_space)
}

/// Whether a string is empty after Python's `strip()`.
#[inline]
pub fn py_blank(s: &str) -> bool {
    py_strip(s).is_empty()
}

/// Writes `s` as a JSON string literal the way Python's `json.dumps` does:
/// `ensure_ascii` escapes everything outside ASCII as `\uXXXX` (lowercase hex,
/// surrogate pairs above U+FFFF).
pub fn write_json_str(out: &mut Vec<u8>, s: &str, ensure_ascii: bool) {
    out.push(b'"');
    if ensure_ascii && !s.is_ascii() {
        for c in s.chars() {
            if c.is_ascii() {
                push_escaped_ascii(out, c as u8);
            } else {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    push_u_escape(out, *unit as u32);
                }
            }
        }
        out.push(b'"');
        return;
    }
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        push_escaped_ascii(out, b);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[inline]
fn push_escaped_ascii(out: &mut Vec<u8>, b: u8) {
    let esc: &[u8] = match b {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        b'\n' => b"\\n",
        b'\r' => b"\\r",
        b'\t' => b"\\t",
        0x08 => b"\\b",
        0x0c => b"\\f",
        0..=0x1f => return push_u_escape(out, b as u32),
        _ => return out.push(b),
    };
    out.extend_from_slice(esc);
}

fn push_u_escape(out: &mut Vec<u8>, v: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((v >> shift) & 0xf) as usize]);
    }
}

/// Python's `repr(float)` (what `json.dumps` writes for a float): the shortest
/// round-trip digits, fixed notation when the decimal exponent is in `-4..16`,
/// otherwise `d.ddde+XX`. Returns `None` for NaN and infinities, which
/// `json.dumps(allow_nan=False)` refuses.
pub fn py_float_repr(x: f64) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    // `{:e}` gives the shortest round-trip digits: "1.2345e2", "-5e-7", "0e0".
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e')?;
    let exp: i32 = exp.parse().ok()?;
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(mantissa);
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push('0');
        }
        out.push_str(&a.to_string());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        // Values and their Python 3 `repr`.
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.875, "0.875"),
            (0.5714285714285714, "0.5714285714285714"),
            (100.0, "100.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (3.3333333333333335e-7, "3.3333333333333335e-07"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (123456.789, "123456.789"),
            (-2.5, "-2.5"),
        ];
        for (x, want) in cases {
            assert_eq!(py_float_repr(*x).as_deref(), Some(*want), "{x}");
        }
        assert_eq!(py_float_repr(f64::NAN), None);
        assert_eq!(py_float_repr(f64::INFINITY), None);
    }

    #[test]
    fn strip_uses_python_whitespace() {
        assert_eq!(py_strip("  a b \n"), "a b");
        assert_eq!(py_strip("\u{1f}x\u{a0}"), "x");
        assert!(py_blank("\u{2003}\u{1c}\t"));
        assert!(
            !py_blank("\u{200b}"),
            "zero-width space is not whitespace in Python"
        );
        assert_eq!(py_strip("abc"), "abc");
    }

    #[test]
    fn escapes_like_json_dumps() {
        let mut out = Vec::new();
        write_json_str(&mut out, "a\"\u{1}é😀\u{7f}", true);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"\\u0001\\u00e9\\ud83d\\ude00\u{7f}\""
        );
        let mut out = Vec::new();
        write_json_str(&mut out, "é\t", false);
        assert_eq!(String::from_utf8(out).unwrap(), "\"é\\t\"");
    }
}
