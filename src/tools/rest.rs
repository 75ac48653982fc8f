//! REST tools: HTTP endpoints described by configuration, run by the library.
//!
//! A REST tool is a [`ToolSpec`] whose methods each send one HTTP request: the
//! application writes the configuration (base URL, method, path template, where each
//! parameter goes, static headers, time limit) and the library does the rest. Once
//! registered, a REST tool is a tool like any other: it is listed in every protocol's
//! prompt, its arguments are validated against its schema, and its calls go through the
//! executor's policies, time limits and retries.
//!
//! ```
//! use tool_calling::tools::rest::RestTools;
//!
//! let config = r#"
//! [[tools]]
//! id = "weather"
//! description = "Weather reports"
//! base_url = "https://weather.example/api"
//! headers = { Accept = "application/json" }
//!
//! [[tools.methods]]
//! name = "today"
//! description = "Today's weather in a city"
//! path = "/weather/{city}"
//! query = ["units"]
//! parameters = { type = "object", properties = { city = { type = "string" }, units = { enum = ["metric", "imperial"] } }, required = ["city"] }
//! "#;
//! let tools = RestTools::from_toml_str(config).unwrap();
//! let specs = tools.tool_specs().unwrap();
//! assert_eq!(specs[0].tool_id, "weather");
//! assert_eq!(specs[0].methods[0].definition.name, "today");
//! ```
//!
//! # Where arguments go
//!
//! - `{name}` in `path`: that parameter, percent-encoded into the path;
//! - `query`: listed parameters become query pairs;
//! - `header_params`: a map from parameter to header name;
//! - `body`: listed parameters become the fields of a JSON object body;
//! - every other parameter goes to the query for `GET`, `HEAD` and `DELETE`, and to the
//!   JSON body for `POST`, `PUT` and `PATCH`.
//!
//! Strings go into paths, queries and headers as they are; other JSON values as JSON
//! text.
//!
//! # Secrets
//!
//! A static header value may name environment variables as `${NAME}`:
//! `Authorization = "Bearer ${WEATHER_TOKEN}"`. They are read when the tool is built,
//! kept as sensitive header values, and never written to `Debug` output, logs or errors
//! (an error names the variable, never its value).
//!
//! # Responses and failures
//!
//! A success (2xx) becomes the call's result: JSON (by `Content-Type`) as JSON,
//! anything else as text, cut at [`RestToolConfig::max_response_bytes`]. A failure is
//! an error result the model reads, of the kind that says what to do about it:
//!
//! | response                       | [`ErrorKind`]    | retried by the executor |
//! |--------------------------------|------------------|-------------------------|
//! | 400, 422                       | `Validation`     | no                      |
//! | 401, 403                       | `Permission`     | no                      |
//! | 404, 410                       | `NotFound`       | no                      |
//! | 408, 429, 5xx, connection lost | `Network`        | yes, after `Retry-After` when the server sends one |
//! | no answer in time              | `Timeout`        | yes                     |
//! | any other status               | `Execution`      | no                      |

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::spec::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolSpec};
use crate::tools::MethodDefinition;
use crate::{ErrorKind, ToolError};

/// The default cap on a response body kept as a result: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 20;

