package test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/svcplatform/svc/api/contract"
)

// errorSite is a place in the control plane that declares an error or
// answers with an error code.
type errorSite struct {
	pos  token.Position
	what string
}

// scanErrors parses every non-test file under controlplane and returns
// the exported error sentinels that carry no code (declared with
// errors.New, or fmt.Errorf without wrapping a coded error), and every
// error code the code answers with.
func scanErrors(t *testing.T) (uncoded []errorSite, codes map[string]token.Position) {
	t.Helper()
	codes = map[string]token.Position{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("../controlplane", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		// The store is below the domains: its errors are the HTTP
		// boundary's own translations (no leader, storage full, ...).
		store := strings.Contains(filepath.ToSlash(path), "controlplane/store/")
		boundary := strings.Contains(filepath.ToSlash(path), "controlplane/httpapi/")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if store || !name.IsExported() || !strings.HasPrefix(name.Name, "Err") || i >= len(n.Values) {
						continue
					}
					if call, ok := n.Values[i].(*ast.CallExpr); ok && uncodedCall(call) {
						uncoded = append(uncoded, errorSite{fset.Position(name.Pos()), name.Name})
					}
				}
			case *ast.CallExpr:
				if fn := callee(n); (fn == "fault.New" || fn == "fault.NewRetryable") && len(n.Args) >= 2 {
					addCode(codes, fset, n.Args[1])
				}
				if fn := callee(n); fn == "newError" && len(n.Args) >= 2 {
					addCode(codes, fset, n.Args[1])
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); ok && boundary && id.Name == "Error" {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Code" {
								addCode(codes, fset, kv.Value)
							}
						}
					}
				}
			case *ast.FuncDecl:
				if n.Name.Name == "ErrorCode" && n.Body != nil {
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
							addCode(codes, fset, r.Results[0])
						}
						return true
					})
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return uncoded, codes
}

func callee(c *ast.CallExpr) string {
	switch fn := c.Fun.(type) {
	case *ast.SelectorExpr:
		if pkg, ok := fn.X.(*ast.Ident); ok {
			return pkg.Name + "." + fn.Sel.Name
		}
	case *ast.Ident:
		return fn.Name
	}
	return ""
}

func uncodedCall(c *ast.CallExpr) bool {
	switch callee(c) {
	case "errors.New":
		return true
	case "fmt.Errorf":
		if len(c.Args) == 0 {
			return true
		}
		lit, ok := c.Args[0].(*ast.BasicLit)
		return !ok || !strings.Contains(lit.Value, "%w")
	}
	return false
}

func addCode(codes map[string]token.Position, fset *token.FileSet, e ast.Expr) {
	if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		if v, err := strconv.Unquote(lit.Value); err == nil {
			codes[v] = fset.Position(lit.Pos())
		}
	}
}

// TestEveryDomainErrorHasACode: an exported error of a domain package
// declares its kind and contract code where it is made (fault.New), so
// the HTTP boundary never meets an error it was not told about and
// answers a silent 500.
func TestEveryDomainErrorHasACode(t *testing.T) {
	uncoded, _ := scanErrors(t)
	for _, u := range uncoded {
		t.Errorf("%s: %s has no code: declare it with fault.New(kind, code, text)", u.pos, u.what)
	}
}

// TestErrorCodesAreInTheContract: every code the control plane answers
// with is a value of the contract's ErrorCode enum, and every value of
// the enum is answered somewhere.
func TestErrorCodesAreInTheContract(t *testing.T) {
	spec, err := contract.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	schema := spec.Components.Schemas["ErrorCode"]
	if schema == nil || schema.Value == nil || len(schema.Value.Enum) == 0 {
		t.Fatal("api/openapi.yaml has no ErrorCode enum")
	}
	enum := map[string]bool{}
	for _, v := range schema.Value.Enum {
		enum[v.(string)] = true
	}
	_, codes := scanErrors(t)
	if len(codes) < 30 {
		t.Fatalf("found only %d codes; the scan missed the declarations", len(codes))
	}
	for code, pos := range codes {
		if !enum[code] {
			t.Errorf("%s: code %q is not in the contract's ErrorCode enum", pos, code)
		}
	}
	for code := range enum {
		if _, ok := codes[code]; !ok {
			t.Errorf("ErrorCode %q is never answered", code)
		}
	}
}
