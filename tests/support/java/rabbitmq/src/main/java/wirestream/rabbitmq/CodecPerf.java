package wirestream.rabbitmq;

import com.rabbitmq.stream.Consumer;
import com.rabbitmq.stream.Environment;
import com.rabbitmq.stream.OffsetSpecification;
import com.rabbitmq.stream.Producer;
import com.rabbitmq.stream.compression.Compression;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A PerfTest-style measurement on the Java client's public API (stream-perf-test itself is not
 * on Maven Central): args {@code URI count size subEntrySize text-base64 codec...}. For each codec, on
 * a fresh stream (deleted afterwards):
 *
 * <ul>
 *   <li>publish: one producer with {@code subEntrySize(n).compression(codec)} (client defaults
 *       otherwise: batchSize 100, maxUnconfirmedMessages 10,000) sends {@code count} messages,
 *       each an AMQP 1.0 Data section of {@code size} bytes: the message's index (8 bytes,
 *       big-endian) then {@code size - 8} bytes of the text from {@code (index * 61) %
 *       (text.length - size + 8)} (bench/rabbitmq_codecs.py cuts the same); the clock runs
 *       from the first send to the last confirm (as
 *       stream-perf-test's confirmed rate);
 *   <li>consume: one consumer from offset first until {@code count} messages reached the
 *       handler, each body read ({@code getBodyAsBinary}).
 * </ul>
 *
 * A warm-up round of count/10 on every codec runs first (the JIT; not reported). Prints
 * {"codec", "publish_rate", "consume_rate"} (messages/s) per codec.
 */
public final class CodecPerf {
  private CodecPerf() {}

  public static void main(String[] args) throws Exception {
    int count = Integer.parseInt(args[1]);
    int size = Integer.parseInt(args[2]);
    int subEntrySize = Integer.parseInt(args[3]);
    byte[] text = Json.unb64(args[4]);
    String[] codecs = Arrays.copyOfRange(args, 5, args.length);
    try (Environment environment = Environment.builder().uri(args[0]).build()) {
      for (String codec : codecs) {
        measure(environment, Math.max(1, count / 10), size, subEntrySize, text, codec);
      }
      for (String codec : codecs) {
        double[] rates = measure(environment, count, size, subEntrySize, text, codec);
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("codec", codec);
        answer.put("publish_rate", rates[0]);
        answer.put("consume_rate", rates[1]);
        Json.print(answer);
      }
    }
  }

  private static double[] measure(
      Environment environment, int count, int size, int subEntrySize, byte[] text, String codec)
      throws Exception {
    String stream = "bench-java-" + codec + "-" + System.nanoTime();
    environment.streamCreator().stream(stream).create();
    try {
      Producer producer =
          environment
              .producerBuilder()
              .stream(stream)
              .subEntrySize(subEntrySize)
              .compression(Compression.valueOf(codec.toUpperCase(Locale.ROOT)))
              .build();
      CountDownLatch confirmed = new CountDownLatch(count);
      long started = System.nanoTime();
      for (int i = 0; i < count; i++) {
        byte[] body = new byte[size];
        ByteBuffer.wrap(body).putLong(0, i);
        System.arraycopy(text, (int) ((i * 61L) % (text.length - size + 8)), body, 8, size - 8);
        producer.send(
            producer.messageBuilder().addData(body).build(),
            status -> {
              if (!status.isConfirmed()) {
                throw new IllegalStateException("not confirmed: code " + status.getCode());
              }
              confirmed.countDown();
            });
      }
      if (!confirmed.await(120, TimeUnit.SECONDS)) {
        throw new IllegalStateException(codec + ": confirms missing after 120 s");
      }
      double publishRate = count / ((System.nanoTime() - started) / 1e9);
      producer.close();

      CountDownLatch received = new CountDownLatch(count);
      AtomicLong bytes = new AtomicLong();
      started = System.nanoTime();
      Consumer consumer =
          environment
              .consumerBuilder()
              .stream(stream)
              .offset(OffsetSpecification.first())
              .messageHandler(
                  (context, message) -> {
                    bytes.addAndGet(message.getBodyAsBinary().length);
                    received.countDown();
                  })
              .build();
      if (!received.await(120, TimeUnit.SECONDS)) {
        throw new IllegalStateException(codec + ": messages missing after 120 s");
      }
      double consumeRate = count / ((System.nanoTime() - started) / 1e9);
      consumer.close();
      if (bytes.get() != (long) count * size) {
        throw new IllegalStateException(codec + ": bodies shorter than sent");
      }
      return new double[] {publishRate, consumeRate};
    } finally {
      environment.deleteStream(stream);
    }
  }
}
