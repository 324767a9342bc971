//! Arrow column buffers built in Rust and handed to pyarrow (`pa.Array.from_buffers`),
//! so the extension needs no Arrow crate: the frame log uses six physical layouts, each a
//! validity bitmap and one or two buffers (Arrow's columnar format, "Physical Memory
//! Layout"), which these few types write directly.

/// An Arrow bitmap: bit `i` of byte `i / 8`, least significant bit first.
#[derive(Default)]
pub struct Bits {
    bytes: Vec<u8>,
    len: usize,
}

impl Bits {
    #[inline]
    pub fn push(&mut self, bit: bool) {
        let shift = self.len % 8;
        if shift == 0 {
            self.bytes.push(u8::from(bit));
        } else if let Some(last) = self.bytes.last_mut() {
            *last |= u8::from(bit) << shift;
        }
        self.len += 1;
    }

    /// Zeros up to `len` bits (a no-op when it is that long already).
    #[inline]
    pub fn pad(&mut self, len: usize) {
        if len > self.len {
            self.bytes.resize(len.div_ceil(8), 0);
            self.len = len;
        }
    }

    /// Empty, keeping its memory for the next batch.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.len = 0;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bits that are 0 (counted at export, not per bit: the bits past `len` are 0).
    pub fn zeros(&self) -> usize {
        let ones: u32 = self.bytes.iter().map(|b| b.count_ones()).sum();
        self.len - ones as usize
    }

    #[inline]
    /// The bitmap's bytes moved out, `fresh` (empty) in their place.
    pub fn swap(&mut self, fresh: Vec<u8>) -> Vec<u8> {
        self.len = 0;
        core::mem::replace(&mut self.bytes, fresh)
    }
}

/// A column's Arrow type, as `layout()` names it to Python (which checks it against the
/// Spark schema's Arrow type once, at the start: no cast happens later).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Int32,
    Int64,
    TimestampMicros,
    Bool,
    Binary,
    Utf8,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Int32 => "int32",
            Kind::Int64 => "int64",
            Kind::TimestampMicros => "timestamp[us, tz=UTC]",
            Kind::Bool => "bool",
            Kind::Binary => "binary",
            Kind::Utf8 => "string",
        }
    }
}

enum Values {
    /// Fixed-width integers, already as the buffer's bytes (host order, as Arrow and
    /// pyarrow read them): no unsafe cast at export.
    Fixed {
        width: usize,
        data: Vec<u8>,
    },
    Bits(Bits),
    /// Binary and UTF-8: 32-bit offsets (the caller keeps a batch under 2 GiB of data).
    Var {
        offsets: Vec<u8>,
        data: Vec<u8>,
    },
}

/// One column of primitive, boolean, binary or string values; `validity` only when the
/// column is nullable.
pub struct Column {
    values: Values,
    validity: Option<Bits>,
    len: usize,
}

impl Column {
    pub fn new(kind: Kind, nullable: bool) -> Self {
        let values = match kind {
            Kind::Int32 => Values::Fixed {
                width: 4,
                data: Vec::new(),
            },
            Kind::Int64 | Kind::TimestampMicros => Values::Fixed {
                width: 8,
                data: Vec::new(),
            },
            Kind::Bool => Values::Bits(Bits::default()),
            Kind::Binary | Kind::Utf8 => Values::Var {
                offsets: 0i32.to_ne_bytes().to_vec(),
                data: Vec::new(),
            },
        };
        Column {
            values,
            validity: nullable.then(Bits::default),
            len: 0,
        }
    }

    /// Empty, keeping its memory: the next batch of a scan then grows no buffer and
    /// touches no fresh page (batches are mostly alike; page faults on fresh buffers
    /// cost more than filling them).
    pub fn clear(&mut self) {
        match &mut self.values {
            Values::Fixed { data, .. } => data.clear(),
            Values::Bits(bits) => bits.clear(),
            Values::Var { offsets, data } => {
                offsets.truncate(4); // the first offset, 0
                data.clear();
            }
        }
        if let Some(bits) = &mut self.validity {
            bits.clear();
        }
        self.len = 0;
    }

    #[inline]
    fn valid(&mut self) {
        if let Some(bits) = &mut self.validity {
            bits.push(true);
        }
        self.len += 1;
    }

    #[inline]
    pub fn i32(&mut self, value: i32) {
        if let Values::Fixed { data, .. } = &mut self.values {
            data.extend_from_slice(&value.to_ne_bytes());
        }
        self.valid();
    }

