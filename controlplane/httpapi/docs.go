package httpapi

import (
	"bytes"
	"html/template"
	"sort"
)

// renderDocs turns the contract into one self-contained HTML page: every
// operation with its method, path, permission, summary, description and
// parameters. No script and no external asset, so it works offline.
func renderDocs(ops *Operations) ([]byte, error) {
	type param struct {
		Name, In, Description string
		Required              bool
	}
	type row struct {
		Method, Path, Permission, Module, Summary, Description string
		Public                                                 bool
		Params                                                 []param
	}
	var rows []row
	for _, o := range ops.All() {
		op := o.route.Operation
		r := row{Method: o.Method, Path: o.Path, Permission: o.Permission, Module: o.Module, Public: o.Public, Summary: op.Summary, Description: op.Description}
		for _, p := range op.Parameters {
			if p.Value != nil {
				r.Params = append(r.Params, param{p.Value.Name, p.Value.In, p.Value.Description, p.Value.Required})
			}
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Path < rows[j].Path })
	var buf bytes.Buffer
	err := docsTemplate.Execute(&buf, map[string]any{"Title": ops.Spec.Info.Title, "Version": ops.Spec.Info.Version, "Rows": rows})
	return buf.Bytes(), err
}

var docsTemplate = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} {{.Version}}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}code{background:#f4f4f4;padding:1px 4px}
.op{border-top:1px solid #ddd;padding:.6em 0}.m{font-weight:bold;display:inline-block;width:4.5em}.perm{color:#555}</style></head>
<body><h1>{{.Title}}</h1><p>Contract version <code>{{.Version}}</code>. The raw contract: <a href="?format=yaml">openapi.yaml</a>.</p>
{{range .Rows}}<div class="op"><div><span class="m">{{.Method}}</span><code>{{.Path}}</code>
<span class="perm">permission <code>{{.Permission}}</code>{{if .Public}} (public){{end}}, module {{.Module}}</span></div>
<div><b>{{.Summary}}</b></div><div>{{.Description}}</div>
{{if .Params}}<ul>{{range .Params}}<li><code>{{.Name}}</code> ({{.In}}{{if .Required}}, required{{end}}): {{.Description}}</li>{{end}}</ul>{{end}}
</div>{{end}}</body></html>
`))
