package vrg

import (
	"context"
	"errors"
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-io/drover/api/v1alpha1"
)

// A snapshot controller writes a new image's status just after VolSync records it, so the
// promotion's first try to hold that image may meet a conflict. A conflict is no reason to fail
// the PVC's restore (a failed restore waits a pass, and the promotion with it): holdImage reads
// the snapshot again and holds it, unless it has come to be deleted meanwhile.
func TestHoldingAnImageReadsItAgainAfterAConflict(t *testing.T) {
	for _, tc := range []struct {
		name string
		// between is what the snapshot controller or VolSync does between the read and the patch.
		between func(vs *snapshotv1.VolumeSnapshot)
		wantErr error
	}{
		{name: "a status write", between: func(vs *snapshotv1.VolumeSnapshot) {
			vs.Annotations = map[string]string{"snapshot.storage.kubernetes.io/written": "status"}
		}},
		{name: "a deletion by VolSync's cleanup", between: func(vs *snapshotv1.VolumeSnapshot) {
			vs.Finalizers = []string{"snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection"}
		}, wantErr: errImageDeleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme, err := testScheme()
			if err != nil {
				t.Fatal(err)
			}
			image := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "volsync-data-dst-1"}}
			base := fake.NewClientBuilder().WithScheme(scheme).WithObjects(image).Build()
			patches := 0
			c := interceptor.NewClient(base, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					patches++
					if patches > 1 {
						return c.Patch(ctx, obj, patch, opts...)
					}
					// Someone else writes first: the lock's resourceVersion is stale.
					current := &snapshotv1.VolumeSnapshot{}
					if err := c.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
						return err
					}
					tc.between(current)
					if err := c.Update(ctx, current); err != nil {
						return err
					}
					if tc.wantErr != nil {
						if err := c.Delete(ctx, current); err != nil {
							return err
						}
					}
					return apierrors.NewConflict(schema.GroupResource{Group: snapshotv1.GroupName, Resource: "volumesnapshots"}, obj.GetName(),
						errors.New("the object has been modified"))
				},
			})
			r := &Reconciler{Client: c, APIReader: c}
			vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"}}
			err = r.holdImage(t.Context(), vrg, "app", image.Name)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("holding an image deleted after a conflict: %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("holding an image after a conflict: %v", err)
			}
			got := &snapshotv1.VolumeSnapshot{}
			if err := base.Get(t.Context(), client.ObjectKeyFromObject(image), got); err != nil {
				t.Fatal(err)
			}
			if got.Labels[volSyncDoNotDelete] != "true" || got.Annotations[AnnotationHeldBy] != "app/db" || patches != 2 {
				t.Fatalf("after a conflict the image has labels %v, annotations %v (%d patches); want it held by app/db on the second patch",
					got.Labels, got.Annotations, patches)
			}
		})
	}
}
