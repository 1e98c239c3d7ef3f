package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The builder follows openai-java: {@code user(..)} is the end user, {@code addUserMessage(..)} a message. */
class ChatCompletionRequestTest {
    @Test
    void userIsTheEndUserIdAndAddUserMessageAddsAMessage() {
        Map<String, Object> body = ChatCompletionRequest.builder().model("auto-router")
                .addSystemMessage("Be brief.").addUserMessage("مرحبا").user("user-42").build().toJson();
        assertEquals("user-42", body.get("user"));
        List<?> messages = (List<?>) body.get("messages");
        assertEquals(2, messages.size());
        assertEquals(Map.of("role", "user", "content", "مرحبا"), ((ChatMessage) messages.get(1)).toJson());
        assertEquals("user-42", ChatCompletionRequest.builder().model("m").addUserMessage("x").actor("user-42")
                .build().toJson().get("user"));
    }
}
