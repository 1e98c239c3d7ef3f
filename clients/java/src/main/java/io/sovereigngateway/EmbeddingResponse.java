package io.sovereigngateway;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The embeddings, with the answer's {@link #sovereignty()}. */
public final class EmbeddingResponse extends JsonObject {
    private final Sovereignty sovereignty;

    public EmbeddingResponse(Map<String, Object> data, Sovereignty sovereignty) {
        super(data);
        this.sovereignty = sovereignty;
    }

    public Sovereignty sovereignty() {
        return sovereignty;
    }

    public String model() {
        return getString("model");
    }

    /** One vector per input, in input order ({@code float} encoding). */
    public List<float[]> vectors() {
        List<float[]> out = new ArrayList<>();
        for (JsonObject d : getObjects("data", JsonObject::new)) {
            List<Object> e = d.getList("embedding");
            float[] v = new float[e.size()];
            for (int i = 0; i < v.length; i++) {
                v[i] = ((Number) e.get(i)).floatValue();
            }
            out.add(v);
        }
        return out;
    }

    public TokenUsage usage() {
        JsonObject u = getObject("usage");
        return u == null ? null : new TokenUsage(u.raw());
    }
}
