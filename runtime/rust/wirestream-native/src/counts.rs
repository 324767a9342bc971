//! What `wirestream capture stats` counts of a capture's records, counted as the frame log
//! decodes them (`FrameLog::count`): per frame type and sender, per connection and in all,
//! each list in the order its keys were first seen (the order the pure-Python
//! `wirestream.apps.capture_cli.collect_stats` fills its dicts in).

use std::collections::HashMap;

/// A record's flags (`wirestream.runtime.capture.format`): bit 0 direction (1 = out, sent
/// by the tapped side), bit 1 side (1 = the tapped side is the server).
const FLAG_OUT: u8 = 0x01;
const FLAG_SERVER: u8 = 0x02;

/// Frames and bytes of one frame type from one sender.
pub struct KindCount {
    pub frame_type: &'static str,
    /// Sent by the server (else by the client).
    pub by_server: bool,
    pub frames: u64,
    pub bytes: u64,
}

/// One connection's records: its tapped side (of its first record), frames, bytes and
/// the first and last record's time.
pub struct ConnectionCount {
    pub id: u64,
    pub server_side: bool,
    pub frames: u64,
    pub bytes: u64,
    pub first_ns: u64,
    pub last_ns: u64,
}

#[derive(Default)]
pub struct Counts {
    pub kinds: Vec<KindCount>,
    kind_at: HashMap<(&'static str, bool), usize>,
    pub connections: Vec<ConnectionCount>,
    connection_at: HashMap<u64, usize>,
    pub frames: u64,
    pub bytes: u64,
    /// Records whose frame did not decode (`frame_type` MALFORMED).
    pub malformed: u64,
    /// The earliest and latest record time (ns), of every record.
    pub span_ns: Option<(u64, u64)>,
}

impl Counts {
    /// One record: its frame type (MALFORMED when it did not decode), flags, connection,
    /// time and frame length.
    pub fn record(
        &mut self,
        frame_type: &'static str,
        malformed: bool,
        flags: u8,
        connection: u64,
        timestamp_ns: u64,
        length: usize,
    ) {
        let length = length as u64;
        let server_side = flags & FLAG_SERVER != 0;
        // the tapped side sent what went out; its peer what came in
        let by_server = (flags & FLAG_OUT != 0) == server_side;
        self.frames += 1;
        self.bytes += length;
        self.malformed += u64::from(malformed);
        self.span_ns = Some(match self.span_ns {
            Some((first, last)) => (first.min(timestamp_ns), last.max(timestamp_ns)),
            None => (timestamp_ns, timestamp_ns),
        });
        let kinds = &mut self.kinds;
        let at = *self
            .kind_at
            .entry((frame_type, by_server))
            .or_insert_with(|| {
                kinds.push(KindCount {
                    frame_type,
                    by_server,
                    frames: 0,
                    bytes: 0,
                });
                kinds.len() - 1
            });
        kinds[at].frames += 1;
        kinds[at].bytes += length;
        let connections = &mut self.connections;
        let at = *self.connection_at.entry(connection).or_insert_with(|| {
            connections.push(ConnectionCount {
                id: connection,
                server_side,
                frames: 0,
                bytes: 0,
                first_ns: timestamp_ns,
                last_ns: timestamp_ns,
            });
            connections.len() - 1
        });
        let c = &mut connections[at];
        c.frames += 1;
        c.bytes += length;
        c.first_ns = c.first_ns.min(timestamp_ns);
        c.last_ns = c.last_ns.max(timestamp_ns);
    }
}
