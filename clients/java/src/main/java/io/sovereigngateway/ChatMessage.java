package io.sovereigngateway;

import java.util.LinkedHashMap;
import java.util.Map;

/** One chat message ({@code role}, {@code content}). */
public final class ChatMessage implements JsonBody {
    private final String role;
    private final Object content;
    private final String name;

    public ChatMessage(String role, Object content, String name) {
        this.role = role;
        this.content = content;
        this.name = name;
    }

    public static ChatMessage system(String content) {
        return new ChatMessage("system", content, null);
    }

    public static ChatMessage user(String content) {
        return new ChatMessage("user", content, null);
    }

    public static ChatMessage assistant(String content) {
        return new ChatMessage("assistant", content, null);
    }

    public static ChatMessage of(String role, String content) {
        return new ChatMessage(role, content, null);
    }

    public String role() {
        return role;
    }

    /** A string, or a list of content parts as the OpenAI API allows. */
    public Object content() {
        return content;
    }

    @Override
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        if (name != null) {
            m.put("name", name);
        }
        return m;
    }
}
