//! Result-set rows to Python values: a PostgreSQL DataRow (`wirestream.runtime.postgresql.rows`)
//! and a MySQL text result-set row (`wirestream.runtime.mysql.rows`), split and converted by
//! column kind in one pass, the hot path of every query that returns rows.
//!
//! This is a fast path, never a judge (as `rabbitmq_chunk`): a message that is not exactly a
//! row of the expected columns (another type byte or first byte, a length that is not the
//! bytes', a count that is not the columns', a negative or overrunning value length, a
//! non-shortest MySQL length, bytes left over) or a value this module does not convert
//! itself exactly as Python would (not plain ASCII digits, not UTF-8, a float spelled other
//! than `[0-9.eE+-]`, a Decimal Python refuses, an unknown kind) gives `None`, and the
//! Python path reads the message again and raises its precise `ProtocolError` or returns its
//! values. So the two paths cannot disagree on an error, and a value handed over here is
//! the one the Python path would hand over (tests/native/test_native_rows.py proves both
//! on corpus and mutated messages).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

/// Column kinds: the values of `wirestream.runtime.postgresql.rows.Kind` (and MySQL's).
const BYTES: u8 = 0; // the value's bytes as they are
const STR: u8 = 1; // UTF-8 text
const INT: u8 = 2; // decimal digits -> int
const FLOAT: u8 = 3; // decimal -> float
const BOOL_TEXT: u8 = 4; // PostgreSQL text bool: "t" / "f"
const DECIMAL: u8 = 5; // decimal.Decimal(text)
const BIN_INT2: u8 = 6; // PostgreSQL binary: big-endian signed, exactly 2/4/8 bytes
const BIN_INT4: u8 = 7;
const BIN_INT8: u8 = 8;
const BIN_FLOAT4: u8 = 9; // big-endian IEEE 754, exactly 4/8 bytes
const BIN_FLOAT8: u8 = 10;
const BIN_BOOL: u8 = 11; // one byte, 0 or 1

static DECIMAL_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `i64` holds every number of up to 18 digits.
const SHORT_DIGITS: usize = 18;

fn int<'py>(py: Python<'py>, raw: &[u8]) -> Option<Bound<'py, PyAny>> {
    let digits = match raw.first()? {
        b'+' | b'-' => &raw[1..],
        _ => raw,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits.len() <= SHORT_DIGITS {
        let mut value: i64 = 0;
        for d in digits {
            value = value * 10 + i64::from(d - b'0');
        }
        if raw[0] == b'-' {
            value = -value;
        }
        return value.into_pyobject(py).ok().map(Bound::into_any);
    }
    // longer: Python's int() of the same text (it bounds the digits itself)
    let text = PyString::new(py, core::str::from_utf8(raw).ok()?);
    py.get_type::<PyInt>().call1((text,)).ok()
}

fn float<'py>(py: Python<'py>, raw: &[u8]) -> Option<Bound<'py, PyAny>> {
    // Only what Python's float() reads the same way; the rest (NaN, Infinity, spaces,
    // underscores, other digits) goes to the Python path.
    if !raw
        .iter()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    let value: f64 = core::str::from_utf8(raw).ok()?.parse().ok()?;
    Some(PyFloat::new(py, value).into_any())
}

fn value<'py>(py: Python<'py>, kind: u8, raw: &[u8]) -> Option<Bound<'py, PyAny>> {
    match kind {
        BYTES => Some(PyBytes::new(py, raw).into_any()),
        STR => Some(PyString::new(py, core::str::from_utf8(raw).ok()?).into_any()),
        INT => int(py, raw),
        FLOAT => float(py, raw),
        BOOL_TEXT => match raw {
            b"t" => Some(PyBool::new(py, true).to_owned().into_any()),
            b"f" => Some(PyBool::new(py, false).to_owned().into_any()),
            _ => None,
        },
        DECIMAL => {
            let text = PyString::new(py, core::str::from_utf8(raw).ok()?);
            let decimal = DECIMAL_TYPE.import(py, "decimal", "Decimal").ok()?;
            decimal.call1((text,)).ok()
        }
        BIN_INT2 => {
            let v = i16::from_be_bytes(raw.try_into().ok()?);
            v.into_pyobject(py).ok().map(Bound::into_any)
        }
        BIN_INT4 => {
            let v = i32::from_be_bytes(raw.try_into().ok()?);
            v.into_pyobject(py).ok().map(Bound::into_any)
        }
        BIN_INT8 => {
            let v = i64::from_be_bytes(raw.try_into().ok()?);
            v.into_pyobject(py).ok().map(Bound::into_any)
        }
        BIN_FLOAT4 => {
            let v = f32::from_be_bytes(raw.try_into().ok()?);
            Some(PyFloat::new(py, f64::from(v)).into_any())
        }
        BIN_FLOAT8 => {
            let v = f64::from_be_bytes(raw.try_into().ok()?);
            Some(PyFloat::new(py, v).into_any())
        }
        BIN_BOOL => match raw {
            [0] => Some(PyBool::new(py, false).to_owned().into_any()),
            [1] => Some(PyBool::new(py, true).to_owned().into_any()),
            _ => None,
        },
        _ => None,
    }
}

