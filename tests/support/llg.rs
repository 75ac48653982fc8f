//! llguidance, the grammar engine vLLM and SGLang run, driven one byte at a time: a
//! byte-level tokenizer (every token is one byte), so that "which next bytes may the
//! model write" is exactly the engine's token mask.
//!
//! GBNF goes through llguidance's own GBNF reader, which is Python (`llguidance` on PyPI,
//! the same version as the crate), and so do structural tags: the first use creates a
//! virtual environment under the target directory and installs it there, and one Python
//! process converts every such grammar of the test binary.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
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
/// would; an error or a warning from the engine is an error here. Each grammar is
/// compiled once per test binary: the tests that use the same one get a fresh copy of
/// the compiled engine.
pub fn compile(grammar: &Grammar) -> Result<Engine, String> {
    type Compiled = Arc<OnceLock<Result<Engine, String>>>;
    static COMPILED: OnceLock<Mutex<HashMap<(String, String), Compiled>>> = OnceLock::new();
    let key = (grammar.dialect().to_string(), grammar.text().to_string());
    let slot = COMPILED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(key)
        .or_default()
        .clone();
    // (Outside the map's lock: two tests compile two grammars at once.)
    match slot.get_or_init(|| compile_once(grammar)) {
        Ok(engine) => Ok(engine.fork()),
        Err(e) => Err(e.clone()),
    }
}

fn compile_once(grammar: &Grammar) -> Result<Engine, String> {
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
    /// A copy at the same point. Copies share the lexer's automaton, which the engine
    /// builds as text is fed (behind a lock): what one copy learns, the others reuse, as
    /// forks of one request do in a serving engine.
    pub fn fork(&self) -> Engine {
        Engine { matcher: self.matcher.clone() }
    }

    /// The bytes the grammar allows next.
    pub fn allowed(&mut self) -> Vec<u8> {
        match self.matcher.compute_mask() {
            Ok(mask) => (0u32..256).filter(|&b| mask.is_allowed(b)).map(|b| b as u8).collect(),
            Err(e) => {
                if std::env::var("WALK_DEBUG").is_ok() {
                    eprintln!("mask: {e}");
                }
                Vec::new()
            }
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

/// Whether the grammar admits exactly `text` (every byte allowed, and accepting at the
/// end); `Err` says where it stopped.
pub fn admits(grammar: &Grammar, text: &str) -> Result<(), String> {
    compile(grammar)?.admits(text)
}

impl Engine {
    /// Whether the grammar admits exactly `text` from here, as [`admits`] does (the
    /// engine, compiled once, stays where it is).
    pub fn admits(&self, text: &str) -> Result<(), String> {
        let mut engine = self.fork();
        match engine.feed(text.as_bytes()) {
            Err(at) => Err(format!(
                "rejected at byte {at}: after {:?}",
                String::from_utf8_lossy(&text.as_bytes()[..at])
            )),
            Ok(()) if !engine.accepting() => Err("every byte allowed, but the text is not complete".into()),
            Ok(()) => Ok(()),
        }
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

/// The script of the conversion worker: one request a line (`{"kind", "text"}`), one
/// answer a line (`{"ok": converted}` or `{"error": message}`).
const WORKER: &str = r#"
import json, sys
import llguidance
for line in sys.stdin:
    request = json.loads(line)
    try:
        if request["kind"] == "gbnf":
            out = llguidance.grammar_from("gbnf", request["text"])
        else:
            tag = json.loads(request["text"])
            tags = [llguidance.StructTag(trigger=t, begin=s["begin"], grammar=s["schema"], end=s["end"])
                    for s in tag["structures"] for t in tag["triggers"] if s["begin"].startswith(t)]
            out = llguidance.StructTag.to_grammar(tags, assume_special=False)
        answer = {"ok": str(out)}
    except Exception as e:
        answer = {"error": f"{type(e).__name__}: {e}"}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
"#;

/// The running conversion worker: one Python process for the whole test binary, so that
/// Python and `llguidance` start once, not once per grammar.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Worker {
    fn start() -> Result<Worker, String> {
        let mut child = Command::new(python()?)
            .args(["-c", WORKER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| e.to_string())?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Worker { child, stdin, stdout })
    }

    fn convert(&mut self, kind: &str, text: &str) -> Result<String, String> {
        let request = serde_json::json!({"kind": kind, "text": text}).to_string();
        writeln!(self.stdin, "{request}").and_then(|()| self.stdin.flush()).map_err(|e| e.to_string())?;
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err(format!("the conversion worker stopped: {:?}", self.child.try_wait())),
            Ok(_) => {
                let answer: serde_json::Value =
                    serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
                match (answer["ok"].as_str(), answer["error"].as_str()) {
                    (Some(ok), _) => Ok(ok.trim().to_string()),
                    (None, error) => Err(format!("llguidance's {kind} reader: {}", error.unwrap_or(&line))),
                }
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// A GBNF grammar or a structural tag turned into llguidance's grammar by the Python
/// package's own readers (`grammar_from("gbnf", …)`, `StructTag.to_grammar`).
fn python_grammar(kind: &str, text: &str) -> Result<TopLevelGrammar, String> {
    static WORKER: Mutex<Option<Worker>> = Mutex::new(None);
    let converted = {
        let mut worker = WORKER.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if worker.is_none() {
            *worker = Some(Worker::start()?);
        }
        let result = worker.as_mut().map_or(Err("no worker".into()), |w| w.convert(kind, text));
        // A worker that broke down (not the reader refusing a grammar) is started again
        // for the next grammar.
        if result.as_ref().is_err_and(|e| !e.starts_with("llguidance's")) {
            *worker = None;
        }
        result?
    };
    if converted.trim_start().starts_with('{') {
        serde_json::from_str(&converted).map_err(|e| format!("{e}: {converted}"))
    } else {
        Ok(TopLevelGrammar::from_lark(converted))
    }
}
