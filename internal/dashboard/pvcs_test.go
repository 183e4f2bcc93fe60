package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// An application whose group on east has 20 PVCs, of which the hub's summary lists 16: synced
// 5 s, 25 s and 35 s ago (ok, warn and critical against the 10 s interval), one never synced
// (DataProtected False, Progressing), the others 5 s ago.
func TestAnApplicationsPageListsEachPVCWithItsLastSyncJudgedByTheRPOThresholds(t *testing.T) {
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "volumes", Name: "orders"}
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := createProtected(ctx, key, 35*time.Second); err != nil {
		t.Fatal(err)
	}
	ago := func(d time.Duration) *metav1.Time {
		m := metav1.NewTime(time.Now().Add(-d).Truncate(time.Second))
		return &m
	}
	pvc := func(i int, synced *metav1.Time) v1alpha1.PVCSyncSummary {
		p := v1alpha1.PVCSyncSummary{Namespace: key.Namespace, Name: fmt.Sprintf("data-%02d", i), DataProtected: metav1.ConditionTrue,
			LastSyncTime: synced, LastSyncDuration: &metav1.Duration{Duration: 1500 * time.Millisecond}}
		if synced == nil {
			p.DataProtected, p.Reason, p.LastSyncDuration = metav1.ConditionFalse, v1alpha1.ReasonProgressing, nil
		}
		return p
	}
	pvcs := []v1alpha1.PVCSyncSummary{pvc(0, ago(5*time.Second)), pvc(1, ago(25*time.Second)), pvc(2, ago(35*time.Second)), pvc(3, nil)}
	for i := 4; i < v1alpha1.MaxPVCSummaries; i++ {
		pvcs = append(pvcs, pvc(i, ago(5*time.Second)))
	}
	d := drpc(t, key.Namespace, key.Name)
	total := int32(20)
	d.Status.VRGs[0].PVCs, d.Status.VRGs[0].ProtectedPVCs = pvcs, &total
	if err := k8sClient.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}

	b := open(t, Options{Namespace: key.Namespace})
	code, page := b.get("/apps/volumes/orders")
	if code != http.StatusOK {
		t.Fatalf("the application's page answered %d:\n%s", code, page)
	}
	startedAt := func(p v1alpha1.PVCSyncSummary) string { return p.LastSyncTime.UTC().Format(time.DateTime) + " UTC" }
	for _, c := range []struct {
		pvc   string
		wants []string
	}{
		{"data-00", []string{"<td>east</td>", `class="state s-ok"`, "/10s ok", startedAt(pvcs[0]), "<td>1.5s</td>", `<span aria-hidden="true">✓</span> True`}},
		{"data-01", []string{`class="state s-warn"`, "/10s warn", startedAt(pvcs[1])}},
		{"data-02", []string{`class="state s-critical"`, "/10s critical", startedAt(pvcs[2])}},
		{"data-03", []string{"not synced yet", `<span aria-hidden="true">✖</span> False`, "<td>Progressing</td>"}},
		{"data-15", []string{"/10s ok"}},
	} {
		contains(t, rowOf(t, page, "volumes/"+c.pvc), "the row of PVC "+c.pvc, c.wants...)
	}
	contains(t, page, "the application's page", "east: 16 of its 20 PVCs are shown, those not protected first, then the least recently synced")
	lacks(t, page, "the application's page", "<td>west</td>") // a healthy secondary lists no PVC
}

// rowOf is the table row of a page whose header cell is header.
func rowOf(t *testing.T, page, header string) string {
	t.Helper()
	i := strings.Index(page, `<th scope="row">`+header+`</th>`)
	if i < 0 {
		t.Fatalf("the page has no row %s:\n%s", header, page)
	}
	return page[i : i+strings.Index(page[i:], "</tr>")]
}
