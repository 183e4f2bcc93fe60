package day2

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/identitypolicy"
)

// Clock skews past these warn and fail. The Date header has a resolution of one second, so a
// skew under two seconds is noise. drover compares the agents' sync times with the hub's clock
// (the RPO lag, Protected, a failover's age of the last sync): a skew of seconds shifts those
// figures by as much; past a minute they mislead.
const (
	skewWarn = 2 * time.Second
	skewFail = time.Minute
)

// The namespace and names of drover's Deployments, as the release manifests install them.
const (
	droverNamespace = "drover-system"
	agentDeployment = "drover-agent"
	hubDeployment   = "drover-hub"
)

// The group versions of the storage APIs each backend uses.
var (
	volRepGV   = schema.GroupVersion{Group: "replication.storage.openshift.io", Version: "v1alpha1"}
	volSyncGV  = schema.GroupVersion{Group: "volsync.backube", Version: "v1alpha1"}
	snapshotGV = schema.GroupVersion{Group: "snapshot.storage.k8s.io", Version: "v1"}
)

// clusters runs the checks of `drover validate clusters`.
func (v *validator) clusters(ctx context.Context, hub client.Client, hubCfg *rest.Config, files ClusterKubeconfigs) error {
	policies := &v1alpha1.DRPolicyList{}
	if err := hub.List(ctx, policies); err != nil {
		return cli.ReadError("DRPolicies", err)
	}
	v.serverChecks("hub", hubCfg)
	v.crdChecks("hub", hubCfg, map[schema.GroupVersion][]string{
		v1alpha1.GroupVersion: {"DRCluster", "DRPolicy", "DRPlacementControl"}})
	hubImage := v.deploymentCheck(ctx, "hub", hub, hubDeployment, func(what string) string {
		return "you may not " + what + " on the hub"
	})
	for i := range policies.Items {
		v.policyCheck(&policies.Items[i])
	}
	clusters, err := managedClusters(ctx, hub, files)
	if err != nil {
		return err
	}
	if len(clusters) == 0 {
		v.add("hub: DRClusters", Fail, "the hub has no DRCluster: join the managed clusters (drover cluster join)")
	}
	images := map[string]string{}
	for _, m := range clusters {
		paired := pairing(policies.Items, m.name)
		v.hubViewCheck(m)
		if m.err != nil {
			v.add(m.name+": credential", Fail, "%v", m.err)
			continue
		}
		v.add(m.name+": credential", Pass, "reached with %s", m.via)
		if !v.serverChecks(m.name, m.cfg) {
			m.down = true
			continue
		}
		v.crdChecks(m.name, m.cfg, neededKinds(paired))
		images[m.name] = v.deploymentCheck(ctx, m.name, m.cl, agentDeployment, m.forbidden)
		v.identityPolicyCheck(ctx, m)
		for _, p := range paired {
			v.storageChecks(ctx, m, p)
		}
	}
	v.versionCheck(hubImage, images)
	v.storeChecks(ctx, policies.Items, clusters)
	return nil
}

// identityPolicyCheck checks that the admission policies bounding the agent's and the hub's
// identities on the cluster are there (internal/identitypolicy): the agent refuses to start
// without them, and one deleted while it runs silently reopens what it closed.
func (v *validator) identityPolicyCheck(ctx context.Context, m *managedCluster) {
	check := m.name + ": identity policies"
	missing, err := identitypolicy.Missing(ctx, m.cl)
	if apierrors.IsForbidden(err) && m.hubCredential {
		// The hub's credential may not read ServiceAccounts; it reaches only a joined cluster.
		missing, err = identitypolicy.MissingOnJoined(ctx, m.cl, true)
	}
	switch {
	case apierrors.IsForbidden(err):
		v.add(check, Warn, "%s", m.forbidden("read the admission policies "+identitypolicy.AgentIdentity+" and "+identitypolicy.HubOnManagedCluster))
	case err != nil:
		v.add(check, Fail, "%v", err)
	case len(missing) > 0:
		v.add(check, Fail, "missing: %s", strings.Join(missing, "; "))
	default:
		v.add(check, Pass, "the admission policies bounding drover's identities are in place")
	}
}

