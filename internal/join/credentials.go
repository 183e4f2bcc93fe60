package join

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// ReadS3Credentials reads an access key ID and a secret access key from a file in either form
// users already have: an AWS shared credentials file (aws_access_key_id = ... under [default]
// or before any section) or an environment file (AWS_ACCESS_KEY_ID=..., optionally with
// `export`). Keys are matched case-insensitively.
func ReadS3Credentials(path string) (accessKeyID, secretAccessKey string, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("failed to read S3 credentials file %s: %w", path, err)
	}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
			continue
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		case section != "" && section != "default":
			continue
		}
		key, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"'`)
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "aws_access_key_id":
			accessKeyID = value
		case "aws_secret_access_key":
			secretAccessKey = value
		}
	}
	if accessKeyID == "" || secretAccessKey == "" {
		return "", "", fmt.Errorf("S3 credentials file %s has no aws_access_key_id and aws_secret_access_key (in [default] or as AWS_ACCESS_KEY_ID=... lines)", path)
	}
	return accessKeyID, secretAccessKey, nil
}
