package crds

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Compare lists how the lab's CRD of an external kind differs from the upstream CRD of the same
// group and kind, as "field path: what differs" lines, empty when the lab's schema is a faithful
// subset of upstream's. The lab schema holds every field drover writes or reads, so each of its
// fields must exist upstream at the same path with the same type, format, enum, required-ness and
// item types (and list and map merge types), and each field upstream requires under an object the lab knows must be in the lab
// schema (drover sets it, or the API server would refuse drover's objects). Compare also checks
// the names, the scope, the served versions and the status subresource, which change how drover's
// requests are routed and validated.
func Compare(lab, upstream *apiextensionsv1.CustomResourceDefinition) []string {
	diffs := compareNames(lab.Spec, upstream.Spec)
	for _, v := range lab.Spec.Versions {
		if !v.Served {
			continue
		}
		up := servedVersion(upstream, v.Name)
		if up == nil {
			continue // compareNames reports the missing version
		}
		diffs = append(diffs, compareSubresources(v, *up)...)
		labSchema, upSchema := versionSchema(v), versionSchema(*up)
		for _, d := range CompareSchema("", labSchema, upSchema) {
			diffs = append(diffs, v.Name+": "+d)
		}
	}
	return diffs
}

// compareNames compares group, kind, plural, scope and the names of the served versions.
func compareNames(lab, up apiextensionsv1.CustomResourceDefinitionSpec) []string {
	var diffs []string
	differ := func(what, l, u string) {
		if l != u {
			diffs = append(diffs, fmt.Sprintf("%s: %q in the lab, %q upstream", what, l, u))
		}
	}
	differ("group", lab.Group, up.Group)
	differ("kind", lab.Names.Kind, up.Names.Kind)
	differ("plural", lab.Names.Plural, up.Names.Plural)
	differ("scope", string(lab.Scope), string(up.Scope))
	differ("served versions", strings.Join(servedNames(lab), ","), strings.Join(servedNames(up), ","))
	return diffs
}

func servedNames(spec apiextensionsv1.CustomResourceDefinitionSpec) []string {
	var names []string
	for _, v := range spec.Versions {
		if v.Served {
			names = append(names, v.Name)
		}
	}
	sort.Strings(names)
	return names
}

func servedVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i, v := range crd.Spec.Versions {
		if v.Served && v.Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// compareSubresources reports a status subresource that only one side has: with it, the main
// resource ignores status and drover must write status through /status; without it, the reverse.
func compareSubresources(lab, up apiextensionsv1.CustomResourceDefinitionVersion) []string {
	hasStatus := func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Subresources != nil && v.Subresources.Status != nil
	}
	if hasStatus(lab) != hasStatus(up) {
		return []string{fmt.Sprintf("%s: status subresource %t in the lab, %t upstream", lab.Name, hasStatus(lab), hasStatus(up))}
	}
	return nil
}

func versionSchema(v apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.JSONSchemaProps {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return &apiextensionsv1.JSONSchemaProps{}
	}
	return v.Schema.OpenAPIV3Schema
}

// CompareSchema compares the lab's schema of the field at path with upstream's, and recursively
// every field below it that the lab's schema has. path is "" at the root; fields are joined with
// ".", a list's items are "[]" and a map's values "{}".
func CompareSchema(path string, lab, up *apiextensionsv1.JSONSchemaProps) []string {
	if up == nil {
		return []string{fieldName(path) + ": in the lab schema but not upstream"}
	}
	diffs := compareScalar(path, lab, up)
	diffs = append(diffs, compareRequired(path, lab, up)...)
	for _, name := range sortedKeys(lab.Properties) {
		l := lab.Properties[name]
		var u *apiextensionsv1.JSONSchemaProps
		if p, ok := up.Properties[name]; ok {
			u = &p
		} else if up.XPreserveUnknownFields != nil && *up.XPreserveUnknownFields {
			continue // upstream keeps any field here unvalidated
		}
		diffs = append(diffs, CompareSchema(join(path, name), &l, u)...)
	}
	if lab.Items != nil && lab.Items.Schema != nil {
		var u *apiextensionsv1.JSONSchemaProps
		if up.Items != nil {
			u = up.Items.Schema
		}
		diffs = append(diffs, CompareSchema(path+"[]", lab.Items.Schema, u)...)
	}
	if lab.AdditionalProperties != nil && lab.AdditionalProperties.Schema != nil {
		var u *apiextensionsv1.JSONSchemaProps
		if up.AdditionalProperties != nil {
			u = up.AdditionalProperties.Schema
		}
		diffs = append(diffs, CompareSchema(path+"{}", lab.AdditionalProperties.Schema, u)...)
	}
	return diffs
}

