package clilab

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/cli/day2"
	"github.com/drover-io/drover/internal/lab"
)

// What an operator puts in a workload of drover-system (a Deployment's pod template, a pod's
// ephemeral debug container) may carry credentials in clear: an environment value, an
// argument, a shell command. gather writes drover's Deployments and pods into the tarball a
// person attaches to a bug report; none of those values may be in it, while the variables'
// names and the programs stay.
func TestGatherLeavesNoEnvironmentValueArgumentOrCommandOfAPodTemplate(t *testing.T) {
	const (
		envValue = "planted-env-value-c41d9a0e"
		argValue = "--s3-secret=planted-arg-value-5e8b17"
		initEnv  = "planted-init-env-2b6f0d"
		cmdValue = "psql postgres://drover:planted-cmd-password-93ad@db"
		debugEnv = "planted-debug-env-a7c3e1"
	)
	east := clusterClient(lab.East)
	ctx := t.Context()
	labels := map[string]string{"app": "leaky"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: lab.DroverNamespace, Name: "leaky"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Env: []corev1.EnvVar{{Name: "INIT_TOKEN", Value: initEnv}}}},
				Containers: []corev1.Container{{Name: "main", Image: "drover", Args: []string{"agent", argValue},
					Env: []corev1.EnvVar{{Name: "AWS_SECRET_ACCESS_KEY", Value: envValue}}}},
			}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: lab.DroverNamespace, Name: "leaky-debug"},
		Spec: corev1.PodSpec{NodeName: "no-such-node", Containers: []corev1.Container{{Name: "main", Image: "drover",
			Command: []string{"sh", "-c", cmdValue}}}}}
	for _, o := range []client.Object{dep, pod} {
		if err := east.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = east.Delete(ctx, dep)
		_ = east.Delete(ctx, pod, client.GracePeriodSeconds(0))
		for range 100 {
			if apierrors.IsNotFound(east.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", Env: []corev1.EnvVar{{Name: "DEBUG_PASSWORD", Value: debugEnv}}}}}
	if err := east.SubResource("ephemeralcontainers").Update(ctx, pod); err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(t.TempDir(), "gather.tar.gz")
	var out bytes.Buffer
	if err := day2.Gather(ctx, restConfig(lab.Hub), &out, day2.GatherOptions{File: file}); err != nil {
		t.Fatalf("gather failed: %v\n%s", err, out.String())
	}
	files := untar(t, file)
	deployments := string(files["drover-gather/east/namespaces/drover-system/deployments.apps.yaml"])
	pods := string(files["drover-gather/east/namespaces/drover-system/pods.yaml"])
	for _, v := range []string{envValue, argValue, initEnv, cmdValue, debugEnv} {
		for name, body := range files {
			if bytes.Contains(body, []byte(v)) {
				t.Errorf("%s holds %q", name, v)
			}
		}
	}
	for _, want := range []string{"name: leaky", "AWS_SECRET_ACCESS_KEY", "INIT_TOKEN"} {
		if !strings.Contains(deployments, want) {
			t.Errorf("the Deployments of drover-system lack %q:\n%s", want, deployments)
		}
	}
	for _, want := range []string{"name: leaky-debug", "DEBUG_PASSWORD", "- sh"} {
		if !strings.Contains(pods, want) {
			t.Errorf("the pods of drover-system lack %q:\n%s", want, pods)
		}
	}
}
