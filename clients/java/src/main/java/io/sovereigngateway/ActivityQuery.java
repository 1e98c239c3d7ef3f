package io.sovereigngateway;

import java.util.LinkedHashMap;
import java.util.Map;

/** Filters of {@code POST /v1/activity/logs} (docs/JOURNAL.md, "Querying"); all optional. */
public final class ActivityQuery {
    private final Map<String, Object> fields = new LinkedHashMap<>();

    public static ActivityQuery all() {
        return new ActivityQuery();
    }

    /** ISO 8601 date or date-time with a zone; inclusive. */
    public ActivityQuery from(String from) {
        return set("from", from);
    }

    /** Exclusive. */
    public ActivityQuery to(String to) {
        return set("to", to);
    }

    public ActivityQuery actorId(String v) {
        return set("actor_id", v);
    }

    public ActivityQuery teamId(String v) {
        return set("team_id", v);
    }

    public ActivityQuery model(String v) {
        return set("model", v);
    }

    /** {@code success}, {@code blocked}, {@code rejected}, {@code error}. */
    public ActivityQuery status(String v) {
        return set("status", v);
    }

    public ActivityQuery action(String v) {
        return set("action", v);
    }

    public ActivityQuery requestId(String v) {
        return set("request_id", v);
    }

    public ActivityQuery replica(String v) {
        return set("replica", v);
    }

    public ActivityQuery limit(long v) {
        return set("limit", v);
    }

    public ActivityQuery cursor(String v) {
        return set("cursor", v);
    }

    public ActivityQuery set(String key, Object value) {
        if (value == null) {
            fields.remove(key);
        } else {
            fields.put(key, value);
        }
        return this;
    }

    public ActivityQuery copy() {
        ActivityQuery q = new ActivityQuery();
        q.fields.putAll(fields);
        return q;
    }

    Map<String, Object> body(String format) {
        Map<String, Object> b = new LinkedHashMap<>(fields);
        b.put("format", format);
        return b;
    }
}
