package contract

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedCodeIsCurrent regenerates the package from api/openapi.yaml
// and fails when contract.gen.go differs: edit the YAML, run make generate.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "contract.gen.go")
	conf, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conf = bytes.Replace(conf, []byte("output: contract.gen.go"), []byte("output: "+out), 1)
	confPath := filepath.Join(dir, "oapi-codegen.yaml")
	if err := os.WriteFile(confPath, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", confPath, "../openapi.yaml")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("contract.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, have) {
		t.Fatal("contract.gen.go is stale: run `make generate` and commit the result")
	}
}

// TestEveryOperationCarriesItsExtensions checks the metadata the permission
// middleware and the audits rely on.
func TestEveryOperationCarriesItsExtensions(t *testing.T) {
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	if spec.OpenAPI != "3.0.1" || spec.Info.Version != "1.0.0.169" {
		t.Fatalf("openapi %s, contract version %s", spec.OpenAPI, spec.Info.Version)
	}
	n := 0
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			for _, ext := range []string{"x-svc-permission", "x-svc-module"} {
				if _, ok := op.Extensions[ext]; !ok {
					t.Errorf("%s %s lacks %s", method, path, ext)
				}
			}
			if op.OperationID == "" {
				t.Errorf("%s %s lacks an operationId", method, path)
			}
		}
	}
	if n == 0 {
		t.Fatal("no operations")
	}
}
