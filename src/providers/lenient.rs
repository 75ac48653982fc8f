//! Reading what providers send, tolerantly.
//!
//! The payloads are typed structures (`#[derive(Deserialize)]`), read straight from the
//! event's text or the body's value, borrowing its strings where they have no escapes.
//! Their fields are read with these functions (`#[serde(deserialize_with = "…")]`, the
//! structure `#[serde(default)]` for fields left out), so that a field of an unexpected
//! JSON type reads as absent instead of failing the payload: a compatible server that
//! sends `"content": [...]` where a string belongs, or `"index": "0"`, loses that field,
//! not the turn. Unknown fields are skipped (no structure denies them), and a `type` the
//! crate does not know reads as its enum's `Other` (`#[serde(other)]`).
//!
//! Only malformed JSON fails (and a key given twice in one object, which a derived
//! structure refuses).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{DeserializeOwned, IgnoredAny, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// What a visitor does with each JSON type: `map` and `seq` read an object or an array,
/// everything else becomes `Default` (after the value is skipped).
trait Lenient<'de>: Sized {
    type Value: Default;

    fn string(_text: Cow<'de, str>) -> Self::Value {
        Self::Value::default()
    }
    fn integer(_number: Option<i64>) -> Self::Value {
        Self::Value::default()
    }
    fn boolean(_value: bool) -> Self::Value {
        Self::Value::default()
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::Value::default())
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::Value::default())
    }
}

/// A visitor over any JSON value, delegating to a [`Lenient`] reading.
struct Any<L>(PhantomData<L>);

impl<'de, L: Lenient<'de>> Visitor<'de> for Any<L> {
    type Value = L::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(L::string(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(L::string(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(L::string(Cow::Owned(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(L::integer(Some(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(L::integer(i64::try_from(v).ok()))
    }
    fn visit_f64<E>(self, _v: f64) -> Result<Self::Value, E> {
        Ok(L::integer(None))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(L::boolean(v))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Self::Value::default())
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Self::Value::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        L::map(map)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        L::seq(seq)
    }
}

fn read<'de, L: Lenient<'de>, D: Deserializer<'de>>(d: D) -> Result<L::Value, D::Error> {
    d.deserialize_any(Any::<L>(PhantomData))
}

/// A string; anything else reads as absent.
pub(crate) fn text<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    struct Text;
    impl<'de> Lenient<'de> for Text {
        type Value = Option<Cow<'de, str>>;
        fn string(text: Cow<'de, str>) -> Self::Value {
            Some(text)
        }
    }
    read::<Text, D>(d)
}

/// A string, owned (for payloads read from a buffered value); anything else reads as
/// absent.
pub(crate) fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d).map(|text| text.map(Cow::into_owned))
}

/// An integer that fits an `i64`; anything else reads as absent.
pub(crate) fn int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    struct Int;
    impl Lenient<'_> for Int {
        type Value = Option<i64>;
        fn integer(number: Option<i64>) -> Self::Value {
            number
        }
    }
    read::<Int, D>(d)
}

/// `true` only for JSON `true`.
pub(crate) fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    struct Flag;
    impl Lenient<'_> for Flag {
        type Value = bool;
        fn boolean(value: bool) -> Self::Value {
            value
        }
    }
    read::<Flag, D>(d)
}

/// Whether the field is there, whatever its value (`null` included).
pub(crate) fn seen<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(d).map(|_| true)
}

/// A string naming one of `T`'s variants (an unknown name is `T`'s `#[serde(other)]`
/// variant); anything else reads as absent.
pub(crate) fn tag<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(text(d)?.and_then(|name| variant(&name)))
}

/// An object read as `T`; anything else reads as `T::default()`.
pub(crate) fn object<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    struct Object<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de> + Default> Lenient<'de> for Object<T> {
        type Value = T;
        fn map<A: MapAccess<'de>>(map: A) -> Result<T, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map))
        }
    }
    read::<Object<T>, D>(d)
}

/// A field that is there, whatever its value, as [`object`] reads it; absent only when
/// it is left out.
pub(crate) fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    object(d).map(Some)
}

