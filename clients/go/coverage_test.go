package sovereign_test

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	sovereign "github.com/sovereign-gateway/sovereign-go"
)

// TestOperationsCoverOpenAPI: every operation of ../openapi.json marked x-sovereign-client has
// a row in sovereign.Operations and every row names such an operation.
func TestOperationsCoverOpenAPI(t *testing.T) {
	data, err := os.ReadFile("../openapi.json")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("../openapi.json does not exist yet")
	}
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	marked := map[string]string{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			var op struct {
				OperationID string `json:"operationId"`
				Client      bool   `json:"x-sovereign-client"`
			}
			if json.Unmarshal(raw, &op) != nil || !op.Client {
				continue
			}
			marked[op.OperationID] = strings.ToUpper(method) + " " + path
		}
	}
	if len(marked) == 0 {
		t.Fatal("openapi.json marks no operation x-sovereign-client")
	}
	var missing, extra []string
	for id, where := range marked {
		if _, ok := sovereign.Operations[id]; !ok {
			missing = append(missing, id+" ("+where+")")
		}
	}
	for id := range sovereign.Operations {
		if _, ok := marked[id]; !ok {
			extra = append(extra, id)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("operations marked in openapi.json without a method in sovereign.Operations: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("sovereign.Operations names operations openapi.json does not mark: %v", extra)
	}
}

// TestOperationMethodsExist: each method path of the table resolves, by reflection, from
// *Client through exported fields to a method.
func TestOperationMethodsExist(t *testing.T) {
	c, err := sovereign.NewClient("http://127.0.0.1:1", sovereign.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	for id, methods := range sovereign.Operations {
		if len(methods) == 0 {
			t.Errorf("%s: no method", id)
		}
		for _, m := range methods {
			if !resolves(reflect.ValueOf(c), strings.Split(m, ".")) {
				t.Errorf("%s: %s is not a method of *Client", id, m)
			}
		}
	}
	if reflect.ValueOf(sovereign.VerifyJournalExport).Kind() != reflect.Func || reflect.ValueOf(sovereign.VerifyWebhook).Kind() != reflect.Func {
		t.Error("local helpers missing")
	}
}

func resolves(v reflect.Value, parts []string) bool {
	if len(parts) == 1 {
		return v.MethodByName(parts[0]).IsValid()
	}
	e := v
	if e.Kind() == reflect.Ptr {
		if e.IsNil() {
			return false
		}
		e = e.Elem()
	}
	if e.Kind() != reflect.Struct {
		return false
	}
	f := e.FieldByName(parts[0])
	if !f.IsValid() || !f.CanInterface() {
		return false
	}
	return resolves(f, parts[1:])
}
