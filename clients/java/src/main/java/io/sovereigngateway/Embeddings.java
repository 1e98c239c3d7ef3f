package io.sovereigngateway;

import java.util.concurrent.CompletableFuture;

/** {@code POST /v1/embeddings}. */
public final class Embeddings {
    private final HttpTransport t;

    Embeddings(HttpTransport t) {
        this.t = t;
    }

    public EmbeddingResponse create(EmbeddingRequest req) {
        HttpTransport.Answer a = t.send(HttpTransport.Call.json("POST", "/v1/embeddings", req.toJson()));
        return new EmbeddingResponse(a.object(), a.sovereignty());
    }

    public CompletableFuture<EmbeddingResponse> createAsync(EmbeddingRequest req) {
        return t.sendAsync(HttpTransport.Call.json("POST", "/v1/embeddings", req.toJson()))
                .thenApply(a -> new EmbeddingResponse(a.object(), a.sovereignty()));
    }
}
