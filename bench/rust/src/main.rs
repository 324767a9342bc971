//! RSocket 1.0 PAYLOAD frames (16 B metadata + 100 B data: 125 bytes, 128 with the TCP
//! length prefix, as bench/codec.py times them in Python), streamed from memory: decode and
//! encode with the generated crate, with a hand-written loop (what one would write for this
//! one frame type: the floor) and with `rsocket_rust` 0.7.5 (its `Frame::decode` after the
//! `split_to` its length codec does; its `write_to`). Best of ROUNDS rounds of N frames,
//! one core, the rounds of the six figures interleaved. `--json` prints the ns per frame as one JSON object (bench/rust_ratios.py).
#![forbid(unsafe_code)]

use std::hint::black_box;
use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use rsocket_rust::frame::{self as theirs, Frame as TheirFrame};
use rsocket_rust::utils::Writeable;
use wirestream_rsocket_v1_0::{Frame, Frames, Payload};

const N: usize = 200_000;
const ROUNDS: usize = 7;

/// One figure's timed round: ns per frame (its setup done before the clock starts).
type Round<'a> = Box<dyn FnMut() -> f64 + 'a>;

/// A round of `round(setup())`, timed without its setup.
fn timed<'a, T>(mut setup: impl FnMut() -> T + 'a, mut round: impl FnMut(T) + 'a) -> Round<'a> {
    Box::new(move || {
        let input = setup();
        let start = Instant::now();
        round(input);
        start.elapsed().as_secs_f64() * 1e9 / N as f64
    })
}

/// The best of ROUNDS rounds of each figure, the rounds interleaved (one round of each
/// figure, then the next): on a shared machine a burst of other work then slows every
/// figure alike, not only the few timed during it, so the ratios hold under load.
fn best_interleaved(rounds: &mut [(&'static str, Round<'_>)]) -> Vec<(&'static str, f64)> {
    let mut best = vec![f64::INFINITY; rounds.len()];
    for _ in 0..ROUNDS {
        for (b, (_, round)) in best.iter_mut().zip(rounds.iter_mut()) {
            *b = b.min(round());
        }
    }
    rounds.iter().map(|(name, _)| *name).zip(best).collect()
}

/// The hand-written decoder of a PAYLOAD: the frame's fields as borrowed slices.
struct Hand<'a> {
    stream_id: u32,
    flags: u16,
    metadata: Option<&'a [u8]>,
    data: &'a [u8],
}

fn hand_decode(frame: &[u8]) -> Option<Hand<'_>> {
    let (header, body) = frame.split_at_checked(6)?;
    let stream_id = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) & 0x7fff_ffff;
    let word = u16::from_be_bytes([header[4], header[5]]);
    if word >> 10 != 0x0a {
        return None;
    }
    let flags = word & 0x3ff;
    let (metadata, data) = if flags & 0x100 != 0 {
        let (len, rest) = body.split_at_checked(3)?;
        let len = usize::from(len[0]) << 16 | usize::from(len[1]) << 8 | usize::from(len[2]);
        let (m, d) = rest.split_at_checked(len)?;
        (Some(m), d)
    } else {
        (None, body)
    };
    Some(Hand {
        stream_id,
        flags,
        metadata,
        data,
    })
}

