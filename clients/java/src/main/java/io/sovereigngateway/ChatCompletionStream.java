package io.sovereigngateway;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.http.HttpHeaders;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * A streamed chat completion (server-sent events). The answer's {@link #sovereignty()} is
 * available as soon as this object exists, before the first chunk is read. Iterate it once;
 * close it (try-with-resources) to release the connection early.
 */
public final class ChatCompletionStream implements Iterable<ChatCompletionChunk>, AutoCloseable {
    private final HttpResponse<InputStream> response;
    private final BufferedReader reader;
    private final Sovereignty sovereignty;
    private final StringBuilder text = new StringBuilder();
    private boolean iterated;
    private boolean done;
    private boolean closed;

    ChatCompletionStream(HttpResponse<InputStream> response) {
        this.response = response;
        this.sovereignty = Sovereignty.from(response.headers());
        this.reader = new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8));
    }

    public Sovereignty sovereignty() {
        return sovereignty;
    }

    public HttpHeaders headers() {
        return response.headers();
    }

    /** The content of the chunks read so far, joined. */
    public String textSoFar() {
        return text.toString();
    }

    /** Reads the rest of the stream and returns the whole text (the chunks' content joined). */
    public String text() {
        if (!iterated) {
            for (ChatCompletionChunk c : this) {
                // content is collected by the iterator
            }
        } else {
            while (!done && !closed) {
                ChatCompletionChunk c = next();
                if (c == null) {
                    break;
                }
            }
        }
        return text.toString();
    }

    /** True once {@code data: [DONE]} was read. */
    public boolean isDone() {
        return done;
    }

    @Override
    public Iterator<ChatCompletionChunk> iterator() {
        if (iterated) {
            throw new IllegalStateException("a stream can be iterated once");
        }
        iterated = true;
        return new Iterator<>() {
            ChatCompletionChunk pending;

            @Override
            public boolean hasNext() {
                if (pending == null) {
                    pending = next0();
                }
                return pending != null;
            }

            @Override
            public ChatCompletionChunk next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                ChatCompletionChunk c = pending;
                pending = null;
                return c;
            }
        };
    }

    private ChatCompletionChunk next0() {
        return next();
    }

    /** The next chunk, or null at the end. */
    private ChatCompletionChunk next() {
        if (done || closed) {
            return null;
        }
        try {
            StringBuilder data = new StringBuilder();
            String event = null;
            while (true) {
                String line = reader.readLine();
                if (line == null) {
                    close();
                    if (data.length() == 0) {
                        throw new ConnectionException("The stream ended before data: [DONE]", 0,
                                "connection_error", null, null, sovereignty.auditTraceId(), null);
                    }
                } else if (!line.isEmpty()) {
                    if (line.startsWith(":")) {
                        continue; // a comment (keep-alive)
                    }
                    int colon = line.indexOf(':');
                    String field = colon < 0 ? line : line.substring(0, colon);
                    String value = colon < 0 ? "" : line.substring(colon + 1);
                    if (value.startsWith(" ")) {
                        value = value.substring(1);
                    }
                    if (field.equals("data")) {
                        if (data.length() > 0) {
                            data.append('\n');
                        }
                        data.append(value);
                    } else if (field.equals("event")) {
                        event = value;
                    }
                    continue;
                }
                if (data.length() == 0) {
                    if (line == null) {
                        return null;
                    }
                    continue; // blank line without data
                }
                String payload = data.toString();
                data.setLength(0);
                if (payload.equals("[DONE]")) {
                    done = true;
                    close();
                    return null;
                }
                Map<String, Object> obj = Json.parseObject(payload);
                if (obj.get("error") instanceof Map || "error".equals(event)) {
                    close();
                    throw streamError(obj);
                }
                ChatCompletionChunk chunk = new ChatCompletionChunk(obj);
                text.append(chunk.content());
                return chunk;
            }
        } catch (IOException e) {
            close();
            throw HttpTransport.connectionError(e);
        } catch (Json.ParseException e) {
            close();
            throw new SovereignException("A stream event is not JSON: " + e.getMessage(), response.statusCode(),
                    "invalid_response", null, null, sovereignty.auditTraceId(), e);
        }
    }

    private SovereignException streamError(Map<String, Object> obj) {
        Object err = obj.get("error");
        String type = err instanceof Map ? String.valueOf(((Map<?, ?>) err).get("type")) : null;
        int status = "guardrail_violation".equals(type) || "invalid_request_error".equals(type) ? 400 : 500;
        return HttpTransport.error(status, response.headers(), Json.write(obj));
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            reader.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
