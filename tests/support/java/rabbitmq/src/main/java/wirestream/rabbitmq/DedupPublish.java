package wirestream.rabbitmq;

import com.rabbitmq.stream.Environment;
import com.rabbitmq.stream.Producer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Java client publishing with a producer reference (its producer "name", which turns on
 * the broker's deduplication): args {@code URI stream reference first-last...}. One producer
 * named {@code reference} sends, for every range, the messages with publishing ids first..last
 * ({@code messageBuilder().publishingId(id)}), body "java-<id>", and waits for their outcomes
 * (60 s at most). Prints {"before": the broker's sequence when the producer was created
 * (getLastPublishingId), "confirmed", "failed", "after": the sequence at the end}.
 */
public final class DedupPublish {
  private DedupPublish() {}

  public static void main(String[] args) throws Exception {
    try (Environment environment = Environment.builder().uri(args[0]).build()) {
      Producer producer = environment.producerBuilder().stream(args[1]).name(args[2]).build();
      long before = producer.getLastPublishingId();
      int total = 0;
      AtomicInteger confirmed = new AtomicInteger();
      for (int i = 3; i < args.length; i++) {
        String[] range = args[i].split("-");
        long first = Long.parseLong(range[0]);
        long last = Long.parseLong(range[1]);
        CountDownLatch outcomes = new CountDownLatch((int) (last - first + 1));
        for (long id = first; id <= last; id++) {
          byte[] body = ("java-" + id).getBytes(StandardCharsets.UTF_8);
          producer.send(
              producer.messageBuilder().publishingId(id).addData(body).build(),
              status -> {
                if (status.isConfirmed()) {
                  confirmed.incrementAndGet();
                }
                outcomes.countDown();
              });
          total++;
        }
        if (!outcomes.await(60, TimeUnit.SECONDS)) {
          throw new IllegalStateException("no outcome for range " + args[i] + " within 60 s");
        }
      }
      long after = producer.getLastPublishingId();
      producer.close();
      Map<String, Object> answer = new LinkedHashMap<>();
      answer.put("before", before);
      answer.put("confirmed", confirmed.get());
      answer.put("failed", total - confirmed.get());
      answer.put("after", after);
      Json.print(answer);
    }
  }
}
