package io.sovereigngateway;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code GET /v1/activity/consistency}: an RFC 9162 consistency proof between the trees of sizes
 * {@code from} and {@code to}, {@code hashes} base64. Verify it with
 * {@link TransparencyLog#verifyConsistency}.
 */
public final class ConsistencyProof extends JsonObject {
    public ConsistencyProof(Map<String, Object> data) {
        super(data);
    }

    /** A proof built from its parts. */
    public static ConsistencyProof of(long from, long to, List<String> hashes) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("from", from);
        m.put("to", to);
        m.put("hashes", new ArrayList<Object>(hashes));
        return new ConsistencyProof(m);
    }

    /** The older tree's size. */
    public Long from() {
        return getLong("from");
    }

    /** The newer tree's size. */
    public Long to() {
        return getLong("to");
    }

    /** The proof's hashes, base64. */
    public List<String> hashes() {
        return getStrings("hashes");
    }
}
