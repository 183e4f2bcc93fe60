package kubelet

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// A pod whose status did not change is not patched again: the lab kubelet syncs every pod every
// second, and a patch per pod per sync was most of an idle lab's requests.
func TestAnUnchangedPodStatusIsWrittenOnce(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	client := fake.NewClientset(pod)
	patches := 0
	client.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			patches++
		}
		return false, nil, nil
	})
	w := &podWorker{k: &Kubelet{client: client}, key: types.NamespacedName{Namespace: "ns", Name: "p"}, startTime: time.Now()}
	w.containers = []*container{{w: w, spec: &corev1.Container{Name: "c", Image: "img"}, running: true, ready: true, startedAt: time.Now()}}
	ctx := context.Background()
	for range 3 {
		if err := w.writeStatus(ctx, pod, nil); err != nil {
			t.Fatal(err)
		}
	}
	if patches != 1 {
		t.Fatalf("the unchanged status was patched %d times in 3 syncs, want once", patches)
	}
	w.containers[0].ready = false
	if err := w.writeStatus(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	if patches != 2 {
		t.Fatalf("a container turning unready made %d patches in all, want 2", patches)
	}
}
