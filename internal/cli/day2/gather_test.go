package day2

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/cli/clitest"
)

// refusingClient answers every List of one kind as an API server does when RBAC forbids it.
type refusingClient struct {
	client.Client
	kind string
}

func (c refusingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if u, ok := list.(*unstructured.UnstructuredList); ok && u.GetKind() == c.kind+"List" {
		gvk := u.GroupVersionKind()
		return apierrors.NewForbidden(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(plural(c.kind))}, "", nil)
	}
	return c.Client.List(ctx, list, opts...)
}

func TestGatherSaysWhatTheHubCredentialMayNotList(t *testing.T) {
	for _, kind := range []string{"DRPolicy", "Secret", "Deployment"} {
		t.Run("a refused "+kind+" list is recorded as what the person may not do on the hub", func(t *testing.T) {
			g := &gathering{at: time.Now(), files: map[string][]byte{}, red: newRedactor()}
			if _, err := g.hub(t.Context(), refusingClient{Client: clitest.Hub, kind: kind}, nil, GatherOptions{}); err != nil {
				t.Fatalf("gathering the hub failed: %v", err)
			}
			want := "you may not list " + plural(kind) + " on the hub"
			if !slices.ContainsFunc(g.failures, func(f string) bool { return strings.HasPrefix(f, "hub/") && strings.HasSuffix(f, ": "+want) }) {
				t.Errorf("no failure says %q; failures:\n%s", want, strings.Join(g.failures, "\n"))
			}
			for _, f := range g.failures {
				if strings.Contains(f, "forbidden") {
					t.Errorf("a failure repeats the API server's words instead of explaining them: %s", f)
				}
			}
		})
	}
}
