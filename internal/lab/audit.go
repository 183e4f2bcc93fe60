package lab

// The lab's API servers can keep an audit log, to find which client makes the requests a
// measurement shows: the API servers' metrics count requests by verb and resource, never by
// client. It is off by default (every request then costs a line of JSON on the API server's
// critical path). Options.Audit (`drover lab up --audit`, `drover lab bench --audit`) writes the
// policy into each cluster's directory when the cluster starts; an API server starts with the
// audit log whenever its cluster's directory holds the policy, so a cluster stopped and started
// again keeps logging until `drover lab down`. `drover lab audit` reads the logs.

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

const (
	auditPolicyFile = "audit-policy.yaml"
	auditLogFile    = "kube-apiserver-audit.log"
	// auditPolicy records every request once, when its response is complete, without bodies.
	auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
`
	// auditLogMaxMB bounds the log; one older file is kept beside it.
	auditLogMaxMB = 512
)

func (c *Cluster) auditPolicyPath() string { return filepath.Join(c.dir, auditPolicyFile) }

// AuditLogPath is the cluster's API server's audit log, written while auditing is on.
func (c *Cluster) AuditLogPath() string { return filepath.Join(c.logDir(), auditLogFile) }

// Audited reports whether the cluster's API server starts with an audit log.
func (c *Cluster) Audited() bool {
	_, err := os.Stat(c.auditPolicyPath())
	return err == nil
}

// enableAudit writes the audit policy, so the API server logs from its next start on.
func (c *Cluster) enableAudit() error {
	if err := os.WriteFile(c.auditPolicyPath(), []byte(auditPolicy), 0o600); err != nil {
		return fmt.Errorf("failed to write the audit policy of %s: %w", c.Name, err)
	}
	return nil
}

// checkAudited fails when auditing is asked for and the cluster already runs without it.
func (l *Lab) checkAudited(c *Cluster) error {
	if l.opts.Audit && !c.Audited() {
		return fmt.Errorf("cluster %s runs without an audit log: run `drover lab down`, then bring the lab up again with --audit", c.Name)
	}
	return nil
}

// auditArgs are the API server's audit flags: none unless the cluster is audited.
func (c *Cluster) auditArgs() []string {
	if !c.Audited() {
		return nil
	}
	return []string{
		"--audit-policy-file=" + c.auditPolicyPath(),
		"--audit-log-path=" + c.AuditLogPath(),
		"--audit-log-format=json",
		fmt.Sprintf("--audit-log-maxsize=%d", auditLogMaxMB),
		"--audit-log-maxbackup=1",
	}
}

// AuditCount is how many requests one client made of one verb on one resource.
type AuditCount struct {
	// Client is the user and the program that sent the request: "lab-admin kube-controller-manager/
	// persistent-volume-binder", "system:serviceaccount:drover-system:drover-agent drover".
	Client   string
	Verb     string
	Resource string
	N        int
}

// auditEvent is what AuditCounts and AuditTrace read of an audit event.
type auditEvent struct {
	Stage     string    `json:"stage"`
	Verb      string    `json:"verb"`
	UserAgent string    `json:"userAgent"`
	Received  time.Time `json:"requestReceivedTimestamp"`
	Completed time.Time `json:"stageTimestamp"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// AuditCounts counts the requests an audit log shows received in [from, to), by client, verb
// and resource, the largest first. A line that is not an audit event is skipped; a log that
// does not exist is an error that says how to turn auditing on.
func AuditCounts(path string, from, to time.Time) ([]AuditCount, error) {
	counts := map[AuditCount]int{}
	err := readAudit(path, from, to, func(ev *auditEvent) {
		counts[AuditCount{Client: auditClient(ev.User.Username, ev.UserAgent), Verb: ev.Verb, Resource: ev.resource()}]++
	})
	if err != nil {
		return nil, err
	}
	out := make([]AuditCount, 0, len(counts))
	for k, n := range counts {
		k.N = n
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b AuditCount) int {
		return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Client, b.Client), cmp.Compare(a.Verb, b.Verb), cmp.Compare(a.Resource, b.Resource))
	})
	return out, nil
}

