package io.sovereigngateway;

import java.util.Map;

/** A stored document (docs/DOCUMENTS.md): id, filename, collection, kind, pages, chunks, status. */
public final class Document extends JsonObject {
    public Document(Map<String, Object> data) {
        super(data);
    }

    public String id() {
        return getString("id");
    }

    public String filename() {
        return getString("filename");
    }

    public String collection() {
        return getString("collection");
    }

    /** {@code pdf}, {@code docx}, {@code text} or {@code markdown}. */
    public String kind() {
        return getString("kind");
    }

    public Long bytes() {
        return getLong("bytes");
    }

    public String sha256() {
        return getString("sha256");
    }

    /** PDF pages; null for other kinds. */
    public Long pages() {
        return getLong("pages");
    }

    public Long chunks() {
        return getLong("chunks");
    }

    public String status() {
        return getString("status");
    }

    public JsonObject metadata() {
        return getObject("metadata");
    }
}
