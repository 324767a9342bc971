//! The frame log of one protocol built column by column: capture records in (the fast
//! path of `wirestream.runtime.capture.reader.scan_chunks`, the same checks in the same
//! order), Arrow buffers out.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::columns::{Column, Field, Kind, StructColumn};
use crate::counts::Counts;

/// A frame column: its name and its fields (name, Arrow kind, nullable).
pub type FrameColumn = (&'static str, &'static [Field]);

/// What the common columns hold for a decoded frame (`frame_row`'s first three values).
pub struct Head {
    pub frame_type: &'static str,
    pub stream_id: Option<i64>,
    pub flags: Option<i32>,
}

/// What a version keeps from frame to frame: the contexts of a contextual version's
/// connections (its generated module makes and reads it; None until the first frame).
pub type State = Option<Box<dyn core::any::Any + Send + Sync>>;

/// Decodes one frame (its record's flags and connection id) and writes its frame column's
/// row (`row`: the row's index); the error is Python's `ProtocolError` class name of why
/// the frame does not decode.
pub type RowFn = fn(
    &[u8],
    u8,
    u64,
    &mut State,
    &mut [StructColumn],
    usize,
    &mut String,
) -> Result<Head, &'static str>;

/// A protocol version the extension decodes natively.
pub struct Protocol {
    /// As capture files and the Spark source name it (`rsocket/1.0`).
    pub name: &'static str,
    /// The frame log's `protocol` and `version` values (spark.py's PROTOCOL, VERSION).
    pub protocol: &'static str,
    pub version: &'static str,
    pub columns: &'static [FrameColumn],
    pub row: RowFn,
}

/// The frame log's first columns (spark.py's COMMON_COLUMNS): name, kind, nullable.
pub const COMMON: [(&str, Kind, bool); 9] = [
    ("capture_time", Kind::TimestampMicros, false),
    ("connection_id", Kind::Int64, false),
    ("direction", Kind::Utf8, false),
    ("protocol", Kind::Utf8, false),
    ("version", Kind::Utf8, false),
    ("frame_type", Kind::Utf8, false),
    ("stream_id", Kind::Int64, true),
    ("flags", Kind::Int32, true),
    ("length", Kind::Int32, false),
];

/// The common columns of one value in every row (protocol, version): left empty by the
/// frame log, exported as shared buffers (`FrameLog::constant`).
pub const CONSTANT: [usize; 2] = [3, 4];

/// `frame_type` of a frame that did not decode (PERMISSIVE).
pub const MALFORMED: &str = "MALFORMED";

/// `wirestream.runtime.capture.format`: the record layout and its limits.
pub const RECORD_HEADER_SIZE: usize = 33;
pub const MAX_FRAME_LENGTH: u32 = 1 << 26;
const FLAG_OUT: u8 = 0x01;
const FLAGS_RESERVED: u8 = 0xFC;

/// Binary data a batch holds at most (its 32-bit offsets address 2 GiB): a record that
/// would take a batch past it starts the next one.
pub const DATA_LIMIT: usize = 1 << 30;

/// Rows a batch holds at most, whatever the caller asks: with `DATA_LIMIT`, it keeps
/// every string column (frame types, names of codes: tens of bytes a row) under 2 GiB.
pub const ROW_LIMIT: usize = 1 << 20;

/// Bytes `scan_file` reads at a time (a longer record is read whole): small against a
/// batch (10,000 records of ~160 B), since a call reads its last window in vain past the
/// batch's end, and large against a syscall.
pub const WINDOW: usize = 256 << 10;

