//! What both fuzz targets read from their input the same way.

use tool_calling::protocol::vcp::{RequestIdStyle, VcpLimits, VcpOptions};

/// The longest valid UTF-8 prefix of `bytes`.
pub fn utf8_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => match std::str::from_utf8(&bytes[..e.valid_up_to()]) {
            Ok(text) => text,
            Err(_) => unreachable!("a prefix up to valid_up_to() is valid UTF-8"),
        },
    }
}

/// Parser options from the low four bits of `bits` (bit 0 `fuzzy_markers`, bit 1
/// `skip_fenced`, bit 2 `keep_reasoning`, bit 3 small limits), with sequential ids so
/// that outcomes compare.
pub fn options(bits: u8) -> VcpOptions {
    let options = VcpOptions::default()
        .fuzzy_markers(bits & 0b001 != 0)
        .skip_fenced(bits & 0b010 != 0)
        .keep_reasoning(bits & 0b100 != 0)
        .request_ids(RequestIdStyle::Sequential);
    // Bit 3: limits small enough for fuzzed inputs to cross every one of them.
    if bits & 0b1000 != 0 {
        options.limits(
            VcpLimits::default().max_requests(2).max_fields(3).max_value_bytes(16).max_reply_bytes(300),
        )
    } else {
        options
    }
}
