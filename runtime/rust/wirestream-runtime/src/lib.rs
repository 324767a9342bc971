//! Support for the Rust codecs wirestream generates (one crate per protocol version,
//! `generated/rust/`): what every codec needs and no IDL decides.
//!
//! The codecs own their error type (`ProtocolError`, one small `Copy` enum per protocol,
//! with Python's class names); this crate reports the few failures it can meet as
//! [`SplitError`], which each codec converts into its own.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

use alloc::vec::Vec;

pub mod machine;

/// Why a variable-length integer cannot be read: the codecs turn each into the error of
/// Python's class of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarError {
    /// The input ends inside the integer; `needed`: the length the input needs at least.
    Truncated {
        /// The length the input needs at least.
        needed: u64,
    },
    /// Not the shortest form of its value.
    NonCanonical,
    /// Longer than the flavour allows, or a value beyond 64 bits.
    InvalidValue,
}

fn short(pos: usize) -> VarError {
    VarError::Truncated {
        needed: pos as u64 + 1,
    }
}

/// An unsigned LEB128 varint (protobuf) at `data[pos..end]`: the value and the position
/// after it. At most 10 bytes, at most 64 bits, and no trailing `0x00` group.
///
/// ```
/// use wirestream_runtime::{read_varint, VarError};
/// assert_eq!(read_varint(&[0xAC, 0x02], 0, 2), Ok((300, 2)));
/// assert_eq!(read_varint(&[0x80, 0x00], 0, 2), Err(VarError::NonCanonical));
/// assert_eq!(read_varint(&[0x80], 0, 1), Err(VarError::Truncated { needed: 2 }));
/// ```
pub fn read_varint(data: &[u8], mut pos: usize, end: usize) -> Result<(u64, usize), VarError> {
    let mut value: u128 = 0;
    let mut shift = 0u32;
    loop {
        if pos >= end {
            return Err(short(pos));
        }
        let byte = data[pos];
        pos += 1;
        value |= u128::from(byte & 0x7F) << shift;
        if byte < 0x80 {
            if value > u128::from(u64::MAX) {
                return Err(VarError::InvalidValue);
            }
            if byte == 0 && shift > 0 {
                return Err(VarError::NonCanonical);
            }
            return Ok((value as u64, pos));
        }
        shift += 7;
        if shift >= 70 {
            return Err(VarError::InvalidValue);
        }
    }
}

/// A zigzag-mapped signed 64-bit value (protobuf sint64) in a canonical varint.
pub fn read_zigzag(data: &[u8], pos: usize, end: usize) -> Result<(i64, usize), VarError> {
    let (raw, next) = read_varint(data, pos, end)?;
    Ok((((raw >> 1) as i64) ^ -((raw & 1) as i64), next))
}

const VARU64_MIN: [u64; 9] = [
    0,
    248,
    1 << 8,
    1 << 16,
    1 << 24,
    1 << 32,
    1 << 40,
    1 << 48,
    1 << 56,
];

/// A canonical VarU64 (first byte < 248: the value; 248..=255: 1..=8 big-endian bytes).
///
/// ```
/// use wirestream_runtime::{read_varu64, VarError};
/// assert_eq!(read_varu64(&[0xF8, 0xF8], 0, 2), Ok((248, 2)));
/// assert_eq!(read_varu64(&[0xF8, 0x05], 0, 2), Err(VarError::NonCanonical));
/// ```
pub fn read_varu64(data: &[u8], pos: usize, end: usize) -> Result<(u64, usize), VarError> {
    if pos >= end {
        return Err(short(pos));
    }
    let first = data[pos];
    if first < 248 {
        return Ok((u64::from(first), pos + 1));
    }
    let size = usize::from(first - 247);
    let stop = pos + 1 + size;
    if stop > end {
        return Err(VarError::Truncated {
            needed: stop as u64,
        });
    }
    let value = data[pos + 1..stop]
        .iter()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    if value < VARU64_MIN[size] {
        return Err(VarError::NonCanonical);
    }
    Ok((value, stop))
}

/// Values an MQTT Variable Byte Integer can hold.
pub const VBI_MAX: u32 = 268_435_455;

