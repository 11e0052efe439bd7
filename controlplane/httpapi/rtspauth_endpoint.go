package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/rtspauth"
)

// rtspAuthEndpoints serves the RTSP credentials of the media engines.
type rtspAuthEndpoints struct {
	creds *rtspauth.Service
}

func toRtspCredential(c *rtspauth.Credential) contract.RtspAuthCredential {
	return contract.RtspAuthCredential{MediaServerId: c.MediaServerID, Username: c.Username, Realm: c.Realm,
		HasPassword: c.Sealed != "", UpdatedAt: c.UpdatedAt, UpdatedBy: c.UpdatedBy}
}

func (e *rtspAuthEndpoints) ListRtspAuthCredentials(ctx context.Context, r contract.ListRtspAuthCredentialsRequestObject) (contract.ListRtspAuthCredentialsResponseObject, error) {
	list, err := e.creds.List(requestContext(ctx), deref(r.Params.MediaServerId, ""), deref(r.Params.Username, ""))
	if err != nil {
		return nil, err
	}
	out := contract.ListRtspAuthCredentials200JSONResponse{Rows: []contract.RtspAuthCredential{}}
	for i := range list {
		out.Rows = append(out.Rows, toRtspCredential(&list[i]))
	}
	return out, nil
}

func (e *rtspAuthEndpoints) SaveRtspAuthCredential(ctx context.Context, r contract.SaveRtspAuthCredentialRequestObject) (contract.SaveRtspAuthCredentialResponseObject, error) {
	b := r.Body
	c, err := e.creds.Save(requestContext(ctx), actor(ctx).Actor, b.MediaServerId, b.Username, b.Password, deref(b.Realm, ""))
	if err != nil {
		return nil, err
	}
	return contract.SaveRtspAuthCredential200JSONResponse(toRtspCredential(c)), nil
}

func (e *rtspAuthEndpoints) DeleteRtspAuthCredential(
	ctx context.Context,
	r contract.DeleteRtspAuthCredentialRequestObject,
) (contract.DeleteRtspAuthCredentialResponseObject, error) {
	if err := e.creds.Delete(requestContext(ctx), actor(ctx).Actor, r.Params.MediaServerId, r.Params.Username); err != nil {
		return nil, err
	}
	return contract.DeleteRtspAuthCredential200JSONResponse(
		done(contract.ActionResultActionDeleted, r.Params.MediaServerId+"/"+r.Params.Username, "the RTSP credential was deleted"),
	), nil
}

func (e *rtspAuthEndpoints) TestRtspAuthCredential(ctx context.Context, r contract.TestRtspAuthCredentialRequestObject) (contract.TestRtspAuthCredentialResponseObject, error) {
	b := r.Body
	alg, qop := "MD5", "auth" // the contract's defaults
	if b.Algorithm != nil {
		alg = string(*b.Algorithm)
	}
	if b.Qop != nil {
		qop = string(*b.Qop)
	}
	res, err := e.creds.Test(requestContext(ctx), b.MediaServerId, b.Username, deref(b.Method, "DESCRIBE"), b.Uri, alg, qop, deref(b.Nonce, ""))
	if err != nil {
		return nil, err
	}
	return contract.TestRtspAuthCredential200JSONResponse{Ok: res.Header != "" && res.Verified, Realm: res.Realm, Nonce: res.Nonce,
		Algorithm: contract.RtspAuthTestResultAlgorithm(res.Algorithm), Qop: contract.RtspAuthTestResultQop(res.QOP),
		AuthorizationHeader: res.Header, Verified: res.Verified}, nil
}
