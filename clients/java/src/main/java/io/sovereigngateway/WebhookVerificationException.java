package io.sovereigngateway;

/** A webhook delivery whose signature or timestamp does not verify (local; status 0). */
public class WebhookVerificationException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public WebhookVerificationException(String message) {
        super(message, 0, "webhook_verification_error", null, null, null, null);
    }
}