// pairing returns the policies that pair cluster.
func pairing(policies []v1alpha1.DRPolicy, cluster string) []*v1alpha1.DRPolicy {
	var out []*v1alpha1.DRPolicy
	for i := range policies {
		if slices.Contains(policies[i].Spec.DRClusters, cluster) {
			out = append(out, &policies[i])
		}
	}
	return out
}

// serverChecks checks that the API server answers and compares its clock with the local one;
// it returns whether the server answered.
func (v *validator) serverChecks(name string, cfg *rest.Config) bool {
	if cfg == nil {
		return false
	}
	info, err := probeServer(context.Background(), cfg, v.now)
	if err != nil {
		v.add(name+": API server", Fail, "%v", err)
		return false
	}
	v.add(name+": API server", Pass, "%s answers (%s, in %s)", cfg.Host, cli.Dash(info.version), info.rtt.Round(time.Millisecond))
	// The Date header is truncated to the second and was stamped somewhere within the round
	// trip: only a skew past that uncertainty is judged.
	margin := info.rtt/2 + time.Second
	skew := info.skew
	if skew < 0 {
		skew = -skew
	}
	skew -= margin
	detail := fmt.Sprintf("its clock is %s this machine's, give or take %s (from its Date header)", skewWords(info.skew),
		margin.Round(time.Millisecond))
	switch {
	case skew >= skewFail:
		v.add(name+": clock", Fail, "%s: RPO lags and sync ages are off by as much; synchronise the clocks (NTP)", detail)
	case skew >= skewWarn:
		v.add(name+": clock", Warn, "%s: RPO lags and sync ages are off by as much", detail)
	default:
		v.add(name+": clock", Pass, "%s", detail)
	}
	return true
}

// skewWords says a skew in words.
func skewWords(skew time.Duration) string {
	switch {
	case skew > 0:
		return skew.String() + " ahead of"
	case skew < 0:
		return (-skew).String() + " behind"
	}
	return "within a second of"
}

// neededKinds are the kinds a managed cluster must serve for the backends of its policies.
func neededKinds(policies []*v1alpha1.DRPolicy) map[schema.GroupVersion][]string {
	need := map[schema.GroupVersion][]string{v1alpha1.GroupVersion: {"VolumeReplicationGroup"}}
	for _, p := range policies {
		for _, b := range p.Spec.StorageClassBackends {
			switch b.Backend {
			case v1alpha1.BackendVolRep:
				need[volRepGV] = []string{"VolumeReplication", "VolumeReplicationClass"}
			case v1alpha1.BackendVolSync:
				need[volSyncGV] = []string{"ReplicationSource", "ReplicationDestination"}
				need[snapshotGV] = []string{"VolumeSnapshot", "VolumeSnapshotClass"}
			}
		}
	}
	return need
}

