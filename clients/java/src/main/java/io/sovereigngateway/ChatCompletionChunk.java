package io.sovereigngateway;

import java.util.List;
import java.util.Map;

/** One streamed {@code chat.completion.chunk}. */
public final class ChatCompletionChunk extends JsonObject {
    public ChatCompletionChunk(Map<String, Object> data) {
        super(data);
    }

    public String id() {
        return getString("id");
    }

    public String model() {
        return getString("model");
    }

    public List<JsonObject> choices() {
        return getObjects("choices", JsonObject::new);
    }

    /** The first choice's {@code delta.content} ("" when none). */
    public String content() {
        List<JsonObject> cs = choices();
        if (cs.isEmpty()) {
            return "";
        }
        JsonObject delta = cs.get(0).getObject("delta");
        String c = delta == null ? null : delta.getString("content");
        return c == null ? "" : c;
    }

    public String finishReason() {
        List<JsonObject> cs = choices();
        return cs.isEmpty() ? null : cs.get(0).getString("finish_reason");
    }

    /** Present on the last chunk with {@code stream_options.include_usage}. */
    public TokenUsage usage() {
        JsonObject u = getObject("usage");
        return u == null ? null : new TokenUsage(u.raw());
    }
}
