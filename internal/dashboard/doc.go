// Package dashboard is drover's web dashboard for a person: `drover dashboard` serves it on
// 127.0.0.1 with the person's own kubeconfig, so the hub's RBAC decides what each person sees
// and may do, and the dashboard never holds more rights than its user.
//
// Pages are rendered on the server (html/template, assets embedded) and read without
// JavaScript; a little script follows server-sent events, fed by one watch of the hub's
// DRPlacementControls and DRClusters per server (never a polling loop per browser), and swaps
// the page's live part in place when something changes.
//
// Everything a page shows is computed by internal/cli, the library of drover's verbs: the
// status line of an application, the plan of a failover or a relocation, the action itself
// and the mass actions. The confirmation of an action (typing the application's, or for a mass
// action the cluster's, name) is checked on the server, with a CSRF token, before any patch.
//
// Access (auth.go): the URL printed at start carries a one-time token; the first visit
// exchanges it for an HttpOnly, SameSite=Strict cookie named for the port (browsers share
// cookies across a host's ports), and every other request without that
// cookie is refused. No Secret, token or S3 credential is ever read into a page: the pages are
// built from DRPlacementControls, DRPolicies, DRClusters and Events only.
package dashboard
