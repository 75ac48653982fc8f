//! Analysing a method's signature: its receiver, parameters and asyncness, checked for
//! what a tool method may be (plain owned parameters, `&self` at most, no generics),
//! with the attributes' `param(...)` names checked against the parameters.
//!
//! The return type is not analysed: the generated code converts whatever the method
//! returns by its type, through the library (`__private::returns`), so a type alias of
//! `Result` is read as a `Result`.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::ext::IdentExt;
use syn::{FnArg, Ident, LitStr, Pat, Signature, Type};

use crate::attrs::MethodAttrs;

pub(crate) struct Method {
    /// The Rust function.
    pub(crate) ident: Ident,
    /// The method's name in the tool.
    pub(crate) name: LitStr,
    pub(crate) description: String,
    pub(crate) attrs: MethodAttrs,
    pub(crate) has_self: bool,
    pub(crate) is_async: bool,
    pub(crate) params: Vec<(Ident, Type)>,
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

/// Checks a signature and collects what the handler needs. `allow_self`: whether a
/// `&self` receiver is possible (in an `impl` block).
pub(crate) fn analyse(
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
    })
}

/// Method names and VCP aliases must be unique within a tool.
pub(crate) fn check_unique(methods: &[Method], errors: &mut Vec<syn::Error>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn method(sig: TokenStream2, doc: Option<&str>) -> Result<Method, Vec<String>> {
        let item: syn::ItemFn = syn::parse2(quote!(#sig {})).unwrap();
        let name = LitStr::new(&item.sig.ident.to_string(), item.sig.ident.span());
        let mut errors = Vec::new();
        let analysed =
            analyse(&item.sig, name, doc.map(str::to_string), MethodAttrs::default(), true, &mut errors);
        match analysed {
            Some(method) if errors.is_empty() => Ok(method),
            _ => Err(errors.iter().map(ToString::to_string).collect()),
        }
    }

    #[test]
    fn a_plain_method_is_read() {
        let m = method(
            quote!(async fn add(&self, a: f64, r#type: Option<String>) -> Result<f64, String>),
            Some("Add."),
        )
        .unwrap();
        assert!(m.has_self && m.is_async);
        let names: Vec<String> = m.params.iter().map(|(i, _)| i.unraw().to_string()).collect();
        assert_eq!(names, ["a", "type"]);
        assert_eq!(m.description, "Add.");
    }

    #[test]
    fn what_a_tool_method_may_not_be_is_refused() {
        let cases = [
            (quote!(fn f(&self)), None, "needs a description"),
            (quote!(fn f(&mut self)), Some("d"), "take `&self`"),
            (quote!(fn f(self)), Some("d"), "take `&self`"),
            (quote!(fn f<T>(&self, t: T)), Some("d"), "cannot be generic"),
            (quote!(fn f(&self, s: &str)), Some("d"), "use `String`"),
            (quote!(fn f(&self, (a, b): (u8, u8))), Some("d"), "plain names"),
            (quote!(fn f(&self, v: Vec<&str>)), Some("d"), "`&str` is not supported"),
            (quote!(fn f(&self, x: impl Into<String>)), Some("d"), "`impl Trait`"),
        ];
        for (sig, doc, expected) in cases {
            let errors = method(sig.clone(), doc).err().unwrap_or_default();
            assert!(errors.iter().any(|e| e.contains(expected)), "{sig}: {errors:?}");
        }
    }

    #[test]
    fn free_functions_take_no_receiver() {
        let item: syn::ItemFn = syn::parse2(quote!(
            fn now(&self) {}
        ))
        .unwrap();
        let mut errors = Vec::new();
        let name = LitStr::new("now", proc_macro2::Span::call_site());
        assert!(
            analyse(&item.sig, name, Some("Now.".into()), MethodAttrs::default(), false, &mut errors)
                .is_none()
        );
        assert!(errors[0].to_string().contains("without `self`"));
    }

    #[test]
    fn method_names_and_aliases_are_unique_within_a_tool() {
        let mut methods = Vec::new();
        for (sig, alias) in [(quote!(fn read(&self)), Some("Read")), (quote!(fn load(&self)), Some("Read"))] {
            let mut m = method(sig, Some("d")).unwrap();
            m.attrs.vcp_command = alias.map(|a| LitStr::new(a, proc_macro2::Span::call_site()));
            methods.push(m);
        }
        let mut errors = Vec::new();
        check_unique(&methods, &mut errors);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].to_string().contains("called `Read`"));
    }
}
