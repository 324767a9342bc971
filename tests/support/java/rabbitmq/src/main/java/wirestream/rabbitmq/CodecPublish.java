package wirestream.rabbitmq;

import com.rabbitmq.stream.Environment;
import com.rabbitmq.stream.Producer;
import com.rabbitmq.stream.compression.Compression;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Java client publishing with sub-entry batching and compression: args {@code URI
 * subEntrySize stream:codec...}, stdin one base64 message body per line. Every stream gets every
 * message, from a producer built with {@code subEntrySize(n).compression(codec)} (codec none,
 * gzip, snappy, lz4 or zstd; the Environment's DefaultCompressionCodecFactory), each body an AMQP
 * 1.0 Data section ({@code messageBuilder().addData}). Waits for every confirm (60 s at most)
 * and prints {"stream", "codec", "confirmed", "failed"} per stream.
 */
public final class CodecPublish {
  private CodecPublish() {}

  public static void main(String[] args) throws Exception {
    List<byte[]> bodies = new ArrayList<>();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      bodies.add(Json.unb64(line.trim()));
    }
    int subEntrySize = Integer.parseInt(args[1]);
    try (Environment environment = Environment.builder().uri(args[0]).build()) {
      for (int i = 2; i < args.length; i++) {
        String[] streamAndCodec = args[i].split(":");
        String stream = streamAndCodec[0];
        Compression codec = Compression.valueOf(streamAndCodec[1].toUpperCase(Locale.ROOT));
        Producer producer =
            environment
                .producerBuilder()
                .stream(stream)
                .subEntrySize(subEntrySize)
                .compression(codec)
                .build();
        CountDownLatch outcomes = new CountDownLatch(bodies.size());
        AtomicInteger confirmed = new AtomicInteger();
        for (byte[] body : bodies) {
          producer.send(
              producer.messageBuilder().addData(body).build(),
              status -> {
                if (status.isConfirmed()) {
                  confirmed.incrementAndGet();
                }
                outcomes.countDown();
              });
        }
        boolean done = outcomes.await(60, TimeUnit.SECONDS);
        producer.close();
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("stream", stream);
        answer.put("codec", CodecBytes.name(codec));
        answer.put("confirmed", confirmed.get());
        answer.put("failed", bodies.size() - confirmed.get());
        answer.put("timed_out", !done);
        Json.print(answer);
      }
    }
  }
}
