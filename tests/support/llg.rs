//! llguidance, the grammar engine vLLM and SGLang run, driven one byte at a time: a
//! byte-level tokenizer (every token is one byte), so that "which next bytes may the
//! model write" is exactly the engine's token mask.
//!
//! GBNF goes through llguidance's own GBNF reader, which is Python (`llguidance` on PyPI,
//! the same version as the crate): the first use creates a virtual environment under the
//! target directory and installs it there.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::ApproximateTokEnv;
use llguidance::{Matcher, ParserFactory};
use tool_calling::grammar::{Dialect, Grammar};

/// The version of the PyPI package, the same as the crate's.
const LLGUIDANCE_PY: &str = "llguidance==1.9.1";

fn factory() -> &'static Arc<ParserFactory> {
    static FACTORY: OnceLock<Arc<ParserFactory>> = OnceLock::new();
    FACTORY.get_or_init(|| {
        let env = ApproximateTokEnv::single_byte_env();
        let mut factory = ParserFactory::new_simple(&env).expect("a byte-level parser factory");
        factory.quiet();
        Arc::new(factory)
    })
}

/// A compiled grammar's matcher, at the start of the text.
pub struct Engine {
    matcher: Matcher,
}

/// Compiles `grammar` (Lark, GBNF, JSON Schema or a structural tag) as a serving engine
/// would; an error or a warning from the engine is an error here.
pub fn compile(grammar: &Grammar) -> Result<Engine, String> {
    let top = match grammar.dialect() {
        Dialect::Lark => TopLevelGrammar::from_lark(grammar.text().to_string()),
        Dialect::Gbnf => python_grammar("gbnf", grammar.text())?,
        Dialect::JsonSchema => TopLevelGrammar::from_json_schema(
            serde_json::from_str(grammar.text()).map_err(|e| e.to_string())?,
        ),
        Dialect::StructuralTag => python_grammar("structural-tag", grammar.text())?,
        other => return Err(format!("no engine for {other}")),
    };
    let mut matcher = Matcher::new(factory().create_parser(top));
    if let Some(error) = matcher.get_error() {
        return Err(error);
    }
    let warnings = matcher.grammar_warnings();
    if !warnings.is_empty() {
        return Err(format!("grammar warnings: {warnings:?}"));
    }
    Ok(Engine { matcher })
}

impl Engine {
    /// A copy at the same point.
    pub fn fork(&self) -> Engine {
        Engine { matcher: self.matcher.deep_clone() }
    }

    /// The bytes the grammar allows next.
    pub fn allowed(&mut self) -> Vec<u8> {
        match self.matcher.compute_mask() {
            Ok(mask) => (0u32..256).filter(|&b| mask.is_allowed(b)).map(|b| b as u8).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Consumes `bytes` one at a time; `Err(i)` at the first byte the grammar forbids.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), usize> {
        let tokens: Vec<u32> = bytes.iter().map(|&b| u32::from(b)).collect();
        let valid = self.matcher.validate_tokens(&tokens).map_err(|_| 0usize)?;
        self.matcher.consume_tokens(&tokens[..valid]).map_err(|_| 0usize)?;
        if valid < tokens.len() { Err(valid) } else { Ok(()) }
    }

    /// Whether the text so far is a whole sentence of the grammar.
    pub fn accepting(&mut self) -> bool {
        self.matcher.is_accepting().unwrap_or(false)
    }
}

/// [`compile`], once per grammar: later calls fork the compiled matcher (the tests ask
/// the same grammar about many texts).
fn compiled(grammar: &Grammar) -> Result<Engine, String> {
    static CACHE: OnceLock<Mutex<HashMap<(Dialect, String), Engine>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (grammar.dialect(), grammar.text().to_string());
    if let Some(engine) = cache.lock().unwrap().get(&key) {
        return Ok(engine.fork());
    }
    let engine = compile(grammar)?;
    let fork = engine.fork();
    cache.lock().unwrap().insert(key, engine);
    Ok(fork)
}

/// Whether the grammar admits exactly `text` (every byte allowed, and accepting at the
/// end); `Err` says where it stopped.
pub fn admits(grammar: &Grammar, text: &str) -> Result<(), String> {
    let mut engine = compiled(grammar)?;
    match engine.feed(text.as_bytes()) {
        Err(at) => {
            Err(format!("rejected at byte {at}: after {:?}", String::from_utf8_lossy(&text.as_bytes()[..at])))
        }
        Ok(()) if !engine.accepting() => Err("every byte allowed, but the text is not complete".into()),
        Ok(()) => Ok(()),
    }
}

/// The Python interpreter of the virtual environment that holds `llguidance`, made on
/// first use.
fn python() -> Result<PathBuf, String> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("llguidance-venv");
            let python = venv.join("bin").join("python");
            let ready = |python: &PathBuf| {
                Command::new(python)
                    .args([
                        "-c",
                        "import llguidance, sys; sys.exit(0 if llguidance.__version__ == '1.9.1' else 1)",
                    ])
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if ready(&python) {
                return Ok(python);
            }
            let run = |cmd: &mut Command| -> Result<(), String> {
                let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
                if out.status.success() {
                    Ok(())
                } else {
                    Err(format!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr)))
                }
            };
            run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
            run(Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                LLGUIDANCE_PY,
            ]))?;
            if ready(&python) { Ok(python) } else { Err(format!("{LLGUIDANCE_PY} did not install")) }
        })
        .clone()
}