fn be_u32(data: &[u8], pos: usize) -> Option<u32> {
    let b = data.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The values of a whole PostgreSQL DataRow message (type byte `D` and length included)
/// converted by `kinds` (one per column), or None: the Python path decides (module comment).
#[pyfunction]
pub fn postgresql_data_row<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    kinds: &[u8],
) -> Option<Bound<'py, PyList>> {
    let data = data.cast::<PyBytes>().ok()?.as_bytes();
    // 'D', Int32 length (itself included), Int16 count
    if data.first() != Some(&b'D') || be_u32(data, 1)? as usize != data.len() - 1 {
        return None;
    }
    let count = data.get(5..7)?;
    if usize::from(u16::from_be_bytes([count[0], count[1]])) != kinds.len() {
        return None; // a negative count reads as >= 0x8000: never a column count
    }
    let mut items: Vec<Bound<'py, PyAny>> = Vec::with_capacity(kinds.len());
    let mut pos = 7usize;
    for &kind in kinds {
        let n = be_u32(data, pos)? as i32;
        pos += 4;
        if n == -1 {
            items.push(py.None().into_bound(py));
            continue;
        }
        let stop = pos.checked_add(usize::try_from(n).ok()?)?;
        items.push(value(py, kind, data.get(pos..stop)?)?);
        pos = stop;
    }
    if pos != data.len() {
        return None;
    }
    PyList::new(py, items).ok()
}

/// A MySQL length-encoded integer at `pos` (NULL, 0xFB, as None inside Some), shortest form
/// only, and the position after it.
fn lenenc(data: &[u8], pos: usize) -> Option<(Option<usize>, usize)> {
    let first = *data.get(pos)?;
    let (size, least) = match first {
        0..=0xFA => return Some((Some(usize::from(first)), pos + 1)),
        0xFB => return Some((None, pos + 1)),
        0xFC => (2, 0xFB),
        0xFD => (3, 1 << 16),
        0xFE => (8, 1 << 24),
        0xFF => return None,
    };
    let bytes = data.get(pos + 1..pos + 1 + size)?;
    let mut value: u64 = 0;
    for (i, b) in bytes.iter().enumerate() {
        value |= u64::from(*b) << (8 * i);
    }
    if value < least {
        return None;
    }
    Some((Some(usize::try_from(value).ok()?), pos + 1 + size))
}

/// The values of a whole MySQL text result-set row packet (4-byte header included) of
/// `kinds.len()` columns converted by `kinds`, as a tuple, or None: the Python path decides.
#[pyfunction]
pub fn mysql_text_row<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    kinds: &[u8],
) -> Option<Bound<'py, PyTuple>> {
    let data = data.cast::<PyBytes>().ok()?.as_bytes();
    let header = data.get(..4)?;
    let length =
        usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
    if length != data.len() - 4 {
        return None;
    }
    if matches!(data.get(4), Some(0xFE | 0xFF)) {
        return None; // an EOF / OK / ERR packet, or a row only the Python path tells apart
    }
    let mut items: Vec<Bound<'py, PyAny>> = Vec::with_capacity(kinds.len());
    let mut pos = 4usize;
    for &kind in kinds {
        let (n, start) = lenenc(data, pos)?;
        let Some(n) = n else {
            items.push(py.None().into_bound(py));
            pos = start;
            continue;
        };
        let stop = start.checked_add(n)?;
        items.push(value(py, kind, data.get(start..stop)?)?);
        pos = stop;
    }
    if pos != data.len() {
        return None;
    }
    PyTuple::new(py, items).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_reads_the_shortest_forms_only() {
        assert_eq!(lenenc(&[0xFA], 0), Some((Some(0xFA), 1)));
        assert_eq!(lenenc(&[0xFB], 0), Some((None, 1)));
        assert_eq!(lenenc(&[0xFC, 0xFB, 0], 0), Some((Some(0xFB), 3)));
        assert_eq!(lenenc(&[0xFC, 0xFA, 0], 0), None); // fits one byte
        assert_eq!(lenenc(&[0xFD, 0, 0, 1], 0), Some((Some(1 << 16), 4)));
        assert_eq!(lenenc(&[0xFD, 0, 0], 0), None); // cut
        assert_eq!(lenenc(&[0xFF], 0), None);
    }
}
