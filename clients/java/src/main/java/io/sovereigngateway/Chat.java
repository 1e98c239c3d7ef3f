package io.sovereigngateway;

import java.io.InputStream;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** {@code POST /v1/chat/completions}. */
public final class Chat {
    private final HttpTransport t;

    Chat(HttpTransport t) {
        this.t = t;
    }

    private static HttpTransport.Call call(ChatCompletionRequest req, boolean stream) {
        Map<String, Object> body = req.toJson();
        body.put("stream", stream);
        HttpTransport.Call c = HttpTransport.Call.json("POST", "/v1/chat/completions", body);
        req.headers().forEach(c::header);
        if (stream) {
            c.header("Accept", "text/event-stream");
        }
        return c;
    }

    /** A whole completion. */
    public ChatCompletion create(ChatCompletionRequest req) {
        HttpTransport.Answer a = t.send(call(req, false));
        return new ChatCompletion(a.object(), a.sovereignty());
    }

    /** A whole completion, asynchronously ({@code HttpClient.sendAsync}; retries included). */
    public CompletableFuture<ChatCompletion> createAsync(ChatCompletionRequest req) {
        return t.sendAsync(call(req, false)).thenApply(a -> new ChatCompletion(a.object(), a.sovereignty()));
    }

    /**
     * A streamed completion: returns once the answer's headers arrived (errors before the stream
     * raise here), with {@link ChatCompletionStream#sovereignty()} already set.
     */
    public ChatCompletionStream stream(ChatCompletionRequest req) {
        HttpResponse<InputStream> res = t.open(call(req, true));
        return new ChatCompletionStream(res);
    }
}
