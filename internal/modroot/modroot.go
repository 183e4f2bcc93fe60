// Package modroot finds the root of drover's module from a test's working directory. It imports
// nothing of drover's, so any package's tests may use it, including those the lab imports.
package modroot

import (
	"errors"
	"os"
	"path/filepath"
)

// Find walks up from the working directory to the directory holding go.mod.
func Find() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}
