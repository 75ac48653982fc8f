//! A reply cut into chunks as a stream delivers it.

/// `text` in chunks of `size` bytes (at least 1), each cut moved forward to the next
/// character boundary, so that a chunk may be longer than `size` but never splits a
/// character.
pub fn char_chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let size = size.max(1);
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (chunk, tail) = rest.split_at(cut);
        rest = tail;
        Some(chunk)
    })
}
