// Package repocheck holds no code, only tests over the repository as a whole.
//
// The layers (layers_test.go):
//   - production code (cmd/drover aside, which also carries the lab's verbs) imports nothing of
//     the lab, the story, the exercises or internal/metrics/metricstest; the one package of test
//     code under internal/agent, the harness internal/agent/vrg/vrglab, may import the lab, and
//     what imports it depends on the lab through it;
//   - the lab (internal/lab/...) stands under everything that runs on it: it imports neither the
//     story nor the exercises nor drover's hub, agent or CLI;
//   - the hub (internal/hub/...) imports no replication backend (internal/replication/...): it
//     never touches one, and a rule both read (the VolSync key Secret's name) lives in api/;
//   - the story (internal/story) imports no exercise (internal/exercise/...: bench, soak), which
//     drive the story.
//
// The history (history_test.go): no tracked Go, Markdown, YAML, Makefile or shell file names a
// numbered stage of the project's making (a session, stage, round, stop or issue of the work
// followed by its number, the work's sessions even unnumbered, an issue number alone after a
// hash sign); history is told by commits, dates and versions, so such a reference is rewritten
// as the commit and its date, or as the behaviour itself. The test names each offending
// file:line. Another project's issue is cited as owner/repo#N (backube/volsync#1167) or by its
// address, which the rule allows.
package repocheck
