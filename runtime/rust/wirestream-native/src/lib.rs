//! `wirestream._native`: capture records decoded by the generated Rust codecs into the
//! Arrow buffers of the Spark frame log (`generated/<protocol>/<version>/spark.py`), which
//! `wirestream.runtime.capture.native` assembles into a `pyarrow.RecordBatch` of exactly
//! the Spark schema's types (no cast). docs/rust.md, "Native batch decoding".
//!
//! Malformed input never panics here: the record checks are the capture reader's
//! (`wirestream.runtime.capture.format`), lengths are checked before any slice, and the
//! codecs return errors; what goes wrong is reported to Python, which raises the same
//! `ProtocolError` classes as the pure-Python path.
#![forbid(unsafe_code)]

mod columns;
mod log;
mod rabbitmq_chunk;
mod rsocket_v1_0;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

use crate::columns::Column;
use crate::log::{FrameLog as Log, Mode, Protocol, Stop, COMMON};

/// A column's name, Arrow type (`Kind::name`) and nullability, as `layout` gives it.
type Field = (&'static str, &'static str, bool);

/// The protocol versions decoded natively.
static PROTOCOLS: [&Protocol; 1] = [&rsocket_v1_0::PROTOCOL];

/// Why `scan` stopped, as Python sees it (`wirestream.runtime.capture.native`).
const CAREFUL: u8 = 0;
const FULL: u8 = 1;
const FRAME_CRC: u8 = 2;
const MALFORMED: u8 = 3;

/// One protocol's frame log, built a batch at a time.
#[pyclass(module = "wirestream._native")]
struct FrameLog {
    log: Log,
    pool: Pool,
    /// `scan_file`'s read buffer, kept from call to call.
    window: Vec<u8>,
}

/// Spare buffers by slot (`Slots`): what dropped batches gave back, for the next ones.
type Pool = Arc<Mutex<Vec<Vec<Vec<u8>>>>>;

/// Spare buffers kept per slot: two batches in flight (one being built, one in Spark's
/// hands) recycle everything; a caller that keeps batches makes the others fresh.
const SPARES: usize = 2;

/// The memory of one record batch's buffers, owned here and lent to pyarrow
/// (`pa.foreign_buffer(address, size, base=<this>)`): no copy into Python objects, and when
/// pyarrow lets go of the batch the buffers go back to the frame log's pool.
#[pyclass(module = "wirestream._native", frozen)]
struct Batch {
    owned: Mutex<Vec<(usize, Vec<u8>)>>,
    pool: Pool,
}

impl Drop for Batch {
    fn drop(&mut self) {
        let owned = match self.owned.get_mut() {
            Ok(owned) => core::mem::take(owned),
            Err(_) => return,
        };
        if let Ok(mut pool) = self.pool.lock() {
            for (slot, mut buffer) in owned {
                if let Some(spares) = pool.get_mut(slot) {
                    if spares.len() < SPARES {
                        buffer.clear();
                        spares.push(buffer);
                    }
                }
            }
        }
    }
}

/// A buffer as Python sees it: (address, size); the `Batch` keeps its memory.
type Lent = (usize, usize);

/// Moves buffers out of the columns into a batch, numbering them by slot: every column's
/// three possible buffers have fixed slots, so a buffer comes back to the column it left.
struct Exporter<'a> {
    pool: &'a Pool,
    owned: Vec<(usize, Vec<u8>)>,
}

impl Exporter<'_> {
    fn spare(&self, slot: usize) -> Vec<u8> {
        self.pool
            .lock()
            .ok()
            .and_then(|mut pool| pool.get_mut(slot).and_then(Vec::pop))
            .unwrap_or_default()
    }

    fn lend(&mut self, slot: usize, buffer: Vec<u8>) -> Lent {
        let lent = (buffer.as_ptr() as usize, buffer.len());
        self.owned.push((slot, buffer));
        lent
    }

    fn column(&mut self, base: usize, c: &mut Column) -> (Option<Lent>, usize, Vec<Lent>) {
        let (validity, nulls, buffers) = c.export(|k| self.spare(base + k));
        let validity = validity.map(|v| self.lend(base, v));
        let buffers = buffers
            .into_iter()
            .enumerate()
            .map(|(k, b)| self.lend(base + 1 + k, b))
            .collect();
        (validity, nulls, buffers)
    }
}

