//! Parameter schemas rewritten for providers that take less than full JSON Schema.
//!
//! Tools describe their parameters in JSON Schema (schemars writes it). OpenAI takes it
//! as it is, and in strict mode only a stricter form; Gemini takes an OpenAPI-3.0 subset.
//! These functions rewrite a schema into what the provider takes, keeping its meaning
//! wherever the subset can say it. Local references (`#/$defs/…`) are inlined for
//! providers that do not resolve them, read through their chains as the
//! [`schema`](crate::schema) module reads them; recursion through a definition stops at a
//! fixed depth with an open object rather than looping, and a reference the module
//! refuses (to nothing, a cycle of references, a chain too long) is an open object too.

use serde_json::{Map, Value};

use crate::schema as json_schema;

/// How deep local references are inlined before giving up on a cycle.
const MAX_DEPTH: usize = 16;

/// How many references are inlined in all: a schema that references the same
/// definitions over and over cannot grow past this many copies.
const MAX_INLINED: usize = 1_000;

/// OpenAI's strict mode: every object closed (`additionalProperties: false`) and every
/// property required, with the properties that were optional made nullable (`"type":
/// [T, "null"]`, or `anyOf` with `null`), `oneOf` read as `anyOf`, and the keywords strict
/// mode refuses dropped (`default`, `allOf`, `not`, `if`/`then`/`else`, `minLength`,
/// `maxLength`, `minProperties`, `maxProperties`, `patternProperties`,
/// `propertyNames`, `uniqueItems`, `contains`, …). `$ref` and `$defs` are kept: OpenAI
/// resolves them.
///
/// ```
/// use serde_json::json;
/// use tool_calling::protocol::native::schema::openai_strict;
/// let schema = json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "unit": {"type": "string", "default": "c"}},
///     "required": ["city"]
/// });
/// assert_eq!(openai_strict(&schema), json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "unit": {"type": ["string", "null"]}},
///     "required": ["city", "unit"],
///     "additionalProperties": false
/// }));
/// ```
pub fn openai_strict(schema: &Value) -> Value {
    let mut out = schema.clone();
    strict_in_place(&mut out);
    out
}

/// Keywords OpenAI's strict mode refuses.
const STRICT_REFUSED: [&str; 18] = [
    "default",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "contains",
    "uniqueItems",
];

fn strict_in_place(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    for keyword in STRICT_REFUSED {
        map.remove(keyword);
    }
    if let Some(variants) = map.remove("oneOf") {
        map.insert("anyOf".into(), variants);
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        let required: Vec<String> = properties.keys().cloned().collect();
        let already: Vec<String> = json_schema::required(map).into_iter().map(str::to_string).collect();
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            for (name, property) in properties.iter_mut() {
                strict_in_place(property);
                if !already.contains(name) {
                    make_nullable(property);
                }
            }
        }
        map.insert("required".into(), Value::Array(required.into_iter().map(Value::String).collect()));
    }
    if map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties") {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    for key in ["items", "additionalItems"] {
        if let Some(inner) = map.get_mut(key) {
            strict_in_place(inner);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(variants)) = map.get_mut(key) {
            variants.iter_mut().for_each(strict_in_place);
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = map.get_mut(key) {
            defs.values_mut().for_each(strict_in_place);
        }
    }
}

/// Lets a schema also accept `null` (an optional property in strict mode).
fn make_nullable(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            map.insert("type".into(), Value::Array(vec![Value::String(t), Value::String("null".into())]));
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(Value::String("null".into()));
            }
        }
        Some(_) => {}
        None => {
            let inner = Value::Object(std::mem::take(map));
            map.insert("anyOf".into(), Value::Array(vec![inner, serde_json::json!({"type": "null"})]));
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// Keywords Gemini's schema takes (an OpenAPI-3.0 subset); everything else is dropped.
const GEMINI_KEYWORDS: [&str; 20] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
];

/// Gemini's schema subset: local references inlined (through chains; one the
/// [`schema`](crate::schema) module refuses, and recursion past a fixed depth, become
/// `{"type": "object"}`), `type` arrays turned into one type
/// and `nullable` (or `anyOf` when several types remain), `const` into a one-value
/// `enum`, `oneOf` into `anyOf`, `minimum`/`maximum` kept, and keywords Gemini refuses
/// (`additionalProperties`, `$defs`, `$schema`, …) dropped.
///
/// ```
/// use serde_json::json;
/// use tool_calling::protocol::native::schema::gemini;
/// let schema = json!({
///     "type": "object",
///     "properties": {"scope": {"$ref": "#/$defs/Scope"}, "limit": {"type": ["integer", "null"]}},
///     "$defs": {"Scope": {"type": "object", "properties": {"root": {"type": "string"}},
///                         "additionalProperties": false}},
///     "additionalProperties": false
/// });
/// assert_eq!(gemini(&schema), json!({
///     "type": "object",
///     "properties": {
///         "scope": {"type": "object", "properties": {"root": {"type": "string"}}},
///         "limit": {"type": "integer", "nullable": true}
///     }
/// }));
/// ```
pub fn gemini(schema: &Value) -> Value {
    gemini_at(schema, schema, 0, &mut 0)
}