// crdChecks checks, from discovery, that the cluster serves each kind.
func (v *validator) crdChecks(name string, cfg *rest.Config, need map[schema.GroupVersion][]string) {
	if cfg == nil {
		return
	}
	gvs := make([]schema.GroupVersion, 0, len(need))
	for gv := range need {
		gvs = append(gvs, gv)
	}
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
	for _, gv := range gvs {
		check := fmt.Sprintf("%s: CRDs %s", name, gv)
		served, err := servedKinds(cfg, gv)
		if err != nil {
			v.add(check, Fail, "failed to read the cluster's discovery: %v", err)
			continue
		}
		var missing []string
		for _, k := range need[gv] {
			if !served[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			v.add(check, Fail, "%s not served: install its CRDs (drover's release manifests, or the storage's operator)", strings.Join(missing, ", "))
			continue
		}
		v.add(check, Pass, "%s served", strings.Join(need[gv], ", "))
	}
}

// deploymentCheck checks one of drover's Deployments and returns its image ("" when unknown).
func (v *validator) deploymentCheck(ctx context.Context, name string, cl client.Client, deployment string,
	forbidden func(string) string) string {
	check := name + ": " + deployment
	d := &appsv1.Deployment{}
	err := cl.Get(ctx, client.ObjectKey{Namespace: droverNamespace, Name: deployment}, d)
	switch {
	case apierrors.IsForbidden(err):
		v.add(check, Warn, "%s: its version and readiness are not known", forbidden("read Deployment "+droverNamespace+"/"+deployment))
		return ""
	case apierrors.IsNotFound(err):
		v.add(check, Warn, "no Deployment %s/%s: drover does not run from the release manifests here (the lab runs it as processes), "+
			"so its version and readiness are not known", droverNamespace, deployment)
		return ""
	case err != nil:
		v.add(check, Fail, "failed to read Deployment %s/%s: %v", droverNamespace, deployment, err)
		return ""
	}
	image := ""
	if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
		image = cs[0].Image
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.ReadyReplicas == 0 {
		v.add(check, Fail, "%s: 0 of %d replicas ready: kubectl -n %s describe deployment %s", image, want, droverNamespace, deployment)
		return image
	}
	r := Pass
	if d.Status.ReadyReplicas < want {
		r = Warn
	}
	v.add(check, r, "%s: %d of %d replicas ready", image, d.Status.ReadyReplicas, want)
	return image
}

// versionCheck compares the images of the hub and the agents that could be read.
func (v *validator) versionCheck(hubImage string, agents map[string]string) {
	seen := map[string][]string{}
	if hubImage != "" {
		seen[hubImage] = append(seen[hubImage], "hub")
	}
	for name, image := range agents {
		if image != "" {
			seen[image] = append(seen[image], name)
		}
	}
	switch {
	case len(seen) == 0:
		v.add("versions", Warn, "no Deployment of drover could be read: the versions are not known")
	case len(seen) == 1:
		for image, where := range seen {
			sort.Strings(where)
			v.add("versions", Pass, "%s runs %s", strings.Join(where, ", "), image)
		}
	default:
		var parts []string
		for image, where := range seen {
			sort.Strings(where)
			parts = append(parts, strings.Join(where, ", ")+" run "+image)
		}
		sort.Strings(parts)
		v.add("versions", Warn, "%s: run one version everywhere, except while upgrading", strings.Join(parts, "; "))
	}
}

// policyCheck reports a DRPolicy's Validated condition.
func (v *validator) policyCheck(p *v1alpha1.DRPolicy) {
	check := "hub: DRPolicy " + p.Name
	c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionValidated)
	switch {
	case c == nil:
		v.add(check, Warn, "the hub has not validated it yet: %s", cli.HubHint)
	case c.Status != metav1.ConditionTrue:
		v.add(check, Fail, "Validated %s (%s): %s", c.Status, c.Reason, c.Message)
	default:
		v.add(check, Pass, "Validated; pairs %s", strings.Join(p.Spec.DRClusters, " and "))
	}
}

// hubViewCheck reports the hub's conditions of a DRCluster: Validated and Reachable.
func (v *validator) hubViewCheck(m *managedCluster) {
	check := m.name + ": hub's view"
	if m.drc.Spec.Lost != nil {
		v.add(check, Warn, "declared lost (%s): nothing waits for it", m.drc.Spec.Lost.Reason)
		return
	}
	for _, t := range []string{v1alpha1.ConditionValidated, v1alpha1.ConditionReachable} {
		c := apimeta.FindStatusCondition(m.drc.Status.Conditions, t)
		switch {
		case c == nil:
			v.add(check, Warn, "the DRCluster has no %s condition: %s", t, cli.HubHint)
			return
		case c.Status != metav1.ConditionTrue:
			v.add(check, Fail, "%s %s since %s (%s): %s", t, c.Status, cli.Clock(c.LastTransitionTime.Time), c.Reason, c.Message)
			return
		case c.Reason == v1alpha1.ReasonProbeFailing:
			v.add(check, Warn, "%s, but its probe fails (%s)", t, c.Message)
			return
		}
	}
	v.add(check, Pass, "Validated and Reachable")
}
