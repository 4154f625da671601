//! One case line: the validated [`Case`] and how it is read.
//!
//! [`parse_case`] is the fast path (the hand-written reader in `fast.rs`). The serde
//! visitors here are the reference it is tested against ([`parse_case_serde_json`]):
//! they borrow strings from the line and never fail on a wrong
//! *type* (only on bad JSON syntax or a duplicate key), so `validate` can report the
//! peer's message for the first bad field, in the peer's order, instead of a generic
//! "invalid type" from serde.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::text::{py_blank, py_strip};

/// A validated case, borrowing from the input line where it can.
///
/// Evidence fields and evidence entries of all requirements and events live in two
/// flat vectors (each requirement and event holds its range), so a case costs four
/// allocations instead of one per requirement and per event.
#[derive(Debug, Clone, Default)]
pub struct Case<'a> {
    /// `case_id` after Python's `strip()`.
    pub case_id: Cow<'a, str>,
    /// Whether the agent said it was done: the claim the events are checked against.
    pub completion_claimed: bool,
    /// What the task needs, in the line's order (the order of results and reasons).
    pub requirements: Vec<Requirement<'a>>,
    /// What the agent's tools did, in the order they ran (later events decide).
    pub events: Vec<Event<'a>>,
    /// Every requirement's evidence fields, each after `strip()`.
    pub fields: Vec<Cow<'a, str>>,
    /// Every event's evidence: keys (exact, not stripped) and whether each value counts
    /// as present.
    pub evidence: Vec<(Cow<'a, str>, bool)>,
    /// `requirements` is the object form: `requirements` above is empty and the line
    /// is evaluated by [`crate::constrain`] (the case-level members and the events'
    /// shape are checked here all the same).
    pub object_form: bool,
}

/// What a task needs: an action and the evidence fields its latest event must carry.
#[derive(Debug, Clone)]
pub struct Requirement<'a> {
    /// After `strip()`.
    pub action: Cow<'a, str>,
    /// This requirement's range in [`Case::fields`].
    pub fields: (u32, u32),
}

/// One recorded event; its index in `events` is its order.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    /// After `strip()`.
    pub action: Cow<'a, str>,
    /// The tool reported success (a failure as the latest event fails the requirement).
    pub success: bool,
    /// This event's range in [`Case::evidence`].
    pub evidence: (u32, u32),
}

impl<'a> Case<'a> {
    /// The evidence fields of a requirement.
    #[inline]
    pub fn fields_of(&self, r: &Requirement<'_>) -> &[Cow<'a, str>] {
        self.fields
            .get(r.fields.0 as usize..r.fields.1 as usize)
            .unwrap_or_default()
    }

    /// The evidence entries of an event.
    #[inline]
    pub fn evidence_of(&self, e: &Event<'_>) -> &[(Cow<'a, str>, bool)] {
        self.evidence
            .get(e.evidence.0 as usize..e.evidence.1 as usize)
            .unwrap_or_default()
    }

    /// Whether `field` is present in the event with a value that counts (the peer's
    /// `_has_evidence_value`).
    #[inline]
    pub fn has(&self, e: &Event<'_>, field: &str) -> bool {
        self.evidence_of(e).iter().any(|(k, v)| *v && k == field)
    }
}

/// The flat vectors' indices are u32; a line is far below 4 GiB.
#[inline]
pub(crate) fn idx(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The JSON kind of a value that had the wrong type, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Null => "null",
            Kind::Bool => "a boolean",
            Kind::Number => "a number",
            Kind::String => "a string",
            Kind::Array => "an array",
            Kind::Object => "an object",
        })
    }
}

// --- lenient leaf types -----------------------------------------------------------

/// A string, or the kind of whatever else was there.
#[derive(Debug)]
pub(crate) enum LStr<'a> {
    Str(Cow<'a, str>),
    Other(Kind),
}

/// A boolean, or the kind of whatever else was there.
#[derive(Debug)]
pub(crate) enum LBool {
    Bool(bool),
    Other(Kind),
}

/// A list, or the kind of whatever else was there.
#[derive(Debug)]
pub(crate) enum LList<T> {
    List(Vec<T>),
    Other(Kind),
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_key::<IgnoredAny>()?.is_some() {
        map.next_value::<IgnoredAny>()?;
    }
    Ok(())
}

fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Generates the `visit_*` methods that map a JSON kind to `$ctor(Kind::..)`.
macro_rules! lenient_rest {
    ($ctor:path; $($which:ident),*) => {
        $( lenient_rest!(@one $ctor; $which); )*
    };
    (@one $ctor:path; bool) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok($ctor(Kind::Bool)) }
    };
    (@one $ctor:path; num) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> { Ok($ctor(Kind::Number)) }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> { Ok($ctor(Kind::Number)) }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> { Ok($ctor(Kind::Number)) }
    };
    (@one $ctor:path; null) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> { Ok($ctor(Kind::Null)) }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> { Ok($ctor(Kind::Null)) }
    };
    (@one $ctor:path; str) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> { Ok($ctor(Kind::String)) }
    };
    (@one $ctor:path; seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            skip_seq(seq)?;
            Ok($ctor(Kind::Array))
        }
    };
    (@one $ctor:path; map) => {
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            skip_map(map)?;
            Ok($ctor(Kind::Object))
        }
    };
}

impl<'de> Deserialize<'de> for LStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LStr::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LStr::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(LStr::Str(Cow::Owned(v)))
            }
            lenient_rest!(LStr::Other; bool, num, null, seq, map);
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for LBool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LBool;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(LBool::Bool(v))
            }
            lenient_rest!(LBool::Other; num, null, str, seq, map);
        }
        d.deserialize_any(V)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = LList<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(4).min(64));
                while let Some(x) = seq.next_element()? {
                    v.push(x);
                }
                Ok(LList::List(v))
            }
            lenient_rest!(LList::Other; bool, num, null, str, map);
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A map key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Whether an evidence value counts as present: `null` no; a string only if non-empty
/// after `strip()`; an array or object only if non-empty; anything else yes.
struct Presence(bool);

impl<'de> Deserialize<'de> for Presence {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Presence;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Presence(false))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Presence(false))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Presence(true))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Presence(true))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Presence(true))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Presence(true))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Presence(!py_blank(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let any = seq.next_element::<IgnoredAny>()?.is_some();
                if any {
                    skip_seq(seq)?;
                }
                Ok(Presence(any))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let any = match map.next_key::<IgnoredAny>()? {
                    Some(_) => {
                        map.next_value::<IgnoredAny>()?;
                        true
                    }
                    None => false,
                };
                skip_map(map)?;
                Ok(Presence(any))
            }
        }
        d.deserialize_any(V)
    }
}

/// `evidence`: an object of key → presence, or the kind of whatever else was there.
#[derive(Debug)]
pub(crate) enum LEvidence<'a> {
    Obj(Vec<(Cow<'a, str>, bool)>),
    Other(Kind),
}

impl<'de> Deserialize<'de> for LEvidence<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LEvidence<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut v: Vec<(Cow<'de, str>, bool)> = Vec::new();
                while let Some(Key(k)) = map.next_key()? {
                    let Presence(p) = map.next_value()?;
                    if v.iter().any(|(seen, _)| *seen == k) {
                        return Err(de::Error::custom(format_args!(
                            "duplicate key '{k}' in 'evidence'"
                        )));
                    }
                    v.push((k, p));
                }
                Ok(LEvidence::Obj(v))
            }
            lenient_rest!(LEvidence::Other; bool, num, null, str, seq);
        }
        d.deserialize_any(V)
    }
}

