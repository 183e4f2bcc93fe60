package deployer_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab/deployer"
)

func TestLoadDir(t *testing.T) {
	t.Run("the demo app is a headless Service and a StatefulSet of writers, in file-name order", func(t *testing.T) {
		g := NewWithT(t)
		objs, err := deployer.LoadDir(appDir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(objs).To(HaveLen(2))
		g.Expect(objs[0].GetKind()).To(Equal("Service"))
		g.Expect(objs[1].GetKind()).To(Equal("StatefulSet"))
		for _, o := range objs {
			g.Expect(o.GetName()).To(Equal("db"))
			g.Expect(o.GetNamespace()).To(BeEmpty(), "the deployer chooses the namespace")
		}
	})

	t.Run("several documents of a file are read and empty ones skipped", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		writeFile(g, dir, "b.yml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: three\n")
		writeFile(g, dir, "a.yaml", "# a comment only\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n")
		writeFile(g, dir, "README.md", "not a manifest")
		g.Expect(os.Mkdir(filepath.Join(dir, "nested"), 0o750)).To(Succeed())
		writeFile(g, filepath.Join(dir, "nested"), "x.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nested\n")
		objs, err := deployer.LoadDir(dir)
		g.Expect(err).NotTo(HaveOccurred())
		names := []string{}
		for _, o := range objs {
			names = append(names, o.GetName())
		}
		g.Expect(names).To(Equal([]string{"one", "two", "three"}))
	})

	t.Run("a document without a kind is an error naming the file and the document", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		writeFile(g, dir, "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\napiVersion: v1\nmetadata:\n  name: nokind\n")
		_, err := deployer.LoadDir(dir)
		g.Expect(err).To(MatchError(And(ContainSubstring("document 2 of "+filepath.Join(dir, "bad.yaml")), ContainSubstring("no kind"))))
	})

	t.Run("a directory without manifests is an error", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		_, err := deployer.LoadDir(dir)
		g.Expect(err).To(MatchError(ContainSubstring("holds no manifests")))
		_, err = deployer.LoadDir(filepath.Join(dir, "missing"))
		g.Expect(err).To(MatchError(ContainSubstring("failed to read manifest directory")))
	})
}

func writeFile(g Gomega, dir, name, content string) {
	g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)).To(Succeed())
}