#[pymethods]
impl FrameLog {
    /// `protocol` as capture files name it; `mode` FAILFAST, PERMISSIVE or DROPMALFORMED.
    #[new]
    fn new(protocol: &str, mode: &str) -> PyResult<Self> {
        let Some(found) = PROTOCOLS.iter().find(|p| p.name == protocol) else {
            return Err(PyValueError::new_err(format!(
                "{protocol:?} is not decoded natively (only {})",
                protocol_names().join(", ")
            )));
        };
        let mode = match mode {
            "FAILFAST" => Mode::FailFast,
            "PERMISSIVE" => Mode::Permissive,
            "DROPMALFORMED" => Mode::DropMalformed,
            other => {
                return Err(PyValueError::new_err(format!(
                    "mode {other:?} is not FAILFAST, PERMISSIVE or DROPMALFORMED"
                )))
            }
        };
        let slots = 3
            * (COMMON.len()
                + found
                    .columns
                    .iter()
                    .map(|(_, f)| 1 + f.len())
                    .sum::<usize>());
        Ok(FrameLog {
            log: Log::new(found, mode),
            pool: Arc::new(Mutex::new(vec![Vec::new(); slots])),
            window: Vec::new(),
        })
    }

    /// The columns' names, Arrow types and nullability: the common columns, then each
    /// frame column's fields (checked once against the Spark schema by the caller).
    fn layout(&self) -> (Vec<Field>, Vec<(&'static str, Vec<Field>)>) {
        let common = COMMON.iter().map(|&(n, k, b)| (n, k.name(), b)).collect();
        let frames = self
            .log
            .protocol
            .columns
            .iter()
            .map(|(name, fields)| {
                (
                    *name,
                    fields.iter().map(|&(n, k, b)| (n, k.name(), b)).collect(),
                )
            })
            .collect();
        (common, frames)
    }

    /// Rows written since the last `take`.
    fn rows(&self) -> usize {
        self.log.rows()
    }

    /// The fast path over capture bytes `buf` whose byte `i` is the file's byte `pos`
    /// (records, from a record's start): `(i, pos, why, class)` after the records it
    /// decoded into rows, at most `room` of them, stopping before a record at or after
    /// `stop`. `why`: 0 the next record needs the careful path, 1 the batch is full,
    /// 2 the record at `pos` has a bad frame CRC, 3 (FAILFAST) its frame does not decode,
    /// `class` naming Python's `ProtocolError` class.
    fn scan(
        &mut self,
        buf: &[u8],
        i: usize,
        pos: u64,
        stop: u64,
        sync: &[u8],
        room: usize,
    ) -> (usize, u64, u8, Option<&'static str>) {
        let (i, pos, why) = self.log.scan(buf, i, pos, stop, sync, room);
        match why {
            Stop::Careful => (i, pos, CAREFUL, None),
            Stop::Full => (i, pos, FULL, None),
            Stop::FrameCrc => (i, pos, FRAME_CRC, None),
            Stop::Malformed(class) => (i, pos, MALFORMED, Some(class)),
        }
    }

    /// `scan` over the file at `path` from its byte `pos`, read by Rust a window at a
    /// time (the GIL released meanwhile): `(pos, why, class)` as `scan` gives them; `why`
    /// 0 also when the file cannot be read (the careful path reads it again).
    fn scan_file(
        &mut self,
        py: Python<'_>,
        path: std::path::PathBuf,
        pos: u64,
        stop: u64,
        sync: &[u8],
        room: usize,
    ) -> (u64, u8, Option<&'static str>) {
        let (log, window) = (&mut self.log, &mut self.window);
        let (pos, why) = py.detach(|| log.scan_file(&path, pos, stop, sync, room, window));
        match why {
            Stop::Careful => (pos, CAREFUL, None),
            Stop::Full => (pos, FULL, None),
            Stop::FrameCrc => (pos, FRAME_CRC, None),
            Stop::Malformed(class) => (pos, MALFORMED, Some(class)),
        }
    }

    /// Whether a record of `length` frame bytes fits in the batch being built (else:
    /// `take` it first).
    fn fits(&self, length: usize) -> bool {
        self.log.fits(length)
    }

    /// One record's row (the careful path's, a pcap file's); FAILFAST: the class of the
    /// error when its frame does not decode (no row is written then), else None.
    /// `ValueError` for a frame longer than a capture's maximum, or when the batch is
    /// full (`take` it first).
    fn add(
        &mut self,
        frame: &[u8],
        timestamp_ns: u64,
        connection: u64,
        flags: u8,
    ) -> PyResult<Option<&'static str>> {
        if frame.len() > log::MAX_FRAME_LENGTH as usize {
            return Err(PyValueError::new_err(format!(
                "a frame of {} bytes: a capture's are at most {}",
                frame.len(),
                log::MAX_FRAME_LENGTH
            )));
        }
        if !self.log.fits(frame.len()) {
            return Err(PyValueError::new_err("the batch is full: take() it first"));
        }
        Ok(self.log.add(frame, timestamp_ns, connection, flags).err())
    }

