package join_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// rotateOptions rotates the store key of profile through the lab's hub, reaching the managed
// clusters with the operator's kubeconfigs, reporting into out.
func rotateOptions(t *testing.T, profile string, out *bytes.Buffer) join.RotateOptions {
	return join.RotateOptions{Profile: profile, Hub: labCluster(t, lab.Hub), Clusters: operatorKubeconfigs(t, lab.East, lab.West), Out: out}
}

// copyKeys reads the store keys of profile's Secret on cluster, and its annotation
// AnnotationRotating.
func copyKeys(t *testing.T, cluster, profile string) (objectstore.Keyring, string) {
	t.Helper()
	s := getSecret(t, cluster, profile)
	keys, err := objectstore.ParseKeyring(string(s.Data[objectstore.SecretStoreKeysKey]), string(s.Data[objectstore.SecretStoreKeyIDKey]), cluster)
	if err != nil {
		t.Fatalf("the copy of %s on %s holds no usable store keys: %v", profile, cluster, err)
	}
	return keys, s.Annotations[join.AnnotationRotating]
}

// storeOf is the sealed store of profile as an agent on cluster builds it: from that
// cluster's copy of the profile's Secret, against the lab's S3 server of the profile.
func storeOf(t *testing.T, cluster, profile string) objectstore.Store {
	t.Helper()
	p, err := objectstore.ProfileFromSecret(profile, getSecret(t, cluster, profile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := objectstore.NewS3(p)
	if err != nil {
		t.Fatal(err)
	}
	return objectstore.Sealed(s, p.Keys)
}

// rawStore is the lab's S3 server of east, as a holder of its credentials sees its bytes.
func rawStore(t *testing.T) objectstore.Store {
	t.Helper()
	profiles, err := testLab.S3Profiles()
	if err != nil {
		t.Fatal(err)
	}
	p := profiles[0]
	s, err := objectstore.NewS3(objectstore.Profile{Name: "raw", Endpoint: p.Endpoint, Insecure: true, Bucket: p.Bucket, Region: p.Region,
		AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// joinOnEastsStore joins east and west, east's profile on the lab's S3 server of east.
func joinOnEastsStore(t *testing.T) {
	t.Helper()
	profiles, err := testLab.S3Profiles()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := joinOptions(t, lab.East, lab.East, &out)
	o.S3.Endpoint, o.S3.Bucket, o.S3.Region = profiles[0].Endpoint, profiles[0].Bucket, profiles[0].Region
	o.S3.AccessKeyID, o.S3.SecretAccessKey = profiles[0].AccessKeyID, profiles[0].SecretAccessKey
	mustJoin(t, o)
	out.Reset()
	mustJoin(t, joinOptions(t, lab.West, lab.West, &out))
}

func envelopeKeyID(t *testing.T, raw objectstore.Store, key string) string {
	t.Helper()
	body, err := raw.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	id, err := objectstore.EnvelopeKeyID(body)
	if err != nil {
		t.Fatalf("object %s: %v", key, err)
	}
	return id
}

// After a rotation every copy of the profile's Secret seals with the new key: what an agent
// writes then carries the new key ID, and what was sealed before still opens. Retiring the old
// key first reseals under the new key every object still sealed with it, so none needs it; an
// object sealed with it after that is refused, naming the key ID.
func TestARotatedStoreKeySealsNewObjectsAndTheOldKeyIsRetiredOnceNothingNeedsIt(t *testing.T) {
	joinOnEastsStore(t)
	profile := profileName(lab.East)
	raw := rawStore(t)
	t.Cleanup(func() { _ = raw.DeletePrefix(context.Background(), "rotate-test/") })
	before, _ := copyKeys(t, lab.West, profile)
	oldKey, newKey := "rotate-test/old/pvs/a.json", "rotate-test/new/pvs/b.json"
	if err := storeOf(t, lab.West, profile).Put(t.Context(), oldKey, []byte("sealed before")); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := join.RotateStoreKey(t.Context(), rotateOptions(t, profile, &out)); err != nil {
		t.Fatalf("the rotation failed: %v\n%s", err, out.String())
	}
	t.Logf("rotate-store-key:\n%s", out.String())
	hubKeys, rotating := copyKeys(t, lab.Hub, profile)
	id := hubKeys.Current
	if id == before.Current || rotating != "" {
		t.Fatalf("after the rotation the hub's copy seals with %s (before %s) and names %q as being rotated to", id, before.Current, rotating)
	}
	mustContain(t, out.String(), "the hub: Secret drover-system/store-east holds key "+id+" (not current yet)",
		"managed cluster east: Secret drover-system/store-east holds key "+id+" (added, not current yet)",
		"managed cluster west: Secret drover-system/store-east holds key "+id+" (added, not current yet)",
		"Every copy holds key "+id+": making it current", "managed cluster west: Secret drover-system/store-east seals with key "+id+" (was "+before.Current+")")
	if strings.Index(out.String(), "seals with key") < strings.LastIndex(out.String(), "not current yet") {
		t.Errorf("a copy sealed with the new key before every copy held it:\n%s", out.String())
	}
	for _, c := range []string{lab.Hub, lab.East, lab.West} {
		keys, _ := copyKeys(t, c, profile)
		if keys.Current != id || !keys.Has(before.Current) || len(keys.IDs()) != 2 {
			t.Errorf("the copy on %s holds keys %v, current %s; want %s current and %s kept", c, keys.IDs(), keys.Current, id, before.Current)
		}
	}

	east := storeOf(t, lab.East, profile)
	if err := east.Put(t.Context(), newKey, []byte("sealed after")); err != nil {
		t.Fatal(err)
	}
	if got := envelopeKeyID(t, raw, newKey); got != id {
		t.Errorf("an object written after the rotation is sealed with %s, want %s", got, id)
	}
	if body, err := storeOf(t, lab.West, profile).Get(t.Context(), oldKey); err != nil || string(body) != "sealed before" {
		t.Errorf("an object sealed before the rotation does not open on west: %q, %v", body, err)
	}

	out.Reset()
	err := join.RetireStoreKey(t.Context(), rotateOptions(t, profile, &out), id)
	mustContain(t, errString(err), "key "+id+" is the current key of S3 profile store-east")
	// The object still sealed with the old key (its group's primary has not rewritten it yet)
	// is resealed under the new key by the retirement, which then goes on.
	sealedBefore, err := raw.Get(t.Context(), oldKey)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := join.RetireStoreKey(t.Context(), rotateOptions(t, profile, &out), before.Current); err != nil {
		t.Fatalf("the retirement failed: %v\n%s", err, out.String())
	}
	t.Logf("rotate-store-key --retire:\n%s", out.String())
	mustContain(t, out.String(), "Resealed under key "+id, "that were sealed with key "+before.Current, "rotate-test/old (1)",
		"Key "+before.Current+" of S3 profile store-east is retired")
	if got := envelopeKeyID(t, raw, oldKey); got != id {
		t.Errorf("the object sealed before the rotation is sealed with %s after the retirement, want %s", got, id)
	}
	if body, err := storeOf(t, lab.West, profile).Get(t.Context(), oldKey); err != nil || string(body) != "sealed before" {
		t.Errorf("the resealed object does not open on west as it was: %q, %v", body, err)
	}
	for _, c := range []string{lab.Hub, lab.East, lab.West} {
		if keys, _ := copyKeys(t, c, profile); keys.Has(before.Current) || keys.Current != id {
			t.Errorf("after the retirement the copy on %s holds keys %v, current %s", c, keys.IDs(), keys.Current)
		}
	}
	// An object still sealed with the retired key is refused, naming the key.
	if err := raw.Put(t.Context(), oldKey, sealedBefore); err != nil {
		t.Fatal(err)
	}
	_, err = storeOf(t, lab.West, profile).Get(t.Context(), oldKey)
	mustContain(t, errString(err), "sealed with store key ID "+before.Current, "does not hold")
}

// A rotation that cannot reach a cluster stops before making the key current, and says the
// clusters written hold it as a reader only; the next run finishes it with the same key.
func TestAHalfDoneRotationIsFinishedByTheNextRunWithTheSameKey(t *testing.T) {
	var out bytes.Buffer
	mustJoin(t, joinOptions(t, lab.East, lab.East, &out))
	profile := profileName(lab.East)
	before, _ := copyKeys(t, lab.East, profile)
	ghost := unreachableCluster(t, "ghost")

	out.Reset()
	o := rotateOptions(t, profile, &out)
	o.Clusters["ghost"] = join.Cluster{Config: &rest.Config{Host: ghostServer, BearerToken: "not-a-token"}, Source: "the operator's kubeconfig of ghost"}
	err := join.RotateStoreKey(t.Context(), o)
	t.Logf("the first run:\n%s%v", out.String(), err)
	mustContain(t, errString(err), "cluster ghost: ", "cannot reach managed cluster ghost", "as a reader only, which is harmless",
		"drover cluster rotate-store-key --profile store-east")
	hubKeys, rotating := copyKeys(t, lab.Hub, profile)
	eastKeys, _ := copyKeys(t, lab.East, profile)
	if rotating == "" || !hubKeys.Has(rotating) || !eastKeys.Has(rotating) {
		t.Fatalf("the stopped rotation did not record its key on the hub's copy (%q) or give it to east (%v)", rotating, eastKeys.IDs())
	}
	if hubKeys.Current != before.Current || eastKeys.Current != before.Current {
		t.Errorf("the stopped rotation made a key current: the hub's copy seals with %s, east's with %s, want %s", hubKeys.Current, eastKeys.Current, before.Current)
	}

	if err := adminClient(t, lab.Hub).Delete(t.Context(), ghost); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := join.RotateStoreKey(t.Context(), rotateOptions(t, profile, &out)); err != nil {
		t.Fatalf("the second run failed: %v\n%s", err, out.String())
	}
	t.Logf("the second run:\n%s", out.String())
	mustContain(t, out.String(), "Finishing the rotation of S3 profile store-east's store key to "+rotating,
		"managed cluster east: Secret drover-system/store-east holds key "+rotating+" (already held, not current yet)")
	for _, c := range []string{lab.Hub, lab.East} {
		keys, annotation := copyKeys(t, c, profile)
		if keys.Current != rotating || len(keys.IDs()) != 2 || annotation != "" {
			t.Errorf("after the second run the copy on %s holds %v, current %s, annotation %q; want the first run's key %s current beside %s",
				c, keys.IDs(), keys.Current, annotation, rotating, before.Current)
		}
	}
}

// ghostServer is an address nothing listens on.
const ghostServer = "https://127.0.0.1:1"

// unreachableCluster creates on the hub a DRCluster whose kubeconfig names a port nothing
// listens on, and deletes it with the test.
func unreachableCluster(t *testing.T, name string) *v1alpha1.DRCluster {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: ghostServer}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "not-a-token"}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	hub := adminClient(t, lab.Hub)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: join.DefaultNamespace, Name: join.KubeconfigSecretName(name)},
		Data:       map[string][]byte{v1alpha1.KubeconfigSecretKey: raw},
	}
	drc := &v1alpha1.DRCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.DRClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: join.DefaultNamespace, Name: secret.Name}, Region: name, S3ProfileName: "s3-" + name,
		},
	}
	if err := hub.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	if err := hub.Create(t.Context(), drc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = hub.Delete(context.Background(), drc)
		_ = hub.Delete(context.Background(), secret)
	})
	return drc
}

