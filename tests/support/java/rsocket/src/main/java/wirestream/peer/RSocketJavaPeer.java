package wirestream.peer;

import io.netty.buffer.Unpooled;
import io.rsocket.ConnectionSetupPayload;
import io.rsocket.Payload;
import io.rsocket.RSocket;
import io.rsocket.SocketAcceptor;
import io.rsocket.core.RSocketConnector;
import io.rsocket.core.RSocketServer;
import io.rsocket.core.Resume;
import io.rsocket.exceptions.RejectedException;
import io.rsocket.lease.Lease;
import io.rsocket.lease.MissingLeaseException;
import io.rsocket.transport.netty.client.TcpClientTransport;
import io.rsocket.transport.netty.server.CloseableChannel;
import io.rsocket.transport.netty.server.TcpServerTransport;
import io.rsocket.util.DefaultPayload;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * rsocket-java (io.rsocket 1.1.x) as the other end of wirestream's RSocket client and server,
 * driven by tests/rsocket_java_peer.py. Two modes, both on 127.0.0.1 over TCP:
 *
 * <pre>
 * server [--port P] [--resume [--session-ms MS] [--cleanup-on-keepalive]]
 *        [--lease-ttl-ms MS --lease-count N [--lease-every-ms MS]] [--first-frame-ms MS]
 *        [--mtu BYTES] [--item-size BYTES]
 * client --port P [--resume [--session-ms MS] [--cleanup-on-keepalive] [--retry-ms MS]] [--lease]
 *        [--mtu BYTES]
 *        [--keepalive-ms MS] [--lifetime-ms MS]
 * </pre>
 *
 * Each prints one JSON object per line on stdout: first {"event":"listening","port":P} or
 * {"event":"connected"}, then one answer per command read from stdin:
 *
 * <ul>
 *   <li>server: "stats" -> counts of the requests its responder served; "quit".
 *   <li>client: "channel K" -> a request-channel sending "0" .. "K-1", its answers counted and
 *       checked in order as for "stream"; "stream N RATE" -> a request-stream of N elements (the server answers "0" ..
 *       "N-1"), limitRate(RATE), every element checked to be the next in order; "rr K" -> K
 *       request-responses one after the other, counted as ok, rejected by the server
 *       (ERROR[REJECTED]) or refused by the client's own lease tracker (no LEASE allows it);
 *       "wait-lease MS" -> whether a LEASE arrived within MS; "quit".
 * </ul>
 *
 * The server's responder: request-response echoes data and metadata; request-stream answers
 * the decimal N in its data with N payloads "0" .. "N-1" (with --item-size, "i:" and padding
 * up to that size; --mtu fragments what is larger); request-channel echoes each payload's
 * data. With --lease-ttl-ms it sends
 * LEASE(ttl, count) at once and then every --lease-every-ms (0: once).
 */
public final class RSocketJavaPeer {

