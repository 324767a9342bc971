//! RabbitMQ stream chunks: the CRC-32 check and the split of an Osiris chunk's entries
//! into records, the hot path of every consumer (`wirestream.runtime.rabbitmq_stream.chunk`).
//!
//! PROTOCOL.adoc, Deliver: an entry is a `SimpleEntry` (`<<0:1, Size:31, Data>>`) or a
//! `SubEntryBatch` (`<<1:1, CompType:3, 0:4, NumRecs:16, UncompressedLen:32, Len:32,
//! Data>>`); `ChunkCrc` is the CRC-32 (IEEE) of the entry bytes (osiris:
//! `erlang:crc32(EData)`).
//!
//! This is a fast path, never a judge: a chunk that is not exactly right (CRC, an entry
//! overrunning the data, NumEntries or NumRecords not what the entries hold, an unknown
//! compression type) gives `None`, and the Python path reads it again and raises its
//! precise `ProtocolError`. So the two paths cannot disagree on an error, and a record the
//! native path hands over is one the Python path would hand over too
//! (tests/native/test_native_rabbitmq.py proves both on corpus and mutated chunks).

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyTuple};

/// The largest compression type of a sub-entry batch (the Java client's `Compression`:
/// 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
const MAX_COMPRESSION: u8 = 4;

/// Where one entry's data lies in the chunk data, and what it is.
enum Entry {
    /// A simple entry: one record, `data[start..end]`.
    Simple(usize, usize),
    /// A sub-entry batch: (compression type, declared records, declared uncompressed
    /// size, `data[start..end]` compressed).
    Batch(u8, u16, u32, usize, usize),
}

fn word(data: &[u8], pos: usize) -> Option<u32> {
    let bytes = data.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// The entries of `data`, or None when a header or a size overruns it, a compression
/// type is unknown, or the counts are not `num_entries` / `num_records`.
fn split(data: &[u8], num_entries: u64, num_records: u64) -> Option<(Vec<Entry>, bool)> {
    let mut entries = Vec::with_capacity(usize::try_from(num_entries).ok()?.min(data.len() / 4));
    let (mut pos, end) = (0usize, data.len());
    let mut records: u64 = 0;
    let mut batches = false;
    while pos < end {
        let head = word(data, pos)?;
        if head & 0x8000_0000 == 0 {
            let start = pos + 4;
            let stop = start.checked_add(head as usize).filter(|&s| s <= end)?;
            entries.push(Entry::Simple(start, stop));
            records += 1;
            pos = stop;
            continue;
        }
        // <<1:1, CompType:3, 0:4, NumRecs:16, UncompressedLen:32, Len:32>>: 11 bytes.
        let header = data.get(pos..pos.checked_add(11)?)?;
        let compression = (header[0] >> 4) & 0x7;
        let count = u16::from_be_bytes([header[1], header[2]]);
        let uncompressed = u32::from_be_bytes([header[3], header[4], header[5], header[6]]);
        let size = u32::from_be_bytes([header[7], header[8], header[9], header[10]]) as usize;
        let start = pos + 11;
        let stop = start.checked_add(size).filter(|&s| s <= end)?;
        if compression > MAX_COMPRESSION {
            return None;
        }
        entries.push(Entry::Batch(compression, count, uncompressed, start, stop));
        records += u64::from(count);
        batches = true;
        pos = stop;
    }
    if entries.len() as u64 != num_entries || records != num_records {
        return None;
    }
    Some((entries, batches))
}

/// `(records, batches)` of a chunk's entry bytes `data` whose CRC-32 is `crc`, or None
/// (the Python path decides: see the module comment). `records` holds, in offset order,
/// a `bytes` per simple entry and a `(compression, records, uncompressed size, data)`
/// tuple per sub-entry batch, which Python decompresses; `batches` says whether any is.
#[pyfunction]
pub fn rabbitmq_chunk_records<'py>(
    py: Python<'py>,
    data: &[u8],
    crc: u32,
    num_entries: u64,
    num_records: u64,
) -> PyResult<Option<(Bound<'py, PyList>, bool)>> {
    if crc32fast::hash(data) != crc {
        return Ok(None);
    }
    let Some((entries, batches)) = split(data, num_entries, num_records) else {
        return Ok(None);
    };
    let mut items: Vec<Bound<'py, PyAny>> = Vec::with_capacity(entries.len());
    for entry in entries {
        items.push(match entry {
            Entry::Simple(start, stop) => PyBytes::new(py, &data[start..stop]).into_any(),
            Entry::Batch(compression, count, uncompressed, start, stop) => {
                let payload = PyBytes::new(py, &data[start..stop]);
                PyTuple::new(
                    py,
                    [
                        compression.into_pyobject(py)?.into_any(),
                        count.into_pyobject(py)?.into_any(),
                        uncompressed.into_pyobject(py)?.into_any(),
                        payload.into_any(),
                    ],
                )?
                .into_any()
            }
        });
    }
    Ok(Some((PyList::new(py, items)?, batches)))
}

