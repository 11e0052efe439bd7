package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"

	"github.com/svcplatform/svc/api/contract"
)

// Operation is what the middleware needs to know about one contract
// operation, read from the embedded contract at start.
type Operation struct {
	ID         string
	Method     string
	Path       string // contract form, /a/{b}
	GinPath    string // router form, /a/:b
	Permission string
	Module     string
	Public     bool
	// Credential restricts the accepted credential kind ("api-token").
	Credential string
	// LocalOnly operations accept only loopback clients (by socket address).
	LocalOnly bool
	JSONBody  bool
	// BodyType is the one media type of the request body, when the
	// operation takes one.
	BodyType string
	// BodyOptional operations may be called without a body at all.
	BodyOptional bool
	// query names the query parameters the contract declares, in order;
	// any other is refused.
	query []string
	route *routers.Route
}

// Device credentials of meeting rooms (x-svc-credential): the operation
// itself checks them against the room in its path.
const (
	CredentialRTCToken        = "rtc-token"
	CredentialRTCAccessTicket = "rtc-access-ticket"
	CredentialArchiveTicket   = "rtc-archive-ticket"
	// CredentialBusinessOrArchive operations take a business credential
	// (API token or console session, with the operation's permission) or
	// an archive ticket, which the operation checks itself.
	CredentialBusinessOrArchive = "business-or-rtc-archive-ticket"
)

// archiveTicketPrefix starts every archive ticket (rooms' "rar." tokens).
const archiveTicketPrefix = "rar."

// presentsArchiveTicket reports whether a request of a business-or-ticket
// operation carries an archive ticket (bearer or rtc_archive_token)
// rather than a platform credential.
func presentsArchiveTicket(r *http.Request) bool {
	if r.URL.Query().Get("rtc_archive_token") != "" {
		return true
	}
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && strings.HasPrefix(strings.TrimSpace(cred), archiveTicketPrefix)
}

// DeviceCredential reports whether the operation takes a meeting device's
// credential instead of an API token or a console session.
func (o *Operation) DeviceCredential() bool {
	return o.Credential == CredentialRTCToken || o.Credential == CredentialRTCAccessTicket || o.Credential == CredentialArchiveTicket
}

// Operations indexes the contract by "METHOD ginPath".
type Operations struct {
	Spec  *openapi3.T
	byKey map[string]*Operation
	all   []*Operation
}

func extString(ext map[string]any, name string) string {
	switch v := ext[name].(type) {
	case string:
		return v
	case []byte:
		return strings.Trim(string(v), `"`)
	case nil:
		return ""
	default:
		return strings.Trim(fmt.Sprint(v), `"`)
	}
}

// LoadOperations reads the embedded contract.
func LoadOperations() (*Operations, error) {
	spec, err := contract.GetSpec()
	if err != nil {
		return nil, err
	}
	ops := &Operations{Spec: spec, byKey: map[string]*Operation{}}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			o := &Operation{
				ID: op.OperationID, Method: method, Path: path, GinPath: ginPath(path),
				Permission: extString(op.Extensions, "x-svc-permission"),
				Module:     extString(op.Extensions, "x-svc-module"),
				Public:     extString(op.Extensions, "x-svc-public") == "true",
				Credential: extString(op.Extensions, "x-svc-credential"),
				LocalOnly:  extString(op.Extensions, "x-svc-local-only") == "true",
				route:      &routers.Route{Spec: spec, Path: path, PathItem: item, Method: method, Operation: op},
			}
			for _, p := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
				if p.Value != nil && p.Value.In == openapi3.ParameterInQuery && !slices.Contains(o.query, p.Value.Name) {
					o.query = append(o.query, p.Value.Name)
				}
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil && op.RequestBody.Value.Content.Get("application/json") != nil {
				o.JSONBody = true
				o.BodyOptional = !op.RequestBody.Value.Required
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil && len(op.RequestBody.Value.Content) == 1 {
				for mt := range op.RequestBody.Value.Content {
					o.BodyType = mt
				}
			}
			ops.byKey[method+" "+o.GinPath] = o
			ops.all = append(ops.all, o)
		}
	}
	sort.Slice(ops.all, func(i, j int) bool {
		if ops.all[i].Path != ops.all[j].Path {
			return ops.all[i].Path < ops.all[j].Path
		}
		return ops.all[i].Method < ops.all[j].Method
	})
	return ops, nil
}

func ginPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '{' {
			end := strings.IndexByte(p[i:], '}')
			b.WriteString(":" + p[i+1:i+end])
			i += end
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// Lookup finds the operation for a matched route.
func (o *Operations) Lookup(method, ginFullPath string) *Operation {
	return o.byKey[method+" "+ginFullPath]
}

// All lists every operation in path order.
func (o *Operations) All() []*Operation { return o.all }

// unknownQuery names the first query parameter (in name order) the
// operation does not declare: a misspelt or misplaced filter must not be
// ignored silently and answer as if there were none.
func (o *Operation) unknownQuery(q url.Values) (string, bool) {
	var unknown []string
	for name := range q {
		if !slices.Contains(o.query, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return "", false
	}
	return slices.Min(unknown), true
}

// queryNames lists the declared query parameters for an error message.
func (o *Operation) queryNames() string {
	if len(o.query) == 0 {
		return "none"
	}
	return strings.Join(o.query, ", ")
}

// Param describes one parameter of an operation.
type Param struct {
	Name, In, Type string
	Required       bool
}

// Params lists the operation's parameters with their schema types.
func (o *Operation) Params() []Param {
	var out []Param
	for _, p := range o.route.Operation.Parameters {
		if p.Value == nil {
			continue
		}
		typ := ""
		if p.Value.Schema != nil && p.Value.Schema.Value != nil && p.Value.Schema.Value.Type != nil && len(*p.Value.Schema.Value.Type) > 0 {
			typ = (*p.Value.Schema.Value.Type)[0]
		}
		out = append(out, Param{Name: p.Value.Name, In: p.Value.In, Type: typ, Required: p.Value.Required})
	}
	return out
}
