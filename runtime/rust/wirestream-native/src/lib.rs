//! `wirestream.runtime._native`: capture records decoded by the generated Rust codecs into the
//! Arrow buffers of the Spark frame log (`generated/<protocol>/<version>/spark.py`), which
//! `wirestream.runtime.capture.native` assembles into a `pyarrow.RecordBatch` of exactly
//! the Spark schema's types (no cast). docs/rust.md, "Native batch decoding".
//!
//! Malformed input never panics here: the record checks are the capture reader's
//! (`wirestream.runtime.capture.format`), lengths are checked before any slice, and the
//! codecs return errors; what goes wrong is reported to Python, which raises the same
//! `ProtocolError` classes as the pure-Python path.
//!
//! Unsafe code is denied but in `ffi` (the Arrow C Data Interface, which is raw pointers
//! and a C callback by definition).
#![deny(unsafe_code)]

mod columns;
mod counts;
mod ffi;
mod log;
mod pack;
mod rabbitmq_chunk;
mod sql_rows;

// The frame log of each version decoded natively, generated from the same plan as its
// `spark.py` (codegen/targets/rust/frame_log.py): every version in its binary encoding
// (`rsio/0+msgpack`, which Rust does not spell, reads through the pure-Python path).
#[path = "../../../../generated/rust/frame_log/bpmux_rel.rs"]
mod bpmux_rel;
#[path = "../../../../generated/rust/frame_log/mqtt_v5.rs"]
mod mqtt_v5;
#[path = "../../../../generated/rust/frame_log/mysql_v10.rs"]
mod mysql_v10;
#[path = "../../../../generated/rust/frame_log/postgresql_v3.rs"]
mod postgresql_v3;
#[path = "../../../../generated/rust/frame_log/rabbitmq_stream_draft.rs"]
mod rabbitmq_stream_draft;
#[path = "../../../../generated/rust/frame_log/rabbitmq_stream_v1.rs"]
mod rabbitmq_stream_v1;
#[path = "../../../../generated/rust/frame_log/rsio_v0.rs"]
mod rsio_v0;
#[path = "../../../../generated/rust/frame_log/rsocket_v0_2.rs"]
mod rsocket_v0_2;
#[path = "../../../../generated/rust/frame_log/rsocket_v1_0.rs"]
mod rsocket_v1_0;

// The native `pack` of each generated Python frame class (codegen/targets/rust/py_pack.py):
// every version the Rust target spells.
#[path = "../../../../generated/rust/py_pack/bpmux_rel.rs"]
mod pack_bpmux_rel;
#[path = "../../../../generated/rust/py_pack/mqtt_v5.rs"]
mod pack_mqtt_v5;
#[path = "../../../../generated/rust/py_pack/mysql_v10.rs"]
mod pack_mysql_v10;
#[path = "../../../../generated/rust/py_pack/postgresql_v3.rs"]
mod pack_postgresql_v3;
#[path = "../../../../generated/rust/py_pack/rabbitmq_stream_draft.rs"]
mod pack_rabbitmq_stream_draft;
#[path = "../../../../generated/rust/py_pack/rabbitmq_stream_v1.rs"]
mod pack_rabbitmq_stream_v1;
#[path = "../../../../generated/rust/py_pack/rsio_v0.rs"]
mod pack_rsio_v0;
#[path = "../../../../generated/rust/py_pack/rsocket_v0_2.rs"]
mod pack_rsocket_v0_2;
#[path = "../../../../generated/rust/py_pack/rsocket_v1_0.rs"]
mod pack_rsocket_v1_0;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

use crate::columns::{Column, Kind};
use crate::ffi::{Node, Shell};
use crate::log::{FrameLog as Log, Mode, Protocol, Stop, COMMON, CONSTANT};

