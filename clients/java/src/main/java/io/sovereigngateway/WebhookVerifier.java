package io.sovereigngateway;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Standard Webhooks signatures (docs/WEBHOOKS.md): {@code webhook-signature} holds
 * space-separated {@code v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>} entries, any one
 * of which may match; key = base64 of the secret after {@code whsec_}; the timestamp must be
 * within the tolerance of now.
 */
public final class WebhookVerifier {
    private WebhookVerifier() {}

    public static final Duration DEFAULT_TOLERANCE = Duration.ofSeconds(300);

    public static void verify(String secret, Map<String, ?> headers, byte[] body) {
        verify(secret, headers, body, DEFAULT_TOLERANCE, Instant.now());
    }

    public static void verify(String secret, Map<String, ?> headers, String body) {
        verify(secret, headers, body.getBytes(StandardCharsets.UTF_8), DEFAULT_TOLERANCE, Instant.now());
    }

    public static void verify(String secret, Map<String, ?> headers, String body, Duration tolerance, Instant now) {
        verify(secret, headers, body.getBytes(StandardCharsets.UTF_8), tolerance, now);
    }

    /**
     * Returns normally when one signature verifies and the timestamp is within {@code tolerance}
     * of {@code now}; else throws {@link WebhookVerificationException}. Header names are matched
     * case-insensitively; values may be strings or lists (as {@code HttpHeaders.map()} gives).
     */
    public static void verify(String secret, Map<String, ?> headers, byte[] body, Duration tolerance, Instant now) {
        String id = header(headers, "webhook-id");
        String ts = header(headers, "webhook-timestamp");
        String sigs = header(headers, "webhook-signature");
        if (id == null || ts == null || sigs == null) {
            throw new WebhookVerificationException("missing webhook-id, webhook-timestamp or webhook-signature header");
        }
        long timestamp;
        try {
            timestamp = Long.parseLong(ts.trim());
        } catch (NumberFormatException e) {
            throw new WebhookVerificationException("webhook-timestamp is not an integer");
        }
        long skew = Math.abs(now.getEpochSecond() - timestamp);
        if (skew > tolerance.getSeconds()) {
            throw new WebhookVerificationException("webhook-timestamp is " + skew + " s from now (tolerance "
                    + tolerance.getSeconds() + " s)");
        }
        byte[] expected = mac(secret, id, ts.trim(), body);
        for (String entry : sigs.trim().split(" +")) {
            int comma = entry.indexOf(',');
            if (comma < 0 || !entry.substring(0, comma).equals("v1")) {
                continue;
            }
            byte[] given;
            try {
                given = Base64.getDecoder().decode(entry.substring(comma + 1));
            } catch (IllegalArgumentException e) {
                continue;
            }
            if (MessageDigest.isEqual(expected, given)) {
                return;
            }
        }
        throw new WebhookVerificationException("no webhook-signature entry matches");
    }

    /** True when {@link #verify} would return normally. */
    public static boolean isValid(String secret, Map<String, ?> headers, byte[] body, Duration tolerance, Instant now) {
        try {
            verify(secret, headers, body, tolerance, now);
            return true;
        } catch (WebhookVerificationException e) {
            return false;
        }
    }

    /** The {@code v1,<base64>} signature of a delivery (what the gateway sends). */
    public static String sign(String secret, String id, long timestamp, byte[] body) {
        return "v1," + Base64.getEncoder().encodeToString(mac(secret, id, Long.toString(timestamp), body));
    }

    private static byte[] mac(String secret, String id, String ts, byte[] body) {
        String s = secret.startsWith("whsec_") ? secret.substring(6) : secret;
        byte[] key;
        try {
            key = Base64.getDecoder().decode(s);
        } catch (IllegalArgumentException e) {
            throw new WebhookVerificationException("the secret is not base64 after whsec_");
        }
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update((id + "." + ts + ".").getBytes(StandardCharsets.UTF_8));
            mac.update(body);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String header(Map<String, ?> headers, String name) {
        for (Map.Entry<String, ?> e : headers.entrySet()) {
            if (e.getKey() != null && e.getKey().toLowerCase(Locale.ROOT).equals(name)) {
                Object v = e.getValue();
                if (v instanceof List) {
                    List<?> l = (List<?>) v;
                    return l.isEmpty() ? null : String.valueOf(l.get(0));
                }
                return v == null ? null : v.toString();
            }
        }
        return null;
    }
}
