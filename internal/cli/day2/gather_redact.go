package day2

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// redacted replaces every secret value in what gather writes.
const redacted = "<redacted>"

// minScrubbed is the shortest secret value scrubbed from the text of every file: shorter
// values (a flag such as "true", a port) would scrub ordinary words and are no credential.
const minScrubbed = 8

// lastApplied is kubectl's annotation holding an object as last applied: for a Secret, its data.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// redactor removes secrets from what gather writes, in two layers. Structurally: a Secret keeps
// its name, type and key names, never its values; no object keeps its managedFields or
// kubectl's last-applied annotation; every container's literal environment values and
// arguments are dropped (in a pod and in the pod template of a workload, ephemeral and init
// containers included).
// Then textually, over every file (logs and events included): every value of every Secret read,
// every credential inside a kubeconfig value, and the credentials of the clients gather uses,
// in clear and in base64, are replaced with <redacted>.
type redactor struct {
	values map[string]bool
}

func newRedactor() *redactor { return &redactor{values: map[string]bool{}} }

// addValue records a secret value to scrub, in clear and in base64.
func (r *redactor) addValue(v []byte) {
	s := strings.TrimSpace(string(v))
	if len(s) < minScrubbed {
		return
	}
	r.values[s] = true
	r.values[base64.StdEncoding.EncodeToString([]byte(s))] = true
	r.values[base64.StdEncoding.EncodeToString(v)] = true
	// A PEM key is escaped in JSON and YAML: scrub each of its lines too. (Not every multi-line
	// value: a kubeconfig's lines are ordinary YAML, its credentials are added one by one.)
	if strings.Contains(s, "-----BEGIN") {
		for _, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); len(line) >= minScrubbed && !strings.HasPrefix(line, "-----") {
				r.values[line] = true
			}
		}
	}
	if kc, err := clientcmd.Load(v); err == nil && len(kc.AuthInfos)+len(kc.Clusters) > 0 {
		for _, u := range kc.AuthInfos {
			r.addValue([]byte(u.Token))
			r.addValue(u.ClientKeyData)
			r.addValue(u.ClientCertificateData)
			r.addValue([]byte(u.Password))
		}
	}
}

// addConfig records the credentials of a client's configuration.
func (r *redactor) addConfig(cfg *rest.Config) {
	if cfg == nil {
		return
	}
	r.addValue([]byte(cfg.BearerToken))
	r.addValue(cfg.KeyData)
	r.addValue(cfg.CertData)
	r.addValue([]byte(cfg.Password))
}

// secretKeyIsConfig says whether a Secret's key holds configuration rather than a credential:
// an S3 profile Secret's endpoint, bucket, region and insecure flag, a ServiceAccount token
// Secret's namespace and CA certificate. Their values are still never written as Secret data;
// they are only not scrubbed from other files, where a DRPolicy names the same endpoint and
// bucket and every object its namespace.
func secretKeyIsConfig(key string) bool {
	k := strings.ToLower(key)
	if k == "namespace" || strings.HasSuffix(k, "ca.crt") {
		return true
	}
	for _, w := range []string{"endpoint", "bucket", "region", "insecure"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// object redacts one object in place; a Secret's values are recorded to be scrubbed.
func (r *redactor) object(u *unstructured.Unstructured) {
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	if ann := u.GetAnnotations(); ann != nil {
		if _, ok := ann[lastApplied]; ok {
			delete(ann, lastApplied)
			u.SetAnnotations(ann)
		}
	}
	switch u.GetKind() {
	case "Secret":
		r.secret(u)
	case "Pod":
		redactPodSpec(u.Object, "spec")
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController":
		redactPodSpec(u.Object, "spec", "template", "spec")
	case "CronJob":
		redactPodSpec(u.Object, "spec", "jobTemplate", "spec", "template", "spec")
	}
}

// secret replaces a Secret's data with its key names and sizes.
func (r *redactor) secret(u *unstructured.Unstructured) {
	for _, field := range []string{"data", "stringData"} {
		m, ok := u.Object[field].(map[string]any)
		if !ok {
			continue
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, _ := m[k].(string)
			raw := []byte(s)
			if field == "data" {
				if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
					raw = dec
				}
			}
			if !secretKeyIsConfig(k) {
				r.addValue(raw)
			}
			m[k] = fmt.Sprintf("%s (%d bytes)", redacted, len(raw))
		}
	}
}

// redactPodSpec drops, in the pod spec at path of obj, what may hold a credential in every
// container (init and ephemeral ones too): the literal values of its environment variables,
// its arguments, and its command but for the program (`sh -c "psql postgres://u:p@db"`).
// References (valueFrom, envFrom) name a Secret or a field, never a value, and stay.
func redactPodSpec(obj map[string]any, path ...string) {
	for _, field := range []string{"containers", "initContainers", "ephemeralContainers"} {
		at := append(append([]string(nil), path...), field)
		cs, found, _ := unstructured.NestedSlice(obj, at...)
		if !found {
			continue
		}
		for _, c := range cs {
			if cm, ok := c.(map[string]any); ok {
				redactContainer(cm)
			}
		}
		_ = unstructured.SetNestedSlice(obj, cs, at...)
	}
}

func redactContainer(c map[string]any) {
	env, _ := c["env"].([]any)
	for _, e := range env {
		if em, ok := e.(map[string]any); ok {
			if _, has := em["value"]; has {
				em["value"] = redacted
			}
		}
	}
	if args, ok := c["args"].([]any); ok {
		for i := range args {
			args[i] = redacted
		}
	}
	if cmd, ok := c["command"].([]any); ok {
		for i := 1; i < len(cmd); i++ {
			cmd[i] = redacted
		}
	}
}

// scrub replaces every recorded value in b, the longest first (a value may contain another).
func (r *redactor) scrub(b []byte) []byte {
	vals := make([]string, 0, len(r.values))
	for v := range r.values {
		vals = append(vals, v)
	}
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	for _, v := range vals {
		b = bytes.ReplaceAll(b, []byte(v), []byte(redacted))
	}
	return b
}