/// An MQTT 5 Variable Byte Integer: 7 bits a byte, least significant first, at most four
/// bytes, shortest form only.
///
/// ```
/// use wirestream_runtime::{read_vbi, VarError};
/// assert_eq!(read_vbi(&[0xC1, 0x02], 0, 2), Ok((321, 2)));
/// assert_eq!(read_vbi(&[0x80, 0x00], 0, 2), Err(VarError::NonCanonical));
/// ```
pub fn read_vbi(data: &[u8], mut pos: usize, end: usize) -> Result<(u32, usize), VarError> {
    let mut value = 0u32;
    for index in 0..4 {
        if pos >= end {
            return Err(short(pos));
        }
        let byte = data[pos];
        pos += 1;
        value |= u32::from(byte & 0x7F) << (7 * index);
        if byte < 0x80 {
            if byte == 0 && index > 0 {
                return Err(VarError::NonCanonical);
            }
            return Ok((value, pos));
        }
    }
    Err(VarError::InvalidValue)
}

/// Append `value` as an unsigned LEB128 varint.
pub fn write_varint(w: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        w.push((value as u8 & 0x7F) | 0x80);
        value >>= 7;
    }
    w.push(value as u8);
}

/// Append `value` as a zigzag-mapped varint.
pub fn write_zigzag(w: &mut Vec<u8>, value: i64) {
    write_varint(w, ((value << 1) ^ (value >> 63)) as u64);
}

/// Append `value` as a canonical VarU64.
///
/// ```
/// let mut w = Vec::new();
/// wirestream_runtime::write_varu64(&mut w, 300);
/// assert_eq!(w, [0xF9, 0x01, 0x2C]);
/// ```
pub fn write_varu64(w: &mut Vec<u8>, value: u64) {
    if value < 248 {
        w.push(value as u8);
        return;
    }
    let size = 8 - (value.leading_zeros() / 8) as usize;
    w.push(247 + size as u8);
    w.extend_from_slice(&value.to_be_bytes()[8 - size..]);
}

/// Append `value` as an MQTT Variable Byte Integer; `false` (nothing written) when it
/// exceeds [`VBI_MAX`].
pub fn write_vbi(w: &mut Vec<u8>, mut value: u32) -> bool {
    if value > VBI_MAX {
        return false;
    }
    while value >= 0x80 {
        w.push((value as u8 & 0x7F) | 0x80);
        value >>= 7;
    }
    w.push(value as u8);
    true
}

/// A MySQL length-encoded integer at `data[pos..end]`, or `None` for its NULL (`0xFB`): the
/// value and the position after it. A first byte below `0xFB` is the value; `0xFC`, `0xFD`
/// and `0xFE` announce 2, 3 and 8 little-endian bytes, which must hold a value the shorter
/// forms cannot (shortest form only); `0xFF` is no valid first byte.
///
/// ```
/// use wirestream_runtime::{read_lenenc_or_null, VarError};
/// assert_eq!(read_lenenc_or_null(&[0xFC, 0xFB, 0x00], 0, 3), Ok((Some(251), 3)));
/// assert_eq!(read_lenenc_or_null(&[0xFB], 0, 1), Ok((None, 1)));
/// assert_eq!(read_lenenc_or_null(&[0xFC, 0x05, 0x00], 0, 3), Err(VarError::NonCanonical));
/// assert_eq!(read_lenenc_or_null(&[0xFD, 0x00], 0, 2), Err(VarError::Truncated { needed: 4 }));
/// ```
pub fn read_lenenc_or_null(
    data: &[u8],
    pos: usize,
    end: usize,
) -> Result<(Option<u64>, usize), VarError> {
    if pos >= end {
        return Err(short(pos));
    }
    let first = data[pos];
    let (size, least): (usize, u64) = match first {
        0..=0xFA => return Ok((Some(u64::from(first)), pos + 1)),
        0xFB => return Ok((None, pos + 1)),
        0xFC => (2, 0xFB),
        0xFD => (3, 1 << 16),
        0xFE => (8, 1 << 24),
        0xFF => return Err(VarError::InvalidValue),
    };
    if end - pos - 1 < size {
        return Err(VarError::Truncated {
            needed: (pos + 1 + size) as u64,
        });
    }
    let stop = pos + 1 + size;
    let value = data[pos + 1..stop]
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    if value < least {
        return Err(VarError::NonCanonical);
    }
    Ok((Some(value), stop))
}

