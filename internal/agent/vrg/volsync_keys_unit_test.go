package vrg

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
