//! The ledger's canonical claim: [`evident_sign::canonical_json`] of a claim with its
//! secrets removed, written piece by piece so a large claim is never one value.

use evident_sign::canon::{canonical_json, utf16_cmp, write_string};

/// [`canonical_json`] of the document `text` with secrets removed
/// ([`crate::redact_in_place`]), written piece by piece: containers larger than
/// [`evident_format::json::SPLIT`] are split into members and items, and only the
/// smaller parts are parsed into values, so a large claim is never held as one value.
/// Equal to redacting the whole value and then writing it (tested).
pub fn canonical_redacted(text: &evident_format::JsonText) -> String {
    let mut out = String::with_capacity(text.as_str().len());
    write_redacted(&mut out, text.as_str());
    out
}

fn write_redacted(out: &mut String, text: &str) {
    use evident_format::json;
    let small = |out: &mut String, text: &str| {
        let mut v = json::value_of(text);
        crate::redact::redact_in_place(&mut v);
        out.push_str(&canonical_json(&v));
    };
    if text.len() <= json::SPLIT {
        return small(out, text);
    }
    match text.as_bytes().first() {
        Some(b'{') => {
            let mut members: Vec<_> = json::members(text).collect();
            members.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, &k);
                out.push(':');
                // A part this large is never null, a boolean or "": a secret key's
                // value is replaced whole, as redact_in_place does.
                if crate::redact::is_secret_key(&k) {
                    write_string(out, crate::redact::REDACTED);
                } else {
                    write_redacted(out, v);
                }
            }
            out.push('}');
        }
        Some(b'[') => {
            out.push('[');
            for (i, item) in json::elements(text).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_redacted(out, item);
            }
            out.push(']');
        }
        _ => small(out, text),
    }
}
