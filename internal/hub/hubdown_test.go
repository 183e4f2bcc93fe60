package hub_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/hubless"
	"github.com/drover-io/drover/internal/lab"
)

// HubDownEnv sets how long TestProtectionGoesOnWithoutTheHub keeps the hub down (a Go
// duration); make test-hubloss sets it to 10m. Unset, the test keeps it down for
// hubDownDefault, a slice of the same story.
const HubDownEnv = "DROVER_HUB_DOWN"

const hubDownDefault = 25 * time.Second

// lagFigures are the RPO lags of a group sampled over a window: the age of its last group sync
// at each sample.
type lagFigures struct {
	samples  int
	max, sum time.Duration
	syncs    int // distinct last group syncs seen
}

func (f lagFigures) mean() time.Duration {
	if f.samples == 0 {
		return 0
	}
	return (f.sum / time.Duration(f.samples)).Round(time.Millisecond)
}

// Protection goes on without the hub: with the hub (its process and its cluster) stopped, the
// agents keep replicating, and east's group keeps reporting its syncs, read from east directly
// (drover status --cluster-kubeconfig). The lag while the hub is down stays within what it is
// with the hub: never stale, its mean within one interval of the mean with the hub.
func TestProtectionGoesOnWithoutTheHub(t *testing.T) {
	down := hubDownDefault
	if v := os.Getenv(HubDownEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q is not a duration: %v", HubDownEnv, v, err)
		}
		down = d
	}
	a := newApp(t, "hub-hubdown")
	ctx := context.Background()
	east := a.clusters[lab.East]
	a.g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.ns}})).To(Succeed())
	for _, obj := range appObjects(a.g, a.ns) {
		a.g.Expect(east.Create(ctx, obj)).To(Succeed())
	}
	a.g.Expect(a.hub.Create(ctx, a.drpcFor(false))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the application is protected on east")
	handles := a.volumes(lab.East)
	writers := a.writing(lab.East, handles)

	window := min(down, time.Minute)
	withHub := a.sampleLag(lab.East, window)
	t.Logf("with the hub, over %s: mean lag %s, max %s, %d syncs (interval %s)", window, withHub.mean(), withHub.max.Round(time.Millisecond), withHub.syncs, interval)

	restartHub := stopTheHub(t, a.g)
	stopped := time.Now()
	withoutHub := a.sampleLag(lab.East, down)
	t.Logf("without the hub, over %s: mean lag %s, max %s, %d syncs", time.Since(stopped).Round(time.Second), withoutHub.mean(), withoutHub.max.Round(time.Millisecond), withoutHub.syncs)

	status := &bytes.Buffer{}
	a.g.Expect(hubless.Status(ctx, status, hubless.StatusOptions{App: "db", Namespace: a.ns,
		Clusters: []string{lab.East + "=" + clusterKubeconfig(a.g, lab.East), lab.West + "=" + clusterKubeconfig(a.g, lab.West)}})).To(Succeed())
	t.Logf("drover status db --cluster-kubeconfig east=... --cluster-kubeconfig west=... (hub down %s):\n%s", time.Since(stopped).Round(time.Second), status)
	a.g.Expect(status.String()).To(MatchRegexp(`east\s+hub-hubdown\s+db\s+primary\s+Primary\s+\S+\s+True\s+True\s+\S+ ago\s+\d+\.\dx\n`),
		"east's group reads protected, with a recent sync and a lag that is not stale")
	a.g.Expect(status.String()).To(MatchRegexp(`west\s+hub-hubdown\s+db\s+secondary\s+Secondary`))
	a.g.Expect(status.String()).To(ContainSubstring("the loss of a failover to west is not reported: a VolRep secondary's storage does not say what it holds"),
		"a VolRep secondary says why it cannot bound the loss")

	stale := v1alpha1.SyncStaleAfter(interval, a.group(lab.East).Status.SyncRefreshInterval)
	a.g.Expect(withoutHub.max).To(BeNumerically("<", stale), "the group never goes stale without the hub")
	a.g.Expect(withoutHub.mean()).To(BeNumerically("<=", withHub.mean()+interval), "the lag without the hub is the lag with it")
	a.g.Expect(withoutHub.syncs).To(BeNumerically(">=", int(down/interval)/3), "the group keeps syncing")
	a.g.Expect(a.writing(lab.East, handles)).To(Equal(writers), "the application runs on east undisturbed")

	// The hub returns and finds the application as it left it.
	restartHub()
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the returning hub finds the application protected")
}

// sampleLag reads the cluster's group every second for d and returns its lag figures. The
// group is read from the managed cluster, as drover status --cluster-kubeconfig reads it.
func (a *app) sampleLag(cluster string, d time.Duration) lagFigures {
	var f lagFigures
	var last time.Time
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Second) {
		vrg := &v1alpha1.VolumeReplicationGroup{}
		if err := a.clusters[cluster].Get(context.Background(), a.key, vrg); err != nil {
			a.t.Logf("failed to read the group on %s: %v", cluster, err)
			continue
		}
		sync := vrg.Status.LastGroupSyncTime
		a.g.Expect(sync).NotTo(BeNil(), "%s's group reports its last sync", cluster)
		lag := time.Since(sync.Time)
		f.samples++
		f.sum += lag
		f.max = max(f.max, lag)
		if !sync.Time.Equal(last) {
			f.syncs++
			last = sync.Time
		}
	}
	return f
}
