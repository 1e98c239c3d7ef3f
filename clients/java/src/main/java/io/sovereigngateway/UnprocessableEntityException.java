package io.sovereigngateway;

/** 422: well-formed but unprocessable (e.g. a PDF without a text layer). */
public class UnprocessableEntityException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public UnprocessableEntityException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    UnprocessableEntityException(ErrorInfo e) {
        super(e);
    }
}