// readAudit calls fn with each completed request of the audit log at path received in
// [from, to), in the log's order.
func readAudit(path string, from, to time.Time, fn func(*auditEvent)) error {
	f, err := os.Open(path) //nolint:gosec // the lab's own log
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no audit log at %s: bring the lab up with --audit (after `drover lab down`)", path)
	}
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Stage != "ResponseComplete" ||
			ev.Received.Before(from) || !ev.Received.Before(to) {
			continue
		}
		fn(&ev)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("failed to read the audit log %s: %w", path, err)
	}
	return nil
}

// AuditRequest is one request of a trace: what one application's namespace saw, in order.
type AuditRequest struct {
	Cluster  string
	Received time.Time
	// Latency is from the request's arrival to its response's end.
	Latency  time.Duration
	Client   string
	Verb     string
	Resource string
	Name     string
	// Code is the response's HTTP status.
	Code int
}

// AuditTrace returns the requests of the audit log at path received in [from, to) on objects
// of namespace ns, or on the namespace itself, in the order received. Cluster-scoped objects
// other than the namespace (a PV) carry no namespace in the log and are not in a trace.
func AuditTrace(cluster, path, ns string, from, to time.Time) ([]AuditRequest, error) {
	var out []AuditRequest
	err := readAudit(path, from, to, func(ev *auditEvent) {
		ref := ev.ObjectRef
		if ref == nil || (ref.Namespace != ns && (ref.Resource != "namespaces" || ref.Name != ns)) {
			return
		}
		req := AuditRequest{
			Cluster: cluster, Received: ev.Received, Latency: ev.Completed.Sub(ev.Received),
			Client: auditClient(ev.User.Username, ev.UserAgent), Verb: ev.Verb, Resource: ev.resource(), Name: ref.Name,
		}
		if ev.ResponseStatus != nil {
			req.Code = ev.ResponseStatus.Code
		}
		out = append(out, req)
	})
	return out, err
}

// WriteAuditTrace writes requests (of one or more clusters) as a table in the order received,
// each at its time after start.
func WriteAuditTrace(w io.Writer, reqs []AuditRequest, start time.Time) error {
	reqs = slices.Clone(reqs)
	slices.SortStableFunc(reqs, func(a, b AuditRequest) int { return a.Received.Compare(b.Received) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tCLUSTER\tCODE\tLATENCY\tVERB\tRESOURCE\tNAME\tCLIENT")
	for _, r := range reqs {
		fmt.Fprintf(tw, "%.3fs\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Received.Sub(start).Seconds(), r.Cluster, r.Code,
			r.Latency.Round(time.Millisecond), r.Verb, r.Resource, r.Name, r.Client)
	}
	return tw.Flush()
}

func (ev auditEvent) resource() string {
	switch {
	case ev.ObjectRef == nil:
		return "(non-resource)"
	case ev.ObjectRef.Subresource != "":
		return ev.ObjectRef.Resource + "/" + ev.ObjectRef.Subresource
	default:
		return ev.ObjectRef.Resource
	}
}

// auditClient names a request's sender: the user and the program of its user agent, with the
// part client-go appends to its default agent when a program names its clients
// ("kube-controller-manager/v1.33.1 (linux/amd64) kubernetes/8adc0f0/persistent-volume-binder").
func auditClient(user, agent string) string {
	program, rest, _ := strings.Cut(agent, "/")
	if _, tail, ok := strings.Cut(rest, " kubernetes/"); ok {
		if _, name, ok := strings.Cut(tail, "/"); ok {
			program += "/" + name
		}
	}
	if program == "" {
		program = "(no user agent)"
	}
	return user + " " + program
}

// WriteAuditTop writes the top counts as a table, each also as requests per second over window.
func WriteAuditTop(w io.Writer, counts []AuditCount, window time.Duration, top int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REQUESTS\tPER SECOND\tVERB\tRESOURCE\tCLIENT")
	total := 0
	for i, c := range counts {
		total += c.N
		if i < top {
			fmt.Fprintf(tw, "%d\t%.1f\t%s\t%s\t%s\n", c.N, float64(c.N)/window.Seconds(), c.Verb, c.Resource, c.Client)
		}
	}
	if len(counts) > top {
		fmt.Fprintf(tw, "(%d more rows)\t\t\t\t\n", len(counts)-top)
	}
	fmt.Fprintf(tw, "%d\t%.1f\tall\t\t\n", total, float64(total)/window.Seconds())
	return tw.Flush()
}
