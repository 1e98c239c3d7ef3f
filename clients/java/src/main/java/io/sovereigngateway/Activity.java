package io.sovereigngateway;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/** {@code POST /v1/activity/logs} (auditor or admin keys). */
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
}
