// Package actions is the CLI's verbs that move an application or change its protection:
// plan (plan.go: the preview of an action, its preconditions from the core's checks, the
// hub's steps and the expected loss), failover and relocate (action.go: Act refuses with the
// preview's first blocking check, asks the hub by a merge patch of the DRPlacementControl's
// spec and, with --wait, follows the hub until the application is Available on the target),
// their fleet forms (mass.go selects and previews the batch, mass_act.go asks and follows it,
// report.go prints the plans and the summary), and protect and unprotect (protect.go).
package actions
