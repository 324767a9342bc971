module wirestream/tests/vectors/rabbitmq_stream_go_codecs

go 1.24

// The codec libraries and versions of rabbitmq-stream-go-client (its go.mod):
// pkg/stream/aggregation.go writes sub-entry batches with them.
require (
	github.com/golang/snappy v1.0.0
	github.com/klauspost/compress v1.18.6
	github.com/pierrec/lz4 v2.6.1+incompatible
)
