package vrg

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// A key object that opens under the store key is still refused unless it is the key drover
// writes for the PVC its name says: another PVC's key moved there, a Secret name drover does not
// derive (the primary would write over that Secret), or a key VolSync would not read.
func TestAVolSyncKeyIsReadOnlyAsTheKeyOfThePVCItsNameSays(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	store := objectstore.Sealed(objectstore.NewFake("s3-east"), objectstore.NewKeyring("test"))
	group := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"}}
	objectKey := VolSyncKeyKey(StorePrefix(group), "app", "data-db-0")
	good := StoredVolSyncKey{PVCNamespace: "app", PVCName: "data-db-0", KeySecretName: "db-data-db-0-volsync-key",
		PSK: "volsync:" + strings.Repeat("0f", 32), Cluster: "west"}
	for name, tc := range map[string]struct {
		mutate func(*StoredVolSyncKey)
		want   string
	}{
		"the key of its PVC":       {func(*StoredVolSyncKey) {}, ""},
		"another PVC's key":        {func(k *StoredVolSyncKey) { k.PVCName = "data-db-1" }, "not of the PVC its name says"},
		"another Secret's name":    {func(k *StoredVolSyncKey) { k.KeySecretName = "db-password" }, "not the key Secret drover derives"},
		"a key of another form":    {func(k *StoredVolSyncKey) { k.PSK = "volsync:short" }, "not one drover makes"},
		"a key with a line break":  {func(k *StoredVolSyncKey) { k.PSK = good.PSK + "\n" }, "not one drover makes"},
		"no key at all, an object": {nil, "not a VolSync key"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			body := []byte(`["not", "a", "key"]`)
			if tc.mutate != nil {
				k := good
				tc.mutate(&k)
				var err error
				body, err = json.Marshal(k)
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(store.Put(ctx, objectKey, body)).To(Succeed())
			k, current, err := readVolSyncKey(ctx, store, group, objectKey)
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(current).To(BeTrue())
				g.Expect(k.PSK).To(Equal(good.PSK))
				return
			}
			g.Expect(err).To(MatchError(objectstore.ErrRefused))
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(err).To(MatchError(ContainSubstring(objectKey)), "the refusal names the object")
		})
	}
	k, _, err := readVolSyncKey(ctx, store, group, VolSyncKeyKey(StorePrefix(group), "app", "data-db-9"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k).To(BeNil(), "no object, no key and no error")
}

// A key that does not open leaves the PVC waiting with StoreObjectRefused, naming the store and
// the object and saying what to delete; one in no store yet is VolSyncDestinationUnknown.
func TestAMissingOrRefusedVolSyncKeySaysWhatToDo(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	plain := objectstore.NewFake("s3-west")
	store := objectstore.Sealed(plain, objectstore.NewKeyring("test"))
	group := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"}}
	objectKey := VolSyncKeyKey(StorePrefix(group), "app", "data-db-0")
	g.Expect(plain.Put(ctx, objectKey, []byte(`{"psk":"volsync:planted"}`))).To(Succeed())
	_, _, err := readVolSyncKey(ctx, store, group, objectKey)
	g.Expect(err).To(MatchError(objectstore.ErrNotSealed))

	res := missingVolSyncKey("app/data-db-0", []keyProblem{{store: "s3-west", err: err}})
	t.Logf("%s: %s", res.Reason, res.Message)
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonStoreObjectRefused))
	g.Expect(res.Message).To(ContainSubstring(`S3 profile s3-west is refused: object "app/db/volsync-keys/app/data-db-0.json" has no drover envelope`))
	g.Expect(res.Message).To(ContainSubstring("delete that object from the store"))
	g.Expect(res.Message).NotTo(ContainSubstring("primary marker"), "the advice for a group's metadata does not apply to a key")

	res = missingVolSyncKey("app/data-db-0", nil)
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonVolSyncDestinationUnknown))
	g.Expect(res.Message).To(ContainSubstring("no S3 store of the group holds it yet"))
}

// A secondary with destinations comes back when its keys are due a check: its primary may send
// nothing (its key refused or missing), so no received sync would wake it, and the check is what
// writes a key deleted from a store again. The check's period is the Reconciler's, a minute
// unless set.
func TestASecondaryWithDestinationsComesBackWhenItsKeysAreDueACheck(t *testing.T) {
	g := NewWithT(t)
	scheme, err := testScheme()
	g.Expect(err).NotTo(HaveOccurred())
	group := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"}}
	// No key Secret yet: EnsureDestination makes it; nothing is written meanwhile.
	group.Status.VolSyncDestinations = []v1alpha1.VolSyncDestination{{PVCNamespace: "app", PVCName: "data-db-0",
		KeySecretName: "db-data-db-0-volsync-key"}}
	for _, tc := range []struct {
		recheck, want time.Duration
	}{{0, time.Minute}, {10 * time.Second, 10 * time.Second}} {
		r := &Reconciler{APIReader: fake.NewClientBuilder().WithScheme(scheme).Build(), VolSyncKeyRecheck: tc.recheck}
		res, err := r.publishVolSyncKeys(context.Background(), newScope(group.DeepCopy()))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.RequeueAfter).To(Equal(tc.want), "VolSyncKeyRecheck %s", tc.recheck)
	}
	group.Status.VolSyncDestinations = nil
	r := &Reconciler{APIReader: fake.NewClientBuilder().WithScheme(scheme).Build()}
	res, err := r.publishVolSyncKeys(context.Background(), newScope(group))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeZero(), "a group with no destination has no key to check")
}
