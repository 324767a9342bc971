package wirestream.rabbitmq;

import com.rabbitmq.stream.Consumer;
import com.rabbitmq.stream.Environment;
import com.rabbitmq.stream.Message;
import com.rabbitmq.stream.OffsetSpecification;
import com.rabbitmq.stream.Producer;
import com.rabbitmq.stream.StreamStats;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The newer-broker features through the Java client's public API, against the broker at
 * args[0] (the tests' fake 3.13.0 broker, which records every frame): args[1] is the stream.
 *
 * <ol>
 *   <li>a producer with {@code filterValue} (the "region" application property) sends three
 *       messages: regions "a", "b" and none;
 *   <li>{@code queryStreamStats};
 *   <li>a named single active consumer from the first offset, filtering on "a" with a post
 *       filter on the same property, reads until it has the "a" message.
 * </ol>
 *
 * Prints {"confirmed": n, "stats": {...}, "received": [bodies]}.
 */
public final class FeatureFrames {
  private FeatureFrames() {}

  static String region(Message message) {
    Map<String, Object> properties = message.getApplicationProperties();
    return properties == null ? null : (String) properties.get("region");
  }

  public static void main(String[] args) throws Exception {
    String stream = args[1];
    Map<String, Object> answer = new LinkedHashMap<>();
    try (Environment environment = Environment.builder().uri(args[0]).build()) {
      environment.streamCreator().stream(stream).create();

      Producer producer =
          environment.producerBuilder().stream(stream).filterValue(FeatureFrames::region).build();
      CountDownLatch confirmed = new CountDownLatch(3);
      AtomicInteger confirms = new AtomicInteger();
      String[] regions = {"a", "b", null};
      for (String region : regions) {
        byte[] body = ("body-" + region).getBytes(StandardCharsets.UTF_8);
        Message message =
            region == null
                ? producer.messageBuilder().addData(body).build()
                : producer
                    .messageBuilder()
                    .addData(body)
                    .applicationProperties()
                    .entry("region", region)
                    .messageBuilder()
                    .build();
        producer.send(
            message,
            status -> {
              if (status.isConfirmed()) {
                confirms.incrementAndGet();
              }
              confirmed.countDown();
            });
      }
      if (!confirmed.await(20, TimeUnit.SECONDS)) {
        throw new IllegalStateException("no confirms");
      }
      answer.put("confirmed", confirms.get());

      StreamStats stats = environment.queryStreamStats(stream);
      Map<String, Object> statistics = new LinkedHashMap<>();
      statistics.put("first_chunk_id", stats.firstOffset());
      statistics.put("committed_chunk_id", stats.committedChunkId());
      answer.put("stats", statistics);

      List<String> received = Collections.synchronizedList(new ArrayList<>());
      CountDownLatch one = new CountDownLatch(1);
      Consumer consumer =
          environment.consumerBuilder().stream(stream).name("feature-app")
              .singleActiveConsumer()
              .offset(OffsetSpecification.first())
              .filter()
              .values("a")
              .postFilter(message -> "a".equals(region(message)))
              .builder()
              .messageHandler(
                  (context, message) -> {
                    received.add(new String(message.getBodyAsBinary(), StandardCharsets.UTF_8));
                    one.countDown();
                  })
              .build();
      if (!one.await(20, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the consumer received nothing");
      }
      Thread.sleep(300); // anything else the chunk held would have arrived by now
      answer.put("received", new ArrayList<>(received));
      consumer.close();
      producer.close();
    }
    Json.print(answer);
  }
}
