package wirestream.rabbitmq;

import com.rabbitmq.stream.codec.ByteArrayEncodedMessage;
import com.rabbitmq.stream.compression.Compression;
import com.rabbitmq.stream.compression.CompressionCodec;
import com.rabbitmq.stream.compression.DefaultCompressionCodecFactory;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The Java client's sub-entry codecs on bytes, no broker: what it writes for a batch and what
 * it reads from ours.
 *
 * <p>stdin: {@code [u32 n][n bytes: the uncompressed batch, [u32 size][message]...]}, then any
 * number of {@code [u8 compression code][u32 n][n compressed bytes]} to decompress.
 *
 * <p>Prints, for gzip, snappy, lz4 and zstd of {@code DefaultCompressionCodecFactory} (what an
 * Environment uses unless told otherwise: CompressionCodecs.java), {"codec", "implementation",
 * "compressed"}: the batch compressed exactly as {@code Client.CompressedEncodedMessageBatch.close()}
 * does (Client.java:1950-2020 at v1.11.0: {@code codec.compress(out)}, every message's {@code
 * EncodedMessage.writeTo(OutputStream)}, {@code flush()}, {@code close()}); then for every input
 * to decompress {"codec", "plain"} or {"codec", "error"}.
 */
public final class CodecBytes {
  private CodecBytes() {}

  private static final Compression[] CODECS = {
    Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD
  };

  public static void main(String[] args) throws Exception {
    DataInputStream in = new DataInputStream(System.in);
    byte[] plain = new byte[in.readInt()];
    in.readFully(plain);
    DefaultCompressionCodecFactory factory = new DefaultCompressionCodecFactory();
    for (Compression compression : CODECS) {
      CompressionCodec codec = factory.get(compression);
      Map<String, Object> answer = new LinkedHashMap<>();
      answer.put("codec", name(compression));
      answer.put("implementation", codec.toString());
      answer.put("compressed", compressAsTheClient(codec, plain));
      Json.print(answer);
    }
    while (true) {
      int code;
      try {
        code = in.readUnsignedByte();
      } catch (EOFException end) {
        break;
      }
      byte[] data = new byte[in.readInt()];
      in.readFully(data);
      Compression compression = Compression.get((byte) code);
      Map<String, Object> answer = new LinkedHashMap<>();
      answer.put("codec", name(compression));
      try (InputStream decompressed =
          factory.get(compression).decompress(new ByteArrayInputStream(data))) {
        answer.put("plain", decompressed.readAllBytes());
      } catch (Exception | Error failure) { // native codecs throw errors too
        answer.put("error", failure.toString());
      }
      Json.print(answer);
    }
  }

  private static byte[] compressAsTheClient(CompressionCodec codec, byte[] plain)
      throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (OutputStream stream = codec.compress(out)) {
      int position = 0;
      while (position < plain.length) {
        int size =
            ((plain[position] & 0xFF) << 24)
                | ((plain[position + 1] & 0xFF) << 16)
                | ((plain[position + 2] & 0xFF) << 8)
                | (plain[position + 3] & 0xFF);
        byte[] message = Arrays.copyOfRange(plain, position + 4, position + 4 + size);
        new ByteArrayEncodedMessage(size, message).writeTo(stream);
        position += 4 + size;
      }
      stream.flush();
    }
    return out.toByteArray();
  }

  static String name(Compression compression) {
    return compression.name().toLowerCase(Locale.ROOT);
  }
}
