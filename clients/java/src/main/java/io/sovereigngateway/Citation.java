package io.sovereigngateway;

import java.util.Map;

/** One citation: the document, page (PDF, 1-based) or paragraph, the chunk's text, score, confidence. */
public final class Citation extends JsonObject {
    public Citation(Map<String, Object> data) {
        super(data);
    }

    public String documentId() {
        return getString("document_id");
    }

    public String filename() {
        return getString("filename");
    }

    /** 1-based page for PDFs; null for DOCX and text. */
    public Long page() {
        return getLong("page");
    }

    /** 1-based paragraph; may be null. */
    public Long paragraph() {
        return getLong("paragraph");
    }

    public String chunkId() {
        return getString("chunk_id");
    }

    public String text() {
        return getString("text");
    }

    public double score() {
        Double d = getDouble("score");
        return d == null ? 0 : d;
    }

    public double confidence() {
        Double d = getDouble("confidence");
        return d == null ? 0 : d;
    }
}
