package wirestream.rabbitmq;

import com.rabbitmq.stream.Consumer;
import com.rabbitmq.stream.Environment;
import com.rabbitmq.stream.OffsetSpecification;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The Java client consuming: args {@code URI count stream...}. Reads each stream from offset
 * first until {@code count} messages arrived (60 s at most), decoding whatever the chunks hold
 * (sub-entry batches of any codec: the Environment's DefaultCompressionCodecFactory), and prints
 * {"stream", "offsets", "bodies"} per stream: each message's offset and its AMQP 1.0 body
 * ({@code getBodyAsBinary}) as base64.
 */
public final class CodecConsume {
  private CodecConsume() {}

  public static void main(String[] args) throws Exception {
    int count = Integer.parseInt(args[1]);
    try (Environment environment = Environment.builder().uri(args[0]).build()) {
      for (int i = 2; i < args.length; i++) {
        String stream = args[i];
        List<Long> offsets = Collections.synchronizedList(new ArrayList<>());
        List<String> bodies = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch received = new CountDownLatch(count);
        Consumer consumer =
            environment
                .consumerBuilder()
                .stream(stream)
                .offset(OffsetSpecification.first())
                .messageHandler(
                    (context, message) -> {
                      if (received.getCount() > 0) {
                        offsets.add(context.offset());
                        bodies.add(Json.b64(message.getBodyAsBinary()));
                        received.countDown();
                      }
                    })
                .build();
        boolean done = received.await(60, TimeUnit.SECONDS);
        consumer.close();
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("stream", stream);
        answer.put("timed_out", !done);
        synchronized (bodies) {
          answer.put("offsets", new ArrayList<>(offsets));
          answer.put("bodies", new ArrayList<>(bodies));
        }
        Json.print(answer);
      }
    }
  }
}
