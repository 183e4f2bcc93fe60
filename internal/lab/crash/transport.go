package crash

import (
	"net/http"
	"strings"
)

// Wrap returns rt behind the Injector: a rest.Config's WrapTransport.
func (i *Injector) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &transport{next: rt, i: i}
}

type transport struct {
	next http.RoundTripper
	i    *Injector
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isWrite(req) {
		if err := t.i.alive(); err != nil {
			return nil, err
		}
		return t.next.RoundTrip(req)
	}
	var resp *http.Response
	err := t.i.write(req.Method+" "+req.URL.Path, func() error {
		var err error
		resp, err = t.next.RoundTrip(req) //nolint:bodyclose // returned to the caller, or closed below
		return err
	})
	if err != nil && resp != nil {
		_ = resp.Body.Close()
		resp = nil
	}
	return resp, err
}

// notState are the resources whose writes change no state of the application or of drover:
// events, leader election leases, and reviews: the metrics endpoint's, and those a component asks
// of its own rights (the agent's check of its identity policies, the hub's of what its credential
// may do), which the API server answers without storing anything.
var notState = map[string]bool{
	"events": true, "leases": true, "tokenreviews": true, "subjectaccessreviews": true,
	"selfsubjectaccessreviews": true, "selfsubjectrulesreviews": true, "localsubjectaccessreviews": true, "selfsubjectreviews": true,
}

// isWrite reports whether a request changes state on the API server.
func isWrite(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return false
	}
	return !req.URL.Query().Has("dryRun") && !notState[resource(req.URL.Path)]
}

// resource is the resource a request path names: /api/v1/[namespaces/NS/]RESOURCE[/...] or
// /apis/GROUP/VERSION/[namespaces/NS/]RESOURCE[/...].
func resource(path string) string {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(seg) > 2 && seg[0] == "api":
		seg = seg[2:]
	case len(seg) > 3 && seg[0] == "apis":
		seg = seg[3:]
	default:
		return ""
	}
	if len(seg) > 2 && seg[0] == "namespaces" {
		return seg[2]
	}
	return seg[0]
}