/// A file of REST tool configurations: `tools`, a list of [`RestToolConfig`].
///
/// ```
/// use tool_calling::tools::rest::RestTools;
///
/// let json = r#"{"tools": [{"id": "clock", "base_url": "http://127.0.0.1:9",
///     "methods": [{"name": "now", "description": "The time", "path": "/now"}]}]}"#;
/// let tools = RestTools::from_json_str(json).unwrap();
/// assert_eq!(tools.tools[0].methods[0].http_method, "GET");
/// assert_eq!(tools.tool_specs().unwrap()[0].methods.len(), 1);
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RestTools {
    /// The tools.
    pub tools: Vec<RestToolConfig>,
    /// The file they came from, for error messages.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// One REST tool: a base URL and its methods.
///
/// Loaded from a file and then adjusted in code, for example to point at another
/// server:
///
/// ```
/// use tool_calling::tools::rest::RestTools;
///
/// let toml = "[[tools]]\nid = \"status\"\nbase_url = \"https://status.example\"\nmethods = [{ name = \"get\" }]\n";
/// let mut tools = RestTools::from_toml_str(toml).unwrap();
/// tools.tools[0].base_url = "http://127.0.0.1:8080".into();
/// tools.tools[0].timeout_ms = Some(500);
/// let spec = tools.tools[0].tool_spec().unwrap();
/// assert_eq!(spec.methods[0].timeout, Some(std::time::Duration::from_millis(500)));
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RestToolConfig {
    /// The tool id (`[A-Za-z0-9_-]`, as for every tool).
    pub id: String,
    /// A display name (the id when absent).
    #[serde(default)]
    pub name: Option<String>,
    /// What the tool is for.
    #[serde(default)]
    pub description: String,
    /// The URL every method's path is appended to (`http` or `https`).
    pub base_url: String,
    /// Headers sent with every call; values may name environment variables as `${NAME}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The time limit of each call, in milliseconds (the executor's default when absent).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The largest response body kept, in bytes; longer ones are cut with a note.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: usize,
    /// The methods.
    pub methods: Vec<RestMethodConfig>,
}

fn default_max_response_bytes() -> usize {
    DEFAULT_MAX_RESPONSE_BYTES
}

/// One method of a REST tool: one HTTP request.
///
/// ```
/// use tool_calling::tools::rest::RestTools;
///
/// let toml = r#"
/// [[tools]]
/// id = "tickets"
/// base_url = "https://tickets.example/api"
/// [[tools.methods]]
/// name = "comment"
/// http_method = "POST"
/// path = "/tickets/{id}/comments"
/// header_params = { trace = "X-Trace-Id" }
/// parameters = { type = "object", properties = { id = { type = "integer" }, text = { type = "string" }, trace = { type = "string" } } }
/// "#;
/// let tools = RestTools::from_toml_str(toml).unwrap();
/// let method = &tools.tools[0].methods[0];
/// assert_eq!(method.header_params["trace"], "X-Trace-Id");
/// assert!(method.body.is_empty()); // `text` goes to the JSON body all the same (POST)
/// assert!(tools.tool_specs().is_ok());
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RestMethodConfig {
    /// The method name (the model calls `toolId_name`).
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// The HTTP method: `GET` (default), `POST`, `PUT`, `PATCH`, `DELETE` or `HEAD`.
    #[serde(default = "default_http_method")]
    pub http_method: String,
    /// The path after the base URL, with `{param}` placeholders.
    #[serde(default)]
    pub path: String,
    /// The JSON Schema of the parameters (an object schema).
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// Parameters sent as query pairs.
    #[serde(default)]
    pub query: Vec<String>,
    /// Parameters sent as headers: parameter → header name.
    #[serde(default)]
    pub header_params: BTreeMap<String, String>,
    /// Parameters sent as the fields of a JSON body.
    #[serde(default)]
    pub body: Vec<String>,
    /// The time limit of a call, in milliseconds (the tool's when absent).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

impl RestMethodConfig {
    /// A method `name` as a configuration file leaves it when only the name is given:
    /// `GET` on the tool's base URL, no parameters, nothing placed in the query, headers
    /// or body. Its fields are public: set the rest on the value (see
    /// [`RestToolConfig::new`]).
    pub fn new(name: impl Into<String>) -> Self {
        RestMethodConfig {
            name: name.into(),
            description: String::new(),
            http_method: default_http_method(),
            path: String::new(),
            parameters: empty_object_schema(),
            query: Vec::new(),
            header_params: BTreeMap::new(),
            body: Vec::new(),
            timeout_ms: None,
        }
    }
}

fn default_http_method() -> String {
    "GET".to_string()
}

fn empty_object_schema() -> Value {
    serde_json::json!({ "type": "object", "properties": {} })
}

/// A configuration that cannot make a tool: which file, which tool, which field, and
/// what is wrong. Never holds a secret's value.
///
/// ```
/// use tool_calling::tools::rest::RestTools;
///
/// let toml = "[[tools]]\nid = \"x\"\nbase_url = \"http://h\"\n[[tools.methods]]\nname = \"a\"\npth = \"/a\"\n";
/// let error = RestTools::from_toml_str(toml).unwrap_err();
/// assert_eq!(error.tool.as_deref(), Some("x"));
/// assert!(error.to_string().starts_with("REST tool configuration, tool `x`"), "{error}");
/// assert!(error.message.contains("unknown field `pth`"), "{error}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
#[non_exhaustive]
pub struct RestConfigError {
    /// The file, when the configuration came from one.
    pub file: Option<PathBuf>,
    /// The tool's id (or its position, `tools[2]`, when it has none).
    pub tool: Option<String>,
    /// The field, as a path inside the tool (`methods[0].path`); empty for the file as
    /// a whole.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl RestConfigError {
    fn describe(&self) -> String {
        let mut out = String::from("REST tool configuration");
        if let Some(file) = &self.file {
            out.push_str(&format!(" {}", file.display()));
        }
        if let Some(tool) = &self.tool {
            out.push_str(&format!(", tool `{tool}`"));
        }
        if !self.field.is_empty() {
            out.push_str(&format!(", field `{}`", self.field));
        }
        out.push_str(": ");
        out.push_str(&self.message);
        out
    }
}

impl RestTools {
    /// Reads a TOML (`.toml`) or JSON (any other extension) file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, RestConfigError> {
        let path = path.as_ref();
        let error = |message: String| RestConfigError {
            file: Some(path.to_path_buf()),
            tool: None,
            field: String::new(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot be read: {e}")))?;
        let toml = path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("toml"));
        let parsed = if toml { Self::from_toml_str(&text) } else { Self::from_json_str(&text) };
        parsed
            .map(|mut tools| {
                tools.source = Some(path.to_path_buf());
                tools
            })
            .map_err(|mut e| {
                e.file = Some(path.to_path_buf());
                e
            })
    }

    /// Reads a TOML document with a `[[tools]]` array.
    pub fn from_toml_str(text: &str) -> Result<Self, RestConfigError> {
        let value: Value = toml::from_str(text).map_err(|e| RestConfigError {
            file: None,
            tool: None,
            field: String::new(),
            message: format!("not valid TOML: {}", e.message()),
        })?;
        Self::from_value(value)
    }

    /// Reads a JSON document `{"tools": [...]}`.
    pub fn from_json_str(text: &str) -> Result<Self, RestConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|e| RestConfigError {
            file: None,
            tool: None,
            field: String::new(),
            message: format!("not valid JSON: {e}"),
        })?;
        Self::from_value(value)
    }

    fn from_value(value: Value) -> Result<Self, RestConfigError> {
        serde_path_to_error::deserialize(&value).map_err(|e| {
            let path = e.path().to_string();
            let (tool, field) = split_tool_path(&path, &value);
            RestConfigError { file: None, tool, field, message: e.into_inner().to_string() }
        })
    }

    /// Every tool, built ([`RestToolConfig::tool_spec`]) with one shared HTTP client.
    pub fn tool_specs(&self) -> Result<Vec<ToolSpec>, RestConfigError> {
        let client = client().map_err(|message| RestConfigError {
            file: self.source.clone(),
            tool: None,
            field: String::new(),
            message,
        })?;
        self.tools
            .iter()
            .map(|tool| {
                tool.build(&client).map_err(|mut e| {
                    e.file.clone_from(&self.source);
                    e
                })
            })
            .collect()
    }
}