/// Generates an object visitor with one `Option<T>` slot per known key; unknown keys
/// are skipped, a repeated known key is an error, a non-object is `Other(kind)`.
macro_rules! lenient_object {
    ($name:ident<$lt:lifetime> { $($field:ident : $ty:ty = $key:literal),* $(,)? }) => {
        #[derive(Debug, Default)]
        pub(crate) struct $name<$lt> {
            $(pub(crate) $field: Option<$ty>,)*
        }

        impl<'de> $name<'de> {
            fn visit<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
                let mut out = Self::default();
                while let Some(Key(k)) = map.next_key()? {
                    match &*k {
                        $($key => {
                            if out.$field.is_some() {
                                return Err(de::Error::custom(concat!("duplicate key '", $key, "'")));
                            }
                            out.$field = Some(map.next_value()?);
                        })*
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
    };
}

lenient_object!(RawRequirement<'a> {
    action: LStr<'a> = "action",
    evidence_fields: LList<LStr<'a>> = "evidence_fields",
    arguments: IgnoredAny = "arguments",
    evidence: IgnoredAny = "evidence",
    count: IgnoredAny = "count",
});

lenient_object!(RawEvent<'a> {
    action: LStr<'a> = "action",
    success: LBool = "success",
    evidence: LEvidence<'a> = "evidence",
});

lenient_object!(RawCase<'a> {
    case_id: LStr<'a> = "case_id",
    task: LStr<'a> = "task",
    completion_claimed: LBool = "completion_claimed",
    requirements: LList<LObj<RawRequirement<'a>>> = "requirements",
    events: LList<LObj<RawEvent<'a>>> = "events",
});

/// An object parsed into `T`, or the kind of whatever else was there.
#[derive(Debug)]
pub(crate) enum LObj<T> {
    Obj(T),
    Other(Kind),
}

macro_rules! lobj_impl {
    ($t:ident) => {
        impl<'de> Deserialize<'de> for LObj<$t<'de>> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = LObj<$t<'de>>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("any JSON value")
                    }
                    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                        Ok(LObj::Obj($t::visit(map)?))
                    }
                    lenient_rest!(LObj::Other; bool, num, null, str, seq);
                }
                d.deserialize_any(V)
            }
        }
    };
}

lobj_impl!(RawRequirement);
lobj_impl!(RawEvent);
lobj_impl!(RawCase);

evident_format::message_error! {
    /// Why a case line (or an object-form requirements document) is rejected: the peer's
    /// validation message, without the `PATH:LINE: ` prefix. A leaf: the message is all.
    pub struct CaseError;
}

/// Parses one line of case JSONL. Errors are messages without the `PATH:LINE: ` prefix.
pub fn parse_case(line: &[u8]) -> Result<Case<'_>, CaseError> {
    crate::fast::read_case(line)
}

/// Parses with serde_json through the serde visitors; the reference the fast reader
/// is tested against (same answers, same validation messages).
pub fn parse_case_serde_json(line: &[u8]) -> Result<Case<'_>, CaseError> {
    let raw: LObj<RawCase<'_>> =
        serde_json::from_slice(line).map_err(|e| format!("invalid JSON: {e}"))?;
    validate(raw)
}

/// A non-string where the peer would call `str()`: evident rejects it rather than
/// turning `null` into the text "None".
pub(crate) fn string_field<'a>(
    v: Option<LStr<'a>>,
    what: &str,
) -> Result<Option<Cow<'a, str>>, CaseError> {
    match v {
        None => Ok(None),
        Some(LStr::Str(s)) => Ok(Some(strip_cow(s))),
        Some(LStr::Other(k)) => Err(format!("{what} must be a string, not {k}.").into()),
    }
}

