package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
)

// The -o formats, as kubectl names them. The empty format is each verb's table or text.
const (
	OutputWide = "wide"
	OutputName = "name"
	OutputJSON = "json"
	OutputYAML = "yaml"
	// outputJSONPath prefixes a JSONPath template: -o jsonpath='{.items[*].metadata.name}'.
	outputJSONPath = "jsonpath="
)

// CLIGroupVersion is the apiVersion of what the CLI reports that no API server stores (a plan,
// the result of an action, the versions): objects of the same shape as Kubernetes', so that
// -o json|yaml|jsonpath reads alike on every verb.
const CLIGroupVersion = "cli.drover.io/v1alpha1"

// CheckOutput refuses an -o format the verb does not print; formats lists those it does besides
// the table and jsonpath=TEMPLATE, which every verb with -o takes.
func CheckOutput(value string, formats ...string) error {
	if value == "" || slices.Contains(formats, value) {
		return nil
	}
	if tmpl, ok := strings.CutPrefix(value, outputJSONPath); ok {
		if _, err := parseJSONPath(tmpl); err != nil {
			return Usage(err)
		}
		return nil
	}
	return Usage(fmt.Errorf("unknown output format %q: use %s or jsonpath=TEMPLATE, or leave -o out for a table", value, strings.Join(formats, ", ")))
}

// Structured says whether the format prints objects (json, yaml, jsonpath) rather than text.
func Structured(value string) bool {
	return value == OutputJSON || value == OutputYAML || strings.HasPrefix(value, outputJSONPath)
}

// parseJSONPath parses a template as kubectl does: a template without braces is one expression.
func parseJSONPath(tmpl string) (*jsonpath.JSONPath, error) {
	if tmpl == "" {
		return nil, fmt.Errorf("-o jsonpath= needs a template, such as jsonpath='{.items[*].metadata.name}'")
	}
	if !strings.Contains(tmpl, "{") {
		tmpl = "{" + tmpl + "}"
	}
	jp := jsonpath.New("output").AllowMissingKeys(true)
	if err := jp.Parse(tmpl); err != nil {
		return nil, fmt.Errorf("-o jsonpath: the template %q does not parse: %w", tmpl, err)
	}
	return jp, nil
}

// WriteStructured prints obj as JSON, YAML or through a JSONPath template.
func WriteStructured(w io.Writer, format string, obj any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("failed to encode the output: %w", err)
	}
	var out []byte
	switch format {
	case OutputJSON:
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return err
		}
		out = append(buf.Bytes(), '\n')
	case OutputYAML:
		if out, err = yaml.JSONToYAML(raw); err != nil {
			return fmt.Errorf("failed to encode the output as YAML: %w", err)
		}
	default:
		return writeJSONPath(w, strings.TrimPrefix(format, outputJSONPath), raw)
	}
	_, err = w.Write(out)
	return err
}

func writeJSONPath(w io.Writer, tmpl string, raw []byte) error {
	jp, err := parseJSONPath(tmpl)
	if err != nil {
		return Usage(err)
	}
	var data any
	if err := json.Unmarshal(raw, &data); err != nil {
		return err
	}
	if err := jp.Execute(w, data); err != nil {
		return fmt.Errorf("-o jsonpath: %w", err)
	}
	return nil
}

// listOf is a Kubernetes List of items (kind List, apiVersion v1), as kubectl get -o prints.
func listOf[T any](items []T) map[string]any {
	if items == nil {
		items = []T{}
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}, "items": items}
}

// PrintList prints items as a Kubernetes List in format (json, yaml or jsonpath=).
func PrintList[T any](w io.Writer, items []T, format string) error {
	return WriteStructured(w, format, listOf(items))
}

// resourceName is kubectl's -o name of one of drover's objects: kind.group/name.
func resourceName(kind, name string) string {
	return strings.ToLower(kind) + "." + v1alpha1.GroupVersion.Group + "/" + name
}

// WriteNames prints the -o name line of each of drover's objects of kind.
func WriteNames(w io.Writer, kind string, names []string) error {
	for _, n := range names {
		if _, err := fmt.Fprintln(w, resourceName(kind, n)); err != nil {
			return err
		}
	}
	return nil
}

// ObjectMeta names what a CLI report is about.
type ObjectMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// AsObject is a copy of the DRPlacementControl as kubectl prints it: with its kind and
// apiVersion, without its managed fields.
func AsObject(d *v1alpha1.DRPlacementControl) *v1alpha1.DRPlacementControl {
	d = d.DeepCopy()
	d.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DRPlacementControl"))
	d.ManagedFields = nil
	return d
}
