package io.sovereigngateway;

/** {@code POST /v1/rag/query}. */
public final class Rag {
    private final HttpTransport t;

    Rag(HttpTransport t) {
        this.t = t;
    }

    public RagResult query(String query) {
        return query(RagQuery.of(query));
    }

    public RagResult query(RagQuery q) {
        HttpTransport.Answer a = t.send(HttpTransport.Call.json("POST", "/v1/rag/query", q.toJson()));
        return new RagResult(a.object(), a.sovereignty());
    }
}
