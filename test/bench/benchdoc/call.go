package benchdoc

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// Call sends method path to the API at api with a bearer token and body
// as JSON (when not nil), and decodes a 2xx answer into out (when not
// nil); it answers the status and the raw body.
func Call(api, token, method, path string, body, out any) (int, []byte, error) {
	return CallAs(api, "Authorization", "Bearer "+token, method, path, body, out)
}

// CallAs is Call with the caller's credential in header (a meeting
// participant's X-Svc-RTC-Token, say); none is sent when value is "".
func CallAs(api, header, value, method, path string, body, out any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, api+path, rd)
	if value != "" {
		req.Header.Set(header, value)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, data, err
		}
	}
	return resp.StatusCode, data, nil
}
