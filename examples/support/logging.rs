//! Logs for the examples: `RUST_LOG=info cargo run --example NAME` shows each tool call
//! (INFO: tool, status, duration; WARN: failures with their text), `RUST_LOG=debug` the
//! parser's findings too. Without `RUST_LOG` only errors are shown. Logs go to stderr.

/// Installs a `tracing` subscriber filtered by `RUST_LOG`.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}