    /// The batch's buffers, lent, and an empty builder for the next: `(rows, batch,
    /// common, frames)`: `batch` owns the memory (pass it as `base` to
    /// `pa.foreign_buffer`); a column is `(validity or None, null count, [buffers])`, each
    /// buffer `(address, size)`; a frame column `(validity, null count, [field columns])`,
    /// or None when no row holds it.
    #[allow(clippy::type_complexity)]
    fn take(
        &mut self,
    ) -> (
        usize,
        Batch,
        Vec<(Option<Lent>, usize, Vec<Lent>)>,
        Vec<Option<(Lent, usize, Vec<(Option<Lent>, usize, Vec<Lent>)>)>>,
    ) {
        let rows = self.log.finish();
        let mut out = Exporter {
            pool: &self.pool,
            owned: Vec::new(),
        };
        let (common, frames) = self.log.columns();
        let mut slot = 0;
        let mut common_out = Vec::with_capacity(common.len());
        for c in common.iter_mut() {
            common_out.push(out.column(slot, c));
            slot += 3;
        }
        let mut frames_out = Vec::with_capacity(frames.len());
        for s in frames.iter_mut() {
            let base = slot;
            slot += 3 * (1 + s.fields.len());
            if s.validity.is_empty() {
                frames_out.push(None); // no row holds it: all null (pa.nulls)
                continue;
            }
            let nulls = s.validity.zeros();
            let spare = out.spare(base);
            let validity = out.lend(base, s.validity.swap(spare));
            let fields = s
                .fields
                .iter_mut()
                .enumerate()
                .map(|(f, c)| out.column(base + 3 * (1 + f), c))
                .collect();
            frames_out.push(Some((validity, nulls, fields)));
        }
        self.log.clear();
        let batch = Batch {
            owned: Mutex::new(out.owned),
            pool: self.pool.clone(),
        };
        (rows, batch, common_out, frames_out)
    }
}

fn protocol_names() -> Vec<&'static str> {
    PROTOCOLS.iter().map(|p| p.name).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FrameLog>()?;
    m.add_class::<Batch>()?;
    m.add_function(wrap_pyfunction!(rabbitmq_chunk::rabbitmq_chunk_records, m)?)?;
    m.add_function(wrap_pyfunction!(
        rabbitmq_chunk::rabbitmq_encode_publish,
        m
    )?)?;
    m.add("PROTOCOLS", protocol_names())?;
    m.add("SCAN_CAREFUL", CAREFUL)?;
    m.add("SCAN_FULL", FULL)?;
    m.add("SCAN_FRAME_CRC", FRAME_CRC)?;
    m.add("SCAN_MALFORMED", MALFORMED)?;
    m.add("MAX_FRAME_LENGTH", log::MAX_FRAME_LENGTH)?;
    m.add("ROW_LIMIT", log::ROW_LIMIT)?;
    Ok(())
}
