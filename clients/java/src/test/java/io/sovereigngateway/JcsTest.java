package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JcsTest {
    static final String ENTRY = "{\"seq\":1,\"prev_hash\":\"sha256:0000000000000000000000000000000000000000000000000000000000000000\","
            + "\"timestamp\":\"2026-11-22T21:31:47.123Z\",\"request_id\":\"req_1\","
            + "\"actor_id\":\"سارة \\\"q\\\" \\\\ \\n\\t\\u0001\\u001F \\u00e9\",\"team_id\":\"team_a\",\"key_id\":\"key_1\","
            + "\"action\":\"chat.completions\",\"model\":null,\"prompt_hash\":null,\"routing_policy\":\"r\","
            + "\"residency_boundary\":\"sa-riyadh-1\",\"status\":\"success\",\"prompt_tokens\":9007199254740991,"
            + "\"completion_tokens\":0,\"latency_us\":1234}";

    /** Bytes and hash computed with Python's json.dumps(sort_keys, separators, ensure_ascii=False). */
    @Test
    void matchesPythonReferenceEncodingAndHash() {
        Map<String, Object> e = Json.parseObject(ENTRY);
        String expected = "{\"action\":\"chat.completions\",\"actor_id\":\"سارة \\\"q\\\" \\\\ \\n\\t\\u0001\\u001f é\","
                + "\"completion_tokens\":0,\"key_id\":\"key_1\",\"latency_us\":1234,\"model\":null,"
                + "\"prev_hash\":\"sha256:0000000000000000000000000000000000000000000000000000000000000000\","
                + "\"prompt_hash\":null,\"prompt_tokens\":9007199254740991,\"request_id\":\"req_1\","
                + "\"residency_boundary\":\"sa-riyadh-1\",\"routing_policy\":\"r\",\"seq\":1,\"status\":\"success\","
                + "\"team_id\":\"team_a\",\"timestamp\":\"2026-11-22T21:31:47.123Z\"}";
        assertEquals(expected, Jcs.encodeToString(e));
        assertEquals("02b215d398bda66930f0892b1d678dbe5f08416c79c084ac0299e26f1f2dff96",
                JournalVerifier.sha256Hex(((String) e.get("prev_hash")).getBytes(StandardCharsets.UTF_8), Jcs.encode(e)));
    }

    @Test
    void shortEscapesAndLowercaseUnicodeEscapes() {
        assertEquals("{\"a\":\"\\b\\t\\n\\f\\r\\u000b\\u007f/\"}".replace("\\u007f", "\u007f"),
                Jcs.encodeToString(Map.of("a", "\b\t\n\f\r\u000b\u007f/")));
    }

    @Test
    void integersStayExact() {
        Map<String, Object> m = Json.parseObject("{\"big\":123456789012345678901234567890,\"neg\":-9223372036854775808}");
        assertTrue(m.get("big") instanceof BigInteger);
        assertEquals(Long.MIN_VALUE, m.get("neg"));
        assertEquals("{\"big\":123456789012345678901234567890,\"neg\":-9223372036854775808}", Jcs.encodeToString(m));
    }

    @Test
    void keysSortByCodeUnits() {
        assertEquals("{\"A\":1,\"_\":2,\"a\":3,\"b\":null}",
                Jcs.encodeToString(Json.parseObject("{\"b\":null,\"a\":3,\"_\":2,\"A\":1}")));
    }

    /** An entry's charges: keys sorted inside the array's objects too; floats still refused. */
    @Test
    void sortsNestedObjectsAndRefusesFloats() {
        assertEquals("{\"a\":null,\"z\":[{\"model\":\"m\",\"spend_micros\":42,\"tokens_in\":10,\"tokens_out\":20}]}",
                Jcs.encodeToString(Json.parseObject(
                        "{\"z\":[{\"tokens_out\":20,\"model\":\"m\",\"tokens_in\":10,\"spend_micros\":42}],\"a\":null}")));
        assertThrows(IllegalArgumentException.class, () -> Jcs.encode(Map.of("a", 1.5)));
        assertThrows(IllegalArgumentException.class, () -> Jcs.encode(Map.of("a", List.of(Map.of("b", 1.5)))));
    }

    @Test
    void jsonRoundTrip() {
        String text = "{\"a\":[1,2.5,true,false,null,\"x\\u00e9\\ud83d\\ude00\"],\"b\":{\"c\":-0.001}}";
        Object v = Json.parse(text);
        assertEquals("{\"a\":[1,2.5,true,false,null,\"xé😀\"],\"b\":{\"c\":-0.001}}", Json.write(v));
        assertThrows(Json.ParseException.class, () -> Json.parse("{\"a\":1,}"));
        assertThrows(Json.ParseException.class, () -> Json.parse("[1] x"));
        assertThrows(Json.ParseException.class, () -> Json.parse("{\"a\":01}"));
    }
}