func errString(err error) string {
	if err == nil {
		return "<no error>"
	}
	return err.Error()
}

// Whoever may write to a bucket, without holding any store key, can plant an object whose clear
// envelope header names a key. Such an object must not keep the key from being retired (a
// compromised key would stay a reader for as long as the bucket's writer likes), nor be trusted
// and resealed: the retirement reseals what opens, lists what does not, and goes on.
func TestAnObjectNamingAKeyItWasNotSealedWithDoesNotBlockItsRetirement(t *testing.T) {
	joinOnEastsStore(t)
	profile := profileName(lab.East)
	raw := rawStore(t)
	t.Cleanup(func() { _ = raw.DeletePrefix(context.Background(), "retire-attack/") })
	before, _ := copyKeys(t, lab.West, profile)
	legit, forged := "retire-attack/app/pvs/a.json", "retire-attack/mallory/pvs/x.json"
	if err := storeOf(t, lab.West, profile).Put(t.Context(), legit, []byte("the application's")); err != nil {
		t.Fatal(err)
	}
	// The forger copies a genuine envelope (its header names the key) and changes a byte of it.
	envelope, err := raw.Get(t.Context(), legit)
	if err != nil {
		t.Fatal(err)
	}
	envelope[len(envelope)-1] ^= 0xff
	if err := raw.Put(t.Context(), forged, envelope); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := join.RotateStoreKey(t.Context(), rotateOptions(t, profile, &out)); err != nil {
		t.Fatalf("the rotation failed: %v\n%s", err, out.String())
	}
	hubKeys, _ := copyKeys(t, lab.Hub, profile)

	out.Reset()
	err = join.RetireStoreKey(t.Context(), rotateOptions(t, profile, &out), before.Current)
	t.Logf("rotate-store-key --retire %s: %v\n%s", before.Current, err, out.String())
	if err != nil {
		t.Fatalf("a planted object kept key %s from being retired: %v", before.Current, err)
	}
	mustContain(t, out.String(), "retire-attack/app (1)", "do not open with it, so they were not trusted", forged,
		"Key "+before.Current+" of S3 profile store-east is retired")
	if got := envelopeKeyID(t, raw, legit); got != hubKeys.Current {
		t.Errorf("the application's object is sealed with %s after the retirement, want %s", got, hubKeys.Current)
	}
	after, err := raw.Get(t.Context(), forged)
	if err != nil || !bytes.Equal(after, envelope) {
		t.Errorf("the planted object was rewritten (%v): a forged envelope must not be resealed", err)
	}
	if body, err := storeOf(t, lab.East, profile).Get(t.Context(), legit); err != nil || string(body) != "the application's" {
		t.Errorf("the application's object does not open as it was: %q, %v", body, err)
	}
}