    #[inline]
    pub fn i64(&mut self, value: i64) {
        if let Values::Fixed { data, .. } = &mut self.values {
            data.extend_from_slice(&value.to_ne_bytes());
        }
        self.valid();
    }

    #[inline]
    pub fn bool(&mut self, value: bool) {
        if let Values::Bits(bits) = &mut self.values {
            bits.push(value);
        }
        self.valid();
    }

    #[inline]
    pub fn bytes(&mut self, value: &[u8]) {
        if let Values::Var { offsets, data } = &mut self.values {
            data.extend_from_slice(value);
            offsets.extend_from_slice(&(data.len() as i32).to_ne_bytes());
        }
        self.valid();
    }

    /// A null (the column must be nullable) or, padding a struct's absent rows, a zero.
    #[inline]
    pub fn null(&mut self) {
        self.pad(self.len + 1);
    }

    #[inline]
    pub fn opt_bytes(&mut self, value: Option<&[u8]>) {
        match value {
            Some(value) => self.bytes(value),
            None => self.null(),
        }
    }

    /// Null (zero, empty) values up to `len` rows.
    #[inline]
    pub fn pad(&mut self, len: usize) {
        if len <= self.len {
            return;
        }
        match &mut self.values {
            Values::Fixed { width, data } => data.resize(len * *width, 0),
            Values::Bits(bits) => bits.pad(len),
            Values::Var { offsets, data } => {
                let end = (data.len() as i32).to_ne_bytes();
                for _ in self.len..len {
                    offsets.extend_from_slice(&end);
                }
            }
        }
        if let Some(bits) = &mut self.validity {
            bits.pad(len);
        }
        self.len = len;
    }

    pub fn null_count(&self) -> usize {
        self.validity.as_ref().map_or(0, Bits::zeros)
    }

    /// The column's buffers moved out for a batch -- validity (when nullable) and the
    /// value buffers in Arrow's order -- with its null count; `spare(k)` gives the empty
    /// buffer that takes the place of buffer `k` (0 validity, 1 values or offsets, 2
    /// data): one a dropped batch gave back, whose memory is already paged in.
    pub fn export(
        &mut self,
        mut spare: impl FnMut(usize) -> Vec<u8>,
    ) -> (Option<Vec<u8>>, usize, Vec<Vec<u8>>) {
        let nulls = self.null_count();
        let validity = self.validity.as_mut().map(|bits| bits.swap(spare(0)));
        let buffers = match &mut self.values {
            Values::Fixed { data, .. } => vec![core::mem::replace(data, spare(1))],
            Values::Bits(bits) => vec![bits.swap(spare(1))],
            Values::Var { offsets, data } => {
                let taken = core::mem::replace(offsets, spare(1));
                offsets.extend_from_slice(&0i32.to_ne_bytes());
                vec![taken, core::mem::replace(data, spare(2))]
            }
        };
        self.len = 0;
        (validity, nulls, buffers)
    }
}

/// A struct column (one frame type's): which rows hold it, and its fields' columns,
/// filled lazily: a frame's row pads the fields to its row first (absent rows are null
/// structs whose fields hold zeros), so rows of other frame types cost nothing here.
pub struct StructColumn {
    pub validity: Bits,
    pub fields: Vec<Column>,
}

impl StructColumn {
    pub fn new(fields: &[(&'static str, Kind, bool)]) -> Self {
        StructColumn {
            validity: Bits::default(),
            fields: fields
                .iter()
                .map(|&(_, kind, nullable)| Column::new(kind, nullable))
                .collect(),
        }
    }

    pub fn clear(&mut self) {
        self.validity.clear();
        for field in &mut self.fields {
            field.clear();
        }
    }

    /// The fields of row `row`, set by the caller in order (every field once).
    #[inline]
    pub fn row(&mut self, row: usize) -> &mut [Column] {
        // Every row this column holds sets each field once, so the fields are as long as
        // `validity`: only rows of other frame types since the last one need padding.
        if self.validity.len() != row {
            self.pad(row);
            for field in &mut self.fields {
                field.pad(row);
            }
        }
        self.validity.push(true);
        &mut self.fields
    }

    #[inline]
    pub fn pad(&mut self, len: usize) {
        self.validity.pad(len);
    }

    pub fn finish(&mut self, len: usize) {
        self.validity.pad(len);
        for field in &mut self.fields {
            field.pad(len);
        }
    }
}
