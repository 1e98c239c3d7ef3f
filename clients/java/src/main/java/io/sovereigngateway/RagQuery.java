package io.sovereigngateway;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code POST /v1/rag/query}'s body. */
public final class RagQuery implements JsonBody {
    private final Map<String, Object> body = new LinkedHashMap<>();

    private RagQuery(String query) {
        body.put("query", query);
    }

    public static RagQuery of(String query) {
        return new RagQuery(query);
    }

    public RagQuery collection(String c) {
        body.put("collection", c);
        return this;
    }

    public RagQuery topK(int k) {
        body.put("top_k", k);
        return this;
    }

    public RagQuery minConfidence(double c) {
        body.put("min_confidence", c);
        return this;
    }

    public RagQuery documentIds(List<String> ids) {
        filters().put("document_ids", ids);
        return this;
    }

    public RagQuery metadata(Map<String, Object> equals) {
        filters().put("metadata", equals);
        return this;
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> filters() {
        return (Map<String, Object>) body.computeIfAbsent("filters", k -> new LinkedHashMap<String, Object>());
    }

    /** Generate an answer from the citations with {@code model} (null: the default model). */
    public RagQuery generate(String model) {
        body.put("generate", true);
        if (model != null) {
            body.put("model", model);
        }
        return this;
    }

    public RagQuery maxTokens(int n) {
        body.put("max_tokens", n);
        return this;
    }

    public RagQuery set(String key, Object value) {
        body.put(key, value);
        return this;
    }

    @Override
    public Map<String, Object> toJson() {
        return new LinkedHashMap<>(body);
    }
}
