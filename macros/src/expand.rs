//! Writing the code: a `ToolProvider` impl (for `#[tool]`) or a `*_tool_spec` function
//! (for `#[tool_fn]`), each building a `ToolSpec` from library calls, and the link-time
//! registration.

use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::{Ident, ImplItem, ItemFn, ItemImpl, LitStr, Meta, Token, Type};

use crate::analysis::{Method, analyse, check_unique};
use crate::attrs::{
    FN_KEYS, METHOD_KEYS, MethodAttrs, TOOL_KEYS, ToolAttrs, doc_text, key_of, lit_str, once, parse_metas,
    unknown_key,
};

/// An expression building the method's `MethodSpec`. `call` is the path of the function
/// to call; `self_ty` the type the instance is downcast to when the method takes `&self`.
///
/// Everything beyond naming things is a call into `::tool_calling::__private`: the
/// schema (`parameters_schema`), the instance (`downcast`), the arguments
/// (`parse_args`), the return value (`returns`), the examples (`example`).
pub(crate) fn method_spec(m: &Method, call: TokenStream2, self_ty: Option<&Type>) -> TokenStream2 {
    let p = quote!(::tool_calling::__private);
    let t = quote!(::tool_calling::tools);
    let name = &m.name;
    let description = &m.description;
    let field_idents: Vec<&Ident> = m.params.iter().map(|(i, _)| i).collect();
    let field_types: Vec<&Type> = m.params.iter().map(|(_, t)| t).collect();

    let params = m.attrs.params.iter().filter(|pa| !pa.keywords.is_empty()).map(|pa| {
        let pname = pa.name.unraw().to_string();
        let keywords =
            pa.keywords.iter().map(|(keyword, value)| quote!((#keyword, #p::serde_json::json!(#value))));
        quote!((#pname, ::std::vec![#(#keywords),*]))
    });
    let instance = match (m.has_self, self_ty) {
        (true, Some(ty)) => quote!(let __this = #p::downcast::<#ty>(__instance)?;),
        _ => quote!(let _ = __instance;),
    };
    let receiver = if m.has_self { quote!(&*__this,) } else { quote!() };
    let await_ = if m.is_async { quote!(.await) } else { quote!() };
    // A synchronous method may block its thread: the executor runs it on the blocking pool.
    let blocking = !m.is_async;
    let vcp = m.attrs.vcp_command.as_ref().map(
        |c| quote!(.with_protocol_config("vcp", ::tool_calling::protocol::vcp::command_alias_config(#c))),
    );
    let examples = m.attrs.examples.iter().map(|e| {
        let input = &e.input;
        let description = e.description.as_ref().map(LitStr::value).unwrap_or_default();
        let output = match &e.output {
            Some(o) => quote!(::std::option::Option::Some(#o)),
            None => quote!(::std::option::Option::None),
        };
        quote!(.with_example(#p::example(#description, #input, #output)))
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
        let __handler = |__instance: #t::Instance, __args: #t::ArgMap|
              -> #t::BoxFuture<'static, ::std::result::Result<#t::ToolOutput, ::tool_calling::ToolError>> {
            ::std::boxed::Box::pin(async move {
                #[allow(unused_imports)]
                use #p::returns::{
                    ViaOutput as _, ViaOutputResult as _, ViaResult as _, ViaSerialize as _, ViaToolResult as _,
                    ViaUnit as _,
                };
                #instance
                let __ToolArgs { #(#field_idents),* } = #p::parse_args::<__ToolArgs>(__args)?;
                let __out = #call(#receiver #(#field_idents),*) #await_;
                (&&#p::returns::probe(&__out)).kind().convert(__out)
            })
        };
        let __definition = ::tool_calling::tools::MethodDefinition::new(#name, #description)
            .with_parameters(#p::parameters_schema::<__ToolArgs>(::std::vec![#(#params),*]))
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
        <::tool_calling::tools::ToolMetadata as ::std::default::Default>::default()
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

pub(crate) fn expand_tool(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
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
    let p = quote!(::tool_calling::__private);
    let made = match &attrs.factory {
        None => quote!(<#self_ty as ::std::default::Default>::default()),
        Some(path) => quote!(#path()),
    };
    let factory = quote! {
        let __factory = || #p::instance::<#self_ty, _>(#id, #made);
    };
    let specs = methods.iter().map(|m| {
        let ident = &m.ident;
        method_spec(m, quote!(<#self_ty>::#ident), Some(&self_ty))
    });
    let stateful = attrs.stateful.unwrap_or(false);
    let register = if attrs.register.unwrap_or(true) {
        quote! {
            ::tool_calling::__private::inventory::submit! {
                ::tool_calling::tools::ToolRegistration::new(<#self_ty as ::tool_calling::tools::ToolProvider>::tool_spec)
            }
        }
    } else {
        quote!()
    };
    Ok(quote! {
        #item

        impl ::tool_calling::tools::ToolProvider for #self_ty {
            fn tool_spec() -> ::tool_calling::tools::ToolSpec {
                #factory
                ::tool_calling::tools::ToolSpec::new(#id, #name, __factory)
                    .with_description(#description)
                    .with_metadata(#metadata)
                    .stateful(#stateful)
                    #( .with_method(#specs) )*
            }
        }

        #register
    })
}

pub(crate) fn expand_tool_fn(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
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
            "stateful" => Err(syn::Error::new_spanned(
                meta.path(),
                "`stateful` has no meaning on `#[tool_fn]`: a free function has no instance to keep \
                 per conversation; put `#[tool(stateful)]` on an `impl` block instead",
            )),
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
                ::tool_calling::tools::ToolRegistration::new(#spec_fn)
            }
        }
    } else {
        quote!()
    };
    let doc_line = format!("The tool spec of `{ident}` (`#[tool_fn]`), for registering it by hand.");
    Ok(quote! {
        #item

        #[doc = #doc_line]
        #vis fn #spec_fn() -> ::tool_calling::tools::ToolSpec {
            ::tool_calling::tools::ToolSpec::stateless(#id, #tool_name)
                .with_description(#description)
                .with_metadata(#metadata)
                .with_method(#spec)
        }

        #register
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(attr: TokenStream2, item: TokenStream2) -> String {
        expand_tool(attr, item).unwrap().to_string()
    }

    #[test]
    fn a_tool_impl_becomes_library_calls() {
        let out = tool(
            quote!(id = "calc"),
            quote! {
                impl Calc {
                    /// Add.
                    #[tool_method(param(a, minimum = 0))]
                    fn add(&self, a: f64, b: f64) -> f64 { a + b }
                    fn helper(&self) {}
                }
            },
        );
        for expected in [
            "impl :: tool_calling :: tools :: ToolProvider for Calc",
            ":: tool_calling :: __private :: parameters_schema :: < __ToolArgs >",
            ":: tool_calling :: __private :: downcast :: < Calc >",
            ":: tool_calling :: __private :: parse_args :: < __ToolArgs >",
            ":: tool_calling :: __private :: returns :: probe",
            ":: tool_calling :: __private :: instance :: < Calc , _ >",
            ":: tool_calling :: __private :: inventory :: submit !",
            ". blocking (true)",
        ] {
            assert!(out.contains(expected), "missing `{expected}` in {out}");
        }
        assert_eq!(out.matches("MethodSpec :: new").count(), 1, "only the marked method is a tool method");
        assert!(!out.contains("tool_method"), "the helper attribute is removed");
    }

    #[test]
    fn async_methods_do_not_block_and_register_false_skips_inventory() {
        let out = tool(
            quote!(id = "t", register = false),
            quote! {
                impl T {
                    /// Wait.
                    #[tool_method]
                    async fn wait(&self) {}
                }
            },
        );
        assert!(out.contains(". blocking (false)"));
        assert!(!out.contains("inventory"));
    }

    #[test]
    fn tool_errors_keep_the_item_and_report_every_problem() {
        let out = tool(
            quote!(colour = "red"),
            quote! {
                impl T {
                    #[tool_method]
                    fn f(&mut self) {}
                }
            },
        );
        assert!(out.contains("impl T"), "the item is kept");
        for expected in ["unknown key `colour`", "needs an `id`", "needs a description", "take `&self`"] {
            assert!(out.contains(expected), "missing `{expected}` in {out}");
        }
    }

    #[test]
    fn tool_fn_is_stateless_and_refuses_stateful() {
        let item = quote! {
            /// The time.
            fn now() -> String { String::new() }
        };
        let out = expand_tool_fn(quote!(id = "clock"), item.clone()).unwrap().to_string();
        assert!(out.contains("fn now_tool_spec"));
        assert!(out.contains("ToolSpec :: stateless"));
        let refused = expand_tool_fn(quote!(id = "clock", stateful), item).unwrap().to_string();
        assert!(refused.contains("has no meaning on `#[tool_fn]`"), "{refused}");
    }

    #[test]
    fn vcp_commands_and_examples_are_library_calls() {
        let out = tool(
            quote!(id = "files"),
            quote! {
                impl Files {
                    /// Write.
                    #[tool_method(vcp_command = "WriteFile", example(input = r#"{"path": "a"}"#))]
                    fn write(&self, path: String) {}
                }
            },
        );
        assert!(out.contains("command_alias_config (\"WriteFile\")"), "{out}");
        assert!(out.contains(":: tool_calling :: __private :: example"), "{out}");
    }
}
