package io.sovereigngateway;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A chat completion request: the OpenAI fields plus the gateway's routing hints
 * ({@link Builder#routing}, {@link Builder#routingPreference}) and the
 * {@code X-Data-Classification} header ({@link Builder#dataClassification}).
 */
public final class ChatCompletionRequest implements JsonBody {
    private final Map<String, Object> body;
    private final Map<String, String> headers;

    private ChatCompletionRequest(Map<String, Object> body, Map<String, String> headers) {
        this.body = body;
        this.headers = headers;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The body as sent (without {@code stream}, which {@link Chat} sets). */
    @Override
    public Map<String, Object> toJson() {
        return new LinkedHashMap<>(body);
    }

    /** Extra request headers (e.g. {@code X-Data-Classification}). */
    public Map<String, String> headers() {
        return headers;
    }

    public String model() {
        return (String) body.get("model");
    }

    public static final class Builder {
        private final Map<String, Object> body = new LinkedHashMap<>();
        private final List<Object> messages = new ArrayList<>();
        private final Map<String, String> headers = new LinkedHashMap<>();

        private Builder() {}

        /** A model id, or {@code auto-router} to let the gateway's policy choose. */
        public Builder model(String model) {
            body.put("model", model);
            return this;
        }

        public Builder message(ChatMessage m) {
            messages.add(m);
            return this;
        }

        public Builder message(String role, String content) {
            return message(ChatMessage.of(role, content));
        }

        /** Adds a {@code system} message (as openai-java's {@code addSystemMessage}). */
        public Builder addSystemMessage(String content) {
            return message(ChatMessage.system(content));
        }

        /** Adds a {@code system} message; the same as {@link #addSystemMessage}. */
        public Builder system(String content) {
            return addSystemMessage(content);
        }

        /** Adds a {@code user} message (as openai-java's {@code addUserMessage}). */
        public Builder addUserMessage(String content) {
            return message(ChatMessage.user(content));
        }

        /** Adds an {@code assistant} message (as openai-java's {@code addAssistantMessage}). */
        public Builder addAssistantMessage(String content) {
            return message(ChatMessage.assistant(content));
        }

        /**
         * The body's {@code user}: the end user on whose behalf the request is made, journaled
         * as {@code actor_id} — what openai-java's {@code .user()} means. It adds no message: for
         * that, {@link #addUserMessage}.
         */
        public Builder user(String endUserId) {
            body.put("user", endUserId);
            return this;
        }

        public Builder messages(List<ChatMessage> ms) {
            messages.addAll(ms);
            return this;
        }

        public Builder temperature(double t) {
            body.put("temperature", t);
            return this;
        }

        public Builder topP(double p) {
            body.put("top_p", p);
            return this;
        }

        public Builder maxTokens(int n) {
            body.put("max_tokens", n);
            return this;
        }

        public Builder stop(String... stop) {
            body.put("stop", List.of(stop));
            return this;
        }

        /** The body's {@code user} (the end user), journaled as {@code actor_id}; the same as {@link #user}. */
        public Builder actor(String user) {
            return user(user);
        }

        /** The gateway's {@code routing} object. */
        public Builder routing(Routing routing) {
            body.put("routing", routing.toJson());
            return this;
        }

        /** {@code routing_preference}: {@code cost}, {@code performance} or {@code balanced}. */
        public Builder routingPreference(String preference) {
            body.put("routing_preference", preference);
            return this;
        }

        /** Sent as the {@code X-Data-Classification} header (e.g. {@code sensitive}). */
        public Builder dataClassification(String classification) {
            headers.put("X-Data-Classification", classification);
            return this;
        }

        /** Any further body field (e.g. {@code tools}, {@code response_format}). */
        public Builder set(String key, Object value) {
            body.put(key, value);
            return this;
        }

        public Builder header(String name, String value) {
            headers.put(name, value);
            return this;
        }

        public ChatCompletionRequest build() {
            Objects.requireNonNull(body.get("model"), "model is required");
            if (messages.isEmpty()) {
                throw new IllegalArgumentException("at least one message is required");
            }
            Map<String, Object> b = new LinkedHashMap<>(body);
            b.put("messages", new ArrayList<>(messages));
            return new ChatCompletionRequest(Collections.unmodifiableMap(b),
                    Collections.unmodifiableMap(new LinkedHashMap<>(headers)));
        }
    }
}