/// A field that is there and not `null`, as [`object`] reads it (an error object: a
/// string there is an error without a message).
pub(crate) fn non_null<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    struct NonNull<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de> + Default> Lenient<'de> for NonNull<T> {
        type Value = Option<T>;
        fn string(_text: Cow<'de, str>) -> Self::Value {
            Some(T::default())
        }
        fn integer(_number: Option<i64>) -> Self::Value {
            Some(T::default())
        }
        fn boolean(_value: bool) -> Self::Value {
            Some(T::default())
        }
        fn map<A: MapAccess<'de>>(map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map)).map(Some)
        }
        fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Some(T::default()))
        }
    }
    read::<NonNull<T>, D>(d)
}

/// An array, each element read as [`object`] reads it (an element that is not an object
/// is `T::default()`, in its place); anything else reads as empty.
pub(crate) fn list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    struct Element<T>(T);
    impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Element<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            object(d).map(Element)
        }
    }
    struct List<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de> + Default> Lenient<'de> for List<T> {
        type Value = Vec<T>;
        fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
            while let Some(Element(item)) = seq.next_element::<Element<T>>()? {
                items.push(item);
            }
            Ok(items)
        }
    }
    read::<List<T>, D>(d)
}

/// An array of tagged items (`{"type": …, …}`), each read as `T` when it can be and
/// left out when it cannot (no `type`, or not an object); anything but an array reads as
/// absent. Each element is read into a [`Value`] first, so this is for what comes once
/// per item, not once per token.
pub(crate) fn tagged_list<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    struct Tagged<T>(PhantomData<T>);
    impl<'de, T: DeserializeOwned> Lenient<'de> for Tagged<T> {
        type Value = Option<Vec<T>>;
        fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self::Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element::<Value>()? {
                items.extend(T::deserialize(item).ok());
            }
            Ok(Some(items))
        }
    }
    read::<Tagged<T>, D>(d)
}

/// One tagged item, as [`tagged_list`] reads each of its elements (absent when it cannot
/// be read as `T`).
pub(crate) fn tagged<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(T::deserialize(Value::deserialize(d)?).ok())
}

/// Any value, `null` included (absent only when left out).
pub(crate) fn json<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Call arguments as JSON text: a string as it is (OpenAI sends a string), any other
/// value serialised (a server that sends an object); `null` reads as absent.
pub(crate) fn arguments<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    struct Arguments;
    impl<'de> Visitor<'de> for Arguments {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("call arguments")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_owned())))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v)))
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(Value::from(v).to_string())))
        }
        fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let value = Value::deserialize(MapAccessDeserializer::new(map))?;
            Ok(Some(Cow::Owned(value.to_string())))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            let value = Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
            Ok(Some(Cow::Owned(value.to_string())))
        }
    }
    d.deserialize_any(Arguments)
}

/// The variant of `T` (a unit enum with an `Other`) that `name` names.
pub(crate) fn variant<T: DeserializeOwned>(name: &str) -> Option<T> {
    let name: StrDeserializer<'_, serde::de::value::Error> = name.into_deserializer();
    T::deserialize(name).ok()
}

/// [`arguments`], owned.
pub(crate) fn arguments_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    arguments(d).map(|text| text.map(Cow::into_owned))
}

/// A payload read from JSON text: an object as `T`, any other JSON value as
/// `T::default()`. Malformed JSON is an error.
pub(crate) fn from_str<'a, T: Deserialize<'a> + Default>(text: &'a str) -> serde_json::Result<T> {
    struct Payload<T>(T);
    impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Payload<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            object(d).map(Payload)
        }
    }
    serde_json::from_str::<Payload<T>>(text).map(|Payload(payload)| payload)
}

/// A payload read from a JSON value, as [`from_str`] reads it.
pub(crate) fn from_value<'a, T: Deserialize<'a> + Default>(value: &'a Value) -> serde_json::Result<T> {
    object(value)
}

