package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Kinds whose names Names lists, for the shells' completion.
const (
	KindApp     = "DRPlacementControl"
	KindCluster = "DRCluster"
	KindPolicy  = "DRPolicy"
)

// Names lists the names of drover's objects of kind starting with prefix, sorted: the
// DRPlacementControls of namespace, or the DRClusters or DRPolicies.
func Names(ctx context.Context, c client.Reader, kind, namespace, prefix string) ([]string, error) {
	var names []string
	switch kind {
	case KindApp:
		l := &v1alpha1.DRPlacementControlList{}
		if err := c.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return nil, ReadError("DRPlacementControls", err)
		}
		for _, o := range l.Items {
			names = append(names, o.Name)
		}
	case KindCluster:
		l := &v1alpha1.DRClusterList{}
		if err := c.List(ctx, l); err != nil {
			return nil, ReadError("DRClusters", err)
		}
		for _, o := range l.Items {
			names = append(names, o.Name)
		}
	case KindPolicy:
		l := &v1alpha1.DRPolicyList{}
		if err := c.List(ctx, l); err != nil {
			return nil, ReadError("DRPolicies", err)
		}
		for _, o := range l.Items {
			names = append(names, o.Name)
		}
	default:
		return nil, fmt.Errorf("no completion of %s", kind)
	}
	out := names[:0]
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}