/// `tools[3].methods[0].path` → (the id of tools[3], or `tools[3]`; `methods[0].path`).
fn split_tool_path(path: &str, value: &Value) -> (Option<String>, String) {
    let Some(rest) = path.strip_prefix("tools[") else {
        return (None, path.to_string());
    };
    let Some((index, field)) = rest.split_once(']') else {
        return (None, path.to_string());
    };
    let id = index
        .parse::<usize>()
        .ok()
        .and_then(|i| value.get("tools")?.get(i)?.get("id")?.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("tools[{index}]"));
    (Some(id), field.trim_start_matches('.').to_string())
}

fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("the HTTP client could not be built: {e}"))
}

/// Where one parameter goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    Path,
    Query,
    Header(HeaderName),
    Body,
}

/// A method ready to run: everything checked and resolved once.
struct RestMethod {
    client: reqwest::Client,
    http_method: reqwest::Method,
    base_url: reqwest::Url,
    /// The path template, split at placeholders: literal, then (parameter, literal)...
    path: Vec<PathPiece>,
    places: BTreeMap<String, Place>,
    default_place: Place,
    headers: HeaderMap,
    max_response_bytes: usize,
    /// `GET /weather/{city}`, for messages.
    label: String,
}

#[derive(Debug, Clone)]
enum PathPiece {
    Literal(String),
    Param(String),
}

