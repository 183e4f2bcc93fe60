package chart

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Spec is one chart the generator writes.
type Spec struct {
	// Name is the chart's name and its directory under charts/.
	Name string
	// Deployment is the name of the release manifests' Deployment that the values tune.
	Deployment string
	// Trees are the kustomize trees under config/ the chart renders; the first is the one its
	// default values select.
	Trees []Tree
}

// Tree is one kustomize tree of a chart and the values that select it.
type Tree struct {
	// Path is the tree under config/, such as agent/cert-manager.
	Path string
	// When is the template condition that selects the tree; empty for a chart of one tree.
	When string
}

// Specs are drover's charts: the hub's, and the agent's with the fence's certificate made by the
// agent itself (the default) or by cert-manager (fence.certificate.source).
func Specs() []Spec {
	return []Spec{
		{Name: "drover-hub", Deployment: "drover-hub", Trees: []Tree{{Path: "hub"}}},
		{Name: "drover-agent", Deployment: "drover-agent", Trees: []Tree{
			{Path: "agent", When: `eq .Values.fence.certificate.source "agent"`},
			{Path: "agent/cert-manager", When: `eq .Values.fence.certificate.source "cert-manager"`},
		}},
	}
}

// toggles are the objects a value turns off, by kind/name, and the condition that keeps them.
var toggles = map[string]string{
	// Helm v3 cannot create a namespace the chart also holds (docs/install.md): namespace.create=false
	// leaves it to whoever made it.
	"Namespace/drover-system": ".Values.namespace.create",
	// Both charts hold the scrapers' ClusterRole; on a cluster with both, one chart keeps it.
	"ClusterRole/drover-metrics-reader": ".Values.metrics.readerRole.create",
	"Service/drover-hub-metrics":        ".Values.metrics.service.enabled",
	"Service/drover-agent-metrics":      ".Values.metrics.service.enabled",
	// One replica cannot keep one available while a node drains: the budget would block it.
	"PodDisruptionBudget/drover-agent": "and .Values.podDisruptionBudget.enabled (gt (int .Values.replicas) 1)",
	// Off by default: it needs the Prometheus Operator's CRD.
	"PrometheusRule/drover": ".Values.metrics.prometheusRule.enabled",
}

// Expressions of the values spliced into every object.
const (
	commonLabels      = ".Values.commonLabels"
	commonAnnotations = ".Values.commonAnnotations"
	podLabels         = "(merge (dict) .Values.podLabels .Values.commonLabels)"
	podAnnotations    = ".Values.podAnnotations"
	ruleLabels        = "(merge (dict) .Values.metrics.prometheusRule.labels .Values.commonLabels)"
	ruleNamespace     = `{{ .Values.metrics.prometheusRule.namespace | default "drover-system" }}`
	image             = `{{ include "drover.image" . | quote }}`
)

// setHooks sets into u, a copy of one of the chart's objects, the sentinels of the values that
// tune it.
func (s Spec) setHooks(h *hooks, u *unstructured.Unstructured) error {
	meta, _ := u.Object["metadata"].(map[string]any)
	if meta == nil {
		return fmt.Errorf("%s %s has no metadata", u.GetKind(), u.GetName())
	}
	labels := commonLabels
	if u.GetKind() == "PrometheusRule" {
		labels = ruleLabels
		if u.GetNamespace() != "" {
			return fmt.Errorf("the PrometheusRule %s names namespace %s; the chart's value sets it", u.GetName(), u.GetNamespace())
		}
		meta["namespace"] = h.add(scalar(ruleNamespace))
	}
	mapHook(h, meta, "labels", labels)
	mapHook(h, meta, "annotations", commonAnnotations)
	if u.GetKind() == "Deployment" && u.GetName() == s.Deployment {
		return deploymentHooks(h, u)
	}
	return nil
}

// mapHook adds the entries of expr to the map field of obj, creating it when it is missing.
func mapHook(h *hooks, obj map[string]any, field, expr string) {
	if m, ok := obj[field].(map[string]any); ok && len(m) > 0 {
		m[h.add(mergedEntries(expr))] = ""
		return
	}
	delete(obj, field)
	obj[h.add(newMap(field, expr))] = ""
}

// deploymentHooks sets the Deployment's values: replicas, strategy, the pod's labels,
// annotations and scheduling, its container's image, pull policy, resources and added args.
func deploymentHooks(h *hooks, u *unstructured.Unstructured) error {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	tmeta, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "metadata")
	pod, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if spec == nil || tmeta == nil || pod == nil || len(containers) != 1 {
		return fmt.Errorf("the Deployment %s is not one pod template of one container", u.GetName())
	}
	c, _ := containers[0].(map[string]any)
	if err := absent(u.GetName(), spec, "strategy"); err != nil {
		return err
	}
	if err := absent(u.GetName(), pod, "nodeSelector", "tolerations", "affinity", "imagePullSecrets", "priorityClassName"); err != nil {
		return err
	}
	if err := absent(u.GetName(), c, "imagePullPolicy"); err != nil {
		return err
	}
	spec["replicas"] = h.add(scalar("{{ .Values.replicas }}"))
	spec["strategy"] = h.add(optionalBlock(".Values.strategy"))
	mapHook(h, tmeta, "labels", podLabels)
	mapHook(h, tmeta, "annotations", podAnnotations)
	for _, field := range []string{"nodeSelector", "tolerations", "affinity", "imagePullSecrets"} {
		pod[field] = h.add(optionalBlock(".Values." + field))
	}
	pod["priorityClassName"] = h.add(optionalScalar(".Values.priorityClassName"))
	c["image"] = h.add(scalar(image))
	c["imagePullPolicy"] = h.add(optionalScalar(".Values.image.pullPolicy"))
	c["resources"] = h.add(optionalBlock(".Values.resources"))
	args, _ := c["args"].([]any)
	items := argItems
	if u.GetName() == "drover-agent" {
		items = agentArgItems
	}
	c["args"] = append(args, h.add(items))
	pod["containers"] = []any{c}
	tmpl := map[string]any{"metadata": tmeta, "spec": pod}
	spec["template"] = tmpl
	return unstructured.SetNestedMap(u.Object, spec, "spec")
}

// absent refuses a field the release manifests set where the chart's value, empty by default,
// would replace it: rendered with its defaults the chart would lose it.
func absent(deployment string, obj map[string]any, fields ...string) error {
	for _, f := range fields {
		if _, ok := obj[f]; ok {
			return fmt.Errorf("the Deployment %s sets %s, which the chart's value replaces with nothing by default: "+
				"give the chart's value that default in values.yaml and splice it in internal/chart", deployment, f)
		}
	}
	return nil
}
