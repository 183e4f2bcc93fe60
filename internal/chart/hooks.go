package chart

import (
	"fmt"
	"regexp"
	"strings"
)

// hooks splice template text into an object's YAML. A hook is a sentinel string set in the
// object before it is written as YAML (as a field's value, as a map key, or as a list item);
// each line holding a sentinel is then replaced by the text its hook produces for the line's
// indentation. Sentinels are plain words, so YAML never quotes them.
type hooks struct {
	produce []func(indent, key string) string
}

// sentinelPattern matches a line holding a sentinel: `<indent>key: S`, `<indent>S: ""` or
// `<indent>- S`.
var sentinelPattern = regexp.MustCompile(`^( *)(- )?(?:([^ :]+): )?(HELMHOOK(\d+)X)(: "")?$`)

// add registers produce and returns its sentinel.
func (h *hooks) add(produce func(indent, key string) string) string {
	h.produce = append(h.produce, produce)
	return fmt.Sprintf("HELMHOOK%dX", len(h.produce)-1)
}

// splice replaces every sentinel line of text. A sentinel that is a key or a value of the first
// field of a list item (`- key: S`) is refused: its replacement could not keep the item's dash.
func (h *hooks) splice(text string) (string, error) {
	lines := strings.Split(text, "\n")
	used := make([]bool, len(h.produce))
	for i, line := range lines {
		if !strings.Contains(line, "HELMHOOK") {
			continue
		}
		m := sentinelPattern.FindStringSubmatch(line)
		if m == nil {
			return "", fmt.Errorf("failed to splice template text into line %q: the hook's sentinel is not alone on it", line)
		}
		var n int
		if _, err := fmt.Sscan(m[5], &n); err != nil || n >= len(h.produce) {
			return "", fmt.Errorf("failed to splice template text into line %q: unknown sentinel", line)
		}
		dash, key := m[2] != "", m[3]
		if dash && (key != "" || m[6] != "") {
			return "", fmt.Errorf("failed to splice template text into line %q: a hook on the first field of a list item", line)
		}
		if dash {
			key = "-"
		}
		used[n] = true
		lines[i] = strings.TrimSuffix(h.produce[n](m[1], key), "\n")
	}
	for n, ok := range used {
		if !ok {
			return "", fmt.Errorf("failed to splice template text: the YAML lost hook %d's sentinel", n)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// lines joins template lines, each at indent.
func lines(indent string, ls ...string) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(indent + l + "\n")
	}
	return b.String()
}

// scalar writes `key: <expr>`: a value replaced by the template expression expr.
func scalar(expr string) func(indent, key string) string {
	return func(indent, key string) string { return lines(indent, key+": "+expr) }
}

// optionalScalar writes `key: <value>` when the value expr is not empty.
func optionalScalar(expr string) func(indent, key string) string {
	return func(indent, key string) string {
		return lines(indent, "{{- with "+expr+" }}", key+": {{ . }}", "{{- end }}")
	}
}

// optionalBlock writes `key:` and the YAML of the map or list expr when it is not empty.
func optionalBlock(expr string) func(indent, key string) string {
	return func(indent, key string) string {
		return lines(indent, "{{- with "+expr+" }}", key+":",
			fmt.Sprintf("  {{- toYaml . | nindent %d }}", len(indent)+2), "{{- end }}")
	}
}

// mergedEntries writes the entries of the map expr, when it is not empty, among the entries of
// the map that holds the sentinel as a key.
func mergedEntries(expr string) func(indent, key string) string {
	return func(indent, _ string) string {
		return lines(indent, "{{- with "+expr+" }}", fmt.Sprintf("{{- toYaml . | nindent %d }}", len(indent)), "{{- end }}")
	}
}

// newMap writes the map named name with the entries of expr, when it is not empty: the sentinel
// is a key of the map that would hold it.
func newMap(name, expr string) func(indent, key string) string {
	return func(indent, _ string) string { return optionalBlock(expr)(indent, name) }
}

// argItems writes the list items of the container's args that the values add.
func argItems(indent, _ string) string {
	return lines(indent,
		"{{- with .Values.adminNamespaces }}",
		`- --admin-namespaces={{ join "," . }}`,
		"{{- end }}",
		"{{- with .Values.systemNamespaces }}",
		`- --system-namespaces={{ join "," . }}`,
		"{{- end }}",
		"{{- range .Values.extraArgs }}",
		"- {{ . | quote }}",
		"{{- end }}")
}

// agentArgItems are argItems of the agent's chart: the namespace floor (restoreFloor), then the
// others.
func agentArgItems(indent, key string) string {
	return lines(indent,
		"{{- with .Values.restoreFloor.quota }}",
		`- --restore-quota={{ include "drover.resourceList" . }}`,
		"{{- end }}",
		"{{- with .Values.restoreFloor.defaultRequest }}",
		`- --restore-default-request={{ include "drover.resourceList" . }}`,
		"{{- end }}") + argItems(indent, key)
}

// escapeActions makes text that holds `{{` (the PrometheusRule's annotations, Prometheus's own
// templates) print itself through Helm's engine.
func escapeActions(text string) string {
	return strings.ReplaceAll(text, "{{", `{{ "{{" }}`)
}
