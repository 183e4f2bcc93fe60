// Package modroot finds the root of drover's module from a test's working directory. It imports
// nothing of drover's, so any package's tests may use it, including those the lab imports.
package modroot

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
)

// Module is the path of drover's module, as its go.mod names it.
const Module = "github.com/drover-io/drover"

// Find walks up from the working directory to the directory holding drover's go.mod. A go.mod
// of another module on the way (a module nested in the repository, such as hack/helm's) is
// passed by, so the tests of a nested module find the repository's root too.
func Find() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if raw, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declares(raw, Module) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the go.mod of " + Module + " was not found above the working directory")
		}
		dir = parent
	}
}

// declares reports whether the go.mod raw declares module.
func declares(raw []byte, module string) bool {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if f := bytes.Fields(sc.Bytes()); len(f) == 2 && string(f[0]) == "module" && string(f[1]) == module {
			return true
		}
	}
	return false
}
