package permission

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/svcplatform/svc/api/contract"
)

func TestWithin(t *testing.T) {
	cases := []struct {
		have, want []string
		ok         bool
	}{
		{[]string{"*"}, []string{"channels.view", "*"}, true},
		{[]string{"channels.view"}, []string{"channels.view"}, true},
		{[]string{"channels.view"}, []string{"channels.view", "streams.play"}, false},
		{[]string{"channels.view"}, []string{"*"}, false},
		{[]string{"channels.view", "streams.view"}, nil, true},
	}
	for _, tc := range cases {
		if _, ok := Within(tc.have, tc.want); ok != tc.ok {
			t.Errorf("Within(%v, %v) = %v", tc.have, tc.want, ok)
		}
	}
}

// TestCatalogueMatchesTheContract keeps the catalogue equal to the
// permission names api/openapi.yaml publishes (the PermissionName enum, in
// the order of contract A's authentication rule 6) and checks that every
// operation's x-svc-permission is a known point or one of the pseudo
// permissions. `make contract-docs-check` compares that enum with the
// contract documents themselves.
func TestCatalogueMatchesTheContract(t *testing.T) {
	spec, err := contract.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	ref := spec.Components.Schemas["PermissionName"]
	if ref == nil || ref.Value == nil {
		t.Fatal("api/openapi.yaml has no PermissionName schema")
	}
	var names []string
	for _, v := range ref.Value.Enum {
		names = append(names, fmt.Sprint(v))
	}
	var points []string
	for _, p := range Points {
		points = append(points, p.Name)
	}
	if !slices.Equal(names, points) {
		t.Fatalf("PermissionName in api/openapi.yaml lists\n  %v\nthe catalogue holds\n  %v", names, points)
	}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			perm := strings.Trim(fmt.Sprint(op.Extensions["x-svc-permission"]), `"`)
			cred := strings.Trim(fmt.Sprint(op.Extensions["x-svc-credential"]), `"`)
			switch {
			case slices.Contains(DevicePseudo, perm):
				if !strings.HasPrefix(cred, "rtc-") {
					t.Errorf("%s %s: x-svc-permission %q with x-svc-credential %q: a device pseudo permission needs a room credential", method, path, perm, cred)
				}
			case !Known(perm) && perm != Auth && perm != "public":
				t.Errorf("%s %s: x-svc-permission %q is not a known permission", method, path, perm)
			}
		}
	}
}