/// A usage object: kept as it is when it is a JSON object, `None` otherwise (`null`, a
/// server's placeholder of another type).
pub(crate) fn usage<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(Some(Value::deserialize(d)?).filter(Value::is_object))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        TextDelta,
        #[default]
        #[serde(other)]
        Other,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Inner<'a> {
        #[serde(borrow, deserialize_with = "text")]
        name: Option<Cow<'a, str>>,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Payload<'a> {
        #[serde(borrow, deserialize_with = "text")]
        text: Option<Cow<'a, str>>,
        #[serde(deserialize_with = "int")]
        index: Option<i64>,
        #[serde(deserialize_with = "flag")]
        thought: bool,
        #[serde(rename = "type", deserialize_with = "tag")]
        kind: Option<Kind>,
        #[serde(borrow, deserialize_with = "object")]
        inner: Inner<'a>,
        #[serde(borrow, deserialize_with = "list")]
        items: Vec<Inner<'a>>,
        #[serde(borrow, deserialize_with = "arguments")]
        arguments: Option<Cow<'a, str>>,
        #[serde(deserialize_with = "json")]
        input: Option<Value>,
        #[serde(deserialize_with = "seen")]
        feedback: bool,
    }

    #[test]
    fn fields_of_the_expected_type_are_read_and_strings_borrowed() {
        let text = r#"{"text": "hi", "index": 3, "thought": true, "type": "text_delta",
            "inner": {"name": "n"}, "items": [{"name": "a"}, 5, {"name": "b"}],
            "arguments": "{\"a\": 1}", "input": null, "feedback": null, "unknown": [1, {"x": 2}]}"#;
        let payload: Payload<'_> = from_str(text).unwrap();
        assert!(matches!(payload.text, Some(Cow::Borrowed("hi"))));
        assert_eq!(payload.index, Some(3));
        assert!(payload.thought);
        assert_eq!(payload.kind, Some(Kind::TextDelta));
        assert_eq!(payload.inner.name.as_deref(), Some("n"));
        let names: Vec<Option<&str>> = payload.items.iter().map(|i| i.name.as_deref()).collect();
        assert_eq!(names, [Some("a"), None, Some("b")], "an element that is not an object keeps its place");
        assert_eq!(payload.arguments.as_deref(), Some("{\"a\": 1}"));
        assert_eq!(payload.input, Some(Value::Null), "null is there");
        assert!(payload.feedback);
    }

    #[test]
    fn fields_of_another_type_read_as_absent() {
        let text = r#"{"text": ["x"], "index": "0", "thought": "yes", "type": 7, "inner": "s",
            "items": {"name": "a"}, "arguments": {"b": [1, 2.5]}}"#;
        let payload: Payload<'_> = from_str(text).unwrap();
        assert_eq!(payload.text, None);
        assert_eq!(payload.index, None);
        assert!(!payload.thought);
        assert_eq!(payload.kind, None);
        assert_eq!(payload.inner, Inner::default());
        assert!(payload.items.is_empty());
        assert_eq!(payload.arguments.as_deref(), Some(r#"{"b":[1,2.5]}"#), "an object is serialised");
        assert_eq!(payload.input, None, "left out");
        assert!(!payload.feedback);
        let unknown: Payload<'_> = from_str(r#"{"type": "new_kind", "index": 1.5}"#).unwrap();
        assert_eq!((unknown.kind, unknown.index), (Some(Kind::Other), None));
    }

    #[test]
    fn a_payload_that_is_not_an_object_is_empty_and_malformed_json_fails() {
        for text in ["[1, 2]", "\"text\"", "5", "null"] {
            assert_eq!(from_str::<Payload<'_>>(text).unwrap(), Payload::default(), "{text}");
        }
        assert!(from_str::<Payload<'_>>("{\"text\": ").is_err());
        assert!(from_str::<Payload<'_>>("{} x").is_err());
        let value = serde_json::json!({"text": "v", "index": 2});
        let payload: Payload<'_> = from_value(&value).unwrap();
        assert!(matches!(payload.text, Some(Cow::Borrowed("v"))), "borrowed from the value");
    }

    #[test]
    fn escaped_strings_are_owned() {
        let payload: Payload<'_> = from_str(r#"{"text": "a\"b"}"#).unwrap();
        assert!(matches!(payload.text, Some(Cow::Owned(ref s)) if s == "a\"b"));
    }
}
