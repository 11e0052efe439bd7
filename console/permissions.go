package console

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/svcplatform/svc/api/contract"
)

// PermissionsFile is where the console keeps the contract's access rules,
// relative to this directory.
const PermissionsFile = "src/api/permissions.ts"

// PermissionsTS renders src/api/permissions.ts from the embedded contract:
// every operation's x-svc-permission and credential restriction, keyed by
// "METHOD /path" as openapi-fetch names the call. The console decides what
// to show from it and never sends a request its user may not make, so the
// pages and the server read the same rule.
func PermissionsTS() ([]byte, error) {
	spec, err := contract.GetSpec()
	if err != nil {
		return nil, err
	}
	type row struct{ key, perm, cred string }
	var rows []row
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			perm, _ := op.Extensions["x-svc-permission"].(string)
			cred, _ := op.Extensions["x-svc-credential"].(string)
			if perm == "" {
				return nil, fmt.Errorf("%s %s has no x-svc-permission", method, path)
			}
			rows = append(rows, row{strings.ToUpper(method) + " " + path, perm, cred})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].key < rows[j].key })
	var b bytes.Buffer
	b.WriteString("// Generated from api/openapi.yaml by `make generate` (console/permgen); do not edit.\n")
	b.WriteString("// Each contract operation's x-svc-permission and, where the contract restricts it,\n")
	b.WriteString("// the only credential kind it accepts.\n\n")
	kinds := map[string]bool{"api-token": true, "console-session": true}
	for _, r := range rows {
		if r.cred != "" {
			kinds[r.cred] = true
		}
	}
	var union []string
	for k := range kinds {
		union = append(union, "'"+k+"'")
	}
	sort.Strings(union)
	fmt.Fprintf(&b, "export interface OperationRule {\n  permission: string\n  credential?: %s\n}\n\n", strings.Join(union, " | "))
	b.WriteString("export const operationRules: Readonly<Record<string, OperationRule>> = {\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "  %q: { permission: %q", r.key, r.perm)
		if r.cred != "" {
			fmt.Fprintf(&b, ", credential: %q", r.cred)
		}
		b.WriteString(" },\n")
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}
