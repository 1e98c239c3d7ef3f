package io.sovereigngateway;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * A JSON object answered by the gateway. Typed results extend it with named getters; every
 * field, including ones this version does not name, stays readable with {@link #get(String)}
 * and {@link #raw()}.
 */
public class JsonObject {
    protected final Map<String, Object> data;

    public JsonObject(Map<String, Object> data) {
        this.data = data == null ? Collections.emptyMap() : data;
    }

    /** The object as parsed. */
    public Map<String, Object> raw() {
        return data;
    }

    public Object get(String key) {
        return data.get(key);
    }

    public boolean has(String key) {
        return data.containsKey(key);
    }

    public String getString(String key) {
        Object v = data.get(key);
        return v == null ? null : v instanceof String ? (String) v : String.valueOf(v);
    }

    public Long getLong(String key) {
        Object v = data.get(key);
        if (v instanceof Number) {
            return ((Number) v).longValue();
        }
        return null;
    }

    public Double getDouble(String key) {
        Object v = data.get(key);
        return v instanceof Number ? ((Number) v).doubleValue() : null;
    }

    public Boolean getBoolean(String key) {
        Object v = data.get(key);
        return v instanceof Boolean ? (Boolean) v : null;
    }

    @SuppressWarnings("unchecked")
    public JsonObject getObject(String key) {
        Object v = data.get(key);
        return v instanceof Map ? new JsonObject((Map<String, Object>) v) : null;
    }

    @SuppressWarnings("unchecked")
    public List<Object> getList(String key) {
        Object v = data.get(key);
        return v instanceof List ? (List<Object>) v : Collections.emptyList();
    }

    /** A list of objects, each wrapped by {@code wrap}. */
    @SuppressWarnings("unchecked")
    public <T> List<T> getObjects(String key, Function<Map<String, Object>, T> wrap) {
        List<T> out = new ArrayList<>();
        for (Object o : getList(key)) {
            if (o instanceof Map) {
                out.add(wrap.apply((Map<String, Object>) o));
            }
        }
        return out;
    }

    public List<String> getStrings(String key) {
        List<String> out = new ArrayList<>();
        for (Object o : getList(key)) {
            if (o != null) {
                out.add(o.toString());
            }
        }
        return out;
    }

    static boolean isInteger(Object v) {
        return v instanceof Long || v instanceof Integer || v instanceof BigInteger;
    }

    /** The object as JSON text. */
    public String toJson() {
        return Json.write(data);
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + toJson();
    }
}