impl RestToolConfig {
    /// A tool `id` whose methods' paths follow `base_url`, with no methods yet and every
    /// other field as a configuration file leaves it when absent (no name, headers or
    /// time limit; responses kept up to 1 MiB). Its fields are public: set the rest on
    /// the value.
    ///
    /// ```
    /// use tool_calling::tools::rest::{RestMethodConfig, RestToolConfig};
    ///
    /// let mut tool = RestToolConfig::new("status", "http://127.0.0.1:8080");
    /// let mut get = RestMethodConfig::new("get");
    /// get.path = "/status/{service}".into();
    /// get.parameters = serde_json::json!({"type": "object", "properties": {"service": {"type": "string"}}});
    /// tool.methods.push(get);
    /// tool.timeout_ms = Some(500);
    /// let spec = tool.tool_spec().unwrap();
    /// assert_eq!(spec.methods[0].name(), "get");
    /// ```
    pub fn new(id: impl Into<String>, base_url: impl Into<String>) -> Self {
        RestToolConfig {
            id: id.into(),
            name: None,
            description: String::new(),
            base_url: base_url.into(),
            headers: BTreeMap::new(),
            timeout_ms: None,
            max_response_bytes: default_max_response_bytes(),
            methods: Vec::new(),
        }
    }

    /// The tool, ready to register: each method checked (its path placeholders and
    /// placed parameters are parameters of its schema, its header names are valid),
    /// and the static headers resolved (environment variables read now).
    ///
    /// ```
    /// use tool_calling::tools::rest::RestTools;
    ///
    /// let tools = RestTools::from_json_str(r#"{"tools": [{
    ///     "id": "notes", "base_url": "http://127.0.0.1:9/api",
    ///     "headers": {"Authorization": "Bearer ${NO_SUCH_VARIABLE_FOR_THIS_EXAMPLE}"},
    ///     "methods": [{"name": "add", "http_method": "POST", "path": "/notes"}]
    /// }]}"#)
    /// .unwrap();
    /// let error = tools.tools[0].tool_spec().unwrap_err();
    /// assert_eq!(error.tool.as_deref(), Some("notes"));
    /// assert_eq!(error.field, "headers.Authorization");
    /// assert!(error.to_string().contains("NO_SUCH_VARIABLE_FOR_THIS_EXAMPLE"));
    /// ```
    pub fn tool_spec(&self) -> Result<ToolSpec, RestConfigError> {
        let client = client().map_err(|message| self.error("", message))?;
        self.build(&client)
    }

    fn error(&self, field: impl Into<String>, message: impl Into<String>) -> RestConfigError {
        RestConfigError {
            file: None,
            tool: Some(self.id.clone()),
            field: field.into(),
            message: message.into(),
        }
    }

