package io.sovereigngateway;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code GET /v1/activity/proof}: an RFC 9162 inclusion proof, {@code leaf_index},
 * {@code tree_size} and {@code hashes} (base64). Verify it with
 * {@link TransparencyLog#verifyInclusion}.
 */
public final class InclusionProof extends JsonObject {
    public InclusionProof(Map<String, Object> data) {
        super(data);
    }

    /** A proof built from its parts (e.g. kept elsewhere than the gateway's answer). */
    public static InclusionProof of(long leafIndex, long treeSize, List<String> hashes) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("leaf_index", leafIndex);
        m.put("tree_size", treeSize);
        m.put("hashes", new ArrayList<Object>(hashes));
        return new InclusionProof(m);
    }

    /** The leaf's 0-based index: the journal entry's {@code seq - 1}. */
    public Long leafIndex() {
        return getLong("leaf_index");
    }

    /** The size of the tree the proof is for (the checkpoint to verify it against). */
    public Long treeSize() {
        return getLong("tree_size");
    }

    /** The audit path, base64, leaf side first. */
    public List<String> hashes() {
        return getStrings("hashes");
    }
}