/// The records of a sub-entry batch once uncompressed: `raw` is `<<Size:32, Record>>`
/// repeated, exactly `num_records` times, or None (a size overrunning `raw`, bytes left
/// over, another count: the Python path splits it again and raises its precise error).
fn batch_records(raw: &[u8], num_records: usize) -> Option<Vec<(usize, usize)>> {
    let mut spans = Vec::with_capacity(num_records.min(raw.len() / 4));
    let mut pos = 0usize;
    while pos < raw.len() {
        let size = word(raw, pos)? as usize;
        let start = pos + 4;
        let stop = start.checked_add(size).filter(|&s| s <= raw.len())?;
        spans.push((start, stop));
        pos = stop;
    }
    (spans.len() == num_records).then_some(spans)
}

/// A `bytes` per record of an uncompressed sub-entry batch `raw` (`bytes`, or the
/// `bytearray` a codec inflates into: copied first, as Python code may resize it while
/// the records are made), or None for the Python path (`batch_records`).
#[pyfunction]
pub fn rabbitmq_batch_records<'py>(
    py: Python<'py>,
    raw: &Bound<'py, PyAny>,
    num_records: usize,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let copied: Vec<u8>;
    let data: &[u8] = if let Ok(bytes) = raw.cast::<PyBytes>() {
        bytes.as_bytes()
    } else if let Ok(array) = raw.cast::<PyByteArray>() {
        copied = array.to_vec();
        &copied
    } else {
        return Ok(None);
    };
    let Some(spans) = batch_records(data, num_records) else {
        return Ok(None);
    };
    let records = spans
        .into_iter()
        .map(|(start, stop)| PyBytes::new(py, &data[start..stop]));
    Ok(Some(PyList::new(py, records)?))
}

/// An AMQP 1.0 message that is exactly one Data section of up to 255 bytes (what the
/// clients write: `0x00 0x53 0x75` "amqp:data:binary", then vbin8 `0xa0 Len Bytes`): its
/// body; anything else None (`decode_body` decides).
fn data8_body(message: &[u8]) -> Option<&[u8]> {
    match message {
        [0x00, 0x53, 0x75, 0xa0, len, body @ ..] if usize::from(*len) == body.len() => Some(body),
        _ => None,
    }
}