    fn build(&self, client: &reqwest::Client) -> Result<ToolSpec, RestConfigError> {
        let base_url = reqwest::Url::parse(&self.base_url)
            .map_err(|e| self.error("base_url", format!("not a URL: {e}")))?;
        if !matches!(base_url.scheme(), "http" | "https") {
            return Err(self.error("base_url", "the URL must be http or https"));
        }
        let mut headers = HeaderMap::new();
        for (name, template) in &self.headers {
            let field = format!("headers.{name}");
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| self.error(&field, "not a valid header name"))?;
            let (text, secret) = expand_env(template).map_err(|message| self.error(&field, message))?;
            let mut value = HeaderValue::from_str(&text)
                .map_err(|_| self.error(&field, "the value is not valid in an HTTP header"))?;
            value.set_sensitive(secret);
            headers.insert(header, value);
        }
        let name = self.name.clone().unwrap_or_else(|| self.id.clone());
        let mut spec = ToolSpec::stateless(self.id.clone(), name).with_description(self.description.clone());
        for (i, method) in self.methods.iter().enumerate() {
            let at = |field: &str| format!("methods[{i}].{field}");
            let run = Arc::new(self.method(method, client, &base_url, &headers, &at)?);
            let definition = MethodDefinition::new(method.name.clone(), method.description.clone())
                .with_parameters(method.parameters.clone());
            let handler = move |_, args: ArgMap| {
                let run = Arc::clone(&run);
                Box::pin(async move { run.call(args).await })
                    as BoxFuture<'static, Result<ToolOutput, ToolError>>
            };
            let mut method_spec = MethodSpec::new(definition, handler);
            if let Some(ms) = method.timeout_ms.or(self.timeout_ms) {
                method_spec = method_spec.with_timeout(Duration::from_millis(ms));
            }
            spec = spec.with_method(method_spec);
        }
        Ok(spec)
    }

    fn method(
        &self,
        method: &RestMethodConfig,
        client: &reqwest::Client,
        base_url: &reqwest::Url,
        headers: &HeaderMap,
        at: &dyn Fn(&str) -> String,
    ) -> Result<RestMethod, RestConfigError> {
        let http_method = match method.http_method.to_ascii_uppercase().as_str() {
            "GET" => reqwest::Method::GET,
            "POST" => reqwest::Method::POST,
            "PUT" => reqwest::Method::PUT,
            "PATCH" => reqwest::Method::PATCH,
            "DELETE" => reqwest::Method::DELETE,
            "HEAD" => reqwest::Method::HEAD,
            other => {
                return Err(self.error(
                    at("http_method"),
                    format!("`{other}` is not one of GET, POST, PUT, PATCH, DELETE, HEAD"),
                ));
            }
        };
        let properties = match method.parameters.get("properties") {
            None => Map::new(),
            Some(Value::Object(properties)) => properties.clone(),
            Some(_) => return Err(self.error(at("parameters.properties"), "must be an object")),
        };
        let known = |param: &str, field: &str| {
            if properties.contains_key(param) {
                Ok(())
            } else {
                Err(self.error(
                    at(field),
                    format!("`{param}` is not a parameter (not in `parameters.properties`)"),
                ))
            }
        };
        let path = split_path(&method.path).map_err(|message| self.error(at("path"), message))?;
        let mut places = BTreeMap::new();
        for piece in &path {
            if let PathPiece::Param(param) = piece {
                known(param, "path")?;
                places.insert(param.clone(), Place::Path);
            }
        }
        for param in &method.query {
            known(param, "query")?;
            places.insert(param.clone(), Place::Query);
        }
        for param in &method.body {
            known(param, "body")?;
            places.insert(param.clone(), Place::Body);
        }
        for (param, header) in &method.header_params {
            known(param, &format!("header_params.{param}"))?;
            let name = HeaderName::from_bytes(header.as_bytes())
                .map_err(|_| self.error(at(&format!("header_params.{param}")), "not a valid header name"))?;
            places.insert(param.clone(), Place::Header(name));
        }
        let sends_body =
            matches!(http_method, reqwest::Method::POST | reqwest::Method::PUT | reqwest::Method::PATCH);
        Ok(RestMethod {
            client: client.clone(),
            label: format!("{http_method} {}", method.path),
            http_method,
            base_url: base_url.clone(),
            path,
            places,
            default_place: if sends_body { Place::Body } else { Place::Query },
            headers: headers.clone(),
            max_response_bytes: self.max_response_bytes,
        })
    }
}

/// `Bearer ${TOKEN}` with each `${NAME}` read from the environment; whether any was.
fn expand_env(template: &str) -> Result<(String, bool), String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    let mut secret = false;
    while let Some(start) = rest.find("${") {
        let (before, after) = rest.split_at(start);
        out.push_str(before);
        let after = after.get(2..).unwrap_or("");
        let Some(end) = after.find('}') else {
            return Err("`${` is not closed with `}`".to_string());
        };
        let name = after.get(..end).unwrap_or("");
        let value = std::env::var(name)
            .map_err(|_| format!("the environment variable `{name}` is not set (or not Unicode)"))?;
        out.push_str(&value);
        secret = true;
        rest = after.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    Ok((out, secret))
}

fn split_path(path: &str) -> Result<Vec<PathPiece>, String> {
    let mut pieces = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let (literal, after) = rest.split_at(open);
        if !literal.is_empty() {
            pieces.push(PathPiece::Literal(literal.to_string()));
        }
        let after = after.get(1..).unwrap_or("");
        let close = after.find('}').ok_or_else(|| "a `{` is not closed with `}`".to_string())?;
        let name = after.get(..close).unwrap_or("").trim();
        if name.is_empty() {
            return Err("an empty `{}` placeholder".to_string());
        }
        pieces.push(PathPiece::Param(name.to_string()));
        rest = after.get(close + 1..).unwrap_or("");
    }
    if !rest.is_empty() {
        pieces.push(PathPiece::Literal(rest.to_string()));
    }
    Ok(pieces)
}

