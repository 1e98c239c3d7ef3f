package io.sovereigngateway;

import java.util.List;
import java.util.Map;

/** {@code rag.result}: citations, the calibrated confidence, and an answer when generated. */
public final class RagResult extends JsonObject {
    private final Sovereignty sovereignty;

    public RagResult(Map<String, Object> data, Sovereignty sovereignty) {
        super(data);
        this.sovereignty = sovereignty;
    }

    public Sovereignty sovereignty() {
        return sovereignty;
    }

    public String query() {
        return getString("query");
    }

    public String collection() {
        return getString("collection");
    }

    /** Probability that the collection answers the query (0–1). */
    public double confidence() {
        Double d = getDouble("confidence");
        return d == null ? 0 : d;
    }

    public List<Citation> citations() {
        return getObjects("citations", Citation::new);
    }

    /** The generated answer, with {@code generate}; else null. */
    public String answer() {
        return getString("answer");
    }
}
