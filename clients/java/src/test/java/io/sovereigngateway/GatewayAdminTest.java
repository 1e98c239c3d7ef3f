package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Teams, keys, usage, policies, guardrail; a revoked key; an auditor's limits. */
class GatewayAdminTest {
    static DemoGateway gw;

    @BeforeAll
    static void up() {
        gw = DemoGateway.get();
    }

    static String unique(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @Test
    void revokedKeyIsRefused() {
        Admin admin = gw.admin().admin();
        Team team = admin.teams().create(unique("java-revoke"));
        ApiKey key = admin.keys().create(team.id(), "member", "java-client");
        assertNotNull(key.key());
        SovereignClient user = gw.client(key.key());
        ChatCompletion c = user.chat().create(ChatCompletionRequest.builder().model("llama-3.2-3b-instruct").addUserMessage("hi").build());
        assertFalse(c.content().isBlank());
        ApiKey revoked = admin.keys().revoke(key.id());
        assertEquals("revoked", revoked.state());
        assertEquals(null, revoked.key());
        AuthenticationException e = assertThrows(AuthenticationException.class, () -> user.models().list());
        assertEquals(401, e.status());
        assertEquals("authentication_error", e.type());
    }

    @Test
    void teamsCrud() {
        Admin.Teams teams = gw.admin().admin().teams();
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("name", unique("java-team"));
        fields.put("allowed_regions", List.of("sa-riyadh-1"));
        Team t = teams.create(fields);
        assertEquals(List.of("sa-riyadh-1"), t.allowedRegions());
        assertEquals(t.name(), teams.retrieve(t.id()).name());
        assertTrue(teams.list().stream().anyMatch(x -> x.id().equals(t.id())));
        Team renamed = teams.update(t.id(), Map.of("name", t.name() + "-renamed"));
        assertEquals(t.name() + "-renamed", renamed.name());
        assertTrue(teams.delete(t.id()).deleted());
        assertThrows(NotFoundException.class, () -> teams.retrieve(t.id()));
    }

    @Test
    void keysCreateRotateRevoke() {
        Admin admin = gw.admin().admin();
        Team team = admin.teams().create(unique("java-keys"));
        ApiKey k = admin.keys().create(team.id(), "member", "first");
        assertTrue(k.key().startsWith("sk-sov-"), k.toString());
        assertEquals("member", admin.keys().retrieve(k.id()).role());
        assertEquals(null, admin.keys().retrieve(k.id()).key());
        assertTrue(admin.keys().list(team.id()).stream().anyMatch(x -> x.id().equals(k.id())));
        ApiKey rotated = admin.keys().rotate(k.id(), 0L);
        assertNotEquals(k.id(), rotated.id());
        assertEquals(k.id(), rotated.replaces());
        assertNotEquals(k.key(), rotated.key());
        assertFalse(gw.client(rotated.key()).models().list().isEmpty());
        assertEquals("revoked", admin.keys().revoke(rotated.id()).state());
    }

    @Test
    void usageReports() {
        JsonObject all = gw.admin().admin().usage().get();
        assertEquals("list", all.getString("object"));
        assertNotNull(all.getObject("total"));
        JsonObject one = gw.admin().admin().usage().get(Map.of("model", "llama-3.2-3b-instruct"));
        for (Object row : one.getList("data")) {
            assertEquals("llama-3.2-3b-instruct", ((Map<?, ?>) row).get("model"));
        }
    }

    @Test
    void policiesUploadActivateRollBack() {
        Admin.Policies policies = gw.admin().admin().policies();
        JsonObject before = policies.list();
        String earlier = before.getString("active");
        assertNotNull(earlier, before.toString());
        String yaml = "name: java-client-test\n"
                + "routes:\n"
                + "  - name: arabic\n"
                + "    condition: \"language == 'ar'\"\n"
                + "    model: jais-30b-chat\n"
                + "default: llama-3.2-3b-instruct\n";
        JsonObject loaded = policies.uploadDocument(yaml);
        String id = loaded.getString("id");
        assertNotNull(id, loaded.toString());
        assertEquals(id, policies.list().getString("active"));
        ChatCompletion c = gw.member().chat().create(
                ChatCompletionRequest.builder().model("auto-router").addUserMessage("Hello there").build());
        assertTrue(c.sovereignty().routePolicy().contains("java-client-test"), c.sovereignty().toString());
        policies.activate(earlier);
        assertEquals(earlier, policies.list().getString("active"));
        assertThrows(NotFoundException.class, () -> policies.activate("no-such-policy"));
    }

    @Test
    void guardrailGetAndSet() {
        Admin.Guardrail g = gw.admin().admin().guardrail();
        JsonObject current = g.get();
        assertNotNull(current.getString("component_sha256"), current.toString());
        Object settings = current.get("settings");
        assertNotNull(settings, current.toString());
        JsonObject set = g.set(Map.of("settings", settings));
        assertEquals(current.getString("component_sha256"), set.getString("component_sha256"));
        assertThrows(BadRequestException.class, () -> g.set(Map.of()));
    }

    @Test
    void auditorMayNotCreateAKey() {
        Admin.Keys keys = gw.auditor().admin().keys();
        PermissionDeniedException e = assertThrows(PermissionDeniedException.class,
                () -> keys.create("team_demo", "member", "nope"));
        assertEquals(403, e.status());
        assertEquals("permission_error", e.type());
    }
}
