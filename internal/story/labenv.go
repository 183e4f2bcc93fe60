package story

import (
	"fmt"
	"io"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/lab"
)

// LabEnv is the story's view of a running lab that runs drover: clients of the hub and of east
// and west with the types Env names, the lab's storage directories, and the lab's own stop and
// start of a cluster, its partition and heal. Out receives the story's lines.
func LabEnv(l *lab.Lab, out io.Writer) (Env, error) {
	hub, err := labClient(l, lab.Hub, ocmv1beta1.AddToScheme)
	if err != nil {
		return Env{}, err
	}
	clusters := map[string]client.Client{}
	for _, name := range []string{lab.East, lab.West} {
		if clusters[name], err = labClient(l, name); err != nil {
			return Env{}, err
		}
	}
	return Env{
		Hub: hub, Clusters: clusters, Out: out,
		DataDir: func(cluster string) string { return filepath.Join(l.Dir(), cluster, "storage") },
		LogDir: func(cluster string) string {
			c, err := l.Cluster(cluster)
			if err != nil {
				return ""
			}
			return c.LogDir()
		},
		StopCluster:  l.Stop,
		StartCluster: l.Start,
		Partition:    l.Partition,
		Heal:         l.Heal,
	}, nil
}

// labClient is a client of a lab cluster with drover's and client-go's types, and add's.
func labClient(l *lab.Lab, name string, add ...func(*runtime.Scheme) error) (client.Client, error) {
	c, err := l.Cluster(name)
	if err != nil {
		return nil, err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	s := runtime.NewScheme()
	for _, a := range append(add, clientgoscheme.AddToScheme, v1alpha1.AddToScheme) {
		if err := a(s); err != nil {
			return nil, err
		}
	}
	cl, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client of lab cluster %s: %w", name, err)
	}
	return cl, nil
}

// labClass is the storage class the lab's DRPolicy policy replicates by default; "" for a
// policy the lab does not define.
func labClass(policy string) string {
	switch policy {
	case lab.PolicyVolRep:
		return lab.BlockStorageClass
	case lab.PolicyVolSync:
		return lab.FileStorageClass
	}
	return ""
}

// LabCase is the case of workload w protected by the lab's DRPolicy policy in mode m, with the
// storage class that policy replicates, as Case.Name spells them: sts-retain, lab-volrep,
// self-contained. It says which names are valid when one is not.
func LabCase(w, policy, m string) (Case, error) {
	c := Case{Workload: Workload(w), Policy: policy, Mode: Mode(m)}
	switch c.Workload {
	case StatefulSetKeepsPVCs, StatefulSetDeletesPVCs, DeploymentWithPVC, StatefulSetTwoVolumes, Postgres:
	default:
		return c, fmt.Errorf("workload %q: use %s, %s, %s, %s or %s", w, StatefulSetKeepsPVCs, StatefulSetDeletesPVCs, DeploymentWithPVC, StatefulSetTwoVolumes, Postgres)
	}
	if c.StorageClass = labClass(policy); c.StorageClass == "" {
		return c, fmt.Errorf("policy %q: use %s or %s", policy, lab.PolicyVolRep, lab.PolicyVolSync)
	}
	switch c.Mode {
	case SelfContained, Placement:
	default:
		return c, fmt.Errorf("mode %q: use %s or %s", m, SelfContained, Placement)
	}
	return c, nil
}
