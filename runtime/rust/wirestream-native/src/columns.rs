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
    /// Spark's DecimalType(20, 0): 16-byte two's complement integers.
    Decimal,
    /// Spark's ArrayType: the element's field (named `element`, as pyspark names it).
    List(&'static Field),
    /// A nested StructType.
    Struct(&'static [Field]),
}

/// A field of a struct or list: name, kind, nullable.
pub type Field = (&'static str, Kind, bool);

impl Kind {
    /// The type as pyarrow prints it (`str(pa.DataType)`), nested types included.
    pub fn name(self) -> String {
        match self {
            Kind::Int32 => "int32".into(),
            Kind::Int64 => "int64".into(),
            Kind::TimestampMicros => "timestamp[us, tz=UTC]".into(),
            Kind::Bool => "bool".into(),
            Kind::Binary => "binary".into(),
            Kind::Utf8 => "string".into(),
            Kind::Decimal => "decimal128(20, 0)".into(),
            Kind::List(field) => format!("list<{}>", field_name(field)),
            Kind::Struct(fields) => {
                let inner: Vec<String> = fields.iter().map(field_name).collect();
                format!("struct<{}>", inner.join(", "))
            }
        }
    }

    /// Buffer slots a column of this kind takes in a batch (`Exporter`): three of its
    /// own (validity and up to two buffers), then its children's.
    pub fn slots(self) -> usize {
        3 + match self {
            Kind::List(field) => field.1.slots(),
            Kind::Struct(fields) => fields.iter().map(|f| f.1.slots()).sum(),
            _ => 0,
        }
    }
}

fn field_name(field: &Field) -> String {
    let (name, kind, nullable) = *field;
    let tail = if nullable { "" } else { " not null" };
    format!("{name}: {}{tail}", kind.name())
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
    /// A list: 32-bit offsets into its one child (the elements of every row).
    List {
        offsets: Vec<u8>,
        child: Box<Column>,
    },
    /// A struct: one child per field, as long as the struct.
    Struct {
        children: Vec<Column>,
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
            Kind::Decimal => Values::Fixed {
                width: 16,
                data: Vec::new(),
            },
            Kind::List(&(_, element, nullable)) => Values::List {
                offsets: 0i32.to_ne_bytes().to_vec(),
                child: Box::new(Column::new(element, nullable)),
            },
            Kind::Struct(fields) => Values::Struct {
                children: fields
                    .iter()
                    .map(|&(_, kind, nullable)| Column::new(kind, nullable))
                    .collect(),
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
            Values::List { offsets, child } => {
                offsets.truncate(4);
                child.clear();
            }
            Values::Struct { children } => children.iter_mut().for_each(Column::clear),
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
    pub fn i128(&mut self, value: i128) {
        if let Values::Fixed { data, .. } = &mut self.values {
            data.extend_from_slice(&value.to_ne_bytes());
        }
        self.valid();
    }

    /// The element column of a list column (None for other kinds): the caller writes a
    /// row's elements into it, then `close`s the row.
    #[inline]
    pub fn items(&mut self) -> Option<&mut Column> {
        match &mut self.values {
            Values::List { child, .. } => Some(child),
            _ => None,
        }
    }

    /// The end of a list row: its elements are those written since the last row.
    #[inline]
    pub fn close(&mut self) {
        if let Values::List { offsets, child } = &mut self.values {
            // a batch holds at most DATA_LIMIT bytes: far fewer than i32::MAX elements
            offsets.extend_from_slice(&(child.len as i32).to_ne_bytes());
        }
        self.valid();
    }

    /// A struct row: the struct is valid, and its fields (returned) are set by the
    /// caller in order, every field once. The fields catch up first with the rows where
    /// the struct was null (`pad` leaves them behind: a union's variants are null in
    /// most rows, and padding each of their fields row by row cost more than the rest).
    #[inline]
    pub fn fields(&mut self) -> &mut [Column] {
        let len = self.len;
        self.valid();
        match &mut self.values {
            Values::Struct { children } => {
                for child in children.iter_mut() {
                    child.pad(len);
                }
                children
            }
            _ => &mut [],
        }
    }

    /// A union's row (a struct of one nullable struct per variant, one of them set): the
    /// union is valid; its row's index and its variants' columns, left behind by the rows
    /// they were not set in: the caller catches the one it sets up (`pad(row)`, then
    /// `fields()`), the export the others, all at once -- not one null per variant a row.
    #[inline]
    pub fn variants(&mut self) -> (usize, &mut [Column]) {
        let row = self.len;
        self.valid();
        match &mut self.values {
            Values::Struct { children } => (row, children),
            _ => (row, &mut []),
        }
    }

    /// Values written (rows, or a list's elements).
    pub fn length(&self) -> usize {
        self.len
    }

    /// The child columns (a list's elements, a struct's fields).
    pub fn children(&mut self) -> &mut [Column] {
        match &mut self.values {
            Values::List { child, .. } => core::slice::from_mut(&mut **child),
            Values::Struct { children } => children,
            _ => &mut [],
        }
    }

    /// Buffer slots of this column and its children (`Kind::slots`).
    pub fn slots(&self) -> usize {
        3 + match &self.values {
            Values::List { child, .. } => child.slots(),
            Values::Struct { children } => children.iter().map(Column::slots).sum(),
            _ => 0,
        }
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

    /// Null (zero, empty) values up to `len` rows.
    #[inline]
    pub fn pad(&mut self, len: usize) {
        if len <= self.len {
            return;
        }
        match &mut self.values {
            Values::Fixed { width, data } => data.resize(len * *width, 0),
            Values::Bits(bits) => bits.pad(len),
            Values::Var { offsets, data } => repeat_offset(offsets, data.len(), len - self.len),
            Values::List { offsets, child } => repeat_offset(offsets, child.len, len - self.len),
            // the fields catch up later, all at once (`fields`, `export`)
            Values::Struct { .. } => {}
        }
        if let Some(bits) = &mut self.validity {
            bits.pad(len);
        }
        self.len = len;
    }

    pub fn null_count(&self) -> usize {
        self.validity.as_ref().map_or(0, Bits::zeros)
    }

    /// The column's own buffers moved out for a batch -- validity (when nullable) and the
    /// value buffers in Arrow's order (a struct has none, a list its offsets) -- with its
    /// null count (its children export theirs: `children`); `spare(k)` gives the empty
    /// buffer that takes the place of buffer `k` (0 validity, 1 values or offsets, 2
    /// data): one a dropped batch gave back, whose memory is already paged in.
    pub fn export(
        &mut self,
        mut spare: impl FnMut(usize) -> Vec<u8>,
    ) -> (Option<Vec<u8>>, usize, Vec<Vec<u8>>) {
        let nulls = self.null_count();
        if let Values::Struct { children } = &mut self.values {
            for child in children.iter_mut() {
                child.pad(self.len); // the rows `pad` left them behind by
            }
        }
        let validity = self.validity.as_mut().map(|bits| bits.swap(spare(0)));
        let buffers = match &mut self.values {
            Values::Fixed { data, .. } => vec![core::mem::replace(data, spare(1))],
            Values::Bits(bits) => vec![bits.swap(spare(1))],
            Values::Var { offsets, data } => {
                let taken = core::mem::replace(offsets, spare(1));
                offsets.extend_from_slice(&0i32.to_ne_bytes());
                vec![taken, core::mem::replace(data, spare(2))]
            }
            Values::List { offsets, .. } => {
                let taken = core::mem::replace(offsets, spare(1));
                offsets.extend_from_slice(&0i32.to_ne_bytes());
                vec![taken]
            }
            Values::Struct { .. } => Vec::new(),
        };
        self.len = 0;
        (validity, nulls, buffers)
    }
}

/// `count` more offsets of `end` (the rows of empty values).
#[inline]
fn repeat_offset(offsets: &mut Vec<u8>, end: usize, count: usize) {
    // a batch holds at most DATA_LIMIT bytes and ROW_LIMIT rows: within i32
    if end == 0 {
        // a column nothing was written to yet (a union's unused variants): a memset
        offsets.resize(offsets.len() + 4 * count, 0);
        return;
    }
    let end = (end as i32).to_ne_bytes();
    if count == 1 {
        offsets.extend_from_slice(&end);
    } else {
        offsets.extend(end.iter().copied().cycle().take(4 * count));
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
    pub fn new(fields: &[Field]) -> Self {
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