pub(crate) fn strip_cow(s: Cow<'_, str>) -> Cow<'_, str> {
    match s {
        Cow::Borrowed(b) => Cow::Borrowed(py_strip(b)),
        Cow::Owned(o) => {
            let t = py_strip(&o);
            if t.len() == o.len() {
                Cow::Owned(o)
            } else {
                Cow::Owned(t.to_owned())
            }
        }
    }
}

/// Applies the peer's `Case.from_dict` checks in its order.
pub(crate) fn validate(raw: LObj<RawCase<'_>>) -> Result<Case<'_>, CaseError> {
    let raw = match raw {
        LObj::Obj(r) => r,
        LObj::Other(k) => return Err(format!("Each case must be an object, not {k}.").into()),
    };
    let case_id = string_field(raw.case_id, "'case_id'")?.unwrap_or_default();
    let task = string_field(raw.task, "'task'")?.unwrap_or_default();
    if case_id.is_empty() || task.is_empty() {
        return Err("A case requires non-empty 'case_id' and 'task'.".into());
    }
    let completion_claimed = match raw.completion_claimed {
        Some(LBool::Bool(b)) => b,
        Some(LBool::Other(k)) => {
            return Err(format!("'completion_claimed' must be boolean, not {k}.").into());
        }
        None => return Err("'completion_claimed' must be boolean (it is missing).".into()),
    };
    let mut object_form = false;
    let reqs = match raw.requirements {
        Some(LList::List(v)) if !v.is_empty() => v,
        Some(LList::Other(Kind::Object)) => {
            object_form = true;
            Vec::new()
        }
        Some(LList::Other(k)) => {
            return Err(format!("'requirements' must be a non-empty list, not {k}.").into());
        }
        _ => return Err("'requirements' must be a non-empty list.".into()),
    };
    let events_raw = match raw.events {
        None => Vec::new(),
        Some(LList::List(v)) => v,
        Some(LList::Other(k)) => return Err(format!("'events' must be a list, not {k}.").into()),
    };
    let mut requirements = Vec::with_capacity(reqs.len());
    let mut all_fields = Vec::new();
    for (i, r) in reqs.into_iter().enumerate() {
        let r = match r {
            LObj::Obj(r) => r,
            LObj::Other(_) => {
                return Err(
                    format!("requirements[{i}]: Each requirement must be an object.").into(),
                );
            }
        };
        for (present, key) in [
            (r.arguments.is_some(), "arguments"),
            (r.evidence.is_some(), "evidence"),
            (r.count.is_some(), "count"),
        ] {
            if present {
                return Err(object_form_only(i, key).into());
            }
        }
        let action = string_field(r.action, "'action'")
            .map_err(|m| format!("requirements[{i}]: {m}"))?
            .unwrap_or_default();
        if action.is_empty() {
            return Err(format!(
                "requirements[{i}]: Each requirement requires a non-empty 'action'."
            )
            .into());
        }
        let start = idx(all_fields.len());
        match r.evidence_fields {
            None => {}
            Some(LList::List(fields)) => {
                for f in fields {
                    match f {
                        LStr::Str(s) if !py_blank(&s) => all_fields.push(strip_cow(s)),
                        _ => {
                            return Err(format!(
                                "requirements[{i}]: 'evidence_fields' must be a list of non-empty strings."
                            ).into());
                        }
                    }
                }
            }
            Some(LList::Other(k)) => {
                return Err(format!(
                    "requirements[{i}]: 'evidence_fields' must be a list of non-empty strings, not {k}."
                ).into());
            }
        }
        requirements.push(Requirement {
            action,
            fields: (start, idx(all_fields.len())),
        });
    }
    let mut events = Vec::with_capacity(events_raw.len());
    let mut all_evidence = Vec::new();
    for (i, e) in events_raw.into_iter().enumerate() {
        let e = match e {
            LObj::Obj(e) => e,
            LObj::Other(_) => {
                return Err(format!("events[{i}]: Each event must be an object.").into());
            }
        };
        let action = string_field(e.action, "'action'")
            .map_err(|m| format!("events[{i}]: {m}"))?
            .unwrap_or_default();
        if action.is_empty() {
            return Err(format!("events[{i}]: Each event requires a non-empty 'action'.").into());
        }
        let success = match e.success {
            Some(LBool::Bool(b)) => b,
            Some(LBool::Other(k)) => {
                return Err(format!(
                    "events[{i}]: Each event requires boolean 'success', not {k}."
                )
                .into());
            }
            None => {
                return Err(format!("events[{i}]: Each event requires boolean 'success'.").into());
            }
        };
        let start = idx(all_evidence.len());
        match e.evidence {
            None => {}
            Some(LEvidence::Obj(v)) => all_evidence.extend(v),
            Some(LEvidence::Other(k)) => {
                return Err(format!("events[{i}]: 'evidence' must be an object, not {k}.").into());
            }
        }
        events.push(Event {
            action,
            success,
            evidence: (start, idx(all_evidence.len())),
        });
    }
    Ok(Case {
        case_id,
        completion_claimed,
        requirements,
        events,
        fields: all_fields,
        evidence: all_evidence,
        object_form,
    })
}

/// A key of the object form written in a list-form requirement: seed 001 would ignore
/// it, so a constraint the owner wrote would silently not be checked.
pub(crate) fn object_form_only(i: usize, key: &str) -> String {
    format!(
        "requirements[{i}]: '{key}' is a key of the object form of requirements; in the list form it would be ignored; hint: write {{\"requirements\": [...], \"writes\": [...]}}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(line: &str) -> String {
        parse_case(line.as_bytes()).unwrap_err().0
    }

    #[test]
    fn parses_and_strips() {
        let c = parse_case(
            br#"{"case_id":" a ","task":"t","completion_claimed":true,"x":[1,{"y":2}],
            "requirements":[{"action":" send ","evidence_fields":[" id "]}],
            "events":[{"action":"send","success":true,"evidence":{"id":" ","n":0,"l":[],"o":{"k":null},"z":null}}]}"#,
        )
        .unwrap();
        assert_eq!(c.case_id, "a");
        assert_eq!(c.requirements[0].action, "send");
        assert_eq!(c.fields_of(&c.requirements[0])[0], "id");
        let ev = c.evidence_of(&c.events[0]);
        assert_eq!(
            ev.iter().map(|(k, v)| (k.as_ref(), *v)).collect::<Vec<_>>(),
            vec![
                ("id", false),
                ("n", true),
                ("l", false),
                ("o", true),
                ("z", false)
            ]
        );
    }

    #[test]
    fn rejects_in_peer_order_with_peer_messages() {
        assert_eq!(err("[]"), "Each case must be an object, not an array.");
        assert_eq!(
            err(r#"{"case_id":"","task":"t"}"#),
            "A case requires non-empty 'case_id' and 'task'."
        );
        assert_eq!(
            err(r#"{"case_id":null,"task":"t"}"#),
            "'case_id' must be a string, not null."
        );
        assert_eq!(
            err(r#"{"case_id":"a","task":"t","completion_claimed":"yes"}"#),
            "'completion_claimed' must be boolean, not a string."
        );
        assert_eq!(
            err(r#"{"case_id":"a","task":"t","completion_claimed":true,"requirements":[]}"#),
            "'requirements' must be a non-empty list."
        );
        assert_eq!(
            err(
                r#"{"case_id":"a","task":"t","completion_claimed":true,"requirements":[{"action":"x"}],"events":null}"#
            ),
            "'events' must be a list, not null."
        );
        assert_eq!(
            err(
                r#"{"case_id":"a","task":"t","completion_claimed":true,"requirements":[{"action":"x","evidence_fields":["a",1]}]}"#
            ),
            "requirements[0]: 'evidence_fields' must be a list of non-empty strings."
        );
        assert_eq!(
            err(
                r#"{"case_id":"a","task":"t","completion_claimed":true,"requirements":[{"action":"x"}],"events":[{"action":"x","success":true,"evidence":null}]}"#
            ),
            "events[0]: 'evidence' must be an object, not null."
        );
        assert_eq!(
            err(
                r#"{"case_id":"a","task":"t","completion_claimed":true,"requirements":[{"action":"x"}],"events":[{"action":"x","success":1}]}"#
            ),
            "events[0]: Each event requires boolean 'success', not a number."
        );
        assert!(err(r#"{"case_id":"a","case_id":"b"}"#).contains("duplicate key 'case_id'"));
        assert!(err(r#"{"case_id":"a","task":"t","completion_claimed":true,"requirements":[{"action":"x"}],"events":[{"action":"x","success":true,"evidence":{"k":1,"k":2}}]}"#).contains("duplicate key 'k' in 'evidence'"));
        assert!(err("{bad}").starts_with("invalid JSON"));
        assert!(err(r#"{"case_id":"a"} x"#).starts_with("invalid JSON"));
    }

    #[test]
    fn rejects_invalid_utf8() {
        let line = b"{\"case_id\":\"\xff\",\"task\":\"t\"}";
        assert!(parse_case(line).unwrap_err().0.starts_with("invalid JSON"));
    }

    #[test]
    fn fast_reader_and_serde_json_agree() {
        let line = br#"{"case_id":"a\u00e9","task":"t","completion_claimed":false,"requirements":[{"action":"x","evidence_fields":["k"]}],"events":[{"action":"x","success":true,"evidence":{"k":"\t v"}}]}"#;
        let a = parse_case(line).unwrap();
        let b = parse_case_serde_json(line).unwrap();
        assert_eq!(a.case_id, b.case_id);
        assert_eq!(a.case_id, "aé");
        assert_eq!(a.evidence_of(&a.events[0]), b.evidence_of(&b.events[0]));
    }
}
