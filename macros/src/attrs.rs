//! Reading the attributes: `#[tool(...)]`, `#[tool_method(...)]`, `#[tool_fn(...)]` and
//! their nested `param(...)` and `example(...)` lists, into plain structs. Every
//! problem is a `syn::Error` at the offending tokens, with the accepted keys (and the
//! nearest one) named.

use std::collections::HashMap;

use syn::ext::IdentExt;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprLit, Ident, Lit, LitStr, Meta, Path, Token};

use proc_macro2::TokenStream as TokenStream2;

pub(crate) const TOOL_KEYS: &[&str] = &[
    "id",
    "name",
    "description",
    "category",
    "tags",
    "version",
    "documentation_url",
    "factory",
    "register",
    "stateful",
];
pub(crate) const METHOD_KEYS: &[&str] =
    &["description", "vcp_command", "example", "internal", "validate_with", "timeout_ms", "param"];
pub(crate) const FN_KEYS: &[&str] = &[
    "id",
    "name",
    "description",
    "category",
    "tags",
    "version",
    "documentation_url",
    "register",
    "method",
    "vcp_command",
    "example",
    "internal",
    "validate_with",
    "timeout_ms",
    "param",
];
pub(crate) const PARAM_KEYS: &[&str] = &[
    "description",
    "default",
    "minimum",
    "maximum",
    "min_length",
    "max_length",
    "pattern",
    "min_items",
    "max_items",
];
pub(crate) const EXAMPLE_KEYS: &[&str] = &["input", "output", "description"];

pub(crate) fn parse_metas(tokens: TokenStream2) -> syn::Result<Punctuated<Meta, Token![,]>> {
    Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens)
}

pub(crate) fn key_of(meta: &Meta) -> String {
    meta.path().get_ident().map(|i| i.unraw().to_string()).unwrap_or_else(|| {
        meta.path().segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::")
    })
}

pub(crate) fn unknown_key(meta: &Meta, key: &str, context: &str, accepted: &[&str]) -> syn::Error {
    let suggestion = accepted
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default();
    syn::Error::new_spanned(
        meta.path(),
        format!("unknown key `{key}` in `{context}`{suggestion}; accepted keys: {}", accepted.join(", ")),
    )
}

pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row.first().copied().unwrap_or(0);
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
        for (j, cb) in b.iter().enumerate() {
            let above = row.get(j + 1).copied().unwrap_or(0);
            let left = row.get(j).copied().unwrap_or(0);
            let value = (above + 1).min(left + 1).min(prev + usize::from(ca != *cb));
            prev = above;
            if let Some(cell) = row.get_mut(j + 1) {
                *cell = value;
            }
        }
    }
    row.last().copied().unwrap_or(0)
}

pub(crate) fn lit_str(meta: &Meta, key: &str) -> syn::Result<LitStr> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Ok(s.clone()),
            other => Err(syn::Error::new_spanned(
                other,
                format!("`{key}` takes a string literal: `{key} = \"...\"`"),
            )),
        },
        _ => Err(syn::Error::new_spanned(meta, format!("`{key}` takes a string literal: `{key} = \"...\"`"))),
    }
}

pub(crate) fn flag(meta: &Meta, key: &str) -> syn::Result<bool> {
    match meta {
        Meta::Path(_) => Ok(true),
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) => Ok(b.value),
            other => Err(syn::Error::new_spanned(other, format!("`{key}` takes `true` or `false`"))),
        },
        Meta::List(_) => Err(syn::Error::new_spanned(meta, format!("`{key}` takes `true` or `false`"))),
    }
}

/// A whole number of milliseconds: `key = 5000`.
pub(crate) fn millis(meta: &Meta, key: &str) -> syn::Result<u64> {
    let wrong = |span: &dyn quote::ToTokens| {
        syn::Error::new_spanned(span, format!("`{key}` takes a whole number of milliseconds: `{key} = 5000`"))
    };
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit { lit: Lit::Int(n), .. }) => n.base10_parse::<u64>().map_err(|_| wrong(n)),
            other => Err(wrong(other)),
        },
        _ => Err(wrong(meta)),
    }
}

