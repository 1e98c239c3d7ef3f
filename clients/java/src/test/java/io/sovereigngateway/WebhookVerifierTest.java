package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

class WebhookVerifierTest {
    static final byte[] KEY = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    static final String SECRET = "whsec_" + Base64.getEncoder().encodeToString(KEY);
    static final String BODY = "{\"type\":\"guardrail.violation\",\"data\":{\"code\":\"pii_detected\"}}";
    static final Instant NOW = Instant.ofEpochSecond(1_790_000_000L);

    /** The signature computed here independently: HMAC-SHA256 over "{id}.{ts}.{body}". */
    static String signature(String id, long ts, String body) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(KEY, "HmacSHA256"));
        byte[] sig = mac.doFinal((id + "." + ts + "." + body).getBytes(StandardCharsets.UTF_8));
        return "v1," + Base64.getEncoder().encodeToString(sig);
    }

    static Map<String, Object> headers(String id, long ts, String sig) {
        return Map.of("Webhook-Id", id, "webhook-timestamp", Long.toString(ts), "webhook-signature", List.of(sig));
    }

    @Test
    void validSignatureVerifies() throws Exception {
        long ts = NOW.getEpochSecond() - 10;
        String sig = signature("msg_1", ts, BODY);
        assertDoesNotThrow(() -> WebhookVerifier.verify(SECRET, headers("msg_1", ts, sig), BODY, Duration.ofSeconds(300), NOW));
        // any one of several signatures (a rotation's grace)
        String two = "v1,AAAA " + sig;
        assertDoesNotThrow(() -> WebhookVerifier.verify(SECRET, headers("msg_1", ts, two), BODY, Duration.ofSeconds(300), NOW));
        assertTrue(sig.equals(WebhookVerifier.sign(SECRET, "msg_1", ts, BODY.getBytes(StandardCharsets.UTF_8))));
    }

    @Test
    void tamperedBodyFails() throws Exception {
        long ts = NOW.getEpochSecond();
        String sig = signature("msg_1", ts, BODY);
        assertThrows(WebhookVerificationException.class, () -> WebhookVerifier.verify(SECRET, headers("msg_1", ts, sig),
                BODY.replace("pii_detected", "nothing"), Duration.ofSeconds(300), NOW));
        assertThrows(WebhookVerificationException.class, () -> WebhookVerifier.verify(SECRET, headers("msg_2", ts, sig),
                BODY, Duration.ofSeconds(300), NOW));
    }

    @Test
    void oldOrFutureTimestampFails() throws Exception {
        long old = NOW.getEpochSecond() - 301;
        String sig = signature("msg_1", old, BODY);
        assertThrows(WebhookVerificationException.class, () -> WebhookVerifier.verify(SECRET, headers("msg_1", old, sig),
                BODY, Duration.ofSeconds(300), NOW));
        long future = NOW.getEpochSecond() + 301;
        String sig2 = signature("msg_1", future, BODY);
        assertFalse(WebhookVerifier.isValid(SECRET, headers("msg_1", future, sig2), BODY.getBytes(StandardCharsets.UTF_8),
                Duration.ofSeconds(300), NOW));
    }

    @Test
    void missingHeadersOrWrongSecretFail() throws Exception {
        long ts = NOW.getEpochSecond();
        String sig = signature("msg_1", ts, BODY);
        assertThrows(WebhookVerificationException.class, () -> WebhookVerifier.verify(SECRET,
                Map.of("webhook-id", "msg_1"), BODY, Duration.ofSeconds(300), NOW));
        String other = "whsec_" + Base64.getEncoder().encodeToString("another key, 32 bytes long......".getBytes(StandardCharsets.US_ASCII));
        assertThrows(WebhookVerificationException.class, () -> WebhookVerifier.verify(other, headers("msg_1", ts, sig),
                BODY, Duration.ofSeconds(300), NOW));
    }
}
