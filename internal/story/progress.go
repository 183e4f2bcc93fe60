package story

import (
	"regexp"
	"strings"
)

// maxProgressLine is the length a progress line is cut to: the story's lines are read as they
// scroll by; the whole message stays in the DRPlacementControl's conditions (`drover status`).
const maxProgressLine = 160

// plumbing matches the parts of a wrapped Go error that say how a request failed rather than
// what is wrong: the operation that failed, the request's URL, the socket call.
var plumbing = regexp.MustCompile(`^(failed to |Get "|Post "|Put "|Patch "|Delete "|dial |connect$|read tcp|write tcp|net/http)|://`)

// progressLine turns a condition's message into one line of at most maxProgressLine
// characters that says what is wrong in words: each "; "-separated clause keeps its first part
// and the parts of its error chain that are not plumbing, each once.
func progressLine(msg string) string {
	clauses := strings.Split(msg, "; ")
	for i, clause := range clauses {
		clauses[i] = plainClause(clause)
	}
	return cut(strings.Join(clauses, "; "), maxProgressLine)
}

// plainClause keeps the first part of a clause and the parts of its ": " chain that say
// something in words, dropping repeats.
func plainClause(clause string) string {
	parts := strings.Split(clause, ": ")
	kept := parts[:1]
	seen := map[string]bool{parts[0]: true}
	for _, p := range parts[1:] {
		if plumbing.MatchString(p) || seen[p] {
			continue
		}
		seen[p] = true
		kept = append(kept, p)
	}
	return strings.Join(kept, ": ")
}

// cut shortens s to at most n characters (runes), at a clause boundary when one lies in the
// second half of the limit, else at a word's, and says so with an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := string(r[:n-1])
	if i := strings.LastIndex(head, "; "); i > n/2 {
		head = head[:i]
	} else if i := strings.LastIndex(head, " "); i > n/2 {
		head = head[:i]
	}
	return strings.TrimRight(head, " :;,") + "…"
}
