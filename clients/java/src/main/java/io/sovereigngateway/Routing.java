package io.sovereigngateway;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The gateway's routing hints ({@code routing} in the body): {@code profile}
 * ({@code cost}, {@code performance}, {@code balanced}), {@code classification} (e.g.
 * {@code sensitive}: local models only) and any further key the router reads.
 */
public final class Routing implements JsonBody {
    private final Map<String, Object> fields = new LinkedHashMap<>();

    public static Routing create() {
        return new Routing();
    }

    public Routing profile(String profile) {
        fields.put("profile", profile);
        return this;
    }

    public Routing classification(String classification) {
        fields.put("classification", classification);
        return this;
    }

    public Routing set(String key, Object value) {
        fields.put(key, value);
        return this;
    }

    @Override
    public Map<String, Object> toJson() {
        return new LinkedHashMap<>(fields);
    }
}
