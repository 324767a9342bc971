package wirestream.rabbitmq;

import com.rabbitmq.stream.Environment;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The smallest check that the peer runs: connects to the broker at args[0] (a
 * rabbitmq-stream:// URI), creates and deletes a stream, prints {"ok": true, "client": version}.
 */
public final class Hello {
  private Hello() {}

  public static void main(String[] args) {
    try (Environment environment = Environment.builder().uri(args[0]).build()) {
      String stream = "wirestream-java-hello-" + ProcessHandle.current().pid();
      environment.streamCreator().stream(stream).create();
      environment.deleteStream(stream);
      Map<String, Object> answer = new LinkedHashMap<>();
      answer.put("ok", true);
      answer.put("client", Environment.class.getPackage().getImplementationVersion());
      Json.print(answer);
    }
  }
}
