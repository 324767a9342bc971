package wirestream.rabbitmq;

import com.rabbitmq.stream.Environment;
import com.rabbitmq.stream.Producer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Java client's super stream producer: args[0] the broker URI, args[1] the super stream,
 * args[2] "hash" (the default routing: MurmurHash3 of the routing key) or "key" (Route per
 * key). Reads routing keys from stdin, one per line (UTF-8); message i (0-based) has the body
 * "java:i:key" and is routed by its key. Waits for every confirm (60 s at most) and prints
 * {"sent": n, "confirmed": c, "failed": f}.
 */
public final class SuperPublish {
  private SuperPublish() {}

  public static void main(String[] args) throws Exception {
    String uri = args[0];
    String superStream = args[1];
    boolean byKey = args[2].equals("key");
    List<String> keys = new ArrayList<>();
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        keys.add(line);
      }
    }
    try (Environment environment = Environment.builder().uri(uri).build()) {
      var routing =
          environment
              .producerBuilder()
              .superStream(superStream)
              .routing(
                  message -> {
                    String body = new String(message.getBodyAsBinary(), StandardCharsets.UTF_8);
                    return body.split(":", 3)[2];
                  });
      if (byKey) {
        routing = routing.key();
      }
      Producer producer = routing.producerBuilder().build();
      CountDownLatch outcomes = new CountDownLatch(keys.size());
      AtomicInteger confirmed = new AtomicInteger();
      AtomicInteger failed = new AtomicInteger();
      for (int i = 0; i < keys.size(); i++) {
        byte[] body = ("java:" + i + ":" + keys.get(i)).getBytes(StandardCharsets.UTF_8);
        producer.send(
            producer.messageBuilder().addData(body).build(),
            status -> {
              (status.isConfirmed() ? confirmed : failed).incrementAndGet();
              outcomes.countDown();
            });
      }
      outcomes.await(60, TimeUnit.SECONDS);
      producer.close();
      Map<String, Object> answer = new LinkedHashMap<>();
      answer.put("sent", keys.size());
      answer.put("confirmed", confirmed.get());
      answer.put("failed", failed.get());
      Json.print(answer);
    }
  }
}
