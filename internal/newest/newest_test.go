package newest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// copies is a reader holding one ConfigMap per key, counting its reads.
type copies struct {
	objs  map[client.ObjectKey]*corev1.ConfigMap
	reads int
}

func (c *copies) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.reads++
	cm, ok := c.objs[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	cm.DeepCopyInto(obj.(*corev1.ConfigMap))
	return nil
}

func (c *copies) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func version(rv, phase string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: rv}, Data: map[string]string{"phase": phase}}
}

func TestACachedCopyOlderThanTheLastWriteIsReadFromTheAPIServer(t *testing.T) {
	key := client.ObjectKey{Namespace: "ns", Name: "cm"}
	cached := &copies{objs: map[client.ObjectKey]*corev1.ConfigMap{key: version("1", "Deployed")}}
	live := &copies{objs: map[client.ObjectKey]*corev1.ConfigMap{key: version("1", "Deployed")}}
	v := &Versions{}
	get := func() string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := v.Get(context.Background(), cached, live, key, cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data["phase"]
	}

	if got := get(); got != "Deployed" || live.reads != 0 {
		t.Fatalf("first read: %q with %d live reads, want Deployed from the cache", got, live.reads)
	}
	// The controller writes; the API server answers version 2; the cache still shows 1.
	live.objs[key] = version("2", "Relocating")
	v.Seen(live.objs[key])
	if got := get(); got != "Relocating" || live.reads != 1 {
		t.Fatalf("cache behind the write: %q with %d live reads, want Relocating from the API server", got, live.reads)
	}
	cached.objs[key] = version("2", "Relocating")
	if got := get(); got != "Relocating" || live.reads != 1 {
		t.Fatalf("cache caught up: %q with %d live reads, want no further live read", got, live.reads)
	}
	// Someone else writes: the cache is ahead of what was seen, one live read makes it the newest.
	cached.objs[key], live.objs[key] = version("3", "Relocated"), version("3", "Relocated")
	if got := get(); got != "Relocated" || live.reads != 2 {
		t.Fatalf("cache ahead: %q with %d live reads, want one live read", got, live.reads)
	}
	if got := get(); got != "Relocated" || live.reads != 2 {
		t.Fatalf("settled: %q with %d live reads, want none", got, live.reads)
	}
}

func TestAnObjectGoneIsForgottenAndANilLiveReaderReadsTheCache(t *testing.T) {
	key := client.ObjectKey{Namespace: "ns", Name: "cm"}
	cached := &copies{objs: map[client.ObjectKey]*corev1.ConfigMap{}}
	v := &Versions{}
	v.Seen(version("7", "Deleting"))
	err := v.Get(context.Background(), cached, nil, key, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("err = %v, want NotFound", err)
	}
	if !v.Shows(version("1", "Deployed")) {
		t.Fatal("a gone object is still remembered: a new one of the same name would be read live forever")
	}
	cached.objs[key] = version("1", "Deployed")
	v.Seen(version("2", "Relocating"))
	cm := &corev1.ConfigMap{}
	if err := v.Get(context.Background(), cached, nil, key, cm); err != nil || cm.ResourceVersion != "1" {
		t.Fatalf("without a live reader: %v, version %q, want the cached copy", err, cm.ResourceVersion)
	}
}
