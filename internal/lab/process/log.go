package process

import (
	"os"
	"strings"
)

// Tail returns the last n lines of a log.
func Tail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.Join(last(strings.Split(strings.TrimRight(string(raw), "\n"), "\n"), n), "\n")
}

// ErrorExcerpt returns the error lines of a log (klog's E and F lines, or lines that say
// "error"), at most n of the last ones, or the last n lines when none look like errors.
func ErrorExcerpt(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var errs []string
	for _, l := range lines {
		if strings.HasPrefix(l, "E") || strings.HasPrefix(l, "F") || strings.Contains(strings.ToLower(l), "error") {
			errs = append(errs, l)
		}
	}
	if len(errs) > 0 {
		lines = errs
	}
	return strings.Join(last(lines, n), "\n")
}

func last(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}