/// A path given as `key = "a::b"` or `key = a::b`.
pub(crate) fn path_value(meta: &Meta, key: &str) -> syn::Result<Path> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => s.parse::<Path>(),
            Expr::Path(p) => Ok(p.path.clone()),
            other => Err(syn::Error::new_spanned(
                other,
                format!("`{key}` takes a path: `{key} = \"path::to::fn\"`"),
            )),
        },
        _ => Err(syn::Error::new_spanned(meta, format!("`{key}` takes a path: `{key} = \"path::to::fn\"`"))),
    }
}

pub(crate) fn once<T>(slot: &mut Option<T>, value: T, meta: &Meta, key: &str) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new_spanned(meta.path(), format!("`{key}` is given more than once")));
    }
    *slot = Some(value);
    Ok(())
}

/// The text of the `#[doc]` attributes: lines joined, one leading space trimmed per line,
/// the whole trimmed.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => {
                    let v = s.value();
                    Some(v.strip_prefix(' ').map(str::to_string).unwrap_or(v))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    let text = lines.join("\n").trim().to_string();
    if text.is_empty() { None } else { Some(text) }
}

#[derive(Default)]
pub(crate) struct ToolAttrs {
    pub(crate) id: Option<LitStr>,
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) category: Option<LitStr>,
    pub(crate) tags: Vec<LitStr>,
    pub(crate) version: Option<LitStr>,
    pub(crate) documentation_url: Option<LitStr>,
    pub(crate) factory: Option<Path>,
    pub(crate) register: Option<bool>,
    pub(crate) stateful: Option<bool>,
}

impl ToolAttrs {
    /// Handles a tool-level key; `false` when `key` is not one.
    pub(crate) fn accept(&mut self, meta: &Meta, key: &str) -> syn::Result<bool> {
        match key {
            "id" => once(&mut self.id, lit_str(meta, key)?, meta, key)?,
            "name" => once(&mut self.name, lit_str(meta, key)?, meta, key)?,
            "description" => once(&mut self.description, lit_str(meta, key)?, meta, key)?,
            "category" => once(&mut self.category, lit_str(meta, key)?, meta, key)?,
            "version" => once(&mut self.version, lit_str(meta, key)?, meta, key)?,
            "documentation_url" => once(&mut self.documentation_url, lit_str(meta, key)?, meta, key)?,
            "factory" => once(&mut self.factory, path_value(meta, key)?, meta, key)?,
            "register" => once(&mut self.register, flag(meta, key)?, meta, key)?,
            "stateful" => once(&mut self.stateful, flag(meta, key)?, meta, key)?,
            "tags" => match meta {
                Meta::List(list) => {
                    let tags = list.parse_args_with(Punctuated::<LitStr, Token![,]>::parse_terminated)?;
                    self.tags.extend(tags);
                }
                _ => return Err(syn::Error::new_spanned(meta, "`tags` takes a list: `tags(\"a\", \"b\")`")),
            },
            _ => return Ok(false),
        }
        Ok(true)
    }
}

pub(crate) struct Example {
    pub(crate) input: LitStr,
    pub(crate) output: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
}

pub(crate) struct ParamAttr {
    pub(crate) name: Ident,
    /// (JSON Schema keyword, value expression)
    pub(crate) keywords: Vec<(&'static str, Expr)>,
}

#[derive(Default)]
pub(crate) struct MethodAttrs {
    pub(crate) description: Option<LitStr>,
    pub(crate) vcp_command: Option<LitStr>,
    pub(crate) examples: Vec<Example>,
    pub(crate) internal: Option<bool>,
    pub(crate) validate_with: Option<Path>,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) params: Vec<ParamAttr>,
}