/// `wirestream.runtime.rabbitmq_stream.amqp.data_bodies` of a list of `bytes`: each
/// record's body where it is one Data section of up to 255 bytes, else None; None for a
/// list holding anything but `bytes` (the Python function then runs).
#[pyfunction]
pub fn amqp_data_bodies<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyList>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let mut bodies: Vec<Bound<'py, PyAny>> = Vec::with_capacity(records.len());
    for record in records.iter() {
        let Ok(record) = record.cast::<PyBytes>() else {
            return Ok(None);
        };
        bodies.push(match data8_body(record.as_bytes()) {
            Some(body) => PyBytes::new(py, body).into_any(),
            None => py.None().into_bound(py),
        });
    }
    Ok(Some(PyList::new(py, bodies)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn simple(body: &[u8]) -> Vec<u8> {
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn splits_simple_entries_and_checks_counts() {
        let data = [simple(b"ab"), simple(b""), simple(b"xyz")].concat();
        let (entries, batches) = split(&data, 3, 3).unwrap();
        assert!(!batches);
        assert_eq!(entries.len(), 3);
        assert!(split(&data, 2, 3).is_none());
        assert!(split(&data, 3, 4).is_none());
        assert!(split(&data[..data.len() - 1], 3, 3).is_none());
    }

    #[test]
    fn batch_records_are_exactly_the_declared_count() {
        let raw = [simple(b"ab"), simple(b""), simple(b"xyz")].concat();
        assert_eq!(
            batch_records(&raw, 3),
            Some(vec![(4, 6), (10, 10), (14, 17)])
        );
        assert!(batch_records(&raw, 2).is_none());
        assert!(batch_records(&raw, 4).is_none());
        assert!(batch_records(&raw[..raw.len() - 1], 3).is_none()); // a size overruns
        assert!(batch_records(&raw[..raw.len() - 5], 2).is_none()); // inside a size
        assert_eq!(batch_records(&[], 0), Some(vec![]));
    }

    #[test]
    fn a_data8_body_is_the_whole_rest_of_one_data_section() {
        assert_eq!(data8_body(b"\x00\x53\x75\xa0\x02hi"), Some(&b"hi"[..]));
        assert_eq!(data8_body(b"\x00\x53\x75\xa0\x00"), Some(&b""[..]));
        assert_eq!(data8_body(b"\x00\x53\x75\xa0\x03hi"), None); // short
        assert_eq!(data8_body(b"\x00\x53\x75\xa0\x01hi"), None); // a second section
        assert_eq!(data8_body(b"\x00\x53\x75\xb0\x00\x00\x00\x02hi"), None); // vbin32
        assert_eq!(data8_body(b"\x00\x53\x77\xa1\x02hi"), None); // amqp-value
        assert_eq!(data8_body(b"\x00\x53\x75\xa0"), None);
    }

    #[test]
    fn batch_headers_are_bounded() {
        let mut data = vec![0x80 | (4 << 4), 0, 2, 0, 0, 0, 9, 0, 0, 0, 3, 1, 2, 3];
        assert!(split(&data, 1, 2).is_some());
        data[0] = 0x80 | (5 << 4); // compression type 5: none of the five
        assert!(split(&data, 1, 2).is_none());
        assert!(split(&data[..10], 1, 2).is_none()); // inside the header
        data[0] = 0x80;
        data[10] = 4; // Len overruns the data
        assert!(split(&data, 1, 2).is_none());
    }
}

/// 'Publish => Key Version PublisherId PublishedMessages': size, key 0x0002, version 1,
/// publisher id, count.
const PUBLISH_OVERHEAD: usize = 4 + 2 + 2 + 1 + 4;

/// Publish frames of simple entries, at most `limit` bytes each: the bytes of
/// `wirestream.runtime.rabbitmq_stream.publish_frames.encode_publish`, or None when a
/// message is not `bytes`, an id is missing, or a message fits no frame (the Python path
/// then raises its precise error). Each entry is 'PublishingId => uint64' and
/// `<<0:1, Size:31>>`, then the message.
#[pyfunction]
pub fn rabbitmq_encode_publish<'py>(
    py: Python<'py>,
    limit: u64,
    publisher_id: u8,
    ids: Vec<u64>,
    messages: &Bound<'py, PyList>,
) -> Option<Bound<'py, PyBytes>> {
    if ids.len() != messages.len() {
        return None;
    }
    let mut bodies: Vec<Bound<'py, PyBytes>> = Vec::with_capacity(messages.len());
    for message in messages.iter() {
        bodies.push(message.cast_into::<PyBytes>().ok()?);
    }
    let mut out: Vec<u8> = Vec::new();
    let (mut head, mut size, mut count) = (0usize, PUBLISH_OVERHEAD as u64, 0u32);
    for (pid, body) in ids.iter().zip(&bodies) {
        let message = body.as_bytes();
        let entry = 12 + message.len() as u64;
        if PUBLISH_OVERHEAD as u64 + entry > limit || message.len() > 0x7FFF_FFFF {
            return None;
        }
        if count > 0 && size + entry > limit {
            close_frame(&mut out, head, size, publisher_id, count);
            (size, count) = (PUBLISH_OVERHEAD as u64, 0);
        }
        if count == 0 {
            head = out.len();
            out.resize(head + PUBLISH_OVERHEAD, 0);
        }
        out.extend_from_slice(&pid.to_be_bytes());
        out.extend_from_slice(&(message.len() as u32).to_be_bytes());
        out.extend_from_slice(message);
        size += entry;
        count += 1;
    }
    if count > 0 {
        close_frame(&mut out, head, size, publisher_id, count);
    }
    Some(PyBytes::new(py, &out))
}

/// Writes the header of the frame that starts at `head` once its size is known.
fn close_frame(out: &mut [u8], head: usize, size: u64, publisher_id: u8, count: u32) {
    let header = &mut out[head..head + PUBLISH_OVERHEAD];
    header[0..4].copy_from_slice(&((size - 4) as u32).to_be_bytes());
    header[4..6].copy_from_slice(&0x0002u16.to_be_bytes());
    header[6..8].copy_from_slice(&1u16.to_be_bytes());
    header[8] = publisher_id;
    header[9..13].copy_from_slice(&count.to_be_bytes());
}
