package kubelet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// defaultTokenSeconds is the lifetime asked for a pod's token, as a kubelet's projected
	// ServiceAccount token (3607 s).
	defaultTokenSeconds = 3607
	// dataDir is the symlink that an atomic update swaps, as the kubelet's atomic writer does, so
	// readers never see half of a Secret and file watchers see one change.
	dataDir = "..data"
)

// tokenFile is one ServiceAccount token of a pod, refreshed after 80 % of its lifetime.
type tokenFile struct {
	token    string
	issued   time.Time
	lifetime time.Duration
}

func (t *tokenFile) fresh(now time.Time) bool {
	return t != nil && now.Before(t.issued.Add(t.lifetime*8/10))
}

func automountToken(pod *corev1.Pod) bool {
	return ptr.Deref(pod.Spec.AutomountServiceAccountToken, true)
}

func serviceAccountName(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return pod.Spec.ServiceAccountName
	}
	return "default"
}

// saDir is the host directory mounted at the ServiceAccount path when no volume is mounted there
// (the lab's API servers run without the ServiceAccount admission plugin, which would add a
// projected volume for it).
func (w *podWorker) saDir() string { return filepath.Join(w.dir, "serviceaccount") }

func (w *podWorker) volumeDir(name string) string { return filepath.Join(w.dir, "volumes", name) }

// refreshServiceAccount writes token, ca.crt and namespace for rest.InClusterConfig.
func (w *podWorker) refreshServiceAccount(ctx context.Context, pod *corev1.Pod) error {
	token, err := w.requestToken(ctx, pod, "", "", defaultTokenSeconds)
	if err != nil {
		return err
	}
	return writeAtomic(w.saDir(), map[string][]byte{
		"token": []byte(token), "ca.crt": w.k.caData, "namespace": []byte(pod.Namespace),
	})
}

// requestToken returns the pod's token kept under key, asking TokenRequest for a new one bound to
// the pod when it is missing or past 80 % of its lifetime.
func (w *podWorker) requestToken(ctx context.Context, pod *corev1.Pod, key, audience string, seconds int64) (string, error) {
	if t := w.tokens[key]; t.fresh(time.Now()) {
		return t.token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	sa := serviceAccountName(pod)
	resp, err := w.k.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("failed to request a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	lifetime := time.Until(resp.Status.ExpirationTimestamp.Time)
	w.tokens[key] = &tokenFile{token: resp.Status.Token, issued: time.Now(), lifetime: lifetime}
	return resp.Status.Token, nil
}

// refreshVolumes writes every volume of the pod into its directory.
func (w *podWorker) refreshVolumes(ctx context.Context, pod *corev1.Pod) error {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := w.volumeDir(v.Name)
		var files map[string][]byte
		var err error
		switch {
		case v.EmptyDir != nil:
			if err := w.setUpEmptyDir(pod, v.Name); err != nil {
				return err
			}
			continue
		case v.PersistentVolumeClaim != nil:
			continue // mountClaims
		case v.Secret != nil:
			files, err = w.secretFiles(ctx, pod.Namespace, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional)
		case v.ConfigMap != nil:
			files, err = w.configMapFiles(ctx, pod.Namespace, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional)
		case v.Projected != nil:
			files, err = w.projectedFiles(ctx, pod, v.Name, v.Projected.Sources)
		case v.DownwardAPI != nil:
			files, err = w.downwardFiles(pod, v.DownwardAPI.Items)
		default:
			return fmt.Errorf("volume %s of pod %s/%s has a type the lab kubelet does not support (only emptyDir, persistentVolumeClaim, secret, configMap, projected, downwardAPI)", v.Name, pod.Namespace, pod.Name)
		}
		if err != nil {
			return err
		}
		if err := writeAtomic(dir, files); err != nil {
			return err
		}
	}
	return nil
}

func (w *podWorker) secretFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool) (map[string][]byte, error) {
	secret, err := w.k.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && ptr.Deref(optional, false) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to get secret %s/%s for a volume: %w", ns, name, err)
	}
	return project(secret.Data, items)
}

func (w *podWorker) configMapFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool) (map[string][]byte, error) {
	cm, err := w.k.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && ptr.Deref(optional, false) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to get config map %s/%s for a volume: %w", ns, name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return project(data, items)
}

// project picks the listed keys under their paths, or every key under its own name.
func project(data map[string][]byte, items []corev1.KeyToPath) (map[string][]byte, error) {
	if len(items) == 0 {
		return data, nil
	}
	out := map[string][]byte{}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("key %s is missing for a volume item", it.Key)
		}
		out[it.Path] = v
	}
	return out, nil
}

