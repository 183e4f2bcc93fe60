package kubelet

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// imageBinary finds the binary standing for image: by its name without tag or digest, or by that
// name's last path element.
func imageBinary(images map[string]string, image string) (string, bool) {
	name := image
	if i := strings.Index(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	if bin, ok := images[name]; ok {
		return bin, true
	}
	bin, ok := images[name[strings.LastIndex(name, "/")+1:]]
	return bin, ok
}

// knownImages lists the image names this kubelet runs, for messages.
func knownImages(images map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(images)), ", ")
}

// argv is the command line of a container: the image's binary stands for the entrypoint when
// command is empty, and for command[0] otherwise (an image has one binary); $(VAR) references
// are expanded from the container's environment, as a kubelet does.
func argv(binary string, c *corev1.Container, env map[string]string) []string {
	out := []string{binary}
	if len(c.Command) > 1 {
		for _, a := range c.Command[1:] {
			out = append(out, expand(a, env))
		}
	}
	for _, a := range c.Args {
		out = append(out, expand(a, env))
	}
	return out
}

// narrowWildcardBinds rewrites an argument that binds a port the container declares on all
// addresses (":8081", "0.0.0.0:8081", "[::]:8081", alone or as "--flag=:8081") to the pod's IP.
// A real pod has a network namespace of its own, where "all addresses" are the pod's; the lab's
// processes share the machine's, where two pods on :8081 would clash.
func narrowWildcardBinds(args []string, c *corev1.Container, podIP string) []string {
	declared := map[string]bool{}
	for _, p := range c.Ports {
		declared[strconv.Itoa(int(p.ContainerPort))] = true
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		flag, value, hasFlag := strings.Cut(a, "=")
		if !hasFlag || !strings.HasPrefix(flag, "-") {
			flag, value = "", a
		}
		host, port, err := net.SplitHostPort(value)
		if err != nil || !declared[port] || (host != "" && host != "0.0.0.0" && host != "::") {
			continue
		}
		narrowed := net.JoinHostPort(podIP, port)
		if flag != "" {
			narrowed = flag + "=" + narrowed
		}
		out[i] = narrowed
	}
	return out
}

// expand replaces $(NAME) with env's value, leaves unknown references as they are and turns
// $$ into $, following Kubernetes' rules for command, args and env values.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// containerEnv resolves a container's environment: the kubelet's base (Options.Env, PATH,
// HOSTNAME, KUBERNETES_SERVICE_*), then env in order, each value expanded against those before
// it. envFrom is not supported.
func (w *podWorker) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container) ([]string, map[string]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(name, value string) {
		if _, ok := vars[name]; !ok {
			order = append(order, name)
		}
		vars[name] = value
	}
	for _, kv := range append([]string{defaultPath, "HOME=/"}, w.k.opts.Env...) {
		name, value, _ := strings.Cut(kv, "=")
		set(name, value)
	}
	set("HOSTNAME", pod.Name)
	set("KUBERNETES_SERVICE_HOST", w.k.apiHost)
	set("KUBERNETES_SERVICE_PORT", w.k.apiPort)
	set("KUBERNETES_SERVICE_PORT_HTTPS", w.k.apiPort)
	if len(c.EnvFrom) > 0 {
		return nil, nil, fmt.Errorf("container %s uses envFrom, which the lab kubelet does not support", c.Name)
	}
	for _, e := range c.Env {
		value, err := w.envValue(ctx, pod, e, vars)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to resolve env %s of container %s: %w", e.Name, c.Name, err)
		}
		set(e.Name, value)
	}
	env := make([]string, 0, len(order))
	for _, name := range order {
		env = append(env, name+"="+vars[name])
	}
	return env, vars, nil
}

func (w *podWorker) envValue(ctx context.Context, pod *corev1.Pod, e corev1.EnvVar, vars map[string]string) (string, error) {
	src := e.ValueFrom
	switch {
	case src == nil:
		return expand(e.Value, vars), nil
	case src.FieldRef != nil:
		return fieldValue(pod, w.ip.String(), src.FieldRef.FieldPath)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		files, err := w.secretFiles(ctx, pod.Namespace, ref.Name, nil, ref.Optional)
		if err != nil {
			return "", err
		}
		return keyValue(files, ref.Key, "secret "+ref.Name, ref.Optional)
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		files, err := w.configMapFiles(ctx, pod.Namespace, ref.Name, nil, ref.Optional)
		if err != nil {
			return "", err
		}
		return keyValue(files, ref.Key, "config map "+ref.Name, ref.Optional)
	default:
		return "", fmt.Errorf("env %s has a source the lab kubelet does not support (value, fieldRef, secretKeyRef, configMapKeyRef)", e.Name)
	}
}

func keyValue(data map[string][]byte, key, from string, optional *bool) (string, error) {
	v, ok := data[key]
	if !ok && !ptr.Deref(optional, false) {
		return "", fmt.Errorf("key %s is missing in %s", key, from)
	}
	return string(v), nil
}

// fieldValue resolves the downward API's field paths that a pod's processes ask for.
func fieldValue(pod *corev1.Pod, podIP, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return serviceAccountName(pod), nil
	case "status.podIP":
		return podIP, nil
	case "status.hostIP":
		return "127.0.0.1", nil
	}
	if key, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return pod.Labels[strings.TrimSuffix(key, "']")], nil
	}
	if key, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return pod.Annotations[strings.TrimSuffix(key, "']")], nil
	}
	return "", fmt.Errorf("field path %s is not supported by the lab kubelet", path)
}
