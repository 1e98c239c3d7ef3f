package io.sovereigngateway;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * RFC 8785 (JCS) for the flat objects the journal and its checkpoints hold: string, integer,
 * boolean and null values. Keys sorted by UTF-16 code units (all keys here are ASCII: byte
 * order), no whitespace, strings escaping only {@code "}, {@code \} and control characters
 * ({@code \b \t \n \f \r} short, others <code>&#92;u00xx</code> lowercase), non-ASCII as raw UTF-8,
 * integers in plain decimal, exactly as parsed (no conversion through floating point).
 */
public final class Jcs {
    private Jcs() {}

    /** The canonical UTF-8 bytes; {@link IllegalArgumentException} for a nested or float value. */
    public static byte[] encode(Map<String, ?> object) {
        return encodeToString(object).getBytes(StandardCharsets.UTF_8);
    }

    public static String encodeToString(Map<String, ?> object) {
        List<String> keys = new ArrayList<>(object.keySet());
        keys.sort(null); // String.compareTo: UTF-16 code unit order, as RFC 8785 asks
        StringBuilder b = new StringBuilder();
        b.append('{');
        boolean first = true;
        for (String k : keys) {
            if (!first) {
                b.append(',');
            }
            first = false;
            Json.quote(b, k);
            b.append(':');
            Object v = object.get(k);
            if (v == null) {
                b.append("null");
            } else if (v instanceof String) {
                Json.quote(b, (String) v);
            } else if (v instanceof Long || v instanceof Integer || v instanceof Short
                    || v instanceof Byte || v instanceof BigInteger) {
                b.append(v.toString());
            } else if (v instanceof Boolean) {
                b.append(v.toString());
            } else {
                throw new IllegalArgumentException(
                        "value of \"" + k + "\" is not a string, integer, boolean or null");
            }
        }
        b.append('}');
        return b.toString();
    }
}
