//! What the parser benches measure against: the scan floor (a sweep that only finds
//! the format's tokens, which no parser can beat) and runs taken side by side.

use std::hint::black_box;
use std::time::{Duration, Instant};

use memchr::memmem;

/// The scan floor of a reply: one `memchr::memmem` sweep for every `first` token and one
/// for every `second`, and nothing else. Any parser has to find at least these, so none
/// can be faster.
pub struct ScanFloor {
    first: memmem::Finder<'static>,
    second: memmem::Finder<'static>,
}

impl ScanFloor {
    pub fn new(first: &'static str, second: &'static str) -> Self {
        ScanFloor { first: memmem::Finder::new(first), second: memmem::Finder::new(second) }
    }

    /// How many tokens `text` holds.
    pub fn scan(&self, text: &str) -> usize {
        let (first, second) = self.counts(text);
        first + second
    }

    /// How many `first` and how many `second` tokens `text` holds.
    pub fn counts(&self, text: &str) -> (usize, usize) {
        (self.first.find_iter(text.as_bytes()).count(), self.second.find_iter(text.as_bytes()).count())
    }
}

/// The fastest of `ROUNDS` runs of each of `runs`, taken in turn so that all see the
/// machine at the same speed, as MB/s of `bytes`.
pub fn alternating(bytes: usize, runs: &[&dyn Fn() -> usize]) -> Vec<f64> {
    const ROUNDS: usize = 15;
    let mut best = vec![Duration::MAX; runs.len()];
    for _ in 0..ROUNDS {
        for (run, best) in runs.iter().zip(&mut best) {
            let start = Instant::now();
            black_box(run());
            *best = (*best).min(start.elapsed());
        }
    }
    best.iter().map(|t| bytes as f64 / t.as_secs_f64() / 1e6).collect()
}
