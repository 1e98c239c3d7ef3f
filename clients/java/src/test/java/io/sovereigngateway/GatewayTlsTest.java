package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Mutual TLS against `sovereign demo --tls`: a client certificate instead of an API key. */
class GatewayTlsTest {
    static DemoGateway gw;

    @BeforeAll
    static void up() {
        gw = DemoGateway.tls();
    }

    Path tls(String file) {
        return gw.dataDir.resolve("tls").resolve(file);
    }

    @Test
    void clientCertificateWithoutApiKey() {
        assertTrue(gw.baseUrl.startsWith("https://"), gw.baseUrl);
        SovereignClient c = SovereignClient.builder().baseUrl(gw.baseUrl)
                .caBundle(tls("ca.pem"))
                .clientCertificate(tls("client-member.pem"), tls("client-member.key"))
                .timeout(Duration.ofSeconds(30)).build();
        ChatCompletion r = c.chat().create(ChatCompletionRequest.builder().model("llama-3.2-3b-instruct").addUserMessage("hello").build());
        assertFalse(r.content().isBlank());
        assertEquals("demo-riyadh-1", r.sovereignty().sovereignId());
    }

    @Test
    void withoutTheCaTheHandshakeFails() {
        SovereignClient c = SovereignClient.builder().baseUrl(gw.baseUrl).apiKey(gw.memberKey).maxRetries(2)
                .timeout(Duration.ofSeconds(10)).build();
        ConnectionException e = assertThrows(ConnectionException.class, () -> c.models().list());
        assertEquals(0, e.status());
    }
}
