// Package repocheck holds no code, only tests over the repository as a whole.
//
// The layers (layers_test.go):
//   - production code (cmd/drover aside, which also carries the lab's verbs) imports nothing of
//     the lab, the story or the exercises;
//   - the lab (internal/lab/...) stands under everything that runs on it: it imports neither the
//     story nor the exercises nor drover's hub, agent or CLI;
//   - the story (internal/story) imports no exercise (internal/exercise/...: bench, soak), which
//     drive the story.
package repocheck
