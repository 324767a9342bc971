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
mod rsocket_v1_0;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::columns::{Column, StructColumn};
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
    /// `scan_file`'s read buffer, kept from call to call.
    window: Vec<u8>,
}

fn column<'py>(py: Python<'py>, c: &Column) -> PyResult<Bound<'py, PyTuple>> {
    let validity = c.validity().map(|v| PyBytes::new(py, v));
    let buffers: Vec<Bound<'py, PyBytes>> = c
        .buffers()
        .into_iter()
        .map(|b| PyBytes::new(py, b))
        .collect();
    (validity, c.null_count(), PyList::new(py, buffers)?).into_pyobject(py)
}

fn frame_column<'py>(py: Python<'py>, s: &StructColumn) -> PyResult<Option<Bound<'py, PyTuple>>> {
    if s.validity.is_empty() {
        return Ok(None);
    }
    let fields = s
        .fields
        .iter()
        .map(|f| column(py, f))
        .collect::<PyResult<Vec<_>>>()?;
    let validity = PyBytes::new(py, s.validity.bytes());
    Ok(Some(
        (validity, s.validity.zeros(), PyList::new(py, fields)?).into_pyobject(py)?,
    ))
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
        Ok(FrameLog {
            log: Log::new(found, mode),
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

    /// One record's row (the careful path's, a pcap file's); FAILFAST: the class of the
    /// error when its frame does not decode (no row is written then), else None.
    fn add(
        &mut self,
        frame: &[u8],
        timestamp_ns: u64,
        connection: u64,
        flags: u8,
    ) -> Option<&'static str> {
        self.log.add(frame, timestamp_ns, connection, flags).err()
    }

    /// The batch's buffers, and an empty builder for the next: `(rows, common, frames)`,
    /// a column `(validity or None, null count, [buffers])`, a frame column
    /// `(validity, null count, [field columns])` or None when no row holds it.
    fn take<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let rows = self.log.finish();
        let (common, frames) = self.log.columns();
        let common = common
            .iter()
            .map(|c| column(py, c))
            .collect::<PyResult<Vec<_>>>()?;
        let frames = frames
            .iter()
            .map(|s| frame_column(py, s))
            .collect::<PyResult<Vec<_>>>()?;
        let batch = (rows, PyList::new(py, common)?, PyList::new(py, frames)?).into_pyobject(py);
        self.log.clear();
        batch
    }
}

fn protocol_names() -> Vec<&'static str> {
    PROTOCOLS.iter().map(|p| p.name).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FrameLog>()?;
    m.add("PROTOCOLS", protocol_names())?;
    m.add("SCAN_CAREFUL", CAREFUL)?;
    m.add("SCAN_FULL", FULL)?;
    m.add("SCAN_FRAME_CRC", FRAME_CRC)?;
    m.add("SCAN_MALFORMED", MALFORMED)?;
    m.add("MAX_FRAME_LENGTH", log::MAX_FRAME_LENGTH)?;
    Ok(())
}
