//! Strict JSON: `serde_json::Value` keeps the last of two equal keys silently; a trace
//! with `"success": false, "success": true` must not be read either way, so documents
//! are first walked by a visitor that rejects duplicate keys and names their JSON path.
//! One copy for every reader and for evident-eval (whose `pyjson::parse_strict` is this).

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Parses JSON text strictly: valid UTF-8, no duplicate keys at any depth.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    DupCheck {
        parent: None,
        seg: Seg::Root,
    }
    .deserialize(&mut de)?;
    serde_json::from_slice(bytes)
}

/// One step of the JSON path, kept borrowed: the path text is built only for an error
/// (building it for every value cost more than the rest of the check).
enum Seg<'p> {
    Root,
    Index(usize),
    Key(&'p str),
}

struct DupCheck<'p> {
    parent: Option<&'p DupCheck<'p>>,
    seg: Seg<'p>,
}

impl DupCheck<'_> {
    /// `$`, `$.a.b[2]`, as before.
    fn path(&self) -> String {
        let mut segs = Vec::new();
        let mut cur = Some(self);
        while let Some(c) = cur {
            segs.push(&c.seg);
            cur = c.parent;
        }
        let mut out = String::new();
        for s in segs.into_iter().rev() {
            match s {
                Seg::Root => out.push('$'),
                Seg::Index(i) => out.push_str(&format!("[{i}]")),
                Seg::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
            }
        }
        out
    }
}

/// A map key, borrowed from the input when it has no escapes.
struct BorrowedKey<'de>(std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for BorrowedKey<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BorrowedKey<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(BorrowedKey(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(BorrowedKey(std::borrow::Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> DeserializeSeed<'de> for DupCheck<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DupCheck<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(DupCheck {
                parent: Some(&self),
                seg: Seg::Index(i),
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Small objects are searched linearly; large ones get a set.
        let mut seen: Vec<std::borrow::Cow<'de, str>> = Vec::new();
        let mut big: Option<HashSet<std::borrow::Cow<'de, str>>> = None;
        while let Some(BorrowedKey(k)) = map.next_key::<BorrowedKey<'de>>()? {
            // serde_json's arbitrary_precision carries numbers as a one-key map.
            if k == "$serde_json::private::Number" {
                map.next_value::<de::IgnoredAny>()?;
                continue;
            }
            let repeated = match &mut big {
                Some(set) => !set.insert(k.clone()),
                None if seen.contains(&k) => true,
                None => {
                    seen.push(k.clone());
                    if seen.len() > 32 {
                        big = Some(seen.drain(..).collect());
                    }
                    false
                }
            };
            if repeated {
                return Err(de::Error::custom(format_args!(
                    "duplicate key '{k}' at {}",
                    self.path()
                )));
            }
            map.next_value_seed(DupCheck {
                parent: Some(&self),
                seg: Seg::Key(&k),
            })?;
        }
        Ok(())
    }
}
