package io.sovereigngateway;

import java.util.Map;

/** A request body: what it sends as JSON. */
public interface JsonBody {
    Map<String, Object> toJson();
}