/// A value as it goes into a path, query or header: strings as they are, the rest as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl RestMethod {
    async fn call(&self, args: ArgMap) -> Result<ToolOutput, ToolError> {
        let request = self.request(args)?;
        let response = request.send().await.map_err(|e| self.transport_error(e))?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("json"));
        let (body, cut) = self.read_body(response).await?;
        if status.is_success() {
            if json
                && cut == 0
                && let Ok(value) = serde_json::from_slice::<Value>(&body)
            {
                return Ok(ToolOutput::Json(value));
            }
            let mut text = String::from_utf8_lossy(&body).into_owned();
            if cut > 0 {
                text.push_str(&format!("\n[… {cut} more bytes of the response were cut]"));
            }
            return Ok(ToolOutput::Text(text));
        }
        Err(self.status_error(status, &body, retry_after))
    }

    fn request(&self, args: ArgMap) -> Result<reqwest::RequestBuilder, ToolError> {
        let mut path = String::new();
        for piece in &self.path {
            match piece {
                PathPiece::Literal(text) => path.push_str(text),
                PathPiece::Param(name) => {
                    let value = args.get(name).map(plain).ok_or_else(|| {
                        ToolError::validation(format!("the path needs `{name}`, which was not given"))
                    })?;
                    path.extend(percent_encoding::utf8_percent_encode(&value, SEGMENT));
                }
            }
        }
        let mut url = self.base_url.clone();
        let joined = format!("{}{}", url.path().trim_end_matches('/'), ensure_slash(&path));
        url.set_path(&joined);
        let mut headers = self.headers.clone();
        let mut body = Map::new();
        let mut query = Vec::new();
        for (name, value) in args {
            match self.places.get(&name).unwrap_or(&self.default_place) {
                Place::Path => {}
                Place::Query => query.push((name, plain(&value))),
                Place::Body => {
                    body.insert(name, value);
                }
                Place::Header(header) => {
                    let value = HeaderValue::from_str(&plain(&value)).map_err(|_| {
                        ToolError::validation(format!("`{name}` cannot be sent in an HTTP header"))
                    })?;
                    headers.insert(header.clone(), value);
                }
            }
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let mut request = self.client.request(self.http_method.clone(), url).headers(headers);
        if !body.is_empty() || self.default_place == Place::Body {
            let bytes = serde_json::to_vec(&Value::Object(body))
                .map_err(|e| ToolError::execution(format!("the request body could not be written: {e}")))?;
            request = request.header(reqwest::header::CONTENT_TYPE, "application/json").body(bytes);
        }
        Ok(request)
    }

    /// The body, at most `max_response_bytes` of it, and how many bytes were cut.
    async fn read_body(&self, mut response: reqwest::Response) -> Result<(Vec<u8>, u64), ToolError> {
        let mut body = Vec::new();
        let mut cut: u64 = 0;
        loop {
            let chunk = response.chunk().await.map_err(|e| self.transport_error(e))?;
            let Some(chunk) = chunk else { break };
            let room = self.max_response_bytes.saturating_sub(body.len());
            let keep = chunk.len().min(room);
            body.extend_from_slice(chunk.get(..keep).unwrap_or(&[]));
            cut += (chunk.len() - keep) as u64;
        }
        Ok((body, cut))
    }

    fn transport_error(&self, error: reqwest::Error) -> ToolError {
        // The method's label names the endpoint; the full URL adds nothing for the model.
        let error = error.without_url();
        if error.is_timeout() {
            ToolError::new(ErrorKind::Timeout, format!("{} did not answer in time", self.label))
        } else {
            ToolError::network(format!("{} failed: {}", self.label, crate::http::error_chain(&error)))
        }
    }

    fn status_error(
        &self,
        status: reqwest::StatusCode,
        body: &[u8],
        retry_after: Option<Duration>,
    ) -> ToolError {
        let kind = match status.as_u16() {
            400 | 422 => ErrorKind::Validation,
            401 | 403 => ErrorKind::Permission,
            404 | 410 => ErrorKind::NotFound,
            408 | 429 | 500..=599 => ErrorKind::Network,
            _ => ErrorKind::Execution,
        };
        let text = String::from_utf8_lossy(body);
        let excerpt: String = text.trim().chars().take(500).collect();
        let mut message = format!("{} answered HTTP {status}", self.label);
        if !excerpt.is_empty() {
            message.push_str(": ");
            message.push_str(&excerpt);
        }
        let error = ToolError::new(kind, message);
        match retry_after {
            Some(wait) if kind == ErrorKind::Network => error.with_retry_after(wait),
            _ => error,
        }
    }
}

fn ensure_slash(path: &str) -> String {
    if path.is_empty() || path.starts_with('/') { path.to_string() } else { format!("/{path}") }
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    crate::http::retry_after_from_headers(header("retry-after-ms"), header("retry-after"), SystemTime::now())
}

/// What must be escaped inside one path segment.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