fn gemini_at(root: &Value, schema: &Value, depth: usize, inlined: &mut usize) -> Value {
    let Value::Object(map) = schema else {
        // `true` (anything) and other odd schemas: an unconstrained object is the
        // nearest Gemini can say.
        return serde_json::json!({"type": "object"});
    };
    if map.contains_key("$ref") {
        return match json_schema::resolve(root, schema) {
            Ok(target) if depth < MAX_DEPTH && *inlined < MAX_INLINED => {
                *inlined += 1;
                let mut copy = gemini_at(root, target, depth + 1, inlined);
                // Keywords beside the reference (a description) win.
                if let (Value::Object(out), Some(description)) = (&mut copy, map.get("description")) {
                    out.insert("description".into(), description.clone());
                }
                copy
            }
            _ => serde_json::json!({"type": "object"}),
        };
    }
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "properties" => {
                if let Value::Object(properties) = value {
                    let converted: Map<String, Value> = properties
                        .iter()
                        .map(|(name, property)| (name.clone(), gemini_at(root, property, depth + 1, inlined)))
                        .collect();
                    out.insert(key.clone(), Value::Object(converted));
                }
            }
            "items" => {
                out.insert(key.clone(), gemini_at(root, value, depth + 1, inlined));
            }
            "anyOf" | "oneOf" => {
                if let Value::Array(variants) = value {
                    let converted = variants.iter().map(|v| gemini_at(root, v, depth + 1, inlined)).collect();
                    out.insert("anyOf".into(), Value::Array(converted));
                }
            }
            "const" => {
                out.insert("enum".into(), Value::Array(vec![value.clone()]));
            }
            "minimum" | "maximum" => {
                out.insert(key.clone(), value.clone());
            }
            "type" => match value {
                Value::Array(types) => {
                    let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                    if non_null.len() < types.len() {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                    match non_null.as_slice() {
                        [] => {}
                        [one] => {
                            out.insert("type".into(), (*one).clone());
                        }
                        several => {
                            let variants = several.iter().map(|t| serde_json::json!({"type": t})).collect();
                            out.insert("anyOf".into(), Value::Array(variants));
                        }
                    }
                }
                Value::String(t) if t == "null" => {
                    out.insert("nullable".into(), Value::Bool(true));
                }
                other => {
                    out.insert(key.clone(), other.clone());
                }
            },
            _ if GEMINI_KEYWORDS.contains(&key.as_str()) => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    // Gemini's `enum` holds strings: other values are written as strings of type
    // `string`, `format: "enum"` (a text protocol's strings are coerced back by type).
    if let Some(Value::Array(values)) = out.get_mut("enum")
        && values.iter().any(|v| !v.is_string())
    {
        for value in values.iter_mut() {
            if !value.is_string() {
                *value = Value::String(value.to_string());
            }
        }
        out.insert("type".into(), Value::String("string".into()));
        out.insert("format".into(), Value::String("enum".into()));
    }
    // `anyOf` with a `null` variant is Gemini's `nullable`.
    if let Some(Value::Array(variants)) = out.get_mut("anyOf") {
        let before = variants.len();
        variants.retain(|v| v.get("nullable") != Some(&Value::Bool(true)) || v.get("type").is_some());
        if variants.len() < before {
            out.insert("nullable".into(), Value::Bool(true));
        }
        if let Some(Value::Array(variants)) = out.get("anyOf")
            && let [only] = variants.as_slice()
        {
            let only = only.clone();
            out.remove("anyOf");
            if let Value::Object(inner) = only {
                for (k, v) in inner {
                    out.entry(k).or_insert(v);
                }
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_mode_closes_nested_objects_and_makes_optional_nullable() {
        let schema = json!({
            "type": "object",
            "properties": {
                "scope": {"type": "object", "properties": {"depth": {"type": "integer"}}},
                "mode": {"enum": ["a", "b"]},
                "tag": {"$ref": "#/$defs/Tag"}
            },
            "required": ["scope"],
            "$defs": {"Tag": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
        });
        let strict = openai_strict(&schema);
        assert_eq!(strict["required"], json!(["scope", "mode", "tag"]));
        assert_eq!(strict["additionalProperties"], false);
        assert_eq!(strict["properties"]["scope"]["additionalProperties"], false);
        assert_eq!(strict["properties"]["scope"]["properties"]["depth"]["type"], json!(["integer", "null"]));
        assert_eq!(strict["properties"]["mode"]["anyOf"][1], json!({"type": "null"}));
        assert_eq!(strict["properties"]["tag"]["anyOf"][0]["$ref"], "#/$defs/Tag");
        assert_eq!(strict["$defs"]["Tag"]["additionalProperties"], false);
    }

    #[test]
    fn gemini_drops_what_it_refuses_and_stops_reference_cycles() {
        let cyclic = json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}, "k": {"const": 3}, "e": {"oneOf": [{"type": "string"}, {"type": "null"}]}},
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}
        });
        let out = gemini(&cyclic);
        assert_eq!(out["properties"]["k"], json!({"enum": ["3"], "type": "string", "format": "enum"}));
        assert_eq!(out["properties"]["e"], json!({"type": "string", "nullable": true}));
        let mut depth = 0;
        let mut node = &out["properties"]["node"];
        while let Some(next) = node.get("properties").and_then(|p| p.get("next")) {
            node = next;
            depth += 1;
        }
        assert!(depth <= MAX_DEPTH, "the cycle stopped");
        // A definition referenced twice at every level would double at each one.
        let wide = json!({
            "type": "object",
            "properties": {"t": {"$ref": "#/$defs/T"}},
            "$defs": {"T": {"type": "object", "properties": {"l": {"$ref": "#/$defs/T"}, "r": {"$ref": "#/$defs/T"}}}}
        });
        assert!(gemini(&wide).to_string().len() < 200_000, "bounded by the inlining budget");
        assert!(out.get("$defs").is_none());
        assert_eq!(gemini(&json!(true)), json!({"type": "object"}));
    }
}
