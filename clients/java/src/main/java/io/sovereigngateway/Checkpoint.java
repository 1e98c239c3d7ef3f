package io.sovereigngateway;

import java.util.Map;

/** A signed checkpoint: {@code seq}, {@code count}, {@code head_hash}, {@code sovereign_id}, {@code public_key}, {@code signature}. */
public final class Checkpoint extends JsonObject {
    public Checkpoint(Map<String, Object> data) {
        super(data);
    }

    public Long seq() {
        return getLong("seq");
    }

    public Long count() {
        return getLong("count");
    }

    public String headHash() {
        return getString("head_hash");
    }

    public String sovereignId() {
        return getString("sovereign_id");
    }

    public String publicKey() {
        return getString("public_key");
    }

    public String signature() {
        return getString("signature");
    }

    public String timestamp() {
        return getString("timestamp");
    }
}
