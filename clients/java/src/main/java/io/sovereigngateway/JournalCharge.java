package io.sovereigngateway;

import java.util.List;
import java.util.Map;

/**
 * What a request was charged: one element of a journal entry's {@code charges} (docs/JOURNAL.md),
 * present only when the entry carries the charge (its durable record). The spend is in integer
 * micro-units of the configured currency ({@code [budgets] currency}).
 */
public final class JournalCharge extends JsonObject {
    public JournalCharge(Map<String, Object> data) {
        super(data);
    }

    /** The charges an entry carries; empty when it carries none. */
    public static List<JournalCharge> of(JsonObject entry) {
        return entry.getObjects("charges", JournalCharge::new);
    }

    /** The model whose prices applied. */
    public String model() {
        return getString("model");
    }

    public Long spendMicros() {
        return getLong("spend_micros");
    }

    public Long tokensIn() {
        return getLong("tokens_in");
    }

    public Long tokensOut() {
        return getLong("tokens_out");
    }
}
