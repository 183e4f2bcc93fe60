package argocd

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Argo CD's kinds and the annotation drover sets, as the lab uses them.
var (
	ApplicationGVK    = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	ApplicationSetGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationSet"}
)

const (
	// RefreshAnnotation asks the ApplicationSet controller to regenerate an ApplicationSet now.
	// Its generator does not watch PlacementDecisions: without the annotation a changed decision
	// is read on the next requeue, 180 s by default. The controller removes the annotation.
	RefreshAnnotation = "argocd.argoproj.io/application-set-refresh"
	// PlacementLabel labels the PlacementDecisions of one placement; the generator selects
	// decisions by it.
	PlacementLabel = "cluster.open-cluster-management.io/placement"
	// resourcesFinalizer makes Argo CD delete an Application's resources on its cluster before
	// the Application goes: how a cluster leaving the decision gets its workload pruned.
	resourcesFinalizer = "resources-finalizer.argocd.argoproj.io"
)

// AppSetOptions describe a demo ApplicationSet.
type AppSetOptions struct {
	// Name of the ApplicationSet; its Applications are <Name>-<cluster>.
	Name string
	// Placement is the value of PlacementLabel on the PlacementDecisions it follows.
	Placement string
	// AppNamespace is the namespace the application runs in on the managed clusters (created
	// by the sync).
	AppNamespace string
	// RepoURL and Path locate the manifests; empty means the instance's repository and AppPath.
	RepoURL, Path string
}

// ApplicationName is the name of the Application an ApplicationSet generates for a cluster.
func ApplicationName(appSet, cluster string) string { return appSet + "-" + cluster }

// ApplicationSet returns an ApplicationSet in placement mode: its clusterDecisionResource
// generator reads the PlacementDecisions labelled for o.Placement through DecisionConfigMap and
// makes one Application per decided cluster, synced automatically from git with prune, the
// namespace created, and the resources finalizer, so a cluster that leaves the decision has the
// application's objects deleted (its PVCs, created by the StatefulSet controller and not by
// Argo CD, stay).
func ApplicationSet(o AppSetOptions) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": o.Name, "namespace": Namespace},
		"spec": map[string]any{
			"goTemplate": false,
			"generators": []any{map[string]any{
				"clusterDecisionResource": map[string]any{
					"configMapRef":  DecisionConfigMap,
					"labelSelector": map[string]any{"matchLabels": map[string]any{PlacementLabel: o.Placement}},
				},
			}},
			"template": map[string]any{
				"metadata": map[string]any{
					"name":       o.Name + "-{{name}}",
					"finalizers": []any{resourcesFinalizer},
				},
				"spec": map[string]any{
					"project": Project,
					"source":  map[string]any{"repoURL": o.RepoURL, "targetRevision": "HEAD", "path": o.Path},
					"destination": map[string]any{
						"name":      "{{name}}",
						"namespace": o.AppNamespace,
					},
					"syncPolicy": map[string]any{
						"automated":   map[string]any{"prune": true, "selfHeal": true},
						"syncOptions": []any{"CreateNamespace=true"},
					},
				},
			},
		},
	}}
	u.SetGroupVersionKind(ApplicationSetGVK)
	return u
}

// CreateApplicationSet creates (or updates) the demo ApplicationSet on the hub, from the
// instance's repository unless o says otherwise.
func (i *Instance) CreateApplicationSet(ctx context.Context, hub client.Client, o AppSetOptions) error {
	if o.RepoURL == "" {
		o.RepoURL = i.RepoURL()
	}
	if o.Path == "" {
		o.Path = AppPath
	}
	if o.Name == "" || o.Placement == "" || o.AppNamespace == "" {
		return fmt.Errorf("an ApplicationSet needs a name, a placement and an application namespace")
	}
	if err := hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(ApplicationSet(o)), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply ApplicationSet %s: %w", o.Name, err)
	}
	return nil
}

// RefreshApplicationSet sets RefreshAnnotation on an ApplicationSet, so the controller reads
// its PlacementDecisions now rather than on its next requeue.
func RefreshApplicationSet(ctx context.Context, hub client.Client, name string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ApplicationSetGVK)
	u.SetNamespace(Namespace)
	u.SetName(name)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, RefreshAnnotation)
	if err := hub.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("failed to refresh ApplicationSet %s: %w", name, err)
	}
	return nil
}

// AppStatus is what the lab reads of an Application.
type AppStatus struct {
	// Sync is status.sync.status: Synced, OutOfSync or Unknown.
	Sync string
	// Health is status.health.status: Healthy, Progressing, Degraded, Missing...
	Health string
	// Destination is the name of the cluster it deploys to.
	Destination string
}

// Ready reports whether the Application is Synced and Healthy.
func (s AppStatus) Ready() bool { return s.Sync == "Synced" && s.Health == "Healthy" }

// ApplicationStatus reads an Application's sync and health status.
func ApplicationStatus(ctx context.Context, hub client.Client, name string) (AppStatus, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ApplicationGVK)
	if err := hub.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, u); err != nil {
		return AppStatus{}, err
	}
	sync, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
	health, _, _ := unstructured.NestedString(u.Object, "status", "health", "status")
	dest, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "name")
	return AppStatus{Sync: sync, Health: health, Destination: dest}, nil
}