/// The converter: one Python process, started on first use, that turns each GBNF
/// grammar or structural tag it is sent into llguidance's grammar (a process per grammar
/// spent most of this file's time starting Python). A request is a line with the kind
/// and the text's length in bytes, then the text; an answer is a line `ok N` or `err N`,
/// then N bytes.
struct Converter {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

const CONVERTER: &str = r#"
import json, sys
import llguidance
inp, out = sys.stdin.buffer, sys.stdout.buffer
while True:
    head = inp.readline().split()
    if len(head) != 2:
        break
    kind, text = head[0].decode(), inp.read(int(head[1])).decode()
    try:
        if kind == "gbnf":
            answer, status = llguidance.grammar_from("gbnf", text), "ok"
        else:
            tag = json.loads(text)
            tags = [llguidance.StructTag(trigger=t, begin=s["begin"], grammar=s["schema"], end=s["end"])
                    for s in tag["structures"] for t in tag["triggers"] if s["begin"].startswith(t)]
            answer, status = llguidance.StructTag.to_grammar(tags, assume_special=False), "ok"
    except Exception as e:
        answer, status = repr(e), "err"
    data = str(answer).encode()
    out.write(f"{status} {len(data)}\n".encode())
    out.write(data)
    out.flush()
"#;

impl Converter {
    fn start() -> Result<Converter, String> {
        let mut child = Command::new(python()?)
            .args(["-c", CONVERTER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Converter { child, stdin, stdout })
    }

    /// `text` (a grammar of `kind`) in llguidance's terms, or the reader's error; the
    /// outer `Err` when the converter itself broke down.
    fn convert(&mut self, kind: &str, text: &str) -> Result<Result<String, String>, String> {
        use std::io::{BufRead, Read, Write};
        let io = |e: std::io::Error| format!("llguidance's {kind} reader: {e}");
        writeln!(self.stdin, "{kind} {}", text.len()).map_err(io)?;
        self.stdin.write_all(text.as_bytes()).map_err(io)?;
        self.stdin.flush().map_err(io)?;
        let mut head = String::new();
        self.stdout.read_line(&mut head).map_err(io)?;
        let (status, len) =
            head.trim().split_once(' ').ok_or(format!("llguidance's {kind} reader stopped"))?;
        let mut data = vec![0; len.parse().map_err(|_| format!("a bad answer: {head}"))?];
        self.stdout.read_exact(&mut data).map_err(io)?;
        let data = String::from_utf8_lossy(&data).trim().to_string();
        Ok(if status == "ok" { Ok(data) } else { Err(format!("llguidance's {kind} reader: {data}")) })
    }
}

impl Drop for Converter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A GBNF grammar or a structural tag turned into llguidance's grammar by the Python
/// package's own readers (`grammar_from("gbnf", …)`, `StructTag.to_grammar`), cached.
fn python_grammar(kind: &str, text: &str) -> Result<TopLevelGrammar, String> {
    static CACHE: OnceLock<Mutex<HashMap<(String, String), String>>> = OnceLock::new();
    static CONVERTER: OnceLock<Mutex<Option<Converter>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (kind.to_string(), text.to_string());
    let cached = cache.lock().unwrap().get(&key).cloned();
    let converted = match cached {
        Some(converted) => converted,
        None => {
            let mut converter =
                CONVERTER.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
            if converter.is_none() {
                *converter = Some(Converter::start()?);
            }
            let answer = converter.as_mut().map_or(Err("no converter".into()), |c| c.convert(kind, text));
            if answer.is_err() {
                // A converter that broke down is started again for the next grammar.
                *converter = None;
            }
            let converted = answer??;
            cache.lock().unwrap().insert(key, converted.clone());
            converted
        }
    };
    if converted.trim_start().starts_with('{') {
        serde_json::from_str(&converted).map_err(|e| format!("{e}: {converted}"))
    } else {
        Ok(TopLevelGrammar::from_lark(converted))
    }
}
