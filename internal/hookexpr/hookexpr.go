// Package hookexpr compiles the CEL expression of a recipe's check hook (api/v1alpha1
// CheckHook.expression): the object read bound to `self`, of a dynamic type, giving a bool. The
// hub compiles it to refuse a recipe whose check cannot run; the agent compiles it to run it.
// One compiler serves both, so that the hub accepts exactly what the agent can run.
package hookexpr

import (
	"fmt"

	"github.com/google/cel-go/cel"
)

// costLimit bounds one evaluation: a check runs every second for up to an hour, on objects a
// tenant writes.
const costLimit = 1_000_000

// env is the environment of every check expression: self, of a dynamic type (neither the hub
// nor the agent knows every kind's schema).
var env, envErr = cel.NewEnv(cel.Variable("self", cel.DynType))

// Compile compiles expr into a program that evaluates it over an object bound to self. An
// expression that does not compile, or whose type is known not to be a bool, is refused: the
// error is CEL's own, or "it returns T, not a bool".
func Compile(expr string) (cel.Program, error) {
	if envErr != nil {
		return nil, envErr
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("it returns %s, not a bool", t)
	}
	return env.Program(ast, cel.CostLimit(costLimit))
}
