package io.sovereigngateway;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * {@code POST /v1/activity/logs} (auditor or admin keys), and the journal as a transparency log:
 * signed checkpoints, inclusion and consistency proofs ({@code /v1/activity/checkpoint},
 * {@code /proof}, {@code /consistency}).
 */
public final class Activity {
    /** Export formats. */
    public enum ExportFormat {
        JSONL("jsonl"), CSV("csv");

        final String wire;

        ExportFormat(String wire) {
            this.wire = wire;
        }
    }

    private final HttpTransport t;

    Activity(HttpTransport t) {
        this.t = t;
    }

    /** One page ({@code format: json}). */
    public ActivityPage query(ActivityQuery q) {
        return new ActivityPage(t.send(HttpTransport.Call.json("POST", "/v1/activity/logs", q.body("json"))).object());
    }

    /** Every entry matching {@code q}, fetched a page at a time as the iteration goes. */
    public Iterable<JsonObject> iterate(ActivityQuery q) {
        return () -> new Iterator<>() {
            ActivityQuery next = q.copy();
            Iterator<JsonObject> page = List.<JsonObject>of().iterator();

            @Override
            public boolean hasNext() {
                while (!page.hasNext() && next != null) {
                    ActivityPage p = query(next);
                    page = p.data().iterator();
                    String cursor = p.nextCursor();
                    next = cursor == null ? null : next.copy().cursor(cursor);
                }
                return page.hasNext();
            }

            @Override
            public JsonObject next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                return page.next();
            }
        };
    }

    /** The export as text: {@code jsonl} (each line as the chain holds it) or {@code csv}. */
    public String export(ActivityQuery q, ExportFormat format) {
        HttpTransport.Call c = HttpTransport.Call.json("POST", "/v1/activity/logs", q.body(format.wire));
        c.header("Accept", format == ExportFormat.CSV ? "text/csv" : "application/x-ndjson");
        return t.send(c).body;
    }

    /** The {@code jsonl} export's lines, ready for {@link JournalVerifier#verifyExport}. */
    public List<String> exportLines(ActivityQuery q) {
        List<String> out = new ArrayList<>();
        for (String line : export(q, ExportFormat.JSONL).split("\n", -1)) {
            if (!line.isEmpty()) {
                out.add(line);
            }
        }
        return out;
    }

    /**
     * {@code GET /v1/activity/checkpoint}: the journal's signed checkpoint (a C2SP signed note) as
     * it stands; verify it with {@link TransparencyLog#verifyCheckpoint}.
     */
    public String checkpoint() {
        return checkpoint(null);
    }

    /** {@link #checkpoint()} of one replica ({@code ?replica=}) on a multi-replica deployment; null: the default. */
    public String checkpoint(String replica) {
        HttpTransport.Call c = HttpTransport.Call.get("/v1/activity/checkpoint").query("replica", replica);
        c.header("Accept", "text/plain");
        return t.send(c).body;
    }

    /**
     * {@code GET /v1/activity/checkpoint/key}: the checkpoint verifier key line
     * ({@code <name>+<key id>+<key>}, without its newline). Pin it: a key fetched from the gateway
     * you are auditing proves only that the gateway signed.
     */
    public String checkpointKey() {
        HttpTransport.Call c = HttpTransport.Call.get("/v1/activity/checkpoint/key");
        c.header("Accept", "text/plain");
        return t.send(c).body.strip();
    }

    /** {@code GET /v1/activity/proof}: the inclusion proof of the entry of {@code requestId} in the latest checkpoint's tree. */
    public InclusionProof inclusionProof(String requestId) {
        return inclusionProof(requestId, null);
    }

    /**
     * {@code GET /v1/activity/proof}: the inclusion proof of the entry of {@code requestId} in the
     * tree of {@code treeSize} leaves (null: the latest checkpoint's). 404 ({@link NotFoundException})
     * for an unknown request.
     */
    public InclusionProof inclusionProof(String requestId, Long treeSize) {
        if (requestId == null || requestId.isEmpty()) {
            throw new IllegalArgumentException("a request id is required");
        }
        HttpTransport.Call c = HttpTransport.Call.get("/v1/activity/proof").query("request_id", requestId)
                .query("tree_size", treeSize);
        return new InclusionProof(t.send(c).object());
    }

    /** {@code GET /v1/activity/consistency}: the proof that the tree of {@code to} leaves extends the one of {@code from}. */
    public ConsistencyProof consistencyProof(long from, long to) {
        HttpTransport.Call c = HttpTransport.Call.get("/v1/activity/consistency").query("from", from).query("to", to);
        return new ConsistencyProof(t.send(c).object());
    }
}
