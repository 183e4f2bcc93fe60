package dashboard

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/actions"
)

// planData is the page of a plan: `drover plan`'s text and the form that confirms it.
type planData struct {
	// What is the action in words; Target what the person types to confirm (the application's
	// name, or for a mass action the cluster's).
	What, Target, Action, To, Post, Back string
	Plan                                 string
	// Error is why the plan could not be made; CanStart is false when its verdict refuses.
	Error    string
	CanStart bool
	// Wrong is what was typed in place of Target, on a refused confirmation.
	Wrong string
}

// resultData is the page after a mass action, or after an action the server refused.
type resultData struct {
	Heading, Output, Back string
	OK                    bool
}

// actionParam reads the action of a request: Failover or Relocate.
func actionParam(v string) (v1alpha1.DRAction, error) {
	switch strings.ToLower(v) {
	case "failover":
		return v1alpha1.ActionFailover, nil
	case "relocate":
		return v1alpha1.ActionRelocate, nil
	}
	return "", fmt.Errorf("unknown action %q: use Failover or Relocate", v)
}

// verbOf is the action as a verb: fail over or relocate.
func verbOf(action v1alpha1.DRAction) string {
	if action == v1alpha1.ActionFailover {
		return "fail over"
	}
	return "relocate"
}

func (s *Server) planPage(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	s.renderPlan(w, r, http.StatusOK, ns, name, r.URL.Query().Get("action"), r.URL.Query().Get("to"), "")
}

// renderPlan shows the plan of an action on one application and the form to confirm it.
func (s *Server) renderPlan(w http.ResponseWriter, r *http.Request, code int, ns, name, actionText, to, wrong string) {
	d := planData{Target: name, To: to, Post: "/apps/" + ns + "/" + name + "/act", Back: "/apps/" + ns + "/" + name, Wrong: wrong}
	action, err := actionParam(actionText)
	if err == nil {
		d.Action, d.What = string(action), fmt.Sprintf("%s %s/%s to %s", verbOf(action), ns, name, to)
		var buf bytes.Buffer
		err = actions.Plan(r.Context(), s.c, &buf, actions.PlanOptions{Namespace: ns, App: name, Action: action, To: to, Now: s.opts.Now})
		d.Plan = buf.String()
		d.CanStart = err == nil && strings.Contains(d.Plan, "can start: ")
	}
	if err != nil {
		d.Error, code = err.Error(), codeOf(err, code)
	}
	s.render(w, r, code, "plan", "Plan: "+d.What, false, d)
}

// act runs a failover or a relocation that the person confirmed by typing the application's
// name; the server checks the name and the CSRF token, and refuses before any patch.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if !s.csrfOK(r) {
		http.Error(w, "the form's CSRF token is missing or wrong: open the plan again from the dashboard; nothing was changed", http.StatusForbidden)
		return
	}
	actionText, to, typed := r.PostFormValue("action"), r.PostFormValue("to"), strings.TrimSpace(r.PostFormValue("confirm"))
	if typed != name {
		s.renderPlan(w, r, http.StatusUnprocessableEntity, ns, name, actionText, to, typed)
		return
	}
	action, err := actionParam(actionText)
	if err != nil {
		http.Error(w, err.Error()+"; nothing was changed", http.StatusBadRequest)
		return
	}
	var buf bytes.Buffer
	err = actions.Act(r.Context(), s.c, &buf, actions.ActionOptions{Namespace: ns, App: name, Action: action, To: to, Now: s.opts.Now})
	if err != nil {
		s.render(w, r, codeOf(err, http.StatusConflict), "result", "Not done", false, resultData{Heading: "The " + strings.ToLower(string(action)) + " was not asked",
			Output: strings.TrimSpace(buf.String() + "\n" + err.Error()), Back: "/apps/" + ns + "/" + name})
		return
	}
	// The target is always the application's page on this server: a path under /apps/, and only
	// after Act found the DRPlacementControl ns/name.
	http.Redirect(w, r, "/apps/"+ns+"/"+name, http.StatusSeeOther) //nolint:gosec // G710: same-server path, not an open redirect
}

