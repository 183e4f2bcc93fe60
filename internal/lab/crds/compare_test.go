package crds

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// object builds an object schema of the named fields.
func object(required []string, fields map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: fields, Required: required}
}

func str() apiextensionsv1.JSONSchemaProps { return apiextensionsv1.JSONSchemaProps{Type: "string"} }

func enum(values ...string) apiextensionsv1.JSONSchemaProps {
	s := str()
	for _, v := range values {
		s.Enum = append(s.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + v + `"`)})
	}
	return s
}

func list(items apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
}

func dict(values apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &values}}
}

func withFormat(s apiextensionsv1.JSONSchemaProps, format string) apiextensionsv1.JSONSchemaProps {
	s.Format = format
	return s
}

func TestCompareSchemaReportsEachDifferenceWithItsPath(t *testing.T) {
	upstream := object(nil, map[string]apiextensionsv1.JSONSchemaProps{
		"spec": object([]string{"name", "mode"}, map[string]apiextensionsv1.JSONSchemaProps{
			"name":    str(),
			"mode":    enum("Fast", "Slow"),
			"count":   {Type: "integer", Format: "int32"},
			"when":    withFormat(str(), "date-time"),
			"labels":  dict(str()),
			"volumes": list(object(nil, map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}})),
			"extra":   {Type: "object", XPreserveUnknownFields: new(true)},
			"size":    {Type: "string", XIntOrString: true},
		}),
	})
	tests := []struct {
		name string
		lab  apiextensionsv1.JSONSchemaProps
		want []string
	}{
		{
			name: "a subset of upstream with the same types, enums and required fields is no difference",
			lab: object(nil, map[string]apiextensionsv1.JSONSchemaProps{
				"spec": object([]string{"mode", "name"}, map[string]apiextensionsv1.JSONSchemaProps{
					"name": str(), "mode": enum("Slow", "Fast"), "labels": dict(str()),
					"extra": object(nil, map[string]apiextensionsv1.JSONSchemaProps{"anything": str()}),
				}),
			}),
		},
		{
			name: "int-or-string fields of different declared types are no difference",
			lab:  specWith(map[string]apiextensionsv1.JSONSchemaProps{"size": {XIntOrString: true}}),
		},
		{
			name: "a string where upstream takes an int-or-string is reported",
			lab:  specWith(map[string]apiextensionsv1.JSONSchemaProps{"size": str()}),
			want: []string{"spec.size: x-kubernetes-int-or-string false in the lab, true upstream"},
		},
		{
			name: "a field of another type is reported",
			lab:  specWith(map[string]apiextensionsv1.JSONSchemaProps{"count": str()}),
			want: []string{`spec.count: type "string" in the lab, "integer" upstream`, `spec.count: format "" in the lab, "int32" upstream`},
		},
		{
			name: "a field of another format is reported",
			lab:  specWith(map[string]apiextensionsv1.JSONSchemaProps{"when": str()}),
			want: []string{`spec.when: format "" in the lab, "date-time" upstream`},
		},
		{
			name: "other enum values are reported",
			lab:  specWith(map[string]apiextensionsv1.JSONSchemaProps{"mode": enum("Fast", "Medium")}),
			want: []string{`spec.mode: enum ["Fast" "Medium"] in the lab, ["Fast" "Slow"] upstream`},
		},
		{
			name: "an enum upstream has and the lab lacks is reported",
			lab:  specWith(map[string]apiextensionsv1.JSONSchemaProps{"mode": str()}),
			want: []string{`spec.mode: enum [] in the lab, ["Fast" "Slow"] upstream`},
		},
		{
			name: "a field the lab requires and upstream does not is reported",
			lab: object(nil, map[string]apiextensionsv1.JSONSchemaProps{
				"spec": object([]string{"name", "mode", "count"}, map[string]apiextensionsv1.JSONSchemaProps{
					"name": str(), "mode": enum("Fast", "Slow"), "count": {Type: "integer", Format: "int32"},
				}),
			}),
			want: []string{"spec.count: required true in the lab, false upstream"},
		},
		{
			name: "a field upstream requires that the lab has as optional is reported",
			lab: object(nil, map[string]apiextensionsv1.JSONSchemaProps{
				"spec": object([]string{"name"}, map[string]apiextensionsv1.JSONSchemaProps{"name": str(), "mode": enum("Fast", "Slow")}),
			}),
			want: []string{"spec.mode: required false in the lab, true upstream"},
		},
		{
			name: "a field upstream requires that the lab lacks is reported",
			lab: object(nil, map[string]apiextensionsv1.JSONSchemaProps{
				"spec": object([]string{"name"}, map[string]apiextensionsv1.JSONSchemaProps{"name": str()}),
			}),
			want: []string{"spec.mode: required upstream but not in the lab schema"},
		},
		{
			name: "a field missing upstream is reported",
			lab:  specWith(map[string]apiextensionsv1.JSONSchemaProps{"colour": str()}),
			want: []string{"spec.colour: in the lab schema but not upstream"},
		},
		{
			name: "a list's item fields are compared",
			lab: specWith(map[string]apiextensionsv1.JSONSchemaProps{
				"volumes": list(object(nil, map[string]apiextensionsv1.JSONSchemaProps{"size": str(), "tier": str()})),
			}),
			want: []string{`spec.volumes[].size: type "string" in the lab, "integer" upstream`, "spec.volumes[].tier: in the lab schema but not upstream"},
		},
		{
			name: "a map's values are compared",
			lab:  specWith(map[string]apiextensionsv1.JSONSchemaProps{"labels": dict(apiextensionsv1.JSONSchemaProps{Type: "integer"})}),
			want: []string{`spec.labels{}: type "integer" in the lab, "string" upstream`},
		},
		{
			name: "a list merged by key where upstream replaces it whole is reported",
			lab: specWith(map[string]apiextensionsv1.JSONSchemaProps{"volumes": func() apiextensionsv1.JSONSchemaProps {
				l := list(object(nil, map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}))
				l.XListType, l.XListMapKeys = new("map"), []string{"size"}
				return l
			}()}),
			want: []string{`spec.volumes: x-kubernetes-list-type "map" in the lab, "atomic" upstream`, "spec.volumes: x-kubernetes-list-map-keys [size] in the lab, [] upstream"},
		},
		{
			name: "an atomic map where upstream merges its keys is reported",
			lab: specWith(map[string]apiextensionsv1.JSONSchemaProps{"labels": func() apiextensionsv1.JSONSchemaProps {
				d := dict(str())
				d.XMapType = new("atomic")
				return d
			}()}),
			want: []string{`spec.labels: x-kubernetes-map-type "atomic" in the lab, "granular" upstream`},
		},
		{
			name: "a list where upstream has a string is reported once, not for its items",
			lab:  specWith(map[string]apiextensionsv1.JSONSchemaProps{"name": list(str())}),
			want: []string{`spec.name: type "array" in the lab, "string" upstream`, "spec.name[]: in the lab schema but not upstream"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CompareSchema("", &tc.lab, &upstream)
			if !slices.Equal(got, tc.want) {
				t.Errorf("differences:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// specWith is a lab schema whose spec has upstream's required fields and the given ones.
func specWith(fields map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	all := map[string]apiextensionsv1.JSONSchemaProps{"name": str(), "mode": enum("Fast", "Slow")}
	for k, v := range fields {
		all[k] = v
	}
	return object(nil, map[string]apiextensionsv1.JSONSchemaProps{"spec": object([]string{"name", "mode"}, all)})
}

func crd(mutate func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
	schema := object(nil, map[string]apiextensionsv1.JSONSchemaProps{"spec": object(nil, map[string]apiextensionsv1.JSONSchemaProps{"name": str()})})
	c := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.io", Scope: apiextensionsv1.NamespaceScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema},
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		}},
	}}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func TestCompareReportsNamesScopeVersionsAndSubresources(t *testing.T) {
	tests := []struct {
		name     string
		upstream func(*apiextensionsv1.CustomResourceDefinition)
		want     []string
	}{
		{name: "the same CRD is no difference"},
		{
			name: "an unserved upstream version is ignored",
			upstream: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1"})
			},
		},
		{
			name:     "another plural is reported",
			upstream: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Names.Plural = "widgetses" },
			want:     []string{`plural: "widgets" in the lab, "widgetses" upstream`},
		},
		{
			name:     "another scope is reported",
			upstream: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Scope = apiextensionsv1.ClusterScoped },
			want:     []string{`scope: "Namespaced" in the lab, "Cluster" upstream`},
		},
		{
			name:     "other served versions are reported",
			upstream: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Name = "v2" },
			want:     []string{`served versions: "v1" in the lab, "v2" upstream`},
		},
		{
			name:     "a status subresource only the lab has is reported",
			upstream: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Subresources = nil },
			want:     []string{"v1: status subresource true in the lab, false upstream"},
		},
		{
			name: "a schema difference is reported with its version",
			upstream: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["name"] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
			},
			want: []string{`v1: spec.name: type "string" in the lab, "integer" upstream`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(crd(nil), crd(tc.upstream))
			if !slices.Equal(got, tc.want) {
				t.Errorf("differences:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