/// A column's name, Arrow type (`Kind::name`) and nullability, as `layout` gives it.
type Field = (&'static str, String, bool);

/// The protocol versions decoded natively.
static PROTOCOLS: [&Protocol; 9] = [
    &bpmux_rel::PROTOCOL,
    &mqtt_v5::PROTOCOL,
    &mysql_v10::PROTOCOL,
    &postgresql_v3::PROTOCOL,
    &rabbitmq_stream_draft::PROTOCOL,
    &rabbitmq_stream_v1::PROTOCOL,
    &rsio_v0::PROTOCOL,
    &rsocket_v0_2::PROTOCOL,
    &rsocket_v1_0::PROTOCOL,
];

/// Why `scan` stopped, as Python sees it (`wirestream.runtime.capture.native`).
const CAREFUL: u8 = 0;
const FULL: u8 = 1;
const FRAME_CRC: u8 = 2;
const MALFORMED: u8 = 3;

/// One protocol's frame log, built a batch at a time.
#[pyclass(module = "wirestream.runtime._native")]
struct FrameLog {
    log: Log,
    pool: Pool,
    /// `scan_file`'s read buffer, kept from call to call.
    window: Vec<u8>,
    /// Where `export` puts a batch's `ArrowArray` for pyarrow to move it out.
    shell: Shell,
    /// Zeros, shared by the batches (never written once made): the values of a frame
    /// column no row of a batch holds (all null), and the address of empty buffers.
    zeros: Arc<Vec<u8>>,
    /// The columns of one value (`log::CONSTANT`), shared by the batches like `zeros`.
    constants: Vec<Constant>,
}

/// A string column of one value in every row: its offsets and data for the most rows a
/// batch has had, shared by every batch (a batch of fewer rows reads a prefix), where
/// writing them row by row cost ~10% of a batch's export.
struct Constant {
    value: &'static [u8],
    rows: usize,
    offsets: Arc<Vec<u8>>,
    data: Arc<Vec<u8>>,
}

impl Constant {
    fn new(value: &'static [u8]) -> Self {
        Constant {
            value,
            rows: 0,
            offsets: Arc::new(0i32.to_ne_bytes().to_vec()),
            data: Arc::new(Vec::new()),
        }
    }

    fn node(&mut self, rows: usize, shared: &mut Vec<Arc<Vec<u8>>>, empty: usize) -> Node {
        if rows > self.rows {
            let mut offsets = Vec::with_capacity(4 * (rows + 1));
            for row in 0..=rows {
                // rows <= ROW_LIMIT and short values: far below i32::MAX
                offsets.extend_from_slice(&((row * self.value.len()) as i32).to_ne_bytes());
            }
            self.offsets = Arc::new(offsets);
            self.data = Arc::new(self.value.repeat(rows));
            self.rows = rows;
        }
        shared.push(self.offsets.clone());
        shared.push(self.data.clone());
        let data = if self.data.is_empty() {
            empty
        } else {
            self.data.as_ptr() as usize
        };
        Node {
            length: rows,
            null_count: 0,
            buffers: vec![0, self.offsets.as_ptr() as usize, data],
            children: Vec::new(),
        }
    }
}

/// Spare buffers by slot (`Slots`): what dropped batches gave back, for the next ones.
type Pool = Arc<Mutex<Vec<Vec<Vec<u8>>>>>;

/// Spare buffers kept per slot: two batches in flight (one being built, one in Spark's
/// hands) recycle everything; a caller that keeps batches makes the others fresh.
const SPARES: usize = 2;

/// The memory of one record batch's buffers, owned here and lent to pyarrow (through the
/// C Data Interface, `ffi`): no copy into Python objects, and when pyarrow releases the
/// batch's last array the buffers go back to the frame log's pool.
struct Memory {
    owned: Vec<(usize, Vec<u8>)>,
    pool: Pool,
    /// Buffers shared with other batches (zeros, the constant columns'): read only.
    _shared: Vec<Arc<Vec<u8>>>,
}

impl Drop for Memory {
    fn drop(&mut self) {
        let owned = core::mem::take(&mut self.owned);
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

/// Moves buffers out of the columns into a batch, numbering them by slot: every column's
/// three possible buffers have fixed slots, so a buffer comes back to the column it left.
struct Exporter<'a> {
    pool: &'a Pool,
    owned: Vec<(usize, Vec<u8>)>,
    /// The address of an empty buffer (the zeros: never NULL, aligned).
    empty: usize,
}

impl Exporter<'_> {
    fn spare(&self, slot: usize) -> Vec<u8> {
        self.pool
            .lock()
            .ok()
            .and_then(|mut pool| pool.get_mut(slot).and_then(Vec::pop))
            .unwrap_or_default()
    }

    /// The buffer's address (its memory moves to the batch; a `Vec`'s heap memory stays
    /// where it is).
    fn lend(&mut self, slot: usize, buffer: Vec<u8>) -> usize {
        if buffer.is_empty() {
            self.owned.push((slot, buffer)); // back to the pool with its capacity
            return self.empty;
        }
        let address = buffer.as_ptr() as usize;
        self.owned.push((slot, buffer));
        address
    }

    /// Column `c` and its children (a list's elements, a struct's fields), whose slots
    /// follow its own three (`Column::slots`).
    fn column(&mut self, base: usize, c: &mut Column) -> Node {
        let length = c.length();
        let (validity, null_count, buffers) = c.export(|k| self.spare(base + k));
        let mut addresses = vec![validity.map_or(0, |v| self.lend(base, v))];
        for (k, b) in buffers.into_iter().enumerate() {
            addresses.push(self.lend(base + 1 + k, b));
        }
        let mut slot = base + 3;
        let mut children = Vec::new();
        for child in c.children() {
            let slots = child.slots();
            children.push(self.column(slot, child));
            slot += slots;
        }
        Node {
            length,
            null_count,
            buffers: addresses,
            children,
        }
    }
}

/// A field of a frame column no row of the batch holds: `rows` zeros (its struct's
/// validity hides them), in `kind`'s layout, without a validity bitmap.
fn zero_field(kind: Kind, rows: usize, zeros: usize) -> Node {
    let (buffers, children) = match kind {
        Kind::Binary | Kind::Utf8 => (vec![0, zeros, zeros], Vec::new()), // offsets all 0
        // empty lists (offsets all 0) of no elements
        Kind::List(&(_, element, _)) => (vec![0, zeros], vec![zero_field(element, 0, zeros)]),
        Kind::Struct(fields) => (
            vec![0],
            fields
                .iter()
                .map(|&(_, kind, _)| zero_field(kind, rows, zeros))
                .collect(),
        ),
        _ => (vec![0, zeros], Vec::new()),
    };
    Node {
        length: rows,
        null_count: 0,
        buffers,
        children,
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
        let slots = 3 * COMMON.len()
            + found
                .columns
                .iter()
                .map(|(_, f)| 3 + f.iter().map(|g| g.1.slots()).sum::<usize>())
                .sum::<usize>();
        let log = Log::new(found, mode);
        Ok(FrameLog {
            pool: Arc::new(Mutex::new(vec![Vec::new(); slots])),
            window: Vec::new(),
            shell: Shell::new(),
            zeros: Arc::new(vec![0; 64]),
            constants: CONSTANT
                .iter()
                .map(|&index| Constant::new(log.constant(index).unwrap_or_default()))
                .collect(),
            log,
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

    /// From now on, count every row written as `wirestream capture stats` counts records
    /// (`counts`).
    fn count(&mut self) {
        self.log.counts.get_or_insert_with(Default::default);
    }

    /// What `count` counted: `(frames, bytes, malformed, span, kinds, connections)`;
    /// `span` `(first, last)` record time in ns (None before any record), `kinds`
    /// `(frame_type, sent by the server, frames, bytes)` and `connections` `(id, tapped
    /// side is the server, frames, bytes, first, last)`, each in the order first seen.
    #[allow(clippy::type_complexity)]
    fn counts(
        &self,
    ) -> PyResult<(
        u64,
        u64,
        u64,
        Option<(u64, u64)>,
        Vec<(&'static str, bool, u64, u64)>,
        Vec<(u64, bool, u64, u64, u64, u64)>,
    )> {
        let Some(c) = &self.log.counts else {
            return Err(PyValueError::new_err("nothing counted: call count() first"));
        };
        let kinds = c
            .kinds
            .iter()
            .map(|k| (k.frame_type, k.by_server, k.frames, k.bytes))
            .collect();
        let connections = c
            .connections
            .iter()
            .map(|k| {
                (
                    k.id,
                    k.server_side,
                    k.frames,
                    k.bytes,
                    k.first_ns,
                    k.last_ns,
                )
            })
            .collect();
        Ok((
            c.frames,
            c.bytes,
            c.malformed,
            c.span_ns,
            kinds,
            connections,
        ))
    }

    /// Drop the rows written so far (a caller that only `count`s): the builder starts
    /// afresh, its memory kept.
    fn discard(&mut self) {
        self.log.clear();
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

    /// The rows written so far as one Arrow C Data Interface struct array (a record
    /// batch of the frame log's columns, in `layout`'s order), and an empty builder for
    /// the next: `(rows, address)`, `address` that of the `ArrowArray` to import
    /// (`pa.RecordBatch._import_from_c(address, schema)`), valid until the next call. The
    /// buffers are the extension's memory, lent: no copy.
    fn export(&mut self) -> (usize, usize) {
        let rows = self.log.finish();
        // zeros for every layout of `rows` values: 16-byte values, 4-byte offsets (+1)
        let need = 16 * rows + 16;
        if self.zeros.len() < need {
            self.zeros = Arc::new(vec![0; need.next_power_of_two()]);
        }
        let zeros = self.zeros.as_ptr() as usize;
        let mut out = Exporter {
            pool: &self.pool,
            owned: Vec::new(),
            empty: zeros,
        };
        let kinds = self.log.protocol.columns;
        let (common, frames) = self.log.columns();
        let mut children = Vec::with_capacity(common.len() + frames.len());
        let mut shared = vec![self.zeros.clone()];
        let mut slot = 0;
        for (index, c) in common.iter_mut().enumerate() {
            match CONSTANT.iter().position(|&i| i == index) {
                Some(k) => children.push(self.constants[k].node(rows, &mut shared, zeros)),
                None => children.push(out.column(slot, c)),
            }
            slot += 3;
        }
        for (s, (_, fields)) in frames.iter_mut().zip(kinds) {
            let base = slot;
            slot += 3 + fields.iter().map(|f| f.1.slots()).sum::<usize>();
            if s.validity.is_empty() {
                // no row holds it: a struct of nulls over zeros
                children.push(Node {
                    length: rows,
                    null_count: rows,
                    buffers: vec![zeros],
                    children: fields
                        .iter()
                        .map(|&(_, kind, _)| zero_field(kind, rows, zeros))
                        .collect(),
                });
                continue;
            }
            let null_count = s.validity.zeros();
            let spare = out.spare(base);
            let validity = out.lend(base, s.validity.swap(spare));
            let mut at = base + 3;
            let fields = s
                .fields
                .iter_mut()
                .map(|c| {
                    let node = out.column(at, c);
                    at += c.slots();
                    node
                })
                .collect();
            children.push(Node {
                length: rows,
                null_count,
                buffers: vec![validity],
                children: fields,
            });
        }
        self.log.clear();
        let batch = Node {
            length: rows,
            null_count: 0,
            buffers: vec![0],
            children,
        };
        let memory = Memory {
            owned: out.owned,
            pool: self.pool.clone(),
            _shared: shared,
        };
        (rows, self.shell.export(batch, memory))
    }
}

fn protocol_names() -> Vec<&'static str> {
    PROTOCOLS.iter().map(|p| p.name).collect()
}

/// `packers`: the native `pack` functions by generated Python module, then frame class
/// (`wirestream.runtime._support.use_native_packers` puts them in place).
fn packers<'py>(m: &Bound<'py, PyModule>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let all = pyo3::types::PyDict::new(m.py());
    all.set_item(pack_bpmux_rel::MODULE, pack_bpmux_rel::packers(m)?)?;
    all.set_item(pack_mqtt_v5::MODULE, pack_mqtt_v5::packers(m)?)?;
    all.set_item(pack_mysql_v10::MODULE, pack_mysql_v10::packers(m)?)?;
    all.set_item(pack_postgresql_v3::MODULE, pack_postgresql_v3::packers(m)?)?;
    all.set_item(
        pack_rabbitmq_stream_draft::MODULE,
        pack_rabbitmq_stream_draft::packers(m)?,
    )?;
    all.set_item(
        pack_rabbitmq_stream_v1::MODULE,
        pack_rabbitmq_stream_v1::packers(m)?,
    )?;
    all.set_item(pack_rsio_v0::MODULE, pack_rsio_v0::packers(m)?)?;
    all.set_item(pack_rsocket_v0_2::MODULE, pack_rsocket_v0_2::packers(m)?)?;
    all.set_item(pack_rsocket_v1_0::MODULE, pack_rsocket_v1_0::packers(m)?)?;
    Ok(all)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FrameLog>()?;
    m.add_function(wrap_pyfunction!(rabbitmq_chunk::rabbitmq_chunk_records, m)?)?;
    m.add_function(wrap_pyfunction!(rabbitmq_chunk::rabbitmq_batch_records, m)?)?;
    m.add_function(wrap_pyfunction!(rabbitmq_chunk::amqp_data_bodies, m)?)?;
    m.add_function(wrap_pyfunction!(
        rabbitmq_chunk::rabbitmq_encode_publish,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(sql_rows::postgresql_data_row, m)?)?;
    m.add_function(wrap_pyfunction!(sql_rows::mysql_text_row, m)?)?;
    m.add("packers", packers(m)?)?;
    m.add("PROTOCOLS", protocol_names())?;
    m.add("SCAN_CAREFUL", CAREFUL)?;
    m.add("SCAN_FULL", FULL)?;
    m.add("SCAN_FRAME_CRC", FRAME_CRC)?;
    m.add("SCAN_MALFORMED", MALFORMED)?;
    m.add("MAX_FRAME_LENGTH", log::MAX_FRAME_LENGTH)?;
    m.add("ROW_LIMIT", log::ROW_LIMIT)?;
    Ok(())
}
