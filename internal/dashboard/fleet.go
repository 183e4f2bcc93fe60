package dashboard

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/status"
)

// fleetData is the fleet page: the clusters, the policies and every application in scope.
type fleetData struct {
	Scope                                   string
	Clusters                                []clusterRow
	Policies                                []policyRow
	Apps                                    []appRow
	ClustersError, PoliciesError, AppsError string
}

type clusterRow struct {
	Name                 string
	Validated, Reachable state
	Lost                 state
	Message              string
	Policies             string
	// MoveTo are the peers the cluster's applications can be moved to.
	MoveTo []string
}

type policyRow struct {
	Name, Clusters, Interval string
	Validated                state
}

// appRow is an application's line: status's cells, with states and its last action.
type appRow struct {
	Namespace, Name, Phase, Primary, Progression string
	PeerReady, Protected, Lag                    state
	LastAction                                   actionView
	Problem                                      string
}

// actionView is an application's last (or current) failover or relocation.
type actionView struct {
	// Text says what, to where, and how long it took or has run; empty: none yet.
	Text   string
	Result state
}

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d := fleetData{Scope: "namespace " + s.opts.Namespace}
	if s.opts.AllNamespaces {
		d.Scope = "every namespace"
	}
	policies := &v1alpha1.DRPolicyList{}
	if err := s.c.List(ctx, policies); err != nil {
		d.PoliciesError = readProblem("DRPolicies", err)
	}
	for _, p := range policies.Items {
		d.Policies = append(d.Policies, policyRow{Name: p.Name, Clusters: strings.Join(p.Spec.DRClusters, " and "),
			Interval: string(p.Spec.SchedulingInterval), Validated: condState(condStatus(p.Status.Conditions, v1alpha1.ConditionValidated))})
	}
	clusters := &v1alpha1.DRClusterList{}
	if err := s.c.List(ctx, clusters); err != nil {
		d.ClustersError = readProblem("DRClusters", err)
	}
	for i := range clusters.Items {
		d.Clusters = append(d.Clusters, clusterRowOf(&clusters.Items[i], policies.Items))
	}
	views, err := status.LoadAppViews(ctx, s.c, status.Options{Namespace: s.opts.Namespace, AllNamespaces: s.opts.AllNamespaces, Now: s.opts.Now})
	if err != nil {
		d.AppsError = readProblem("DRPlacementControls", err)
	}
	for _, v := range views {
		d.Apps = append(d.Apps, appRowOf(v))
	}
	s.render(w, r, http.StatusOK, "fleet", "drover: the fleet", true, d)
}

func clusterRowOf(cl *v1alpha1.DRCluster, policies []v1alpha1.DRPolicy) clusterRow {
	row := clusterRow{Name: cl.Name, Validated: condState(condStatus(cl.Status.Conditions, v1alpha1.ConditionValidated)),
		Reachable: condState(condStatus(cl.Status.Conditions, v1alpha1.ConditionReachable)), Lost: stateOf("no", levelOK)}
	if c := apimeta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionReachable); c != nil && c.Status == metav1.ConditionTrue &&
		c.Reason == v1alpha1.ReasonProbeFailing {
		row.Reachable = stateOf("True, probe failing", levelWarn)
	}
	if cl.Spec.Lost != nil {
		row.Lost = stateOf("lost", levelCritical)
	}
	var names []string
	for _, p := range policies {
		if !slices.Contains(p.Spec.DRClusters, cl.Name) {
			continue
		}
		names = append(names, p.Name)
		if peer, ok := p.Spec.Peer(cl.Name); ok && !slices.Contains(row.MoveTo, peer) {
			row.MoveTo = append(row.MoveTo, peer)
		}
	}
	row.Policies = strings.Join(names, ", ")
	for _, t := range []string{v1alpha1.ConditionValidated, v1alpha1.ConditionReachable} {
		if c := apimeta.FindStatusCondition(cl.Status.Conditions, t); c != nil && c.Status != metav1.ConditionTrue {
			row.Message = t + ": " + c.Message
			break
		}
	}
	return row
}

func appRowOf(v status.AppView) appRow {
	step := "-"
	if cli.InAction(v.DRPC.Status.Phase) {
		step = v.Row.Progression
	}
	return appRow{Namespace: v.Row.Namespace, Name: v.Row.App, Phase: v.Row.Phase, Primary: v.Row.Primary, Progression: step,
		PeerReady: condState(v.Row.PeerReady), Protected: condState(v.Row.Protected), Lag: lagState(v),
		LastAction: lastAction(v.DRPC, v.Row), Problem: strings.TrimPrefix(v.Row.Problem, "-")}
}

// lastAction is the application's last failover or relocation: what, where, and its result
// with its duration, or how long it has run.
func lastAction(d *v1alpha1.DRPlacementControl, row status.Row) actionView {
	st := d.Status
	if c := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionActionAccepted); c != nil && c.Status == metav1.ConditionFalse {
		return actionView{Text: row.Asked + ": " + c.Reason, Result: stateOf("refused", levelCritical)}
	}
	if st.ActionStartTime == nil || st.Phase == v1alpha1.PhaseDeployed || st.Phase == v1alpha1.PhaseDeploying || st.Phase == "" {
		return actionView{}
	}
	what := fmt.Sprintf("%s to %s", cli.ActionOf(st.Phase), st.ActionTarget)
	if cli.InAction(st.Phase) {
		return actionView{Text: what + ", step " + row.Progression, Result: stateOf("running", levelWarn)}
	}
	took := ""
	if st.ActionDuration != nil {
		took = ", took " + st.ActionDuration.Duration.String()
	}
	if apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable) {
		return actionView{Text: what + took, Result: stateOf("Available", levelOK)}
	}
	return actionView{Text: what + took, Result: stateOf("not Available", levelWarn)}
}

func condStatus(conds []metav1.Condition, t string) string {
	if c := apimeta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return "-"
}

// readProblem says what could not be read and, when the person lacks the right, that it is
// their RBAC that decides.
func readProblem(what string, err error) string {
	if isForbidden(err) {
		return fmt.Sprintf("You may not read %s here (the hub's RBAC refuses your identity): %v", what, err)
	}
	return fmt.Sprintf("Failed to read %s: %v", what, err)
}