func (w *podWorker) projectedFiles(ctx context.Context, pod *corev1.Pod, volume string, sources []corev1.VolumeProjection) (map[string][]byte, error) {
	out := map[string][]byte{}
	for i, src := range sources {
		var files map[string][]byte
		var err error
		switch {
		case src.Secret != nil:
			files, err = w.secretFiles(ctx, pod.Namespace, src.Secret.Name, src.Secret.Items, src.Secret.Optional)
		case src.ConfigMap != nil:
			files, err = w.configMapFiles(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional)
		case src.DownwardAPI != nil:
			files, err = w.downwardFiles(pod, src.DownwardAPI.Items)
		case src.ServiceAccountToken != nil:
			var token string
			key := fmt.Sprintf("%s/%d", volume, i)
			token, err = w.requestToken(ctx, pod, key, src.ServiceAccountToken.Audience,
				ptr.Deref(src.ServiceAccountToken.ExpirationSeconds, defaultTokenSeconds))
			files = map[string][]byte{src.ServiceAccountToken.Path: []byte(token)}
		default:
			return nil, fmt.Errorf("a projected volume of pod %s/%s has a source the lab kubelet does not support", pod.Namespace, pod.Name)
		}
		if err != nil {
			return nil, err
		}
		for k, v := range files {
			out[k] = v
		}
	}
	return out, nil
}

func (w *podWorker) downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, it := range items {
		if it.FieldRef == nil {
			return nil, fmt.Errorf("downward API item %s of pod %s/%s is not a fieldRef, which is all the lab kubelet supports", it.Path, pod.Namespace, pod.Name)
		}
		v, err := fieldValue(pod, w.ip.String(), it.FieldRef.FieldPath)
		if err != nil {
			return nil, err
		}
		out[it.Path] = []byte(v)
	}
	return out, nil
}

// writeAtomic makes dir hold exactly files, swapping a "..data" symlink to a new timestamped
// directory and pointing one symlink per top-level name into it, as the kubelet's atomic writer
// does. It writes nothing when the content is unchanged.
func writeAtomic(dir string, files map[string][]byte) error {
	if unchanged(dir, files) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // readable by the container's user
		return fmt.Errorf("failed to create volume directory %s: %w", dir, err)
	}
	old, _ := os.Readlink(filepath.Join(dir, dataDir))
	ts, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("failed to create a directory in %s: %w", dir, err)
	}
	if err := os.Chmod(ts, 0o755); err != nil { //nolint:gosec // volume files are readable by the container's user, as a kubelet writes them
		return fmt.Errorf("failed to open %s: %w", ts, err)
	}
	tops := map[string]bool{}
	for name, data := range files {
		p := filepath.Join(ts, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil { //nolint:gosec // readable by the container's user
			return fmt.Errorf("failed to create directory for %s: %w", p, err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil { //nolint:gosec // readable by the container's user, as a kubelet writes volume files
			return fmt.Errorf("failed to write %s: %w", p, err)
		}
		tops[strings.SplitN(name, "/", 2)[0]] = true
	}
	tmpLink := filepath.Join(dir, dataDir+"_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(ts), tmpLink); err != nil {
		return fmt.Errorf("failed to link %s: %w", tmpLink, err)
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDir)); err != nil {
		return fmt.Errorf("failed to swap %s: %w", filepath.Join(dir, dataDir), err)
	}
	return relink(dir, tops, old)
}

// relink points one symlink per top-level name into ..data and removes stale names and the old
// data directory.
func relink(dir string, tops map[string]bool, old string) error {
	for name := range tops {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(dataDir, name) {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(filepath.Join(dataDir, name), link); err != nil {
			return fmt.Errorf("failed to link %s: %w", link, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("failed to read volume directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") && !tops[e.Name()] {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if old != "" {
		_ = os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// unchanged reports whether dir's current data holds exactly files.
func unchanged(dir string, files map[string][]byte) bool {
	data := filepath.Join(dir, dataDir)
	var have []string
	err := filepath.WalkDir(data+"/", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(data+"/", p)
			have = append(have, rel)
		}
		return nil
	})
	if err != nil || len(have) != len(files) {
		return false
	}
	sort.Strings(have)
	for _, name := range have {
		want, ok := files[name]
		if !ok {
			return false
		}
		got, err := os.ReadFile(filepath.Join(data, name))
		if err != nil || !bytes.Equal(got, want) {
			return false
		}
	}
	return true
}
