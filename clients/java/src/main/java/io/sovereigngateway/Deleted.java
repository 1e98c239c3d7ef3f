package io.sovereigngateway;

import java.util.Map;

/** The answer of a delete: {@code id}, {@code object}, {@code deleted}. */
public final class Deleted extends JsonObject {
    public Deleted(Map<String, Object> data) {
        super(data);
    }

    public String id() {
        return getString("id");
    }

    public boolean deleted() {
        return Boolean.TRUE.equals(getBoolean("deleted"));
    }
}