  private RSocketJavaPeer() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      throw new IllegalArgumentException("usage: server|client [--option value | --flag] ...");
    }
    Map<String, String> options = parse(args);
    switch (args[0]) {
      case "server":
        server(options);
        break;
      case "client":
        client(options);
        break;
      default:
        throw new IllegalArgumentException("unknown mode " + args[0]);
    }
    System.exit(0); // reactor-netty's event loops are not daemon threads
  }

  // ------------------------------------------------------------------ server

  static final AtomicInteger requestResponses = new AtomicInteger();
  static final AtomicInteger requestStreams = new AtomicInteger();
  static final AtomicLong streamedElements = new AtomicLong();
  static final AtomicInteger requestChannels = new AtomicInteger();

  /** Element i of a stream: "i", or "i:" padded with '.' to --item-size bytes. */
  static int itemSize = 0;

  static String item(int i) {
    String value = Integer.toString(i);
    if (value.length() + 1 >= itemSize) {
      return value;
    }
    return value + ":" + ".".repeat(itemSize - value.length() - 1);
  }

  static final class Responder implements RSocket {
    @Override
    public Mono<Payload> requestResponse(Payload payload) {
      requestResponses.incrementAndGet();
      Payload echo =
          payload.hasMetadata()
              ? DefaultPayload.create(payload.getDataUtf8(), payload.getMetadataUtf8())
              : DefaultPayload.create(payload.getDataUtf8());
      payload.release();
      return Mono.just(echo);
    }

    @Override
    public Flux<Payload> requestStream(Payload payload) {
      requestStreams.incrementAndGet();
      int n = Integer.parseInt(payload.getDataUtf8().trim());
      payload.release();
      return Flux.range(0, n)
          .map(i -> DefaultPayload.create(item(i)))
          .doOnNext(p -> streamedElements.incrementAndGet());
    }

    @Override
    public Flux<Payload> requestChannel(Publisher<Payload> payloads) {
      requestChannels.incrementAndGet();
      return Flux.from(payloads)
          .map(
              p -> {
                Payload echo = DefaultPayload.create(p.getDataUtf8());
                p.release();
                return echo;
              });
    }
  }

  static void server(Map<String, String> o) throws Exception {
    RSocketServer server =
        RSocketServer.create(
            (ConnectionSetupPayload setup, RSocket requester) -> Mono.just(new Responder()));
    if (o.containsKey("resume")) {
      server.resume(resume(o));
    }
    if (o.containsKey("lease-ttl-ms")) {
      Duration ttl = Duration.ofMillis(num(o, "lease-ttl-ms", 0));
      int count = (int) num(o, "lease-count", 0);
      long every = num(o, "lease-every-ms", 0);
      Flux<Lease> leases =
          every > 0
              ? Flux.interval(Duration.ZERO, Duration.ofMillis(every))
                  .map(i -> Lease.create(ttl, count))
              : Flux.just(Lease.create(ttl, count));
      server.lease(spec -> spec.sender(() -> leases));
    }
    if (o.containsKey("mtu")) {
      server.fragment((int) num(o, "mtu", 0));
    }
    itemSize = (int) num(o, "item-size", 0);
    if (o.containsKey("first-frame-ms")) {
      server.maxTimeToFirstFrame(Duration.ofMillis(num(o, "first-frame-ms", 60_000)));
    }
    CloseableChannel channel =
        server.bind(TcpServerTransport.create("127.0.0.1", (int) num(o, "port", 0))).block();
    print("{\"event\":\"listening\",\"port\":" + channel.address().getPort() + "}");
    commands(
        command -> {
          if (command[0].equals("stats")) {
            return "{\"request_response\":"
                + requestResponses.get()
                + ",\"request_stream\":"
                + requestStreams.get()
                + ",\"streamed\":"
                + streamedElements.get()
                + ",\"request_channel\":"
                + requestChannels.get()
                + "}";
          }
          throw new IllegalArgumentException("unknown command " + command[0]);
        });
    channel.dispose();
  }

  /**
   * --session-ms: how long a session waits for a RESUME; --cleanup-on-keepalive: drop the frames
   * the peer's KEEPALIVE says it received (rsocket-java then insists the position falls on a
   * frame boundary: "local and remote frame sizes are not equal" otherwise).
   */
  static Resume resume(Map<String, String> o) {
    Resume resume = new Resume().sessionDuration(Duration.ofMillis(num(o, "session-ms", 60_000)));
    return o.containsKey("cleanup-on-keepalive") ? resume.cleanupStoreOnKeepAlive() : resume;
  }

  // ------------------------------------------------------------------ client

  static void client(Map<String, String> o) throws Exception {
    RSocketConnector connector =
        RSocketConnector.create()
            .keepAlive(
                Duration.ofMillis(num(o, "keepalive-ms", 20_000)),
                Duration.ofMillis(num(o, "lifetime-ms", 90_000)));
    if (o.containsKey("resume")) {
      Resume resume =
          resume(o)
              .retry(Retry.fixedDelay(Long.MAX_VALUE, Duration.ofMillis(num(o, "retry-ms", 20))));
      if (o.containsKey("resume-token")) {
        // --resume-token HEX: a fixed token (two clients sharing one: the token rule)
        byte[] token = hex(o.get("resume-token"));
        resume.token(() -> Unpooled.wrappedBuffer(token));
      }
      connector.resume(resume);
    }
    if (o.containsKey("mtu")) {
      connector.fragment((int) num(o, "mtu", 0));
    }
    if (o.containsKey("lease")) {
      // 0 pending: a request without a LEASE that allows it fails at once, in the client
      connector.lease(spec -> spec.maxPendingRequests(0));
    }
    RSocket rsocket =
        connector.connect(TcpClientTransport.create("127.0.0.1", (int) num(o, "port", 0))).block();
    print("{\"event\":\"connected\"}");
    commands(
        command -> {
          switch (command[0]) {
            case "stream":
              return stream(rsocket, Integer.parseInt(command[1]), Integer.parseInt(command[2]));
            case "rr":
              return requestResponses(rsocket, Integer.parseInt(command[1]));
            case "channel":
              return channel(rsocket, Integer.parseInt(command[1]));
            case "wait-lease":
              return waitLease(rsocket, Long.parseLong(command[1]));
            default:
              throw new IllegalArgumentException("unknown command " + command[0]);
          }
        });
    rsocket.dispose();
  }

  static String stream(RSocket rsocket, int n, int rate) {
    long started = System.nanoTime();
    long[] seen = {0, 0, -1}; // elements, out of order, last value
    String error = null;
    try {
      rsocket
          .requestStream(DefaultPayload.create(Integer.toString(n)))
          .limitRate(rate)
          .doOnNext(
              p -> {
                String data = p.getDataUtf8();
                int colon = data.indexOf(':');
                long value = Long.parseLong(colon < 0 ? data : data.substring(0, colon));
                p.release();
                if (value != seen[2] + 1) {
                  seen[1]++;
                }
                seen[2] = value;
                seen[0]++;
              })
          .blockLast(Duration.ofSeconds(120));
    } catch (RuntimeException e) {
      error = e.toString();
    }
    long elapsed = (System.nanoTime() - started) / 1_000_000;
    return "{\"elements\":"
        + seen[0]
        + ",\"out_of_order\":"
        + seen[1]
        + ",\"last\":"
        + seen[2]
        + ",\"elapsed_ms\":"
        + elapsed
        + ",\"error\":"
        + quote(error)
        + "}";
  }

  static String channel(RSocket rsocket, int k) {
    long[] seen = {0, 0, -1}; // answers, out of order, last value
    String error = null;
    try {
      rsocket
          .requestChannel(Flux.range(0, k).map(i -> DefaultPayload.create(Integer.toString(i))))
          .doOnNext(
              p -> {
                long value = Long.parseLong(p.getDataUtf8());
                p.release();
                if (value != seen[2] + 1) {
                  seen[1]++;
                }
                seen[2] = value;
                seen[0]++;
              })
          .blockLast(Duration.ofSeconds(30));
    } catch (RuntimeException e) {
      error = e.toString();
    }
    return "{\"elements\":"
        + seen[0]
        + ",\"out_of_order\":"
        + seen[1]
        + ",\"last\":"
        + seen[2]
        + ",\"error\":"
        + quote(error)
        + "}";
  }

  static String requestResponses(RSocket rsocket, int k) {
    int ok = 0;
    int rejected = 0;
    int missingLease = 0;
    List<String> errors = new ArrayList<>();
    for (int i = 0; i < k; i++) {
      try {
        Payload answer =
            rsocket.requestResponse(DefaultPayload.create("r" + i)).block(Duration.ofSeconds(10));
        if (answer != null && answer.getDataUtf8().equals("r" + i)) {
          ok++;
        } else {
          errors.add("unexpected answer");
        }
        if (answer != null) {
          answer.release();
        }
      } catch (MissingLeaseException e) {
        missingLease++;
      } catch (RejectedException e) {
        rejected++;
      } catch (RuntimeException e) {
        errors.add(e.toString());
      }
    }
    StringBuilder list = new StringBuilder("[");
    for (String e : errors) {
      list.append(list.length() > 1 ? "," : "").append(quote(e));
    }
    return "{\"ok\":"
        + ok
        + ",\"rejected\":"
        + rejected
        + ",\"missing_lease\":"
        + missingLease
        + ",\"errors\":"
        + list.append("]")
        + "}";
  }

  static String waitLease(RSocket rsocket, long ms) throws InterruptedException {
    long deadline = System.currentTimeMillis() + ms;
    while (rsocket.availability() <= 0 && System.currentTimeMillis() < deadline) {
      Thread.sleep(5);
    }
    return "{\"available\":" + (rsocket.availability() > 0) + "}";
  }

  // ------------------------------------------------------------------ plumbing

  interface Command {
    String run(String[] words) throws Exception;
  }

  /** Answer stdin's commands one line each until "quit" or end of input. */
  static void commands(Command command) throws Exception {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String[] words = line.trim().split("\\s+");
      if (words[0].isEmpty()) {
        continue;
      }
      if (words[0].equals("quit")) {
        return;
      }
      try {
        print(command.run(words));
      } catch (Exception e) {
        print("{\"failed\":" + quote(e.toString()) + "}");
      }
    }
  }

  static synchronized void print(String line) {
    System.out.println(line);
    System.out.flush();
  }

  static String quote(String s) {
    if (s == null) {
      return "null";
    }
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }

  static byte[] hex(String text) {
    byte[] bytes = new byte[text.length() / 2];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) Integer.parseInt(text.substring(2 * i, 2 * i + 2), 16);
    }
    return bytes;
  }

  static Map<String, String> parse(String[] args) {
    Map<String, String> options = new HashMap<>();
    for (int i = 1; i < args.length; i++) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --option, got " + args[i]);
      }
      String name = args[i].substring(2);
      if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
        options.put(name, args[++i]);
      } else {
        options.put(name, "");
      }
    }
    return options;
  }

  static long num(Map<String, String> options, String name, long otherwise) {
    String value = options.get(name);
    return value == null || value.isEmpty() ? otherwise : Long.parseLong(value);
  }
}
