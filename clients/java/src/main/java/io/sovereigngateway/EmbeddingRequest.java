package io.sovereigngateway;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/** {@code POST /v1/embeddings}: a model and one or more input strings. */
public final class EmbeddingRequest implements JsonBody {
    private final Map<String, Object> body;

    private EmbeddingRequest(Map<String, Object> body) {
        this.body = body;
    }

    public static EmbeddingRequest of(String model, String... inputs) {
        return builder().model(model).input(inputs).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public Map<String, Object> toJson() {
        return new LinkedHashMap<>(body);
    }

    public static final class Builder {
        private final Map<String, Object> body = new LinkedHashMap<>();
        private final List<String> inputs = new ArrayList<>();

        public Builder model(String model) {
            body.put("model", model);
            return this;
        }

        public Builder input(String... in) {
            inputs.addAll(List.of(in));
            return this;
        }

        public Builder inputs(List<String> in) {
            inputs.addAll(in);
            return this;
        }

        /** {@code float} (default) or {@code base64}. */
        public Builder encodingFormat(String f) {
            body.put("encoding_format", f);
            return this;
        }

        public Builder dimensions(int d) {
            body.put("dimensions", d);
            return this;
        }

        public Builder actor(String user) {
            body.put("user", user);
            return this;
        }

        public Builder set(String key, Object value) {
            body.put(key, value);
            return this;
        }

        public EmbeddingRequest build() {
            Objects.requireNonNull(body.get("model"), "model is required");
            if (inputs.isEmpty()) {
                throw new IllegalArgumentException("at least one input is required");
            }
            Map<String, Object> b = new LinkedHashMap<>(body);
            b.put("input", inputs.size() == 1 ? inputs.get(0) : new ArrayList<>(inputs));
            return new EmbeddingRequest(b);
        }
    }
}