/// A MySQL length-encoded integer where NULL (`0xFB`) is not allowed (`InvalidValue`).
///
/// ```
/// use wirestream_runtime::{read_lenenc, VarError};
/// assert_eq!(read_lenenc(&[0xFD, 0x00, 0x00, 0x01], 0, 4), Ok((1 << 16, 4)));
/// assert_eq!(read_lenenc(&[0xFB], 0, 1), Err(VarError::InvalidValue));
/// assert_eq!(read_lenenc(&[0xFF], 0, 1), Err(VarError::InvalidValue));
/// ```
pub fn read_lenenc(data: &[u8], pos: usize, end: usize) -> Result<(u64, usize), VarError> {
    match read_lenenc_or_null(data, pos, end)? {
        (Some(value), next) => Ok((value, next)),
        (None, _) => Err(VarError::InvalidValue),
    }
}

/// Append `value` as a MySQL length-encoded integer, in its shortest form.
///
/// ```
/// let mut w = Vec::new();
/// wirestream_runtime::write_lenenc(&mut w, 251);
/// assert_eq!(w, [0xFC, 0xFB, 0x00]);
/// ```
pub fn write_lenenc(w: &mut Vec<u8>, value: u64) {
    let bytes = value.to_le_bytes();
    if value < 0xFB {
        w.push(value as u8);
    } else if value < 1 << 16 {
        w.push(0xFC);
        w.extend_from_slice(&bytes[..2]);
    } else if value < 1 << 24 {
        w.push(0xFD);
        w.extend_from_slice(&bytes[..3]);
    } else {
        w.push(0xFE);
        w.extend_from_slice(&bytes);
    }
}

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
    fn variable_length_integers_round_trip() {
        for value in [
            0u64,
            1,
            127,
            128,
            247,
            248,
            255,
            256,
            300,
            1 << 32,
            u64::MAX,
        ] {
            let mut w = Vec::new();
            write_varint(&mut w, value);
            assert_eq!(read_varint(&w, 0, w.len()), Ok((value, w.len())));
            let mut w = Vec::new();
            write_varu64(&mut w, value);
            assert_eq!(read_varu64(&w, 0, w.len()), Ok((value, w.len())));
            let mut w = Vec::new();
            write_lenenc(&mut w, value);
            assert_eq!(read_lenenc(&w, 0, w.len()), Ok((value, w.len())));
        }
        for value in [0i64, -1, 1, i64::MIN, i64::MAX] {
            let mut w = Vec::new();
            write_zigzag(&mut w, value);
            assert_eq!(read_zigzag(&w, 0, w.len()), Ok((value, w.len())));
        }
        for value in [0u32, 127, 128, 16_383, 16_384, VBI_MAX] {
            let mut w = Vec::new();
            assert!(write_vbi(&mut w, value));
            assert_eq!(read_vbi(&w, 0, w.len()), Ok((value, w.len())));
        }
        assert!(!write_vbi(&mut Vec::new(), VBI_MAX + 1));
        // eleven bytes, and a value beyond 64 bits
        assert_eq!(read_varint(&[0xFF; 11], 0, 11), Err(VarError::InvalidValue));
        let beyond = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02];
        assert_eq!(read_varint(&beyond, 0, 10), Err(VarError::InvalidValue));
        assert_eq!(read_vbi(&[0xFF; 5], 0, 5), Err(VarError::InvalidValue));
        assert_eq!(
            read_varu64(&[0xFF, 0], 0, 2),
            Err(VarError::Truncated { needed: 9 })
        );
    }

    #[test]
    fn length_encoded_integers_are_canonical() {
        for (value, size) in [
            (0xFAu64, 1),
            (0xFB, 3),
            (0xFFFF, 3),
            (1 << 16, 4),
            ((1 << 24) - 1, 4),
            (1 << 24, 9),
        ] {
            let mut w = Vec::new();
            write_lenenc(&mut w, value);
            assert_eq!(w.len(), size, "{value}");
        }
        // each longer form of a value a shorter one holds
        assert_eq!(
            read_lenenc(&[0xFC, 0xFA, 0], 0, 3),
            Err(VarError::NonCanonical)
        );
        assert_eq!(
            read_lenenc(&[0xFD, 0xFF, 0xFF, 0], 0, 4),
            Err(VarError::NonCanonical)
        );
        let long = [0xFE, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0];
        assert_eq!(read_lenenc(&long, 0, 9), Err(VarError::NonCanonical));
        assert_eq!(
            read_lenenc(&[0xFE, 0, 0], 0, 3),
            Err(VarError::Truncated { needed: 9 })
        );
        assert_eq!(
            read_lenenc(&[], 0, 0),
            Err(VarError::Truncated { needed: 1 })
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