fn hand_encode(w: &mut Vec<u8>, h: &Hand<'_>) {
    w.extend_from_slice(&h.stream_id.to_be_bytes());
    w.extend_from_slice(&(0x0a << 10 | h.flags).to_be_bytes());
    if let Some(m) = h.metadata {
        w.extend_from_slice(&(m.len() as u32).to_be_bytes()[1..]);
        w.extend_from_slice(m);
    }
    w.extend_from_slice(h.data);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    // `--only NAME`: time that figure alone (for a profiler such as cachegrind)
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1).cloned());
    let metadata = [7u8; 16];
    let data = [b'x'; 100];
    let frame = Frame::Payload(Payload {
        stream_id: 1,
        ignore: false,
        follows: false,
        complete: false,
        next: true,
        metadata: Some(&metadata),
        data: &data,
    });
    let bytes = frame.encode().expect("a valid frame");
    let prefixed = frame.frame_bytes().expect("a valid frame");
    assert_eq!((bytes.len(), prefixed.len()), (125, 128));
    let stream: Vec<u8> = prefixed
        .iter()
        .copied()
        .cycle()
        .take(prefixed.len() * N)
        .collect();
    let their_frame = theirs::Payload::builder(1, TheirFrame::FLAG_NEXT)
        .set_metadata(Bytes::copy_from_slice(&metadata))
        .set_data(Bytes::copy_from_slice(&data))
        .build();
    assert_eq!(
        their_frame.bytes(),
        bytes,
        "rsocket_rust writes the same bytes"
    );
    let hand = hand_decode(&bytes).expect("hand-decodes");

    let mut out = Vec::with_capacity(prefixed.len() * N);
    let mut hand_out = Vec::with_capacity(prefixed.len() * N);
    let mut their_out = BytesMut::with_capacity(prefixed.len() * N);
    let mut rounds: Vec<(&'static str, Round<'_>)> = vec![
        (
            "decode_generated",
            timed(
                || (),
                |()| {
                    // `ref`: the frame observed where `next` wrote it, as the hand loop
                    // observes its decoder's result; `for f in` would move the 104-byte
                    // frame into the binding first, a copy the hand loop's 40 bytes do not pay
                    for ref f in Frames::new(black_box(&stream)) {
                        black_box(f);
                    }
                },
            ),
        ),
        (
            "decode_hand",
            timed(
                || (),
                |()| {
                    let mut rest = black_box(&stream[..]);
                    while let Some((len, tail)) = rest.split_at_checked(3) {
                        let len = usize::from(len[0]) << 16
                            | usize::from(len[1]) << 8
                            | usize::from(len[2]);
                        let Some((frame, next)) = tail.split_at_checked(len) else {
                            break;
                        };
                        black_box(&hand_decode(frame));
                        rest = next;
                    }
                },
            ),
        ),
        (
            "decode_rsocket_rust",
            timed(
                || BytesMut::from(&stream[..]),
                |mut buf| {
                    while buf.len() >= 3 {
                        let len = usize::from(buf[0]) << 16
                            | usize::from(buf[1]) << 8
                            | usize::from(buf[2]);
                        buf.advance(3);
                        let mut one = buf.split_to(len);
                        black_box(TheirFrame::decode(&mut one).is_ok());
                    }
                },
            ),
        ),
        (
            "encode_generated",
            timed(
                || (),
                |()| {
                    out.clear();
                    for _ in 0..N {
                        black_box(&frame).write(&mut out, None).expect("encodes");
                    }
                    black_box(out.len());
                },
            ),
        ),
        (
            "encode_hand",
            timed(
                || (),
                |()| {
                    hand_out.clear();
                    for _ in 0..N {
                        hand_encode(&mut hand_out, black_box(&hand));
                    }
                    black_box(hand_out.len());
                },
            ),
        ),
        (
            "encode_rsocket_rust",
            timed(
                || (),
                |()| {
                    their_out.clear();
                    for _ in 0..N {
                        black_box(&their_frame).write_to(&mut their_out);
                    }
                    black_box(their_out.len());
                },
            ),
        ),
    ];
    if let Some(only) = &only {
        rounds.retain(|(name, _)| name == only);
        assert!(!rounds.is_empty(), "--only {only}: no such figure");
    }
    let figures = best_interleaved(&mut rounds);

    if json {
        let fields: Vec<String> = figures
            .iter()
            .map(|(k, v)| format!("\"{k}\": {v:.3}"))
            .collect();
        println!("{{{}}}", fields.join(", "));
    } else {
        println!("RSocket 1.0 PAYLOAD, 125 B (+3 B prefix), {N} frames a round, best of {ROUNDS}");
        for (what, ns) in figures {
            println!(
                "{what:<22} {ns:>7.1} ns/frame  {:>6.1} M frames/s",
                1e3 / ns
            );
        }
    }
}
