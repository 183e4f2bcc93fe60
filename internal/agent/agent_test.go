package agent_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
)

func TestTheSchemeKnowsEveryTypeTheAgentUses(t *testing.T) {
	s, err := agent.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{
		v1alpha1.GroupVersion.WithKind("VolumeReplicationGroup"),
		replicationv1alpha1.GroupVersion.WithKind("VolumeReplication"),
		replicationv1alpha1.GroupVersion.WithKind("VolumeReplicationClass"),
		{Version: "v1", Kind: "PersistentVolumeClaim"},
		{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"},
	} {
		if !s.Recognizes(gvk) {
			t.Errorf("the agent's scheme does not know %s", gvk)
		}
	}
}

func TestTheAgentNeedsItsClusterName(t *testing.T) {
	if _, err := agent.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, agent.Options{}); err == nil {
		t.Fatal("an agent without a cluster name was created")
	}
}