/// Up to `want` bytes of `file` from `pos` into `window` (fewer only at the end of the
/// file); how many.
fn read_at(file: &mut File, pos: u64, want: usize, window: &mut Vec<u8>) -> std::io::Result<usize> {
    window.resize(want, 0);
    file.seek(SeekFrom::Start(pos))?;
    let mut have = 0;
    while have < want {
        match file.read(&mut window[have..want]) {
            Ok(0) => break,
            Ok(n) => have += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(have)
}

/// The size of the record at the start of `buf` when its header is whole and valid
/// (sync marker, header CRC, length within the maximum, no reserved flag).
fn record_size(buf: &[u8], sync: &[u8]) -> Option<usize> {
    let header = buf.get(..RECORD_HEADER_SIZE)?;
    let length = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    let crc = u32::from_be_bytes([header[29], header[30], header[31], header[32]]);
    let valid = header[..4] == *sync
        && crc32fast::hash(&header[4..29]) == crc
        && length <= MAX_FRAME_LENGTH
        && header[24] & FLAGS_RESERVED == 0;
    valid.then_some(RECORD_HEADER_SIZE + length as usize)
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    FailFast,
    Permissive,
    DropMalformed,
}

/// Why `scan` stopped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stop {
    /// The next record is not whole and valid in the buffer, or starts at or after the
    /// range's end: the caller's careful path reads (or refuses) it.
    Careful,
    /// The batch is full (rows or data).
    Full,
    /// The frame CRC of the record at the position does not match.
    FrameCrc,
    /// FAILFAST: the frame of the record at the position does not decode (the class).
    Malformed(&'static str),
}

pub struct FrameLog {
    pub protocol: &'static Protocol,
    mode: Mode,
    common: Vec<Column>,
    frames: Vec<StructColumn>,
    rows: usize,
    data: usize,
    scratch: String,
    /// The version's state from frame to frame (`State`), in record order.
    state: State,
    /// What `wirestream capture stats` counts, when asked for (`count`): every row
    /// written is counted.
    pub counts: Option<Counts>,
    /// A fresh CRC-32 hasher, cloned for each checksum: `crc32fast::hash` makes a new one
    /// each call, detecting the CPU's features again (~15% of the checksum's cost on
    /// records of ~160 bytes, measured with cachegrind).
    crc: crc32fast::Hasher,
}

impl FrameLog {
    #[inline]
    fn crc(&self, bytes: &[u8]) -> u32 {
        let mut hasher = self.crc.clone();
        hasher.update(bytes);
        hasher.finalize()
    }
}

impl FrameLog {
    pub fn new(protocol: &'static Protocol, mode: Mode) -> Self {
        FrameLog {
            protocol,
            mode,
            common: COMMON.iter().map(|&(_, k, n)| Column::new(k, n)).collect(),
            frames: protocol
                .columns
                .iter()
                .map(|(_, f)| StructColumn::new(f))
                .collect(),
            rows: 0,
            data: 0,
            scratch: String::new(),
            state: None,
            counts: None,
            crc: crc32fast::Hasher::new(),
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether a record of `length` frame bytes fits in this batch (`DATA_LIMIT`,
    /// `ROW_LIMIT`; a first record always fits, as frames are at most MAX_FRAME_LENGTH).
    pub fn fits(&self, length: usize) -> bool {
        self.rows == 0 || (self.rows < ROW_LIMIT && self.data + length <= DATA_LIMIT)
    }

    /// One record's row; `Err(class)` only in FAILFAST, when its frame does not decode
    /// (nothing is written then). The caller checks `fits` first.
    pub fn add(
        &mut self,
        frame: &[u8],
        timestamp_ns: u64,
        connection: u64,
        flags: u8,
    ) -> Result<(), &'static str> {
        let row = self.rows;
        let decoded = (self.protocol.row)(
            frame,
            flags,
            connection,
            &mut self.state,
            &mut self.frames,
            row,
            &mut self.scratch,
        );
        let head = match decoded {
            Ok(head) => head,
            Err(class) => match self.mode {
                Mode::FailFast => return Err(class),
                Mode::DropMalformed => return Ok(()),
                Mode::Permissive => Head {
                    frame_type: MALFORMED,
                    stream_id: None,
                    flags: None,
                },
            },
        };
        let c = &mut self.common;
        c[0].i64((timestamp_ns / 1000) as i64);
        c[1].i64(connection as i64);
        c[2].bytes(if flags & FLAG_OUT != 0 { b"out" } else { b"in" });
        // c[3] and c[4], protocol and version, are the same in every row: never written
        // here, the export shares one copy of their buffers between batches (`CONSTANT`).
        c[5].bytes(head.frame_type.as_bytes());
        match head.stream_id {
            Some(id) => c[6].i64(id),
            None => c[6].null(),
        }
        match head.flags {
            Some(bits) => c[7].i32(bits),
            None => c[7].null(),
        }
        c[8].i32(frame.len() as i32);
        if let Some(counts) = &mut self.counts {
            let malformed = head.frame_type == MALFORMED;
            counts.record(
                head.frame_type,
                malformed,
                flags,
                connection,
                timestamp_ns,
                frame.len(),
            );
        }
        self.rows += 1;
        self.data += frame.len();
        Ok(())
    }

    /// The fast path over `buf`, whose byte `i` is the file's byte `pos`: whole, valid
    /// records are decoded into rows until one is not (or `room` rows were added, or the
    /// next starts at or after `stop`). Returns the new `i` and `pos` and why it stopped.
    pub fn scan(
        &mut self,
        buf: &[u8],
        mut i: usize,
        mut pos: u64,
        stop: u64,
        sync: &[u8],
        mut room: usize,
    ) -> (usize, u64, Stop) {
        while room > 0 {
            let Some(header) = buf.get(i..i + RECORD_HEADER_SIZE) else {
                return (i, pos, Stop::Careful);
            };
            let length = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
            let flags = header[24];
            let header_crc = u32::from_be_bytes([header[29], header[30], header[31], header[32]]);
            if header[..4] != *sync
                || self.crc(&header[4..29]) != header_crc
                || length > MAX_FRAME_LENGTH
                || flags & FLAGS_RESERVED != 0
                || pos >= stop
            {
                return (i, pos, Stop::Careful);
            }
            let after = i + RECORD_HEADER_SIZE + length as usize;
            let Some(frame) = buf.get(i + RECORD_HEADER_SIZE..after) else {
                return (i, pos, Stop::Careful);
            };
            let frame_crc = u32::from_be_bytes([header[25], header[26], header[27], header[28]]);
            if self.crc(frame) != frame_crc {
                return (i, pos, Stop::FrameCrc);
            }
            if !self.fits(frame.len()) {
                return (i, pos, Stop::Full);
            }
            let mut word = [0u8; 8];
            word.copy_from_slice(&header[8..16]);
            let timestamp = u64::from_be_bytes(word);
            word.copy_from_slice(&header[16..24]);
            let connection = u64::from_be_bytes(word);
            if let Err(class) = self.add(frame, timestamp, connection, flags) {
                return (i, pos, Stop::Malformed(class));
            }
            pos += (after - i) as u64;
            i = after;
            room -= 1;
        }
        (i, pos, Stop::Full)
    }

    /// The fast path over the file at `path` from its byte `pos`: `scan` over windows of
    /// the file read into `window` (kept between calls: no fresh buffer, no page fault),
    /// until `room` rows were added or `scan` stops at something the window's end does
    /// not explain. Returns the new `pos` and why it stopped; `Careful` also for a file
    /// that cannot be read (the caller's careful path reads it again and raises).
    pub fn scan_file(
        &mut self,
        path: &Path,
        mut pos: u64,
        stop: u64,
        sync: &[u8],
        mut room: usize,
        window: &mut Vec<u8>,
    ) -> (u64, Stop) {
        let Ok(mut file) = File::open(path) else {
            return (pos, Stop::Careful);
        };
        let mut want = WINDOW;
        loop {
            let Ok(have) = read_at(&mut file, pos, want, window) else {
                return (pos, Stop::Careful);
            };
            let rows = self.rows;
            let (i, next, why) = self.scan(&window[..have], 0, pos, stop, sync, room);
            room -= self.rows - rows;
            if why != Stop::Careful {
                return (next, why);
            }
            if i > 0 {
                pos = next; // the window's end: read on from the first record not taken
                want = WINDOW;
                continue;
            }
            // Nothing taken: a record longer than the window (its header valid, so its
            // length is at most MAX_FRAME_LENGTH) is read whole; anything else is the
            // careful path's.
            match record_size(&window[..have], sync) {
                Some(size) if have == want && size > have && pos < stop => want = size,
                _ => return (pos, Stop::Careful),
            }
        }
    }

    /// Every column padded to the rows written: the batch, ready to export (`columns`),
    /// then `clear`. Returns the number of rows.
    pub fn finish(&mut self) -> usize {
        let rows = self.rows;
        for frame in &mut self.frames {
            if !frame.validity.is_empty() {
                frame.finish(rows); // a frame column no row holds stays empty: all null
            }
        }
        rows
    }

    /// The value of common column `index` in every row, when it is one of `CONSTANT`.
    pub fn constant(&self, index: usize) -> Option<&'static [u8]> {
        match index {
            3 => Some(self.protocol.protocol.as_bytes()),
            4 => Some(self.protocol.version.as_bytes()),
            _ => None,
        }
    }

    /// The common columns, then the frame columns (each with its fields).
    pub fn columns(&mut self) -> (&mut [Column], &mut [StructColumn]) {
        (&mut self.common, &mut self.frames)
    }

    /// Empty for the next batch, keeping every buffer's memory.
    pub fn clear(&mut self) {
        self.common.iter_mut().for_each(Column::clear);
        self.frames.iter_mut().for_each(StructColumn::clear);
        self.rows = 0;
        self.data = 0;
    }
}
