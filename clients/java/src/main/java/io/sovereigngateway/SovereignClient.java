package io.sovereigngateway;

import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import javax.net.ssl.SSLContext;

/**
 * The client of a Sovereign Gateway: OpenAI-compatible calls plus the gateway's own (documents,
 * retrieval, activity journal, administration). Thread-safe; build one and share it.
 *
 * <pre>{@code
 * SovereignClient client = SovereignClient.builder()
 *     .baseUrl("https://gateway.example:8443")
 *     .apiKey(System.getenv("SOVEREIGN_API_KEY"))
 *     .build();
 * }</pre>
 */
public final class SovereignClient {
    private final HttpTransport transport;
    private final Chat chat;
    private final Embeddings embeddings;
    private final Models models;
    private final Documents documents;
    private final Rag rag;
    private final Activity activity;
    private final Journal journal;
    private final Admin admin;

    private SovereignClient(HttpTransport t) {
        this.transport = t;
        this.chat = new Chat(t);
        this.embeddings = new Embeddings(t);
        this.models = new Models(t);
        this.documents = new Documents(t);
        this.rag = new Rag(t);
        this.activity = new Activity(t);
        this.journal = new Journal(t);
        this.admin = new Admin(t);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** {@code POST /v1/chat/completions}, whole or streamed. */
    public Chat chat() {
        return chat;
    }

    /** {@code POST /v1/embeddings}. */
    public Embeddings embeddings() {
        return embeddings;
    }

    /** {@code GET /v1/models[/{id}]}. */
    public Models models() {
        return models;
    }

    /** {@code /v1/documents}: upload, list, get, delete. */
    public Documents documents() {
        return documents;
    }

    /** {@code POST /v1/rag/query}. */
    public Rag rag() {
        return rag;
    }

    /** {@code POST /v1/activity/logs}: query pages, iterate, export. */
    public Activity activity() {
        return activity;
    }

    /** {@code /v1/admin/journal/*}: server-side verification and signed checkpoints. */
    public Journal journal() {
        return journal;
    }

    /** {@code /v1/admin/*}: teams, keys, usage, policies, guardrail. */
    public Admin admin() {
        return admin;
    }

    /** The gateway's base URL, e.g. {@code http://127.0.0.1:8080}. */
    public String baseUrl() {
        return transport.baseUrl;
    }

    public int maxRetries() {
        return transport.maxRetries;
    }

    /** Builds a {@link SovereignClient}. */
    public static final class Builder {
        private String baseUrl;
        private String apiKey;
        private Path caBundle;
        private Path clientCert;
        private Path clientKey;
        private SSLContext sslContext;
        private int maxRetries = 2;
        private Duration timeout = Duration.ofSeconds(60);
        private Duration connectTimeout = Duration.ofSeconds(10);
        private final Map<String, String> headers = new LinkedHashMap<>();
        private HttpClient httpClient;

        private Builder() {}

        /**
         * The gateway's address, e.g. {@code https://gateway:8443} (a trailing {@code /v1} is
         * accepted and dropped). Default: {@code $SOVEREIGN_BASE_URL}.
         */
        public Builder baseUrl(String baseUrl) {
            this.baseUrl = baseUrl;
            return this;
        }

        /**
         * A bearer API key ({@code sk-sov-…}). Default: {@code $SOVEREIGN_API_KEY}; not needed with a
         * mapped client certificate. Without either, {@link #build()} throws, naming SOVEREIGN_API_KEY.
         */
        public Builder apiKey(String apiKey) {
            this.apiKey = apiKey;
            return this;
        }

        /** A PEM file of CA certificates to trust instead of the JDK's default trust store. */
        public Builder caBundle(Path caBundle) {
            this.caBundle = caBundle;
            return this;
        }

        /** Mutual TLS: a PEM certificate (chain) and its PKCS#8 PEM private key. */
        public Builder clientCertificate(Path cert, Path key) {
            this.clientCert = cert;
            this.clientKey = key;
            return this;
        }

        /** Your own SSLContext (overrides {@link #caBundle} and {@link #clientCertificate}). */
        public Builder sslContext(SSLContext sslContext) {
            this.sslContext = sslContext;
            return this;
        }

        /** Retries of 429, 502/503/504 and connection errors (default 2; 0 disables). */
        public Builder maxRetries(int maxRetries) {
            if (maxRetries < 0) {
                throw new IllegalArgumentException("maxRetries must be >= 0");
            }
            this.maxRetries = maxRetries;
            return this;
        }

        /** Per-request timeout (default 60 s); for a stream, until the answer's headers. */
        public Builder timeout(Duration timeout) {
            this.timeout = Objects.requireNonNull(timeout);
            return this;
        }

        public Builder connectTimeout(Duration connectTimeout) {
            this.connectTimeout = Objects.requireNonNull(connectTimeout);
            return this;
        }

        /** A header sent with every request (e.g. {@code X-Actor-ID}). */
        public Builder header(String name, String value) {
            headers.put(name, value);
            return this;
        }

        /** A preconfigured {@link HttpClient} (then TLS options here are ignored). */
        public Builder httpClient(HttpClient httpClient) {
            this.httpClient = httpClient;
            return this;
        }

        public SovereignClient build() {
            String url = baseUrl != null ? baseUrl : System.getenv("SOVEREIGN_BASE_URL");
            if (url == null || url.isBlank()) {
                throw new IllegalArgumentException("baseUrl is required (or set SOVEREIGN_BASE_URL)");
            }
            url = url.trim();
            while (url.endsWith("/")) {
                url = url.substring(0, url.length() - 1);
            }
            if (url.endsWith("/v1")) {
                url = url.substring(0, url.length() - 3);
            }
            // Only the gateway's own settings: SOVEREIGN_API_KEY or apiKey(..), never OPENAI_*.
            String key = apiKey != null && !apiKey.isBlank() ? apiKey
                    : (clientCert == null ? System.getenv("SOVEREIGN_API_KEY") : null);
            if (key != null && key.isBlank()) {
                key = null;
            }
            if (key == null && clientCert == null && sslContext == null && httpClient == null) {
                throw new IllegalStateException("The gateway's API key is missing: call apiKey(..) or set "
                        + "SOVEREIGN_API_KEY (OPENAI_* variables are never read), or clientCertificate(..) for a "
                        + "certificate mapped to an identity.");
            }
            HttpClient http = httpClient;
            if (http == null) {
                HttpClient.Builder b = HttpClient.newBuilder()
                        .connectTimeout(connectTimeout)
                        .followRedirects(HttpClient.Redirect.NEVER);
                SSLContext ctx = sslContext;
                if (ctx == null && (caBundle != null || clientCert != null)) {
                    ctx = TlsSupport.sslContext(caBundle, clientCert, clientKey);
                }
                if (ctx != null) {
                    b.sslContext(ctx);
                }
                http = b.build();
            }
            return new SovereignClient(new HttpTransport(http, url, key, maxRetries, timeout,
                    Collections.unmodifiableMap(new LinkedHashMap<>(headers))));
        }
    }
}
