//go:build contractdocs

// This file compares api/openapi.yaml with the contract documents it was
// written from, which are not part of this repository. It runs only under
// `make contract-docs-check CONTRACT_DOCS=<directory>`, the directory holding
// contract-a.md and operations.tsv; `go test ./...` does not build it.

package contract

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// contractDocs is the directory named by CONTRACT_DOCS.
func contractDocs(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CONTRACT_DOCS")
	if dir == "" {
		t.Fatal("CONTRACT_DOCS must name the directory of the contract documents (contract-a.md, operations.tsv)")
	}
	return dir
}

// TestPermissionNamesMatchContractA compares the PermissionName enum with
// the list of contract A's authentication rule 6.
func TestPermissionNamesMatchContractA(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(contractDocs(t), "contract-a.md"))
	if err != nil {
		t.Fatal(err)
	}
	const marker = "Known permission names: "
	text := string(doc)
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("contract-a.md has no %q line", marker)
	}
	line, _, _ := strings.Cut(text[i+len(marker):], "\n")
	var docNames []string
	for _, n := range strings.Split(strings.TrimSuffix(strings.TrimSpace(line), "."), ",") {
		docNames = append(docNames, strings.TrimSpace(n))
	}
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, v := range spec.Components.Schemas["PermissionName"].Value.Enum {
		ours = append(ours, fmt.Sprint(v))
	}
	if !slices.Equal(docNames, ours) {
		t.Fatalf("contract A names\n  %v\napi/openapi.yaml's PermissionName lists\n  %v", docNames, ours)
	}
}

// TestOperationPermissionsMatchTheDocuments compares the x-svc-permission
// of every operation the documents list (operations.tsv) with theirs.
// Where the documents describe the permission in words ("same token and
// original resource permission", "valid API token") the operation's own
// description says how it is enforced, and the comparison is skipped for
// it; operations the documents do not list are our additions.
func TestOperationPermissionsMatchTheDocuments(t *testing.T) {
	f, err := os.Open(filepath.Join(contractDocs(t), "operations.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma, r.LazyQuotes, r.FieldsPerRecord = '\t', true, -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	prev := ""
	for _, row := range rows[1:] {
		if len(row) < 3 {
			continue
		}
		// "same" repeats the permission of the row above it.
		if row[2] == "same" {
			row[2] = prev
		}
		docs[row[0]+" "+row[1]], prev = row[2], row[2]
	}
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			ours := strings.Trim(fmt.Sprint(op.Extensions["x-svc-permission"]), `"`)
			theirs, ok := docs[method+" "+path]
			if !ok {
				t.Logf("%s %s (%s) is not in the documents: an addition of ours", method, path, op.OperationID)
				continue
			}
			// "* (public entry)", "public (local server only)": the word
			// before the remark is the permission.
			word, _, _ := strings.Cut(theirs, " (")
			if strings.Contains(word, " ") {
				t.Logf("%s %s: the documents say %q; ours is %q", method, path, theirs, ours)
				continue
			}
			if word != ours {
				t.Errorf("%s %s: x-svc-permission %q, the documents say %q", method, path, ours, theirs)
			}
		}
	}
}
