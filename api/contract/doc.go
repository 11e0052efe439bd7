// Package contract is generated from api/openapi.yaml, the public contract:
// the models, the gin server interface in strict mode, and the embedded
// specification the permission middleware and the audits read. Do not edit
// contract.gen.go or api/openapi.yaml; change the sources in api/openapi/
// (one file per tag) and run `make generate`.
package contract

//go:generate go run ../bundle -dir ../openapi -out ../openapi.yaml
//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../openapi.yaml
