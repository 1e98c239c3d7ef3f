package io.sovereigngateway;

/**
 * A transparency-log checkpoint, inclusion proof or consistency proof that does not verify
 * (local; status 0). {@link #reason()} (also the message) starts with one of {@code malformed},
 * {@code bad signature}, {@code untrusted key}, {@code inclusion}, {@code consistency}.
 */
public class JournalVerificationException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public JournalVerificationException(String reason) {
        super(reason, 0, "journal_verification_error", null, null, null, null);
    }

    public JournalVerificationException(String reason, Throwable cause) {
        super(reason, 0, "journal_verification_error", null, null, null, cause);
    }

    /** Why verification failed; starts with one of the prefixes above. */
    public String reason() {
        return getMessage();
    }
}
