package day2

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// GatherOptions are the options of `drover gather`.
type GatherOptions struct {
	// Namespace and App name one application's DRPlacementControl; App empty gathers every
	// application's namespaces.
	Namespace, App string
	// File is the tarball to write; empty names it drover-gather-<UTC time>.tar.gz here.
	File string
	// Kubeconfigs are kubeconfig files of the person for some managed clusters, used instead
	// of the hub's credential.
	Kubeconfigs ClusterKubeconfigs
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// The kinds gather lists, by where they live.
var (
	hubKinds = []schema.GroupVersionKind{
		v1alpha1.GroupVersion.WithKind("DRCluster"),
		v1alpha1.GroupVersion.WithKind("DRPolicy"),
	}
	managedClusterKinds = []schema.GroupVersionKind{
		{Group: "", Version: "v1", Kind: "PersistentVolume"},
		{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"},
		volRepGV.WithKind("VolumeReplicationClass"),
		snapshotGV.WithKind("VolumeSnapshotClass"),
	}
	managedNamespaceKinds = []schema.GroupVersionKind{
		v1alpha1.GroupVersion.WithKind("VolumeReplicationGroup"),
		{Group: "", Version: "v1", Kind: "PersistentVolumeClaim"},
		volRepGV.WithKind("VolumeReplication"),
		volSyncGV.WithKind("ReplicationSource"),
		volSyncGV.WithKind("ReplicationDestination"),
		snapshotGV.WithKind("VolumeSnapshot"),
	}
	// Every cluster's namespaces: the events and Secrets (names and keys only) of each
	// namespace gathered, and drover's own Deployments and pods.
	namespaceKinds = []schema.GroupVersionKind{
		{Group: "", Version: "v1", Kind: "Event"},
		{Group: "", Version: "v1", Kind: "Secret"},
	}
	droverKinds = []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "", Version: "v1", Kind: "Pod"},
	}
)

// gathering is one run of gather: the files collected, what failed, and the redactor.
type gathering struct {
	// at is when the run began: the time of every file in the tarball.
	at       time.Time
	files    map[string][]byte
	failures []string
	red      *redactor
}

func (g *gathering) fail(format string, args ...any) {
	g.failures = append(g.failures, fmt.Sprintf(format, args...))
}

// Gather writes a tarball of what a bug report about drover needs: the hub's DRPlacementControls,
// DRPolicies and DRClusters; on each managed cluster the groups, PVCs, PVs, replication and
// snapshot objects of the applications' namespaces, the storage and replication classes; every
// cluster's events of those namespaces and of drover-system, drover's Deployments, pods and
// logs where the credential may read them. Secrets are listed by name, type and key names
// only, and every credential is scrubbed from every file (redactor). README.md in the tarball
// lists what was collected and what could not be, and why; nothing missing fails the verb
// unless the hub itself cannot be read.
func Gather(ctx context.Context, hubCfg *rest.Config, w io.Writer, o GatherOptions) error {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	if o.File == "" {
		o.File = "drover-gather-" + now().UTC().Format("20060102T150405Z") + ".tar.gz"
	}
	hub, err := hubClient(hubCfg)
	if err != nil {
		return err
	}
	g := &gathering{at: now(), files: map[string][]byte{}, red: newRedactor()}
	g.red.addConfig(hubCfg)
	namespaces, err := g.hub(ctx, hub, hubCfg, o)
	if err != nil {
		return err
	}
	clusters, err := managedClusters(ctx, hub, o.Kubeconfigs)
	if err != nil {
		return err
	}
	for _, m := range clusters {
		g.managed(ctx, m, namespaces)
	}
	g.readme(o, now(), clusters, namespaces)
	if err := g.write(o.File); err != nil {
		return err
	}
	p := &cli.Printer{W: w}
	p.Linef("Wrote %s: %d files from the hub and %d managed clusters; %d things could not be collected (README.md says which and why).",
		o.File, len(g.files), len(clusters), len(g.failures))
	p.Linef("Secrets are listed by name and key names only, and credentials are scrubbed; still, read it before you share it.")
	return p.Err
}

// hub gathers the hub's objects and returns the namespaces of the applications gathered.
func (g *gathering) hub(ctx context.Context, hub client.Client, cfg *rest.Config, o GatherOptions) ([]string, error) {
	drpcs := &v1alpha1.DRPlacementControlList{}
	if o.App != "" {
		d := v1alpha1.DRPlacementControl{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.App}, &d); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, cli.NotFound(ctx, hub, o.Namespace, o.App)
			}
			return nil, cli.ReadError("DRPlacementControl "+o.Namespace+"/"+o.App, err)
		}
		drpcs.Items = append(drpcs.Items, d)
	} else if err := hub.List(ctx, drpcs); err != nil {
		return nil, cli.ReadError("DRPlacementControls", err)
	}
	set := map[string]bool{}
	for _, d := range drpcs.Items {
		set[d.Namespace] = true
		for _, ns := range d.Spec.ProtectedNamespaces {
			set[ns] = true
		}
	}
	namespaces := make([]string, 0, len(set))
	for ns := range set {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	items := make([]unstructured.Unstructured, 0, len(drpcs.Items))
	for i := range drpcs.Items {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&drpcs.Items[i])
		if err != nil {
			return nil, fmt.Errorf("failed to convert DRPlacementControl %s: %w", drpcs.Items[i].Name, err)
		}
		u := unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DRPlacementControl"))
		items = append(items, u)
	}
	g.put("hub/drplacementcontrols.yaml", items)
	for _, gvk := range hubKinds {
		g.listOrExplain(ctx, hub, "hub", "", gvk, nil, hubForbidden)
	}
	hubNamespaces := append([]string{droverNamespace}, namespaces...)
	for _, ns := range hubNamespaces {
		for _, gvk := range namespaceKinds {
			g.listOrExplain(ctx, hub, "hub", ns, gvk, nil, hubForbidden)
		}
	}
	g.drover(ctx, "hub", hub, cfg, hubForbidden)
	return namespaces, nil
}

