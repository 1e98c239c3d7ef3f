package io.sovereigngateway;

import java.util.List;
import java.util.Map;

/** A model: the OpenAI fields plus {@code family}, {@code languages}, {@code region}. */
public final class Model extends JsonObject {
    public Model(Map<String, Object> data) {
        super(data);
    }

    public String id() {
        return getString("id");
    }

    public String ownedBy() {
        return getString("owned_by");
    }

    public String family() {
        return getString("family");
    }

    public List<String> languages() {
        return getStrings("languages");
    }

    public String region() {
        return getString("region");
    }
}
