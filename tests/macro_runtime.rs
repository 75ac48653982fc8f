//! How macro-defined methods run and what their returns become: synchronous methods run
//! on Tokio's blocking pool (so they may block without holding up other calls, and their
//! time limit still holds), and a return value is converted by its type, whatever the
//! type is called.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use tool_calling::exec::{ExecutionContext, Executor, ExecutorOptions, ResolvedRequest, ToolRetry};
use tool_calling::tools::{ToolOutput, ToolProvider, ToolRegistry};
use tool_calling::{ErrorKind, ToolError, ToolRequest, tool};

/// An alias of `Result`, as crates define them.
type Outcome<T> = std::result::Result<T, String>;

static FLAKY: AtomicUsize = AtomicUsize::new(0);

/// The two ends of a channel: the sender, and the receiver until someone takes it.
type Channel = (mpsc::Sender<()>, Option<mpsc::Receiver<()>>);

/// A channel a blocking method waits on and an async method signals.
static SIGNAL: Mutex<Option<Channel>> = Mutex::new(None);

/// The channel that keeps `block_stuck` blocked until the test releases it.
static RELEASE: Mutex<Option<mpsc::Receiver<()>>> = Mutex::new(None);

#[derive(Default)]
struct Returns;

/// Methods returning every kind of value.
#[tool(id = "ret", register = false)]
impl Returns {
    /// Through an alias of `Result`.
    #[tool_method]
    fn aliased(&self, fail: bool) -> Outcome<u32> {
        if fail { Err("it failed".into()) } else { Ok(7) }
    }

    /// Through `std::io::Result`.
    #[tool_method]
    fn io(&self) -> std::io::Result<String> {
        Err(std::io::Error::other("disk gone"))
    }

    /// A `ToolError` keeps its kind: this one is retryable.
    #[tool_method]
    fn flaky(&self) -> Result<String, ToolError> {
        if FLAKY.fetch_add(1, Ordering::SeqCst) < 1 {
            Err(ToolError::network("connection reset"))
        } else {
            Ok("second try".into())
        }
    }

    /// A `ToolOutput`, as is.
    #[tool_method]
    fn parts(&self) -> ToolOutput {
        ToolOutput::Json(serde_json::json!({"ok": true}))
    }

    /// Nothing.
    #[tool_method]
    async fn nothing(&self) {}
}

#[derive(Default)]
struct Blocking;

/// A blocking method and its partner.
#[tool(id = "block", register = false)]
impl Blocking {
    /// Blocks its thread until `signal` runs.
    #[tool_method]
    fn wait(&self) -> String {
        let receiver = SIGNAL.lock().unwrap().as_mut().and_then(|(_, r)| r.take());
        match receiver.map(|r| r.recv_timeout(Duration::from_secs(5))) {
            Some(Ok(())) => "signalled".into(),
            _ => "no signal: the method blocked the only runtime thread".into(),
        }
    }

    /// Signals `wait`.
    #[tool_method]
    async fn signal(&self) -> String {
        if let Some((sender, _)) = SIGNAL.lock().unwrap().as_ref() {
            let _ = sender.send(());
        }
        "sent".into()
    }

    /// Blocks until the test releases it, far past its limit.
    #[tool_method(timeout_ms = 50)]
    fn stuck(&self) -> String {
        let receiver = RELEASE.lock().unwrap().take();
        let _ = receiver.map(|r| r.recv_timeout(Duration::from_secs(10)));
        "released".into()
    }
}

fn executor() -> Executor {
    let registry = ToolRegistry::new();
    registry.register(Returns::tool_spec()).unwrap();
    registry.register(Blocking::tool_spec()).unwrap();
    Executor::new(Arc::new(registry))
}

async fn run(executor: &Executor, names: &[(&str, &[(&str, bool)])]) -> Vec<(Option<ErrorKind>, String)> {
    let requests: Vec<ToolRequest> = names
        .iter()
        .map(|(name, args)| args.iter().fold(ToolRequest::new(*name, *name), |r, (k, v)| r.with_arg(*k, *v)))
        .collect();
    let planned = requests.iter().map(ResolvedRequest::exact).collect();
    executor
        .execute(planned, &ExecutionContext::default())
        .await
        .into_iter()
        .map(|r| (r.error_kind, r.result))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn return_values_are_converted_by_type_so_result_aliases_work() {
    let results = run(
        &executor(),
        &[
            ("ret_aliased", &[("fail", false)]),
            ("ret_aliased", &[("fail", true)]),
            ("ret_io", &[]),
            ("ret_parts", &[]),
            ("ret_nothing", &[]),
        ],
    )
    .await;
    assert_eq!(results[0], (None, "7".to_string()));
    assert_eq!(results[1], (Some(ErrorKind::Execution), "it failed".to_string()));
    assert_eq!(results[2], (Some(ErrorKind::Execution), "disk gone".to_string()));
    assert_eq!(results[3], (None, r#"{"ok":true}"#.to_string()));
    assert_eq!(results[4], (None, String::new()));
}

#[tokio::test(start_paused = true)]
async fn a_tool_error_keeps_its_kind_so_network_errors_are_retried() {
    let mut options = ExecutorOptions::default();
    options.retry = ToolRetry::new(2, Duration::from_millis(10));
    let executor = executor().with_options(options);
    let results = run(&executor, &[("ret_flaky", &[])]).await;
    assert_eq!(results[0], (None, "second try".to_string()));
    assert_eq!(FLAKY.load(Ordering::SeqCst), 2);
}

#[test]
fn synchronous_methods_run_on_the_blocking_pool() {
    // One runtime thread: were `wait` run on it, `signal` could never run while `wait`
    // blocks, and `wait` would give up.
    let (sender, receiver) = mpsc::channel();
    *SIGNAL.lock().unwrap() = Some((sender, Some(receiver)));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let results = runtime.block_on(run(&executor(), &[("block_wait", &[]), ("block_signal", &[])]));
    assert_eq!(results[0], (None, "signalled".to_string()));
    assert_eq!(results[1], (None, "sent".to_string()));
}

#[test]
fn the_time_limit_holds_for_a_blocking_method() {
    // `stuck` returns only once released, and it is released only after the executor
    // has answered: a timeout proves the executor did not wait for it.
    let (release, receiver) = mpsc::channel();
    *RELEASE.lock().unwrap() = Some(receiver);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let results = runtime.block_on(run(&executor(), &[("block_stuck", &[])]));
    let _ = release.send(());
    assert_eq!(results[0].0, Some(ErrorKind::Timeout), "{}", results[0].1);
    assert!(results[0].1.contains("within 50 ms"), "{}", results[0].1);
}
