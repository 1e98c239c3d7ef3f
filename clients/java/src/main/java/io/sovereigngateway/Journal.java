package io.sovereigngateway;

import java.util.List;

/** {@code /v1/admin/journal}: the server's verification report and signed checkpoints. */
public final class Journal {
    private final HttpTransport t;

    Journal(HttpTransport t) {
        this.t = t;
    }

    /** {@code GET /v1/admin/journal/verify} (admin): {@code ok}, {@code report}, {@code chains}. */
    public JsonObject verify() {
        return new JsonObject(t.send(HttpTransport.Call.get("/v1/admin/journal/verify")).object());
    }

    /** {@code POST /v1/admin/journal/checkpoints}: signs the chain's durable head now (201). */
    public Checkpoint createCheckpoint() {
        return new Checkpoint(t.send(new HttpTransport.Call("POST", "/v1/admin/journal/checkpoints")).object());
    }

    /** {@code GET /v1/admin/journal/checkpoints}: oldest first. */
    public List<Checkpoint> listCheckpoints() {
        return new JsonObject(t.send(HttpTransport.Call.get("/v1/admin/journal/checkpoints")).object())
                .getObjects("data", Checkpoint::new);
    }
}
