package io.sovereigngateway;

import java.util.List;
import java.util.Map;

/** One page of journal entries ({@code format: json}) and where the next one starts. */
public final class ActivityPage extends JsonObject {
    public ActivityPage(Map<String, Object> data) {
        super(data);
    }

    /**
     * Entries as stored (with {@code journal_hash}) plus {@code replica}; an entry's
     * {@code charges} with {@link JournalCharge#of(JsonObject)}.
     */
    public List<JsonObject> data() {
        return getObjects("data", JsonObject::new);
    }

    /** Null on the last page. */
    public String nextCursor() {
        return getString("next_cursor");
    }
}
