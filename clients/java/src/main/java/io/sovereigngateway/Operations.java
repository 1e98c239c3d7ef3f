package io.sovereigngateway;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every {@code x-sovereign-client} operation of {@code clients/openapi.json} and the method(s)
 * implementing it, as {@code "Class#method"} ({@code Admin$Teams} for nested classes) in
 * package {@code io.sovereigngateway}. The tests fail when the document and this table differ.
 */
public final class Operations {
    private Operations() {}

    public static final Map<String, List<String>> MAP;

    static {
        Map<String, List<String>> m = new LinkedHashMap<>();
        m.put("createChatCompletion", List.of("Chat#create", "Chat#createAsync", "Chat#stream"));
        m.put("createEmbedding", List.of("Embeddings#create", "Embeddings#createAsync"));
        m.put("listModels", List.of("Models#list"));
        m.put("retrieveModel", List.of("Models#retrieve"));
        m.put("uploadDocument", List.of("Documents#upload"));
        m.put("listDocuments", List.of("Documents#list"));
        m.put("retrieveDocument", List.of("Documents#retrieve"));
        m.put("deleteDocument", List.of("Documents#delete"));
        m.put("queryRag", List.of("Rag#query"));
        m.put("queryActivityLogs", List.of("Activity#query", "Activity#iterate", "Activity#export", "Activity#exportLines"));
        m.put("verifyJournal", List.of("Journal#verify"));
        m.put("createJournalCheckpoint", List.of("Journal#createCheckpoint"));
        m.put("listJournalCheckpoints", List.of("Journal#listCheckpoints"));
        m.put("getActivityCheckpoint", List.of("Activity#checkpoint"));
        m.put("getActivityCheckpointKey", List.of("Activity#checkpointKey"));
        m.put("getInclusionProof", List.of("Activity#inclusionProof"));
        m.put("getConsistencyProof", List.of("Activity#consistencyProof"));
        m.put("listTeams", List.of("Admin$Teams#list"));
        m.put("createTeam", List.of("Admin$Teams#create"));
        m.put("retrieveTeam", List.of("Admin$Teams#retrieve"));
        m.put("updateTeam", List.of("Admin$Teams#update"));
        m.put("deleteTeam", List.of("Admin$Teams#delete"));
        m.put("listKeys", List.of("Admin$Keys#list"));
        m.put("createKey", List.of("Admin$Keys#create"));
        m.put("retrieveKey", List.of("Admin$Keys#retrieve"));
        m.put("rotateKey", List.of("Admin$Keys#rotate"));
        m.put("revokeKey", List.of("Admin$Keys#revoke"));
        m.put("getUsage", List.of("Admin$Usage#get"));
        m.put("listPolicies", List.of("Admin$Policies#list"));
        m.put("uploadPolicy", List.of("Admin$Policies#upload", "Admin$Policies#uploadDocument"));
        m.put("activatePolicy", List.of("Admin$Policies#activate"));
        m.put("getGuardrail", List.of("Admin$Guardrail#get"));
        m.put("setGuardrail", List.of("Admin$Guardrail#set"));
        MAP = java.util.Collections.unmodifiableMap(m);
    }
}
