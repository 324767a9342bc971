//! Support for the Rust codecs wirestream generates (one crate per protocol version,
//! `generated/rust/`): what every codec needs and no IDL decides.
//!
//! The codecs own their error type (`ProtocolError`, one small `Copy` enum per protocol,
//! with Python's class names); this crate reports the few failures it can meet as
//! [`SplitError`], which each codec converts into its own.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

/// Why a byte stream cannot be split into frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitError {
    /// A length prefix announces a frame larger than the limit (Python's `FrameTooLarge`).
    FrameTooLarge {
        /// The announced size in bytes.
        size: u64,
    },
}

/// The next frame of a byte stream whose frames are behind a big-endian length prefix of
/// `prefix` bytes (1 to 8): `Ok(Some((start, end)))` when `buf[start..end]` is a whole
/// frame (without its prefix; `end` is also the bytes to consume), `Ok(None)` when `buf`
/// holds only part of one, and an error when the prefix announces more than `max` bytes.
///
/// ```
/// use wirestream_runtime::split_length_prefixed;
/// assert_eq!(split_length_prefixed(&[0, 0, 2, 7, 8, 9], 3, 100), Ok(Some((3, 5))));
/// assert_eq!(split_length_prefixed(&[0, 0, 2, 7], 3, 100), Ok(None));
/// assert!(split_length_prefixed(&[0, 1, 0], 3, 100).is_err());
/// ```
pub fn split_length_prefixed(
    buf: &[u8],
    prefix: usize,
    max: u64,
) -> Result<Option<(usize, usize)>, SplitError> {
    let Some(head) = buf.get(..prefix) else {
        return Ok(None);
    };
    let size = head.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    if size > max {
        return Err(SplitError::FrameTooLarge { size });
    }
    // size <= max, and a buffer holds fewer than usize::MAX bytes: compare in u64
    if ((buf.len() - prefix) as u64) < size {
        return Ok(None);
    }
    Ok(Some((prefix, prefix + size as usize)))
}

/// `size` as a big-endian prefix of `prefix` bytes, or `None` when it does not fit.
///
/// ```
/// assert_eq!(wirestream_runtime::length_prefix(258, 3), Some([0, 1, 2, 0, 0, 0, 0, 0]));
/// assert_eq!(wirestream_runtime::length_prefix(1 << 24, 3), None);
/// ```
pub fn length_prefix(size: usize, prefix: usize) -> Option<[u8; 8]> {
    let size = size as u64;
    if prefix < 8 && size >> (8 * prefix) != 0 {
        return None;
    }
    let mut out = [0u8; 8];
    let bytes = size.to_be_bytes();
    out[..prefix].copy_from_slice(&bytes[8 - prefix..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_waits() {
        let stream = [0u8, 0, 1, 0xAA, 0, 0, 0, 0, 0];
        assert_eq!(split_length_prefixed(&stream, 3, 10), Ok(Some((3, 4))));
        assert_eq!(split_length_prefixed(&stream[4..], 3, 10), Ok(Some((3, 3))));
        assert_eq!(split_length_prefixed(&stream[..2], 3, 10), Ok(None));
        assert_eq!(
            split_length_prefixed(&[0xFF, 0xFF, 0xFF], 3, 10),
            Err(SplitError::FrameTooLarge { size: 0xFF_FFFF })
        );
    }

    #[test]
    fn prefixes() {
        assert_eq!(
            length_prefix(0xFF_FFFF, 3),
            Some([0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0])
        );
        assert_eq!(length_prefix(0x100_0000, 3), None);
        assert_eq!(length_prefix(5, 8), Some([0, 0, 0, 0, 0, 0, 0, 5]));
    }
}