impl MethodAttrs {
    /// Handles a method-level key; `false` when `key` is not one.
    pub(crate) fn accept(&mut self, meta: &Meta, key: &str) -> syn::Result<bool> {
        match key {
            "description" => once(&mut self.description, lit_str(meta, key)?, meta, key)?,
            "vcp_command" => once(&mut self.vcp_command, lit_str(meta, key)?, meta, key)?,
            "internal" => once(&mut self.internal, flag(meta, key)?, meta, key)?,
            "validate_with" => once(&mut self.validate_with, path_value(meta, key)?, meta, key)?,
            "timeout_ms" => once(&mut self.timeout_ms, millis(meta, key)?, meta, key)?,
            "example" => self.examples.push(parse_example(meta)?),
            "param" => self.params.push(parse_param(meta)?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

pub(crate) fn parse_example(meta: &Meta) -> syn::Result<Example> {
    let Meta::List(list) = meta else {
        return Err(syn::Error::new_spanned(
            meta,
            "`example` takes a list: `example(input = r#\"{\"a\": 1}\"#, output = \"...\", description = \"...\")`",
        ));
    };
    let (mut input, mut output, mut description) = (None, None, None);
    for inner in list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)? {
        let key = key_of(&inner);
        match key.as_str() {
            "input" => once(&mut input, lit_str(&inner, &key)?, &inner, &key)?,
            "output" => once(&mut output, lit_str(&inner, &key)?, &inner, &key)?,
            "description" => once(&mut description, lit_str(&inner, &key)?, &inner, &key)?,
            _ => return Err(unknown_key(&inner, &key, "example(...)", EXAMPLE_KEYS)),
        }
    }
    let Some(input) = input else {
        return Err(syn::Error::new_spanned(
            meta,
            "`example(...)` needs `input = \"{...}\"` (a JSON object)",
        ));
    };
    if !input.value().trim_start().starts_with('{') {
        return Err(syn::Error::new_spanned(&input, "`input` must be a JSON object, e.g. r#\"{\"a\": 1}\"#"));
    }
    Ok(Example { input, output, description })
}

pub(crate) fn parse_param(meta: &Meta) -> syn::Result<ParamAttr> {
    let Meta::List(list) = meta else {
        return Err(syn::Error::new_spanned(
            meta,
            "`param` takes a list: `param(name, description = \"...\")`",
        ));
    };
    let mut items = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)?.into_iter();
    let name = match items.next() {
        Some(Meta::Path(p)) if p.get_ident().is_some() => p.get_ident().cloned(),
        _ => None,
    };
    let Some(name) = name else {
        return Err(syn::Error::new_spanned(
            list,
            "`param(...)` starts with the parameter's name: `param(name, ...)`",
        ));
    };
    let mut param = ParamAttr { name, keywords: Vec::new() };
    let mut seen: HashMap<String, ()> = HashMap::new();
    for inner in items {
        let key = key_of(&inner);
        if seen.insert(key.clone(), ()).is_some() {
            return Err(syn::Error::new_spanned(inner.path(), format!("`{key}` is given more than once")));
        }
        let value = match &inner {
            Meta::NameValue(nv) => nv.value.clone(),
            _ if PARAM_KEYS.contains(&key.as_str()) => {
                return Err(syn::Error::new_spanned(&inner, format!("`{key}` takes a value: `{key} = ...`")));
            }
            _ => return Err(unknown_key(&inner, &key, "param(...)", PARAM_KEYS)),
        };
        let keyword = match key.as_str() {
            "description" | "pattern" => {
                lit_str(&inner, &key)?;
                if key == "description" { "description" } else { "pattern" }
            }
            "minimum" | "maximum" => {
                check_number(&value, &key, false)?;
                if key == "minimum" { "minimum" } else { "maximum" }
            }
            "min_length" => check_number(&value, &key, true).map(|()| "minLength")?,
            "max_length" => check_number(&value, &key, true).map(|()| "maxLength")?,
            "min_items" => check_number(&value, &key, true).map(|()| "minItems")?,
            "max_items" => check_number(&value, &key, true).map(|()| "maxItems")?,
            "default" => "default",
            _ => return Err(unknown_key(&inner, &key, "param(...)", PARAM_KEYS)),
        };
        param.keywords.push((keyword, value));
    }
    Ok(param)
}

pub(crate) fn check_number(value: &Expr, key: &str, integer: bool) -> syn::Result<()> {
    let lit = match value {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) && !integer => match &*u.expr {
            Expr::Lit(ExprLit { lit, .. }) => Some(lit),
            _ => None,
        },
        _ => None,
    };
    match lit {
        // syn reads `-1` as one negative literal: counts and lengths must not be one.
        Some(Lit::Int(n)) if integer && n.base10_digits().starts_with('-') => {
            Err(syn::Error::new_spanned(value, format!("`{key}` takes a non-negative integer literal")))
        }
        Some(Lit::Int(_)) => Ok(()),
        Some(Lit::Float(_)) if !integer => Ok(()),
        _ if integer => {
            Err(syn::Error::new_spanned(value, format!("`{key}` takes a non-negative integer literal")))
        }
        _ => Err(syn::Error::new_spanned(value, format!("`{key}` takes a number literal"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn metas(tokens: TokenStream2) -> Punctuated<Meta, Token![,]> {
        parse_metas(tokens).unwrap()
    }

    #[test]
    fn tool_keys_are_read_once_each() {
        let mut attrs = ToolAttrs::default();
        for meta in &metas(quote!(id = "calc", tags("a", "b"), register = false, stateful)) {
            assert!(attrs.accept(meta, &key_of(meta)).unwrap());
        }
        assert_eq!(attrs.id.unwrap().value(), "calc");
        assert_eq!(attrs.tags.len(), 2);
        assert_eq!((attrs.register, attrs.stateful), (Some(false), Some(true)));
        let twice = metas(quote!(id = "a", id = "b"));
        let mut attrs = ToolAttrs::default();
        assert!(attrs.accept(&twice[0], "id").is_ok());
        let err = attrs.accept(&twice[1], "id").unwrap_err();
        assert!(err.to_string().contains("given more than once"), "{err}");
    }

    #[test]
    fn unknown_keys_name_the_nearest_accepted_key() {
        let meta = &metas(quote!(descripton = "x"))[0];
        let err = unknown_key(meta, "descripton", "#[tool_method(...)]", METHOD_KEYS);
        assert!(err.to_string().contains("did you mean `description`?"), "{err}");
        let meta = &metas(quote!(zzz = 1))[0];
        assert!(!unknown_key(meta, "zzz", "#[tool(...)]", TOOL_KEYS).to_string().contains("did you mean"));
    }

    #[test]
    fn params_become_json_schema_keywords() {
        let meta =
            &metas(quote!(param(times, minimum = 1, max_length = 4, description = "how many", default = 3)))
                [0];
        let param = parse_param(meta).unwrap();
        assert_eq!(param.name, "times");
        let keywords: Vec<&str> = param.keywords.iter().map(|(k, _)| *k).collect();
        assert_eq!(keywords, ["minimum", "maxLength", "description", "default"]);
        for bad in [
            quote!(param(x, min_length = -1)),
            quote!(param(x, description = 3)),
            quote!(param(x, colour = 1)),
            quote!(param(description = "no name")),
        ] {
            assert!(parse_param(&metas(bad.clone())[0]).is_err(), "{bad}");
        }
    }

    #[test]
    fn examples_need_a_json_object_input() {
        let ok = parse_example(&metas(quote!(example(input = r#"{"a": 1}"#, output = "2")))[0]).unwrap();
        assert_eq!(ok.output.unwrap().value(), "2");
        assert!(parse_example(&metas(quote!(example(output = "2")))[0]).is_err());
        assert!(parse_example(&metas(quote!(example(input = "[1]")))[0]).is_err());
    }

    #[test]
    fn doc_comments_become_descriptions() {
        let item: syn::ItemFn = syn::parse2(quote! {
            /// Add two numbers.
            ///
            ///  Indented.
            fn add() {}
        })
        .unwrap();
        assert_eq!(doc_text(&item.attrs).unwrap(), "Add two numbers.\n\n Indented.");
        let bare: syn::ItemFn = syn::parse2(quote!(
            fn add() {}
        ))
        .unwrap();
        assert_eq!(doc_text(&bare.attrs), None);
    }
}
