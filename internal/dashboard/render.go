package dashboard

import (
	"bytes"
	"fmt"
	"html/template"
	"log"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/status"
)

// state is a status shown as a word with a symbol beside it and a class for its colour, so
// that colour is never the only sign.
type state struct{ Word, Symbol, Class string }

// Levels of a state.
const (
	levelOK       = "ok"
	levelWarn     = "warn"
	levelCritical = "critical"
	levelNone     = "none"
)

func stateOf(word, level string) state {
	sym := map[string]string{levelOK: "✓", levelWarn: "⚠", levelCritical: "✖", levelNone: "·"}[level]
	return state{Word: word, Symbol: sym, Class: "s-" + level}
}

// condState shows a condition status: True ok, False critical, anything else unknown.
func condState(status string) state {
	switch status {
	case string(metav1.ConditionTrue):
		return stateOf("True", levelOK)
	case string(metav1.ConditionFalse):
		return stateOf("False", levelCritical)
	case "-", "":
		return stateOf("not reported", levelNone)
	}
	return stateOf(status, levelWarn)
}

// lagLevel judges an RPO lag as drover's alert rules do (config/prometheus): above twice the
// interval the sync-delay warning fires, at three times or more the critical one.
func lagLevel(lag, interval time.Duration) string {
	switch {
	case lag < 0 || interval <= 0:
		return levelNone
	case lag >= 3*interval:
		return levelCritical
	case lag > 2*interval:
		return levelWarn
	}
	return levelOK
}

// lagState is the RPO lag as status prints it, with its level.
func lagState(v status.AppView) state {
	level := lagLevel(v.Lag, v.Interval)
	word := v.Row.RPOLag
	if level == levelNone {
		word = "unknown"
		if v.Lag >= 0 {
			word = v.Row.RPOLag + " (interval unknown)"
		}
	} else {
		word = strings.TrimSuffix(word, " STALE") + " " + level
	}
	return stateOf(word, level)
}

var funcs = template.FuncMap{
	"age": func(t metav1.Time) string { return cli.Age(time.Since(t.Time)) + " ago" },
}

// page is what every page's template gets besides its own data.
type page struct {
	Title string
	// Live says the page has a live part that follows the hub's changes.
	Live bool
	CSRF string
	// Rendered is when the page was computed, in UTC.
	Rendered string
	Data     any
}

// render writes a page, or only its live part when the page's script asks for it.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name, title string, live bool, data any) {
	p := page{Title: title, Live: live, CSRF: s.access.csrf, Rendered: s.now().UTC().Format(time.TimeOnly) + " UTC", Data: data}
	t := s.pages[name]
	if t == nil {
		http.Error(w, "no page "+name, http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	what := "page"
	if r.Header.Get("X-Live-Part") == "1" {
		what = "live"
	}
	if err := t.ExecuteTemplate(&buf, what, p); err != nil {
		log.Printf("dashboard: failed to render %s: %v", name, err)
		http.Error(w, fmt.Sprintf("failed to render the page: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
