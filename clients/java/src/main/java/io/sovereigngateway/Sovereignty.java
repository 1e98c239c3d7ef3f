package io.sovereigngateway;

import java.net.http.HttpHeaders;
import java.util.Objects;

/**
 * The sovereignty metadata of an answer: {@code X-Sovereign-ID} (the gateway replica),
 * {@code X-Audit-Trace-ID} (the journal entry's {@code request_id}) and, on inference answers,
 * {@code X-Route-Policy} and {@code X-Data-Residency} (the region that served).
 */
public final class Sovereignty {
    private final String sovereignId;
    private final String auditTraceId;
    private final String routePolicy;
    private final String dataResidency;

    public Sovereignty(String sovereignId, String auditTraceId, String routePolicy, String dataResidency) {
        this.sovereignId = sovereignId;
        this.auditTraceId = auditTraceId;
        this.routePolicy = routePolicy;
        this.dataResidency = dataResidency;
    }

    static Sovereignty from(HttpHeaders h) {
        return new Sovereignty(
                h.firstValue("x-sovereign-id").orElse(null),
                h.firstValue("x-audit-trace-id").orElse(null),
                h.firstValue("x-route-policy").orElse(null),
                h.firstValue("x-data-residency").orElse(null));
    }

    public String sovereignId() {
        return sovereignId;
    }

    public String auditTraceId() {
        return auditTraceId;
    }

    public String routePolicy() {
        return routePolicy;
    }

    public String dataResidency() {
        return dataResidency;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Sovereignty)) {
            return false;
        }
        Sovereignty s = (Sovereignty) o;
        return Objects.equals(sovereignId, s.sovereignId) && Objects.equals(auditTraceId, s.auditTraceId)
                && Objects.equals(routePolicy, s.routePolicy) && Objects.equals(dataResidency, s.dataResidency);
    }

    @Override
    public int hashCode() {
        return Objects.hash(sovereignId, auditTraceId, routePolicy, dataResidency);
    }

    @Override
    public String toString() {
        return "Sovereignty{sovereignId=" + sovereignId + ", auditTraceId=" + auditTraceId
                + ", routePolicy=" + routePolicy + ", dataResidency=" + dataResidency + "}";
    }
}
