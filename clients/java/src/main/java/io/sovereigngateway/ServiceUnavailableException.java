package io.sovereigngateway;

/** 503: temporarily unavailable (store, retrieval model, upstream). */
public class ServiceUnavailableException extends ServerException {
    private static final long serialVersionUID = 1L;

    public ServiceUnavailableException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    ServiceUnavailableException(ErrorInfo e) {
        super(e);
    }
}
