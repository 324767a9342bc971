package wirestream.rabbitmq;

import java.util.Base64;
import java.util.List;
import java.util.Map;

/** The one JSON writer of the harness: every program prints one JSON object per line. */
final class Json {
  private Json() {}

  static String of(Object value) {
    StringBuilder out = new StringBuilder();
    write(out, value);
    return out.toString();
  }

  static void print(Object value) {
    System.out.println(of(value));
    System.out.flush();
  }

  /** Bytes travel as base64 text. */
  static String b64(byte[] bytes) {
    return Base64.getEncoder().encodeToString(bytes);
  }

  static byte[] unb64(String text) {
    return Base64.getDecoder().decode(text);
  }

  private static void write(StringBuilder out, Object value) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof String s) {
      out.append('"');
      for (char c : s.toCharArray()) {
        switch (c) {
          case '"' -> out.append("\\\"");
          case '\\' -> out.append("\\\\");
          case '\n' -> out.append("\\n");
          case '\r' -> out.append("\\r");
          case '\t' -> out.append("\\t");
          default -> {
            if (c < 0x20) {
              out.append(String.format("\\u%04x", (int) c));
            } else {
              out.append(c);
            }
          }
        }
      }
      out.append('"');
    } else if (value instanceof Number || value instanceof Boolean) {
      out.append(value);
    } else if (value instanceof byte[] bytes) {
      write(out, b64(bytes));
    } else if (value instanceof Map<?, ?> map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> entry : map.entrySet()) {
        if (!first) out.append(',');
        first = false;
        write(out, String.valueOf(entry.getKey()));
        out.append(':');
        write(out, entry.getValue());
      }
      out.append('}');
    } else if (value instanceof List<?> list) {
      out.append('[');
      for (int i = 0; i < list.size(); i++) {
        if (i > 0) out.append(',');
        write(out, list.get(i));
      }
      out.append(']');
    } else {
      write(out, String.valueOf(value));
    }
  }
}
