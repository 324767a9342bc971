// Writes the sub-entry batches of this folder exactly as rabbitmq-stream-go-client does
// (pkg/stream/aggregation.go, Compress of compressGZIP / compressSnappy / compressLZ4 /
// compressZSTD: a new writer per batch with the library's defaults, one Write per
// [uint32 BE size][message] record, Flush, Close). tests/rabbitmq_stream/test_rabbitmq_stream_compression.py
// reads them; it builds the same records (go_batch_records there).
//
// Regenerate (module cache or network needed): cd tests/vectors/rabbitmq_stream_go_codecs && go run .
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4"
)

// records: "small" is 10 short messages; "large" is 3000 messages of 160 bytes (480 KB:
// several zstd blocks, so klauspost streams the frame without a content size).
func records(name string) [][]byte {
	var out [][]byte
	if name == "small" {
		for i := 0; i < 10; i++ {
			out = append(out, []byte(fmt.Sprintf("hello from go %d", i)))
		}
		return out
	}
	for i := 0; i < 3000; i++ {
		out = append(out, []byte(strings.Repeat(fmt.Sprintf("record %05d ", i), 10)))
	}
	return out
}

func prefixed(message []byte) []byte { // buffer_writer.go bytesLengthPrefixed
	out := make([]byte, 4+len(message))
	binary.BigEndian.PutUint32(out, uint32(len(message)))
	copy(out[4:], message)
	return out
}

type flushCloser interface {
	io.Writer
	Flush() error
	Close() error
}

func write(w flushCloser, messages [][]byte) {
	for _, m := range messages {
		if _, err := w.Write(prefixed(m)); err != nil {
			panic(err)
		}
	}
	if err := w.Flush(); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
}

func main() {
	for _, name := range []string{"small", "large"} {
		messages := records(name)
		writers := map[string]func(*bytes.Buffer) flushCloser{
			"gzip":   func(b *bytes.Buffer) flushCloser { return gzip.NewWriter(b) },
			"snappy": func(b *bytes.Buffer) flushCloser { return snappy.NewBufferedWriter(b) },
			"lz4":    func(b *bytes.Buffer) flushCloser { return lz4.NewWriter(b) },
			"zstd": func(b *bytes.Buffer) flushCloser {
				w, err := zstd.NewWriter(b)
				if err != nil {
					panic(err)
				}
				return w
			},
		}
		for codec, make := range writers {
			var out bytes.Buffer
			write(make(&out), messages)
			if err := os.WriteFile(name+"."+codec, out.Bytes(), 0o644); err != nil {
				panic(err)
			}
		}
	}
}