// hubForbidden says what the person's own kubeconfig may not do on the hub.
func hubForbidden(what string) string {
	return "you may not " + what + " on the hub"
}

// managed gathers one managed cluster.
func (g *gathering) managed(ctx context.Context, m *managedCluster, namespaces []string) {
	if m.err != nil {
		g.fail("%s: nothing collected: %v", m.name, m.err)
		return
	}
	g.red.addConfig(m.cfg)
	if _, err := probeServer(ctx, m.cfg, time.Now); err != nil {
		g.fail("%s: nothing collected: %v", m.name, err)
		return
	}
	for _, gvk := range managedClusterKinds {
		var keep func(unstructured.Unstructured) bool
		if gvk.Kind == "PersistentVolume" {
			keep = func(u unstructured.Unstructured) bool {
				ns, _, _ := unstructured.NestedString(u.Object, "spec", "claimRef", "namespace")
				return slices.Contains(namespaces, ns)
			}
		}
		g.listAs(ctx, m, "", gvk, keep)
	}
	for _, ns := range namespaces {
		for _, gvk := range append(slices.Clone(managedNamespaceKinds), namespaceKinds...) {
			g.listAs(ctx, m, ns, gvk, nil)
		}
	}
	for _, gvk := range namespaceKinds {
		g.listAs(ctx, m, droverNamespace, gvk, nil)
	}
	g.drover(ctx, m.name, m.cl, m.cfg, m.forbidden)
}

// listAs lists a kind on a managed cluster, explaining a refusal of its credential.
func (g *gathering) listAs(ctx context.Context, m *managedCluster, ns string, gvk schema.GroupVersionKind, keep func(unstructured.Unstructured) bool) {
	g.listOrExplain(ctx, m.cl, m.name, ns, gvk, keep, m.forbidden)
}

// listOrExplain lists like list; when the credential may not list the kind, the failure
// recorded says so in forbidden's words (who may not do what, and what to try) instead of the
// API server's.
func (g *gathering) listOrExplain(ctx context.Context, cl client.Client, cluster, ns string, gvk schema.GroupVersionKind,
	keep func(unstructured.Unstructured) bool, forbidden func(string) string) {
	if err := g.list(ctx, cl, cluster, ns, gvk, keep); apierrors.IsForbidden(err) {
		g.failures[len(g.failures)-1] = fmt.Sprintf("%s: %s", fileName(cluster, ns, gvk), forbidden("list "+plural(gvk.Kind)))
	}
}

// list lists a kind (in a namespace, or cluster-wide when ns is empty) into a file of its own;
// a failure is recorded, and returned.
func (g *gathering) list(ctx context.Context, cl client.Client, cluster, ns string, gvk schema.GroupVersionKind,
	keep func(unstructured.Unstructured) bool) error {
	name := fileName(cluster, ns, gvk)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	var opts []client.ListOption
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := cl.List(ctx, list, opts...); err != nil {
		switch {
		case apierrors.IsNotFound(err) || strings.Contains(err.Error(), "no matches for kind"):
			g.fail("%s: the cluster does not serve %s", name, gvk.GroupVersion().WithKind(gvk.Kind))
		default:
			g.fail("%s: %v", name, err)
		}
		return err
	}
	items := list.Items[:0]
	for _, u := range list.Items {
		u.SetGroupVersionKind(gvk) // the redactor knows a Secret by its kind
		if keep == nil || keep(u) {
			items = append(items, u)
		}
	}
	g.put(name, items)
	return nil
}

// fileName is where a kind of a cluster (and namespace) is written.
func fileName(cluster, ns string, gvk schema.GroupVersionKind) string {
	kind := plural(strings.ToLower(gvk.Kind))
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	if ns == "" {
		return cluster + "/" + kind + ".yaml"
	}
	return cluster + "/namespaces/" + ns + "/" + kind + ".yaml"
}

// plural is a lower-case kind's resource name, as the API server names drover's and the
// storage kinds gather lists.
func plural(kind string) string {
	switch {
	case strings.HasSuffix(kind, "s"):
		return kind + "es"
	case strings.HasSuffix(kind, "y"):
		return strings.TrimSuffix(kind, "y") + "ies"
	}
	return kind + "s"
}

// put redacts the objects and records them as a Kubernetes List.
func (g *gathering) put(name string, items []unstructured.Unstructured) {
	out := make([]map[string]any, 0, len(items))
	for i := range items {
		g.red.object(&items[i])
		out = append(out, items[i].Object)
	}
	raw, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": out})
	if err != nil {
		g.fail("%s: failed to encode: %v", name, err)
		return
	}
	g.files[name] = raw
}

// write writes the tarball, each file scrubbed of every secret value recorded.
func (g *gathering) write(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("failed to create %s: %w (name another with --file)", path, err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(g.files))
	for n := range g.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		body := g.red.scrub(g.files[n])
		hdr := &tar.Header{Name: "drover-gather/" + n, Mode: 0o600, Size: int64(len(body)), ModTime: g.at.Truncate(time.Second)}
		if err = tw.WriteHeader(hdr); err == nil {
			_, err = tw.Write(body)
		}
		if err != nil {
			break
		}
	}
	for _, c := range []io.Closer{tw, gz, f} {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}
