package sovereign

// Operations maps every operationId of clients/openapi.json marked `x-sovereign-client` to the
// methods implementing it, as paths from *Client ("Admin.Teams.List": the field Admin, its
// field Teams, its method List). The coverage test checks it against the document and, by
// reflection, that each method exists.
var Operations = map[string][]string{
	"createChatCompletion":     {"Chat.Create", "Chat.Stream"},
	"createEmbedding":          {"Embeddings.Create"},
	"listModels":               {"Models.List"},
	"retrieveModel":            {"Models.Get"},
	"uploadDocument":           {"Documents.Upload", "Documents.UploadFile"},
	"listDocuments":            {"Documents.List"},
	"retrieveDocument":         {"Documents.Get"},
	"deleteDocument":           {"Documents.Delete"},
	"queryRag":                 {"RAG.Query"},
	"queryActivityLogs":        {"Activity.Query", "Activity.QueryAll", "Activity.Export"},
	"verifyJournal":            {"Journal.Verify"},
	"createJournalCheckpoint":  {"Journal.CreateCheckpoint"},
	"listJournalCheckpoints":   {"Journal.ListCheckpoints"},
	"getActivityCheckpoint":    {"Activity.Checkpoint"},
	"getActivityCheckpointKey": {"Activity.CheckpointKey"},
	"getInclusionProof":        {"Activity.InclusionProof"},
	"getConsistencyProof":      {"Activity.ConsistencyProof"},
	"listTeams":                {"Admin.Teams.List"},
	"createTeam":               {"Admin.Teams.Create"},
	"retrieveTeam":             {"Admin.Teams.Get"},
	"updateTeam":               {"Admin.Teams.Update"},
	"deleteTeam":               {"Admin.Teams.Delete"},
	"listKeys":                 {"Admin.Keys.List"},
	"createKey":                {"Admin.Keys.Create"},
	"retrieveKey":              {"Admin.Keys.Get"},
	"rotateKey":                {"Admin.Keys.Rotate"},
	"revokeKey":                {"Admin.Keys.Revoke"},
	"getUsage":                 {"Admin.Usage.Get"},
	"listPolicies":             {"Admin.Policies.List"},
	"uploadPolicy":             {"Admin.Policies.Upload"},
	"activatePolicy":           {"Admin.Policies.Activate"},
	"getGuardrail":             {"Admin.Guardrail.Get"},
	"setGuardrail":             {"Admin.Guardrail.Set"},
}

// LocalHelpers are the surface's two offline helpers (no call to the gateway).
var LocalHelpers = []string{"VerifyJournalExport", "VerifyWebhook"}