// compareScalar compares what the field itself accepts: type, format, enum, int-or-string.
func compareScalar(path string, lab, up *apiextensionsv1.JSONSchemaProps) []string {
	var diffs []string
	field := fieldName(path)
	// The API server validates an int-or-string field as integer or string whatever its type
	// says (apiextensions-apiserver, ConvertJSONSchemaPropsWithPostProcess).
	bothIntOrString := lab.XIntOrString && up.XIntOrString
	if lab.Type != up.Type && !bothIntOrString {
		diffs = append(diffs, fmt.Sprintf("%s: type %q in the lab, %q upstream", field, lab.Type, up.Type))
	}
	if lab.Format != up.Format {
		diffs = append(diffs, fmt.Sprintf("%s: format %q in the lab, %q upstream", field, lab.Format, up.Format))
	}
	if lab.XIntOrString != up.XIntOrString {
		diffs = append(diffs, fmt.Sprintf("%s: x-kubernetes-int-or-string %t in the lab, %t upstream", field, lab.XIntOrString, up.XIntOrString))
	}
	if l, u := enumValues(lab.Enum), enumValues(up.Enum); !slices.Equal(l, u) {
		diffs = append(diffs, fmt.Sprintf("%s: enum %v in the lab, %v upstream", field, l, u))
	}
	return append(diffs, compareMerge(field, lab, up)...)
}

// compareMerge compares how server-side apply and strategic merges treat a list or an object:
// the list type and keys, and the map type, with the API server's defaults for unset ones.
func compareMerge(field string, lab, up *apiextensionsv1.JSONSchemaProps) []string {
	var diffs []string
	orDefault := func(s *string, def string) string {
		if s == nil {
			return def
		}
		return *s
	}
	if lab.Type == "array" {
		if l, u := orDefault(lab.XListType, "atomic"), orDefault(up.XListType, "atomic"); l != u {
			diffs = append(diffs, fmt.Sprintf("%s: x-kubernetes-list-type %q in the lab, %q upstream", field, l, u))
		}
		if !slices.Equal(lab.XListMapKeys, up.XListMapKeys) {
			diffs = append(diffs, fmt.Sprintf("%s: x-kubernetes-list-map-keys %v in the lab, %v upstream", field, lab.XListMapKeys, up.XListMapKeys))
		}
	}
	if lab.Type == "object" {
		if l, u := orDefault(lab.XMapType, "granular"), orDefault(up.XMapType, "granular"); l != u {
			diffs = append(diffs, fmt.Sprintf("%s: x-kubernetes-map-type %q in the lab, %q upstream", field, l, u))
		}
	}
	return diffs
}

// compareRequired compares the required-ness of the object's fields that the lab has, and
// reports those upstream requires that the lab lacks.
func compareRequired(path string, lab, up *apiextensionsv1.JSONSchemaProps) []string {
	var diffs []string
	for _, name := range sortedKeys(lab.Properties) {
		if _, ok := up.Properties[name]; !ok {
			continue // reported as a field not upstream
		}
		l, u := slices.Contains(lab.Required, name), slices.Contains(up.Required, name)
		if l != u {
			diffs = append(diffs, fmt.Sprintf("%s: required %t in the lab, %t upstream", join(path, name), l, u))
		}
	}
	for _, name := range up.Required {
		if _, ok := lab.Properties[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: required upstream but not in the lab schema", join(path, name)))
		}
	}
	return diffs
}

// enumValues renders enum values as their JSON, sorted, so that order does not matter.
func enumValues(enum []apiextensionsv1.JSON) []string {
	out := make([]string, 0, len(enum))
	for _, e := range enum {
		out = append(out, string(e.Raw))
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func fieldName(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}
