package io.sovereigngateway;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * RFC 8785 (JCS) for the objects the journal and its checkpoints hold: string, integer, boolean
 * and null values, and arrays and objects of them (an entry's {@code charges}). Keys of every
 * object sorted by UTF-16 code units (all keys here are ASCII: byte order), array elements in
 * their order, no whitespace, strings escaping only {@code "}, {@code \} and control characters
 * ({@code \b \t \n \f \r} short, others <code>&#92;u00xx</code> lowercase), non-ASCII as raw UTF-8,
 * integers in plain decimal, exactly as parsed (no conversion through floating point).
 */
public final class Jcs {
    private Jcs() {}

    /** The canonical UTF-8 bytes; {@link IllegalArgumentException} for a float or other value. */
    public static byte[] encode(Map<String, ?> object) {
        return encodeToString(object).getBytes(StandardCharsets.UTF_8);
    }

    public static String encodeToString(Map<String, ?> object) {
        StringBuilder b = new StringBuilder();
        object(b, object);
        return b.toString();
    }

    private static void object(StringBuilder b, Map<?, ?> object) {
        List<String> keys = new ArrayList<>(object.size());
        for (Object k : object.keySet()) {
            if (!(k instanceof String)) {
                throw new IllegalArgumentException("object key " + k + " is not a string");
            }
            keys.add((String) k);
        }
        keys.sort(null); // String.compareTo: UTF-16 code unit order, as RFC 8785 asks
        b.append('{');
        boolean first = true;
        for (String k : keys) {
            if (!first) {
                b.append(',');
            }
            first = false;
            Json.quote(b, k);
            b.append(':');
            value(b, k, object.get(k));
        }
        b.append('}');
    }

    /** One value; {@code key} is the member it is (in), for the error. */
    private static void value(StringBuilder b, String key, Object v) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof String) {
            Json.quote(b, (String) v);
        } else if (v instanceof Long || v instanceof Integer || v instanceof Short
                || v instanceof Byte || v instanceof BigInteger) {
            b.append(v.toString());
        } else if (v instanceof Boolean) {
            b.append(v.toString());
        } else if (v instanceof Map) {
            object(b, (Map<?, ?>) v);
        } else if (v instanceof List) {
            b.append('[');
            boolean first = true;
            for (Object e : (List<?>) v) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                value(b, key, e);
            }
            b.append(']');
        } else {
            throw new IllegalArgumentException(
                    "value of \"" + key + "\" is not a string, integer, boolean, null, array or object");
        }
    }
}
