package io.sovereigngateway;

import java.util.Map;

/** {@code usage}: prompt, completion and total tokens. */
public final class TokenUsage extends JsonObject {
    public TokenUsage(Map<String, Object> data) {
        super(data);
    }

    public long promptTokens() {
        Long v = getLong("prompt_tokens");
        return v == null ? 0 : v;
    }

    public long completionTokens() {
        Long v = getLong("completion_tokens");
        return v == null ? 0 : v;
    }

    public long totalTokens() {
        Long v = getLong("total_tokens");
        return v == null ? promptTokens() + completionTokens() : v;
    }
}
