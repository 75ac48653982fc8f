//! Procedural macros for `tool-calling`: `#[tool]` on an `impl` block and `#[tool_fn]`
//! on a free function. Use them through the `tool_calling` crate
//! (`use tool_calling::{tool, tool_fn};`); the generated code refers to
//! `::tool_calling` paths.

use std::collections::HashMap;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{
    Attribute, Expr, ExprLit, FnArg, Ident, ImplItem, ItemFn, ItemImpl, Lit, LitStr, Meta, Pat, Path,
    ReturnType, Signature, Token, Type,
};

const TOOL_KEYS: &[&str] = &[
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
const METHOD_KEYS: &[&str] =
    &["description", "vcp_command", "example", "internal", "validate_with", "timeout_ms", "param"];
const FN_KEYS: &[&str] = &[
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
const PARAM_KEYS: &[&str] = &[
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
const EXAMPLE_KEYS: &[&str] = &["input", "output", "description"];

/// Turns an `impl` block into a tool: implements `ToolProvider` for the type and
/// registers it at link time (unless `register = false`).
///
/// ```ignore
/// /// Arithmetic on numbers.
/// #[tool(id = "calc", name = "Calculator", category = "math", tags("math"), version = "1.0")]
/// impl Calc {
///     /// Add two numbers.
///     #[tool_method(param(a, description = "first addend"))]
///     fn add(&self, a: f64, b: f64) -> f64 { a + b }
/// }
/// ```
///
/// Keys of `#[tool(...)]`: `id` (required), `name` (defaults to `id`), `description`
/// (defaults to the doc comment), `category`, `tags("a", "b")`, `version`,
/// `documentation_url`, `factory = "path::to::fn"` (a `fn() -> T` or
/// `fn() -> Result<T, E: Display>`; default `T::default()`), `register = false`.
///
/// Keys of `#[tool_method(...)]`: `description` (defaults to the doc comment; one of the
/// two is required), `vcp_command = "Alias"`, `example(input = "{json}", output = "...",
/// description = "...")` (repeatable), `internal` (not agent-callable),
/// `validate_with = "path::to::hook"`, and `param(name, ...)` (repeatable) with
/// `description`, `default`, `minimum`, `maximum`, `min_length`, `max_length`,
/// `pattern`, `min_items`, `max_items`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand_tool(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Turns a free function into a stateless tool with one method.
///
/// ```ignore
/// /// The current time.
/// #[tool_fn(id = "clock", name = "Clock", method = "now")]
/// fn now() -> String { "12:00".into() }
/// ```
///
/// Takes the keys of `#[tool(...)]` (except `factory`) and of `#[tool_method(...)]`, plus
/// `method = "name"` (defaults to the function's name). Besides registering the tool
/// (unless `register = false`), it defines `fn <name>_tool_spec() -> ToolSpec` with the
/// function's visibility, for registering by hand.
#[proc_macro_attribute]
pub fn tool_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand_tool_fn(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

// ---------------------------------------------------------------------------------------
// Attribute parsing
// ---------------------------------------------------------------------------------------

fn parse_metas(tokens: TokenStream2) -> syn::Result<Punctuated<Meta, Token![,]>> {
    Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens)
}

fn key_of(meta: &Meta) -> String {
    meta.path().get_ident().map(|i| i.unraw().to_string()).unwrap_or_else(|| {
        meta.path().segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::")
    })
}

fn unknown_key(meta: &Meta, key: &str, context: &str, accepted: &[&str]) -> syn::Error {
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

fn edit_distance(a: &str, b: &str) -> usize {
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

fn lit_str(meta: &Meta, key: &str) -> syn::Result<LitStr> {
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

fn flag(meta: &Meta, key: &str) -> syn::Result<bool> {
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
fn millis(meta: &Meta, key: &str) -> syn::Result<u64> {
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
fn path_value(meta: &Meta, key: &str) -> syn::Result<Path> {
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

fn once<T>(slot: &mut Option<T>, value: T, meta: &Meta, key: &str) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new_spanned(meta.path(), format!("`{key}` is given more than once")));
    }
    *slot = Some(value);
    Ok(())
}

/// The text of the `#[doc]` attributes: lines joined, one leading space trimmed per line,
/// the whole trimmed.
fn doc_text(attrs: &[Attribute]) -> Option<String> {
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
struct ToolAttrs {
    id: Option<LitStr>,
    name: Option<LitStr>,
    description: Option<LitStr>,
    category: Option<LitStr>,
    tags: Vec<LitStr>,
    version: Option<LitStr>,
    documentation_url: Option<LitStr>,
    factory: Option<Path>,
    register: Option<bool>,
    stateful: Option<bool>,
}

impl ToolAttrs {
    /// Handles a tool-level key; `false` when `key` is not one.
    fn accept(&mut self, meta: &Meta, key: &str) -> syn::Result<bool> {
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

struct Example {
    input: LitStr,
    output: Option<LitStr>,
    description: Option<LitStr>,
}

struct ParamAttr {
    name: Ident,
    /// (JSON Schema keyword, value expression)
    keywords: Vec<(&'static str, Expr)>,
    default: Option<Expr>,
}

#[derive(Default)]
struct MethodAttrs {
    description: Option<LitStr>,
    vcp_command: Option<LitStr>,
    examples: Vec<Example>,
    internal: Option<bool>,
    validate_with: Option<Path>,
    timeout_ms: Option<u64>,
    params: Vec<ParamAttr>,
}

impl MethodAttrs {
    /// Handles a method-level key; `false` when `key` is not one.
    fn accept(&mut self, meta: &Meta, key: &str) -> syn::Result<bool> {
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

fn parse_example(meta: &Meta) -> syn::Result<Example> {
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

fn parse_param(meta: &Meta) -> syn::Result<ParamAttr> {
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
    let mut param = ParamAttr { name, keywords: Vec::new(), default: None };
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
            "default" => {
                param.default = Some(value.clone());
                "default"
            }
            _ => return Err(unknown_key(&inner, &key, "param(...)", PARAM_KEYS)),
        };
        param.keywords.push((keyword, value));
    }
    Ok(param)
}

fn check_number(value: &Expr, key: &str, integer: bool) -> syn::Result<()> {
    let lit = match value {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) && !integer => match &*u.expr {
            Expr::Lit(ExprLit { lit, .. }) => Some(lit),
            _ => None,
        },
        _ => None,
    };
    match lit {
        Some(Lit::Int(_)) => Ok(()),
        Some(Lit::Float(_)) if !integer => Ok(()),
        _ if integer => {
            Err(syn::Error::new_spanned(value, format!("`{key}` takes a non-negative integer literal")))
        }
        _ => Err(syn::Error::new_spanned(value, format!("`{key}` takes a number literal"))),
    }
}

// ---------------------------------------------------------------------------------------
// Method analysis
// ---------------------------------------------------------------------------------------

enum Returns {
    Unit,
    Result,
    Output,
    Serialize,
}

struct Method {
    /// The Rust function.
    ident: Ident,
    /// The method's name in the tool.
    name: LitStr,
    description: String,
    attrs: MethodAttrs,
    has_self: bool,
    is_async: bool,
    params: Vec<(Ident, Type)>,
    returns: Returns,
}

fn unsupported_type(ty: &Type) -> Option<(TokenStream2, String)> {
    match ty {
        Type::Reference(r) => {
            let what = match &*r.elem {
                Type::Path(p) if p.path.is_ident("str") => ("`&str`", "`String`".to_string()),
                Type::Slice(s) => {
                    ("`&[T]`", format!("`Vec<{}>`", quote!(#s).to_string().trim_matches(['[', ']', ' '])))
                }
                Type::Path(p) if p.path.is_ident("Path") => ("`&Path`", "`PathBuf`".to_string()),
                elem => ("a reference", format!("an owned type such as `{}`", quote!(#elem))),
            };
            Some((quote!(#ty), format!("{} is not supported in a tool method; use {}", what.0, what.1)))
        }
        Type::ImplTrait(_) => {
            Some((quote!(#ty), "`impl Trait` is not supported in a tool method; use a concrete type".into()))
        }
        Type::TraitObject(_) => Some((
            quote!(#ty),
            "trait objects are not supported in a tool method; use a concrete type".into(),
        )),
        Type::Infer(_) => Some((quote!(#ty), "the parameter needs a concrete type".into())),
        Type::Paren(p) => unsupported_type(&p.elem),
        Type::Group(g) => unsupported_type(&g.elem),
        Type::Array(a) => unsupported_type(&a.elem),
        Type::Slice(s) => unsupported_type(&s.elem),
        Type::Tuple(t) => t.elems.iter().find_map(unsupported_type),
        Type::Path(p) => p.path.segments.iter().find_map(|s| match &s.arguments {
            syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                syn::GenericArgument::Type(t) => unsupported_type(t),
                _ => None,
            }),
            _ => None,
        }),
        _ => None,
    }
}

fn returns_of(output: &ReturnType) -> Returns {
    match output {
        ReturnType::Default => Returns::Unit,
        ReturnType::Type(_, ty) => match &**ty {
            Type::Tuple(t) if t.elems.is_empty() => Returns::Unit,
            Type::Path(p) => match p.path.segments.last().map(|s| s.ident.to_string()).as_deref() {
                Some("Result") => Returns::Result,
                Some("ToolOutput") => Returns::Output,
                _ => Returns::Serialize,
            },
            _ => Returns::Serialize,
        },
    }
}

/// Checks a signature and collects what the handler needs. `allow_self`: whether a
/// `&self` receiver is possible (in an `impl` block).
fn analyse(
    sig: &Signature,
    name: LitStr,
    description: Option<String>,
    attrs: MethodAttrs,
    allow_self: bool,
    errors: &mut Vec<syn::Error>,
) -> Option<Method> {
    let before = errors.len();
    let description = attrs.description.as_ref().map(LitStr::value).or(description);
    let description = match description {
        Some(d) if !d.trim().is_empty() => d,
        _ => {
            errors.push(syn::Error::new_spanned(
                &sig.ident,
                format!(
                    "tool method `{}` needs a description: add a doc comment or `description = \"...\"`",
                    name.value()
                ),
            ));
            String::new()
        }
    };
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(&sig.generics, "tool methods cannot be generic"));
    }
    if sig.variadic.is_some() || sig.abi.is_some() {
        errors.push(syn::Error::new_spanned(sig, "tool methods must be plain Rust functions"));
    }
    let mut has_self = false;
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => {
                if !allow_self {
                    errors.push(syn::Error::new_spanned(
                        r,
                        "`#[tool_fn]` takes a free function without `self`",
                    ));
                } else if r.reference.is_none() || r.mutability.is_some() || r.colon_token.is_some() {
                    errors.push(syn::Error::new_spanned(
                        r,
                        "tool methods take `&self`; keep mutable state behind a Mutex or atomic",
                    ));
                }
                has_self = true;
            }
            FnArg::Typed(pt) => {
                let Pat::Ident(pi) = &*pt.pat else {
                    errors.push(syn::Error::new_spanned(
                        &pt.pat,
                        "tool method parameters must be plain names (`name: Type`), not patterns",
                    ));
                    continue;
                };
                if pi.by_ref.is_some() || pi.subpat.is_some() {
                    errors.push(syn::Error::new_spanned(
                        &pt.pat,
                        "tool method parameters must be plain names (`name: Type`), not patterns",
                    ));
                    continue;
                }
                if let Some((tokens, message)) = unsupported_type(&pt.ty) {
                    errors.push(syn::Error::new_spanned(
                        tokens,
                        format!("parameter `{}`: {message}", pi.ident.unraw()),
                    ));
                    continue;
                }
                params.push((pi.ident.clone(), (*pt.ty).clone()));
            }
        }
    }
    for p in &attrs.params {
        if !params.iter().any(|(ident, _)| ident.unraw() == p.name.unraw()) {
            let known: Vec<String> = params.iter().map(|(i, _)| format!("`{}`", i.unraw())).collect();
            errors.push(syn::Error::new_spanned(
                &p.name,
                format!(
                    "`param({})` names no parameter of `{}`; its parameters are: {}",
                    p.name.unraw(),
                    sig.ident,
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ),
            ));
        }
    }
    let mut seen: Vec<String> = Vec::new();
    for p in &attrs.params {
        let n = p.name.unraw().to_string();
        if seen.contains(&n) {
            errors
                .push(syn::Error::new_spanned(&p.name, format!("`param({n}, ...)` is given more than once")));
        }
        seen.push(n);
    }
    if errors.len() > before {
        return None;
    }
    Some(Method {
        ident: sig.ident.clone(),
        name,
        description,
        attrs,
        has_self,
        is_async: sig.asyncness.is_some(),
        params,
        returns: returns_of(&sig.output),
    })
}

/// Method names and VCP aliases must be unique within a tool.
fn check_unique(methods: &[Method], errors: &mut Vec<syn::Error>) {
    let mut names: Vec<String> = Vec::new();
    for m in methods {
        let name = m.name.value();
        if names.contains(&name) {
            errors.push(syn::Error::new(
                m.name.span(),
                format!("the tool already has a method or VCP command called `{name}`"),
            ));
        }
        let mut own = vec![name.clone()];
        if let Some(alias) = &m.attrs.vcp_command {
            let a = alias.value();
            if a != name {
                if names.contains(&a) {
                    errors.push(syn::Error::new(
                        alias.span(),
                        format!("the tool already has a method or VCP command called `{a}`"),
                    ));
                }
                own.push(a);
            }
        }
        names.extend(own);
    }
}

// ---------------------------------------------------------------------------------------
// Code generation
// ---------------------------------------------------------------------------------------

/// An expression building the method's `MethodSpec`. `call` is the path of the function
/// to call; `self_ty` the type the instance is downcast to when the method takes `&self`.
fn method_spec(m: &Method, call: TokenStream2, self_ty: Option<&Type>) -> TokenStream2 {
    let p = quote!(::tool_calling::__private);
    let t = quote!(::tool_calling::tool);
    let name = &m.name;
    let description = &m.description;
    let field_idents: Vec<&Ident> = m.params.iter().map(|(i, _)| i).collect();
    let field_types: Vec<&Type> = m.params.iter().map(|(_, t)| t).collect();

    let tweaks = m.attrs.params.iter().filter(|pa| !pa.keywords.is_empty()).map(|pa| {
        let pname = pa.name.unraw().to_string();
        let inserts = pa.keywords.iter().map(|(keyword, value)| {
            quote! { __p.insert(::std::string::String::from(#keyword), #p::serde_json::json!(#value)); }
        });
        quote! {
            if let ::std::option::Option::Some(#p::serde_json::Value::Object(__p)) = __props.get_mut(#pname) {
                #(#inserts)*
            }
        }
    });
    let defaulted: Vec<String> = m
        .attrs
        .params
        .iter()
        .filter(|pa| pa.default.is_some())
        .map(|pa| pa.name.unraw().to_string())
        .collect();
    let default_values = m.attrs.params.iter().filter_map(|pa| pa.default.as_ref());
    let drop_required = if defaulted.is_empty() {
        quote!()
    } else {
        quote! {
            if let ::std::option::Option::Some(#p::serde_json::Value::Array(__req)) = __root.get_mut("required") {
                __req.retain(|__r| !matches!(__r.as_str(), ::std::option::Option::Some(#(#defaulted)|*)));
            }
        }
    };

    let instance = match (m.has_self, self_ty) {
        (true, Some(ty)) => quote! {
            let __this = match __instance.downcast::<#ty>() {
                ::std::result::Result::Ok(__this) => __this,
                ::std::result::Result::Err(_) => {
                    return ::std::result::Result::Err(#t::ToolError::execution("internal: wrong instance type"));
                }
            };
        },
        _ => quote! { let _ = __instance; },
    };
    let receiver = if m.has_self { quote!(&*__this,) } else { quote!() };
    let await_ = if m.is_async { quote!(.await) } else { quote!() };
    // A synchronous method may block its thread: the executor runs it on the blocking pool.
    let blocking = !m.is_async;
    let convert = match m.returns {
        Returns::Unit => {
            quote! { let () = __out; ::std::result::Result::Ok(#t::ToolOutput::Text(::std::string::String::new())) }
        }
        Returns::Result => quote! { #t::IntoToolResult::into_tool_result(__out) },
        Returns::Output => quote! { ::std::result::Result::Ok(__out) },
        Returns::Serialize => quote! { #t::ToolOutput::from_serialize(&__out) },
    };

    let vcp = m.attrs.vcp_command.as_ref().map(|c| quote!(.with_vcp_command(#c)));
    let examples = m.attrs.examples.iter().map(|e| {
        let input = &e.input;
        let description = e.description.as_ref().map(LitStr::value).unwrap_or_default();
        let output = e.output.as_ref().map(|o| {
            quote! {
                .with_output(#p::serde_json::from_str::<#p::serde_json::Value>(#o)
                    .unwrap_or_else(|_| #p::serde_json::Value::String(::std::string::String::from(#o))))
            }
        });
        quote! {
            .with_example(::tool_calling::MethodExample::new(
                #description,
                #p::serde_json::from_str::<#p::serde_json::Value>(#input)
                    .unwrap_or_else(|_| #p::serde_json::Value::String(::std::string::String::from(#input))),
            ) #output)
        }
    });
    let callable = !m.attrs.internal.unwrap_or(false);
    let hook = m.attrs.validate_with.as_ref().map(|h| quote!(.with_argument_hook(#h)));
    let timeout = m.attrs.timeout_ms.map(|ms| quote!(.with_timeout(::std::time::Duration::from_millis(#ms))));
    let span = m.ident.span();
    let args_struct = quote_spanned! {span=>
        #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
        #[serde(crate = "::tool_calling::__private::serde")]
        #[schemars(crate = "::tool_calling::__private::schemars")]
        #[allow(non_camel_case_types, dead_code)]
        struct __ToolArgs { #( #field_idents: #field_types, )* }
    };

    quote! {{
        #args_struct
        let mut __schema: #p::serde_json::Value =
            ::std::convert::From::from(#p::schemars::schema_for!(__ToolArgs));
        if let #p::serde_json::Value::Object(__root) = &mut __schema {
            __root.remove("$schema");
            __root.remove("title");
            if let ::std::option::Option::Some(#p::serde_json::Value::Object(__props)) = __root.get_mut("properties") {
                #(#tweaks)*
            }
            #drop_required
        }
        let __defaults: ::std::vec::Vec<(&'static str, #p::serde_json::Value)> =
            ::std::vec![#( (#defaulted, #p::serde_json::json!(#default_values)) ),*];
        let __handler = move |__instance: #t::Instance, mut __args: #t::ArgMap|
              -> #t::BoxFuture<'static, ::std::result::Result<#t::ToolOutput, #t::ToolError>> {
            for (__key, __value) in &__defaults {
                if !__args.contains_key(*__key) {
                    __args.insert(::std::string::String::from(*__key), ::std::clone::Clone::clone(__value));
                }
            }
            ::std::boxed::Box::pin(async move {
                #instance
                let __ToolArgs { #(#field_idents),* } =
                    match #p::serde_json::from_value::<__ToolArgs>(#p::serde_json::Value::Object(__args)) {
                        ::std::result::Result::Ok(__parsed) => __parsed,
                        ::std::result::Result::Err(__e) => {
                            return ::std::result::Result::Err(#t::ToolError::validation(
                                ::std::format!("invalid arguments: {}", __e),
                            ));
                        }
                    };
                let __out = #call(#receiver #(#field_idents),*) #await_;
                #convert
            })
        };
        let __definition = ::tool_calling::MethodDefinition::new(#name, #description)
            .with_parameters(__schema)
            #vcp
            #(#examples)*;
        #t::MethodSpec::new(__definition, __handler).agent_callable(#callable).blocking(#blocking) #hook #timeout
    }}
}

fn metadata(attrs: &ToolAttrs) -> TokenStream2 {
    let category = attrs.category.as_ref().map(|c| quote!(.with_category(#c)));
    let tags = attrs.tags.iter().map(|tag| quote!(.with_tag(#tag)));
    let version = attrs.version.as_ref().map(|v| quote!(.with_version(#v)));
    let docs = attrs.documentation_url.as_ref().map(|d| quote!(.with_documentation_url(#d)));
    quote! {
        <::tool_calling::tool::ToolMetadata as ::std::default::Default>::default()
            #category #(#tags)* #version #docs
    }
}

fn combine(errors: Vec<syn::Error>) -> syn::Result<()> {
    let mut iter = errors.into_iter();
    match iter.next() {
        None => Ok(()),
        Some(mut first) => {
            for e in iter {
                first.combine(e);
            }
            Err(first)
        }
    }
}

fn expand_tool(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let metas = parse_metas(attr)?;
    let mut item: ItemImpl = match syn::parse2(item) {
        Ok(item) => item,
        Err(e) => {
            return Err(syn::Error::new(
                e.span(),
                "`#[tool]` goes on an inherent `impl` block (`impl MyTool { ... }`)",
            ));
        }
    };
    let mut errors = Vec::new();
    let mut attrs = ToolAttrs::default();
    for meta in &metas {
        let key = key_of(meta);
        match attrs.accept(meta, &key) {
            Ok(true) => {}
            Ok(false) => errors.push(unknown_key(meta, &key, "#[tool(...)]", TOOL_KEYS)),
            Err(e) => errors.push(e),
        }
    }
    if let Some((_, path, _)) = &item.trait_ {
        errors.push(syn::Error::new_spanned(
            path,
            "`#[tool]` goes on an inherent `impl` block, not a trait impl",
        ));
    }
    if !item.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &item.generics,
            "`#[tool]` does not support generic `impl` blocks",
        ));
    }
    let id = match &attrs.id {
        Some(id) if !id.value().is_empty() => Some(id.clone()),
        Some(id) => {
            errors.push(syn::Error::new_spanned(id, "the tool `id` must not be empty"));
            None
        }
        None => {
            errors.push(syn::Error::new(
                Span::call_site(),
                "`#[tool]` needs an `id`: `#[tool(id = \"my_tool\")]`",
            ));
            None
        }
    };

    let self_ty = (*item.self_ty).clone();
    let mut methods = Vec::new();
    for impl_item in &mut item.items {
        let ImplItem::Fn(f) = impl_item else {
            continue;
        };
        let mut found = false;
        let mut method_attrs = MethodAttrs::default();
        let mut kept = Vec::with_capacity(f.attrs.len());
        for a in std::mem::take(&mut f.attrs) {
            if !a.path().is_ident("tool_method") {
                kept.push(a);
                continue;
            }
            found = true;
            let list = match &a.meta {
                Meta::Path(_) => Punctuated::new(),
                Meta::List(l) => match l.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
                    Ok(list) => list,
                    Err(e) => {
                        errors.push(e);
                        continue;
                    }
                },
                Meta::NameValue(nv) => {
                    errors.push(syn::Error::new_spanned(nv, "write `#[tool_method(...)]`"));
                    continue;
                }
            };
            for meta in &list {
                let key = key_of(meta);
                match method_attrs.accept(meta, &key) {
                    Ok(true) => {}
                    Ok(false) => errors.push(unknown_key(meta, &key, "#[tool_method(...)]", METHOD_KEYS)),
                    Err(e) => errors.push(e),
                }
            }
        }
        f.attrs = kept;
        if !found {
            continue;
        }
        let name = LitStr::new(&f.sig.ident.unraw().to_string(), f.sig.ident.span());
        if let Some(m) = analyse(&f.sig, name, doc_text(&f.attrs), method_attrs, true, &mut errors) {
            methods.push(m);
        }
    }
    check_unique(&methods, &mut errors);
    // Errors are reported with the item intact, so that other diagnostics stay sensible.
    if let Err(e) = combine(errors) {
        let err = e.to_compile_error();
        return Ok(quote!(#item #err));
    }
    let Some(id) = id else {
        return Ok(quote!(#item));
    };

    let name = attrs.name.clone().unwrap_or_else(|| id.clone());
    let description =
        attrs.description.as_ref().map(LitStr::value).or_else(|| doc_text(&item.attrs)).unwrap_or_default();
    let metadata = metadata(&attrs);
    let t = quote!(::tool_calling::tool);
    let factory = match &attrs.factory {
        None => quote! {
            let __factory = || -> ::std::result::Result<#t::Instance, #t::ToolError> {
                ::std::result::Result::Ok(::std::sync::Arc::new(<#self_ty as ::std::default::Default>::default()) as #t::Instance)
            };
        },
        Some(path) => quote! {
            trait __IntoToolInstance {
                fn __into_tool_instance(self) -> ::std::result::Result<#t::Instance, #t::ToolError>;
            }
            impl __IntoToolInstance for #self_ty {
                fn __into_tool_instance(self) -> ::std::result::Result<#t::Instance, #t::ToolError> {
                    ::std::result::Result::Ok(::std::sync::Arc::new(self) as #t::Instance)
                }
            }
            impl<__E: ::std::fmt::Display> __IntoToolInstance for ::std::result::Result<#self_ty, __E> {
                fn __into_tool_instance(self) -> ::std::result::Result<#t::Instance, #t::ToolError> {
                    match self {
                        ::std::result::Result::Ok(__v) => ::std::result::Result::Ok(::std::sync::Arc::new(__v) as #t::Instance),
                        ::std::result::Result::Err(__e) => ::std::result::Result::Err(#t::ToolError::execution(
                            ::std::format!("tool `{}` could not be created: {}", #id, __e),
                        )),
                    }
                }
            }
            let __factory = || -> ::std::result::Result<#t::Instance, #t::ToolError> {
                __IntoToolInstance::__into_tool_instance(#path())
            };
        },
    };
    let specs = methods.iter().map(|m| {
        let ident = &m.ident;
        method_spec(m, quote!(<#self_ty>::#ident), Some(&self_ty))
    });
    let stateful = attrs.stateful.unwrap_or(false);
    let register = if attrs.register.unwrap_or(true) {
        quote! {
            ::tool_calling::__private::inventory::submit! {
                ::tool_calling::tool::ToolRegistration::new(<#self_ty as ::tool_calling::tool::ToolProvider>::tool_spec)
            }
        }
    } else {
        quote!()
    };
    Ok(quote! {
        #item

        impl ::tool_calling::tool::ToolProvider for #self_ty {
            fn tool_spec() -> ::tool_calling::tool::ToolSpec {
                #factory
                ::tool_calling::tool::ToolSpec::new(#id, #name, __factory)
                    .with_description(#description)
                    .with_metadata(#metadata)
                    .stateful(#stateful)
                    #( .with_method(#specs) )*
            }
        }

        #register
    })
}

fn expand_tool_fn(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let metas = parse_metas(attr)?;
    let item: ItemFn = match syn::parse2(item) {
        Ok(item) => item,
        Err(e) => return Err(syn::Error::new(e.span(), "`#[tool_fn]` goes on a free function")),
    };
    let mut errors = Vec::new();
    let mut tool_attrs = ToolAttrs::default();
    let mut method_attrs = MethodAttrs::default();
    let mut method_name: Option<LitStr> = None;
    let mut tool_description: Option<LitStr> = None;
    for meta in &metas {
        let key = key_of(meta);
        let result = match key.as_str() {
            "factory" => Ok(false),
            "method" => {
                lit_str(meta, &key).and_then(|m| once(&mut method_name, m, meta, &key)).map(|()| true)
            }
            // One description for both the tool and its method.
            "description" => lit_str(meta, &key)
                .and_then(|d| {
                    once(&mut tool_description, d.clone(), meta, &key)?;
                    method_attrs.description = Some(d);
                    Ok(())
                })
                .map(|()| true),
            _ => match tool_attrs.accept(meta, &key) {
                Ok(false) => method_attrs.accept(meta, &key),
                other => other,
            },
        };
        match result {
            Ok(true) => {}
            Ok(false) => errors.push(unknown_key(meta, &key, "#[tool_fn(...)]", FN_KEYS)),
            Err(e) => errors.push(e),
        }
    }
    let id = match &tool_attrs.id {
        Some(id) if !id.value().is_empty() => Some(id.clone()),
        _ => {
            errors.push(syn::Error::new(
                Span::call_site(),
                "`#[tool_fn]` needs a non-empty `id`: `#[tool_fn(id = \"my_tool\")]`",
            ));
            None
        }
    };
    let name = method_name
        .unwrap_or_else(|| LitStr::new(&item.sig.ident.unraw().to_string(), item.sig.ident.span()));
    let doc = doc_text(&item.attrs);
    let method = analyse(&item.sig, name, doc.clone(), method_attrs, false, &mut errors);
    if let Err(e) = combine(errors) {
        let err = e.to_compile_error();
        return Ok(quote!(#item #err));
    }
    let (Some(id), Some(method)) = (id, method) else {
        return Ok(quote!(#item));
    };
    let tool_name = tool_attrs.name.clone().unwrap_or_else(|| id.clone());
    let description = tool_description.as_ref().map(LitStr::value).or(doc).unwrap_or_default();
    let metadata = metadata(&tool_attrs);
    let ident = &item.sig.ident;
    let vis = &item.vis;
    let spec_fn = format_ident!("{}_tool_spec", ident.unraw());
    let spec = method_spec(&method, quote!(#ident), None);
    let register = if tool_attrs.register.unwrap_or(true) {
        quote! {
            ::tool_calling::__private::inventory::submit! {
                ::tool_calling::tool::ToolRegistration::new(#spec_fn)
            }
        }
    } else {
        quote!()
    };
    let doc_line = format!("The tool spec of `{ident}` (`#[tool_fn]`), for registering it by hand.");
    Ok(quote! {
        #item

        #[doc = #doc_line]
        #vis fn #spec_fn() -> ::tool_calling::tool::ToolSpec {
            ::tool_calling::tool::ToolSpec::stateless(#id, #tool_name)
                .with_description(#description)
                .with_metadata(#metadata)
                .with_method(#spec)
        }

        #register
    })
}
