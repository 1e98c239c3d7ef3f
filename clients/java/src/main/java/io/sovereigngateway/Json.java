package io.sovereigngateway;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader and writer (RFC 8259), so the library has no runtime dependency.
 *
 * <p>Reading gives {@code Map<String,Object>} (insertion-ordered), {@code List<Object>},
 * {@code String}, {@code Boolean}, {@code null}, and numbers: integers as {@code Long} (or
 * {@code BigInteger} beyond 64 bits) — exact — and others as {@code Double}.
 */
public final class Json {
    private Json() {}

    /** Thrown for text that is not JSON. */
    public static final class ParseException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        ParseException(String message) {
            super(message);
        }
    }

    public static Object parse(String text) {
        Reader r = new Reader(text);
        r.ws();
        Object v = r.value(0);
        r.ws();
        if (r.pos != text.length()) {
            throw r.error("unexpected text after the value");
        }
        return v;
    }

    /** Parses text that must be a JSON object. */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> parseObject(String text) {
        Object v = parse(text);
        if (!(v instanceof Map)) {
            throw new ParseException("expected a JSON object");
        }
        return (Map<String, Object>) v;
    }

    private static final class Reader {
        final String s;
        int pos;

        Reader(String s) {
            this.s = s;
        }

        ParseException error(String what) {
            return new ParseException(what + " at offset " + pos);
        }

        void ws() {
            while (pos < s.length()) {
                char c = s.charAt(pos);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                    pos++;
                } else {
                    break;
                }
            }
        }

        Object value(int depth) {
            if (depth > 512) {
                throw error("nesting too deep");
            }
            if (pos >= s.length()) {
                throw error("unexpected end");
            }
            char c = s.charAt(pos);
            switch (c) {
                case '{':
                    return object(depth);
                case '[':
                    return array(depth);
                case '"':
                    return string();
                case 't':
                    return literal("true", Boolean.TRUE);
                case 'f':
                    return literal("false", Boolean.FALSE);
                case 'n':
                    return literal("null", null);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        return number();
                    }
                    throw error("unexpected character '" + c + "'");
            }
        }

        Object literal(String word, Object v) {
            if (!s.startsWith(word, pos)) {
                throw error("invalid literal");
            }
            pos += word.length();
            return v;
        }

        Map<String, Object> object(int depth) {
            Map<String, Object> m = new LinkedHashMap<>();
            pos++;
            ws();
            if (pos < s.length() && s.charAt(pos) == '}') {
                pos++;
                return m;
            }
            while (true) {
                ws();
                if (pos >= s.length() || s.charAt(pos) != '"') {
                    throw error("expected a key");
                }
                String k = string();
                ws();
                expect(':');
                ws();
                Object v = value(depth + 1);
                if (m.containsKey(k)) {
                    throw error("duplicate key \"" + k + "\"");
                }
                m.put(k, v);
                ws();
                if (pos < s.length() && s.charAt(pos) == ',') {
                    pos++;
                    continue;
                }
                expect('}');
                return m;
            }
        }

        List<Object> array(int depth) {
            List<Object> l = new ArrayList<>();
            pos++;
            ws();
            if (pos < s.length() && s.charAt(pos) == ']') {
                pos++;
                return l;
            }
            while (true) {
                ws();
                l.add(value(depth + 1));
                ws();
                if (pos < s.length() && s.charAt(pos) == ',') {
                    pos++;
                    continue;
                }
                expect(']');
                return l;
            }
        }

        void expect(char c) {
            if (pos >= s.length() || s.charAt(pos) != c) {
                throw error("expected '" + c + "'");
            }
            pos++;
        }

        String string() {
            pos++; // opening quote
            StringBuilder b = null;
            int start = pos;
            while (true) {
                if (pos >= s.length()) {
                    throw error("unterminated string");
                }
                char c = s.charAt(pos);
                if (c == '"') {
                    String out = b == null ? s.substring(start, pos) : b.append(s, start, pos).toString();
                    pos++;
                    return out;
                }
                if (c < 0x20) {
                    throw error("control character in string");
                }
                if (c == '\\') {
                    if (b == null) {
                        b = new StringBuilder();
                    }
                    b.append(s, start, pos);
                    pos++;
                    if (pos >= s.length()) {
                        throw error("unterminated escape");
                    }
                    char e = s.charAt(pos++);
                    switch (e) {
                        case '"': b.append('"'); break;
                        case '\\': b.append('\\'); break;
                        case '/': b.append('/'); break;
                        case 'b': b.append('\b'); break;
                        case 'f': b.append('\f'); break;
                        case 'n': b.append('\n'); break;
                        case 'r': b.append('\r'); break;
                        case 't': b.append('\t'); break;
                        case 'u':
                            if (pos + 4 > s.length()) {
                                throw error("short \\u escape");
                            }
                            try {
                                b.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
                            } catch (NumberFormatException ex) {
                                throw error("bad \\u escape");
                            }
                            pos += 4;
                            break;
                        default:
                            throw error("bad escape");
                    }
                    start = pos;
                } else {
                    pos++;
                }
            }
        }

        Object number() {
            int start = pos;
            if (s.charAt(pos) == '-') {
                pos++;
            }
            int digits = pos;
            while (pos < s.length() && Character.isDigit(s.charAt(pos))) {
                pos++;
            }
            if (pos == digits || (s.charAt(digits) == '0' && pos - digits > 1)) {
                throw error("bad number");
            }
            boolean integer = true;
            if (pos < s.length() && s.charAt(pos) == '.') {
                integer = false;
                pos++;
                int f = pos;
                while (pos < s.length() && Character.isDigit(s.charAt(pos))) {
                    pos++;
                }
                if (pos == f) {
                    throw error("bad fraction");
                }
            }
            if (pos < s.length() && (s.charAt(pos) == 'e' || s.charAt(pos) == 'E')) {
                integer = false;
                pos++;
                if (pos < s.length() && (s.charAt(pos) == '+' || s.charAt(pos) == '-')) {
                    pos++;
                }
                int e = pos;
                while (pos < s.length() && Character.isDigit(s.charAt(pos))) {
                    pos++;
                }
                if (pos == e) {
                    throw error("bad exponent");
                }
            }
            String t = s.substring(start, pos);
            if (integer) {
                BigInteger bi = new BigInteger(t);
                return bi.bitLength() < 64 ? (Object) bi.longValue() : bi;
            }
            return Double.parseDouble(t);
        }
    }

    /** Writes a value: maps, iterables, arrays, strings, numbers, booleans, null, {@link JsonObject}. */
    public static String write(Object value) {
        StringBuilder b = new StringBuilder();
        write(b, value);
        return b.toString();
    }

    static void write(StringBuilder b, Object v) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof String) {
            quote(b, (String) v);
        } else if (v instanceof Boolean) {
            b.append(v.toString());
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                throw new IllegalArgumentException("JSON has no NaN or infinity");
            }
            if (d == Math.rint(d) && Math.abs(d) < 1e15) {
                b.append((long) d);
            } else {
                b.append(BigDecimal.valueOf(d).stripTrailingZeros().toString());
            }
        } else if (v instanceof BigDecimal) {
            b.append(((BigDecimal) v).toString());
        } else if (v instanceof Number) {
            b.append(v.toString());
        } else if (v instanceof JsonObject) {
            write(b, ((JsonObject) v).raw());
        } else if (v instanceof JsonBody) {
            write(b, ((JsonBody) v).toJson());
        } else if (v instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                quote(b, String.valueOf(e.getKey()));
                b.append(':');
                write(b, e.getValue());
            }
            b.append('}');
        } else if (v instanceof Iterable) {
            b.append('[');
            boolean first = true;
            for (Object o : (Iterable<?>) v) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                write(b, o);
            }
            b.append(']');
        } else if (v instanceof Object[]) {
            write(b, java.util.Arrays.asList((Object[]) v));
        } else if (v instanceof float[]) {
            float[] a = (float[]) v;
            List<Object> l = new ArrayList<>();
            for (float f : a) {
                l.add((double) f);
            }
            write(b, l);
        } else {
            quote(b, v.toString());
        }
    }

    /** A JSON string: escapes {@code "}, {@code \} and control characters, nothing else. */
    static void quote(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\b': b.append("\\b"); break;
                case '\t': b.append("\\t"); break;
                case '\n': b.append("\\n"); break;
                case '\f': b.append("\\f"); break;
                case '\r': b.append("\\r"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }
}
