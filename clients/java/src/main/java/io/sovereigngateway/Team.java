package io.sovereigngateway;

import java.util.List;
import java.util.Map;

/** A team: plan, budget, token cap, allowed regions/models, spend. */
public final class Team extends JsonObject {
    public Team(Map<String, Object> data) {
        super(data);
    }

    public String id() {
        return getString("id");
    }

    public String name() {
        return getString("name");
    }

    public String plan() {
        return getString("plan");
    }

    public List<String> allowedRegions() {
        return getStrings("allowed_regions");
    }

    public List<String> allowedModels() {
        return getStrings("allowed_models");
    }

    public boolean sensitiveOnly() {
        return Boolean.TRUE.equals(getBoolean("sensitive_only"));
    }

    public JsonObject spend() {
        return getObject("spend");
    }
}
