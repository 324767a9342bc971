//! The codec crates' `bytes` and `tokio-util` features (here on RSocket 1.0): frames written
//! by `FrameCodec` come back out of a read buffer that receives them in chunks, each
//! decoding to the frame written; a partial frame stays in the buffer, and a frame that
//! cannot be encoded fails as `EncodeError`.
#![forbid(unsafe_code)]

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};
use wirestream_rsocket_v1_0::codec::{CodecError, FrameCodec};
use wirestream_rsocket_v1_0::{
    decode, split_bytes, Cancel, Frame, Payload, ProtocolError, RequestN,
};

#[test]
fn frames_round_trip_through_the_codec_in_chunks() {
    let frames = [
        Frame::Payload(Payload {
            stream_id: 1,
            ignore: false,
            follows: false,
            complete: true,
            next: true,
            metadata: Some(b"meta"),
            data: b"data",
        }),
        Frame::RequestN(RequestN {
            stream_id: 3,
            ignore: false,
            request_n: 7,
        }),
        Frame::Cancel(Cancel {
            stream_id: 5,
            ignore: false,
        }),
    ];
    let mut codec = FrameCodec;
    let mut wire = BytesMut::new();
    for frame in &frames {
        codec.encode(frame, &mut wire).expect("encodes");
    }
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for chunk in wire.chunks(7) {
        buf.extend_from_slice(chunk);
        while let Some(bytes) = codec.decode(&mut buf).expect("splits") {
            got.push(bytes);
        }
    }
    assert!(buf.is_empty());
    let decoded: Vec<Frame<'_>> = got.iter().map(|b| decode(b).expect("decodes")).collect();
    assert_eq!(decoded, frames);
}

#[test]
fn a_partial_frame_stays_and_a_bad_frame_is_not_written() {
    let mut buf = BytesMut::from(&[0u8, 0, 6, 0, 0, 0][..]);
    assert_eq!(split_bytes(&mut buf), Ok(None));
    assert_eq!(buf.len(), 6, "a partial frame is left in the buffer");
    let mut huge = BytesMut::from(&[0xffu8, 0xff, 0xff, 0][..]);
    // 0xffffff is RSocket's limit itself (a 3-byte length): the codec waits for the rest
    assert!(matches!(FrameCodec.decode(&mut huge), Ok(None)));
    let mut codec = FrameCodec;
    let error = codec.encode(
        &Frame::Cancel(Cancel {
            stream_id: 0x8000_0000,
            ignore: false,
        }),
        &mut BytesMut::new(),
    );
    assert!(matches!(
        error,
        Err(CodecError::Protocol(ProtocolError::EncodeError))
    ));
}
