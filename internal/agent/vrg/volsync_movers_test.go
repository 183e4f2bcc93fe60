package vrg

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestMoverAnnotationsSetAndRemoveOnlyTheGroupsOwn(t *testing.T) {
	const group = "app/db"
	for _, c := range []struct {
		name    string
		have    map[string]string
		want    bool
		result  map[string]string
		changed bool
	}{
		{"privileged movers asked: the namespace is annotated and marked", nil, true,
			map[string]string{privilegedMoversAnnotation: "true", AnnotationPrivilegedMoversBy: group}, true},
		{"already privileged by someone else: left as it is", map[string]string{privilegedMoversAnnotation: "true"}, true,
			map[string]string{privilegedMoversAnnotation: "true"}, false},
		{"no longer asked: the group's own annotation goes", map[string]string{privilegedMoversAnnotation: "true", AnnotationPrivilegedMoversBy: group, "other": "x"}, false,
			map[string]string{"other": "x"}, true},
		{"no longer asked: someone else's annotation stays", map[string]string{privilegedMoversAnnotation: "true"}, false,
			map[string]string{privilegedMoversAnnotation: "true"}, false},
		{"another group's annotation stays", map[string]string{privilegedMoversAnnotation: "true", AnnotationPrivilegedMoversBy: "app/other"}, false,
			map[string]string{privilegedMoversAnnotation: "true", AnnotationPrivilegedMoversBy: "app/other"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			got, changed := moverAnnotations(c.have, group, c.want)
			g.Expect(changed).To(Equal(c.changed))
			g.Expect(got).To(Equal(c.result))
		})
	}
}
