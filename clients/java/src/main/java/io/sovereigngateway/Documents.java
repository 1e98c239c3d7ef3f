package io.sovereigngateway;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Locale;
import java.util.Map;

/** {@code /v1/documents}: upload (multipart), list, retrieve, delete. */
public final class Documents {
    private static final SecureRandom RANDOM = new SecureRandom();
    private final HttpTransport t;

    Documents(HttpTransport t) {
        this.t = t;
    }

    /** Uploads a file into the {@code default} collection. */
    public Document upload(Path file) {
        return upload(file, null, null);
    }

    public Document upload(Path file, String collection) {
        return upload(file, collection, null);
    }

    public Document upload(Path file, String collection, Map<String, Object> metadata) {
        byte[] content;
        try {
            content = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return upload(file.getFileName().toString(), content, collection, metadata);
    }

    /**
     * Uploads bytes as {@code filename} (PDF, DOCX, .txt, .md). 201 for a new document; the
     * same bytes again in the same collection answer the stored record. The call waits until
     * the document is searchable ({@code ?wait=true}, at most 300 s on the gateway).
     */
    public Document upload(String filename, byte[] content, String collection, Map<String, Object> metadata) {
        String boundary = "sovereign-" + Long.toHexString(RANDOM.nextLong()) + Long.toHexString(RANDOM.nextLong());
        ByteArrayOutputStream out = new ByteArrayOutputStream(content.length + 512);
        String safeName = filename.replace("\"", "%22").replace("\r", "").replace("\n", "");
        write(out, "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + safeName
                + "\"\r\nContent-Type: " + contentType(filename) + "\r\n\r\n");
        out.writeBytes(content);
        write(out, "\r\n");
        if (collection != null) {
            field(out, boundary, "collection", collection);
        }
        if (metadata != null) {
            field(out, boundary, "metadata", Json.write(metadata));
        }
        write(out, "--" + boundary + "--\r\n");
        HttpTransport.Call c = new HttpTransport.Call("POST", "/v1/documents/upload?wait=true").notRetryable();
        c.body = out.toByteArray();
        c.contentType = "multipart/form-data; boundary=" + boundary;
        return new Document(t.send(c).object());
    }

    private static void field(ByteArrayOutputStream out, String boundary, String name, String value) {
        write(out, "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value
                + "\r\n");
    }

    private static void write(ByteArrayOutputStream out, String s) {
        out.writeBytes(s.getBytes(StandardCharsets.UTF_8));
    }

    static String contentType(String filename) {
        String n = filename.toLowerCase(Locale.ROOT);
        if (n.endsWith(".pdf")) {
            return "application/pdf";
        }
        if (n.endsWith(".docx")) {
            return "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
        }
        if (n.endsWith(".md") || n.endsWith(".markdown")) {
            return "text/markdown";
        }
        if (n.endsWith(".txt")) {
            return "text/plain";
        }
        return "application/octet-stream";
    }

    public DocumentList list() {
        return list(null, null, null);
    }

    /** A page: {@code collection}, {@code limit} (1–100), {@code after} (an id); all optional. */
    public DocumentList list(String collection, Integer limit, String after) {
        HttpTransport.Call c = HttpTransport.Call.get("/v1/documents")
                .query("collection", collection).query("limit", limit).query("after", after);
        return new DocumentList(t.send(c).object());
    }

    public Document retrieve(String id) {
        return new Document(t.send(HttpTransport.Call.get("/v1/documents/" + HttpTransport.seg(id))).object());
    }

    public Deleted delete(String id) {
        return new Deleted(t.send(HttpTransport.Call.delete("/v1/documents/" + HttpTransport.seg(id))).object());
    }
}