// massOptions are the mass action of a request on the applications of cluster from.
func (s *Server) massOptions(action v1alpha1.DRAction, from, to string) actions.MassOptions {
	return actions.MassOptions{Action: action, From: from, To: to, Namespace: s.opts.Namespace, AllNamespaces: s.opts.AllNamespaces, Now: s.opts.Now}
}

func (s *Server) massPlanPage(w http.ResponseWriter, r *http.Request) {
	s.renderMassPlan(w, r, http.StatusOK, r.PathValue("name"), r.URL.Query().Get("action"), r.URL.Query().Get("to"), "")
}

// renderMassPlan shows the plan of a mass action (`--all --from CLUSTER`) and its form.
func (s *Server) renderMassPlan(w http.ResponseWriter, r *http.Request, code int, from, actionText, to, wrong string) {
	d := planData{Target: from, To: to, Post: "/clusters/" + from + "/act", Back: "/", Wrong: wrong}
	action, err := actionParam(actionText)
	if err == nil {
		d.Action, d.What = string(action), fmt.Sprintf("%s every application of cluster %s to %s", verbOf(action), from, to)
		var buf bytes.Buffer
		err = actions.PlanAll(r.Context(), s.c, &buf, s.massOptions(action, from, to))
		d.Plan = buf.String()
		d.CanStart = err == nil && strings.Contains(d.Plan, "can start for")
	}
	if err != nil {
		d.Error, code = err.Error(), codeOf(err, code)
	}
	s.render(w, r, code, "plan", "Plan: "+d.What, false, d)
}

// massAct runs a mass action the person confirmed by typing the cluster's name.
func (s *Server) massAct(w http.ResponseWriter, r *http.Request) {
	from := r.PathValue("name")
	if !s.csrfOK(r) {
		http.Error(w, "the form's CSRF token is missing or wrong: open the plan again from the dashboard; nothing was changed", http.StatusForbidden)
		return
	}
	actionText, to, typed := r.PostFormValue("action"), r.PostFormValue("to"), strings.TrimSpace(r.PostFormValue("confirm"))
	if typed != from {
		s.renderMassPlan(w, r, http.StatusUnprocessableEntity, from, actionText, to, typed)
		return
	}
	action, err := actionParam(actionText)
	if err != nil {
		http.Error(w, err.Error()+"; nothing was changed", http.StatusBadRequest)
		return
	}
	var buf bytes.Buffer
	_, err = actions.ActAll(r.Context(), s.c, &buf, s.massOptions(action, from, to))
	d := resultData{Heading: fmt.Sprintf("Asked to %s the applications of %s to %s", strings.ToLower(string(action)), from, to),
		Output: buf.String(), Back: "/", OK: err == nil}
	code := http.StatusOK
	if err != nil {
		d.Heading, d.Output, code = "Not done", strings.TrimSpace(d.Output+"\n"+err.Error()), codeOf(err, http.StatusConflict)
	}
	s.render(w, r, code, "result", d.Heading, false, d)
}

// codeOf is the HTTP status of a verb's error: 403 when the hub's RBAC forbids it, 409 when
// refused, 400 for bad input, else def.
func codeOf(err error, def int) int {
	switch {
	case isForbidden(err):
		return http.StatusForbidden
	case cli.ExitCodeOf(err) == cli.ExitRefused:
		return http.StatusConflict
	case cli.ExitCodeOf(err) == cli.ExitUsage:
		return http.StatusBadRequest
	}
	return def
}

// isForbidden says whether an error (wrapped by the CLI's messages) is the API server's
// Forbidden.
func isForbidden(err error) bool { return apierrors.IsForbidden(err) }
