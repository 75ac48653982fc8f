//! Nothing: this package holds the benchmarks (see `Cargo.toml`).
