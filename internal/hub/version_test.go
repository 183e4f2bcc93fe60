package hub_test

import (
	"bytes"
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/cluster"
	"github.com/drover-io/drover/internal/lab"
)

// suiteVersion is the version the suite's hub and agents run as (TestMain stamps it).
const suiteVersion = "v0.0.0-hubsuite"

// `drover version`, asked of the lab's hub with the kubeconfig a person uses, reports the
// versions the running hub and agents recorded in the status they write: the hub's in the
// DRClusters', each agent's in its groups', which the DRPlacementControl summarises.
func TestVersionReportsTheRunningHubAndAgents(t *testing.T) {
	a := newApp(t, "hub-version")
	ctx := context.Background()
	east := a.clusters[lab.East]
	a.g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.ns}})).To(Succeed())
	a.g.Expect(east.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "settings"},
		Data: map[string]string{"mode": "production"}})).To(Succeed())
	a.g.Expect(a.hub.Create(ctx, a.drpcFor(false))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the application is deployed on east, west's group Secondary")

	c, err := testLab.Cluster(lab.Hub)
	a.g.Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	a.g.Expect(cluster.Version(&cli.Connection{Kubeconfig: c.KubeconfigPath()}, &out, cluster.VersionOptions{})).To(Succeed())
	t.Logf("drover version:\n%s", out.String())
	a.g.Expect(out.String()).To(ContainSubstring("hub cluster: Kubernetes v"))
	a.g.Expect(out.String()).To(ContainSubstring("\nhub: "+suiteVersion+"\n"), "every DRCluster's status names the running hub")
	for _, name := range []string{lab.East, lab.West} {
		a.g.Expect(out.String()).To(ContainSubstring("\nagent on "+name+": "+suiteVersion+"\n"), "the summary of %s's group names its agent", name)
	}

	out.Reset()
	a.g.Expect(cluster.Version(&cli.Connection{Kubeconfig: c.KubeconfigPath()}, &out, cluster.VersionOptions{Output: "jsonpath={.hub} {.agents.east} {.agents.west}"})).To(Succeed())
	a.g.Expect(out.String()).To(Equal(suiteVersion+" "+suiteVersion+" "+suiteVersion), "-o jsonpath reads the same")
}
