//! RSocket 1.0 PAYLOAD frames (16 B metadata + 100 B data, 125 bytes without the TCP length
//! prefix, as in bench/codec.py): decode (borrowing) and encode (into a reused buffer, and
//! into a new Vec) with the generated crate; best of 5 rounds of N frames, one core.
#![forbid(unsafe_code)]

use std::hint::black_box;
use std::time::Instant;

use wirestream_rsocket_v1_0::{decode, Frame, Payload};

const N: u32 = 5_000_000;
const ROUNDS: usize = 5;

fn best(mut round: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        round();
        best = best.min(start.elapsed().as_secs_f64());
    }
    best
}

fn report(what: &str, seconds: f64) {
    let ns = seconds * 1e9 / f64::from(N);
    println!(
        "{what:<34} {ns:>7.1} ns/frame  {:>6.1} M frames/s",
        1e3 / ns
    );
}

fn main() {
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
    assert_eq!(bytes.len(), 125);
    assert_eq!(decode(&bytes), Ok(frame.clone()));
    println!(
        "RSocket 1.0 PAYLOAD, {} B, {N} frames a round, best of {ROUNDS}",
        bytes.len()
    );

    report(
        "decode (borrowing)",
        best(|| {
            for _ in 0..N {
                black_box(decode(black_box(&bytes)).is_ok());
            }
        }),
    );
    let mut buf = Vec::with_capacity(256);
    report(
        "encode (reused buffer)",
        best(|| {
            for _ in 0..N {
                buf.clear();
                black_box(&frame).write(&mut buf, None).expect("encodes");
                black_box(buf.len());
            }
        }),
    );
    report(
        "encode (new Vec each)",
        best(|| {
            for _ in 0..N {
                black_box(black_box(&frame).encode().expect("encodes").len());
            }
        }),
    );
}
