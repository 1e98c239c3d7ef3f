package io.sovereigngateway;

import java.util.List;
import java.util.Map;

/** A page of documents, newest first. */
public final class DocumentList extends JsonObject {
    public DocumentList(Map<String, Object> data) {
        super(data);
    }

    public List<Document> data() {
        return getObjects("data", Document::new);
    }

    public boolean hasMore() {
        return Boolean.TRUE.equals(getBoolean("has_more"));
    }

    public String firstId() {
        return getString("first_id");
    }

    public String lastId() {
        return getString("last_id");
    }
}
