package io.sovereigngateway;

import java.util.Map;

/** An API key's record; {@link #key()} (the secret) is set only by create and rotate. */
public final class ApiKey extends JsonObject {
    public ApiKey(Map<String, Object> data) {
        super(data);
    }

    public String id() {
        return getString("id");
    }

    public String teamId() {
        return getString("team_id");
    }

    public String name() {
        return getString("name");
    }

    /** {@code admin}, {@code member} or {@code auditor}. */
    public String role() {
        return getString("role");
    }

    /** {@code active}, {@code rotating}, {@code revoked}, {@code expired}… */
    public String state() {
        return getString("state");
    }

    public String prefix() {
        return getString("prefix");
    }

    /** The secret ({@code sk-sov-…}): only in create and rotate answers. */
    public String key() {
        return getString("key");
    }

    /** On a rotate answer: the id of the key it replaces. */
    public String replaces() {
        return getString("replaces");
    }
}
