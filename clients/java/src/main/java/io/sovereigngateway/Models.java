package io.sovereigngateway;

import java.util.List;

/** {@code GET /v1/models}, {@code GET /v1/models/{id}}. */
public final class Models {
    private final HttpTransport t;

    Models(HttpTransport t) {
        this.t = t;
    }

    public List<Model> list() {
        return new JsonObject(t.send(HttpTransport.Call.get("/v1/models")).object()).getObjects("data", Model::new);
    }

    public Model retrieve(String id) {
        return new Model(t.send(HttpTransport.Call.get("/v1/models/" + HttpTransport.seg(id))).object());
    }
}
