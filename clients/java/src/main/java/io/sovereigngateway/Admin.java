package io.sovereigngateway;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code /v1/admin/*} (admin keys; usage: auditors too, for their team). */
public final class Admin {
    private final Teams teams;
    private final Keys keys;
    private final Usage usage;
    private final Policies policies;
    private final Guardrail guardrail;

    Admin(HttpTransport t) {
        this.teams = new Teams(t);
        this.keys = new Keys(t);
        this.usage = new Usage(t);
        this.policies = new Policies(t);
        this.guardrail = new Guardrail(t);
    }

    public Teams teams() {
        return teams;
    }

    public Keys keys() {
        return keys;
    }

    public Usage usage() {
        return usage;
    }

    public Policies policies() {
        return policies;
    }

    public Guardrail guardrail() {
        return guardrail;
    }

    /** {@code /v1/admin/teams}. */
    public static final class Teams {
        private final HttpTransport t;

        Teams(HttpTransport t) {
            this.t = t;
        }

        public List<Team> list() {
            return new JsonObject(t.send(HttpTransport.Call.get("/v1/admin/teams")).object()).getObjects("data", Team::new);
        }

        public Team create(String name) {
            Map<String, Object> b = new LinkedHashMap<>();
            b.put("name", name);
            return create(b);
        }

        /** Fields: {@code name}, {@code plan}, {@code budget}, {@code token_cap_per_day}, {@code allowed_regions}, {@code sensitive_only}, {@code allowed_models}. */
        public Team create(Map<String, Object> fields) {
            return new Team(t.send(HttpTransport.Call.json("POST", "/v1/admin/teams", fields).notRetryable()).object());
        }

        public Team retrieve(String id) {
            return new Team(t.send(HttpTransport.Call.get("/v1/admin/teams/" + HttpTransport.seg(id))).object());
        }

        /** PATCH with the fields to change. */
        public Team update(String id, Map<String, Object> fields) {
            return new Team(t.send(HttpTransport.Call.json("PATCH", "/v1/admin/teams/" + HttpTransport.seg(id), fields)).object());
        }

        public Deleted delete(String id) {
            return new Deleted(t.send(HttpTransport.Call.delete("/v1/admin/teams/" + HttpTransport.seg(id))).object());
        }
    }

    /** {@code /v1/admin/keys}. */
    public static final class Keys {
        private final HttpTransport t;

        Keys(HttpTransport t) {
            this.t = t;
        }

        public List<ApiKey> list() {
            return list(null);
        }

        public List<ApiKey> list(String teamId) {
            return new JsonObject(t.send(HttpTransport.Call.get("/v1/admin/keys").query("team_id", teamId)).object())
                    .getObjects("data", ApiKey::new);
        }

        /** A new key of {@code role} ({@code admin}, {@code member}, {@code auditor}) in a team; the answer holds the secret. */
        public ApiKey create(String teamId, String role, String name) {
            Map<String, Object> b = new LinkedHashMap<>();
            b.put("team_id", teamId);
            b.put("role", role);
            if (name != null) {
                b.put("name", name);
            }
            return create(b);
        }

        /** Fields: {@code team_id}, {@code role}, {@code name}, {@code expires_at}, {@code ip_allowlist}, {@code rpm}, {@code tpd}, {@code budget}. */
        public ApiKey create(Map<String, Object> fields) {
            return new ApiKey(t.send(HttpTransport.Call.json("POST", "/v1/admin/keys", fields).notRetryable()).object());
        }

        public ApiKey retrieve(String id) {
            return new ApiKey(t.send(HttpTransport.Call.get("/v1/admin/keys/" + HttpTransport.seg(id))).object());
        }

        /** A successor key (the answer holds its secret); the old one works for the default grace. */
        public ApiKey rotate(String id) {
            return rotate(id, null);
        }

        public ApiKey rotate(String id, Long graceSeconds) {
            Map<String, Object> b = new LinkedHashMap<>();
            if (graceSeconds != null) {
                b.put("grace_seconds", graceSeconds);
            }
            return new ApiKey(t.send(HttpTransport.Call.json("POST",
                    "/v1/admin/keys/" + HttpTransport.seg(id) + "/rotate", b).notRetryable()).object());
        }

        public ApiKey revoke(String id) {
            return new ApiKey(t.send(new HttpTransport.Call("POST",
                    "/v1/admin/keys/" + HttpTransport.seg(id) + "/revoke").notRetryable()).object());
        }
    }

    /** {@code GET /v1/admin/usage}. */
    public static final class Usage {
        private final HttpTransport t;

        Usage(HttpTransport t) {
            this.t = t;
        }

        public JsonObject get() {
            return get(Map.of());
        }

        /** Query: {@code team_id}, {@code key_id}, {@code model}, {@code from}, {@code to}. */
        public JsonObject get(Map<String, String> query) {
            HttpTransport.Call c = HttpTransport.Call.get("/v1/admin/usage");
            query.forEach(c::query);
            return new JsonObject(t.send(c).object());
        }
    }

    /** {@code /v1/admin/policies} (docs/POLICIES.md, "Hot swap"). */
    public static final class Policies {
        private final HttpTransport t;

        Policies(HttpTransport t) {
            this.t = t;
        }

        /** {@code {object: "list", active: "<id>", data: [versions, oldest first]}}. */
        public JsonObject list() {
            return new JsonObject(t.send(HttpTransport.Call.get("/v1/admin/policies")).object());
        }

        /** A routing YAML document on the active component, activated. */
        public JsonObject uploadDocument(String yaml) {
            Map<String, Object> b = new LinkedHashMap<>();
            b.put("document", yaml);
            return upload(b);
        }

        /** Fields: {@code document}, {@code component_base64}, {@code pool}, {@code activate}. */
        public JsonObject upload(Map<String, Object> fields) {
            return new JsonObject(t.send(HttpTransport.Call.json("POST", "/v1/admin/policies", fields).notRetryable()).object());
        }

        /** Makes a loaded version active (a rollback activates an older id). */
        public JsonObject activate(String id) {
            return new JsonObject(t.send(new HttpTransport.Call("POST",
                    "/v1/admin/policies/" + HttpTransport.seg(id) + "/activate")).object());
        }
    }

    /** {@code /v1/admin/guardrail}. */
    public static final class Guardrail {
        private final HttpTransport t;

        Guardrail(HttpTransport t) {
            this.t = t;
        }

        public JsonObject get() {
            return new JsonObject(t.send(HttpTransport.Call.get("/v1/admin/guardrail")).object());
        }

        /** Fields: {@code component_base64}, {@code settings}. */
        public JsonObject set(Map<String, Object> fields) {
            return new JsonObject(t.send(HttpTransport.Call.json("POST", "/v1/admin/guardrail", fields)).object());
        }
    }
}
