package io.sovereigngateway;

import java.util.List;
import java.util.Map;

/** A chat completion, with the answer's {@link #sovereignty()}. */
public final class ChatCompletion extends JsonObject {
    private final Sovereignty sovereignty;

    public ChatCompletion(Map<String, Object> data, Sovereignty sovereignty) {
        super(data);
        this.sovereignty = sovereignty;
    }

    /** Sovereign id, audit trace id, route policy and data residency of this answer. */
    public Sovereignty sovereignty() {
        return sovereignty;
    }

    public String id() {
        return getString("id");
    }

    public String model() {
        return getString("model");
    }

    public List<Choice> choices() {
        return getObjects("choices", Choice::new);
    }

    /** The first choice's message content ("" when none). */
    public String content() {
        List<Choice> cs = choices();
        if (cs.isEmpty()) {
            return "";
        }
        String c = cs.get(0).content();
        return c == null ? "" : c;
    }

    public TokenUsage usage() {
        JsonObject u = getObject("usage");
        return u == null ? null : new TokenUsage(u.raw());
    }

    /** One choice. */
    public static final class Choice extends JsonObject {
        public Choice(Map<String, Object> data) {
            super(data);
        }

        public long index() {
            Long i = getLong("index");
            return i == null ? 0 : i;
        }

        public String role() {
            JsonObject m = getObject("message");
            return m == null ? null : m.getString("role");
        }

        public String content() {
            JsonObject m = getObject("message");
            return m == null ? null : m.getString("content");
        }

        public String finishReason() {
            return getString("finish_reason");
        }
    }
}
