package main

import (
	"context"
	"fmt"
	"io"
	"reflect"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/cli"
)

// runVerb is the body of a verb that works through the hub, once the command has put its
// arguments in the options o: it checks o (its Validate method, when it has one, then checks, in
// order), connects to the hub the connection flags name, sets *ns (unless ns is nil) to the
// namespace to use (-n, else the kubeconfig context's), and runs verb, the verb's library
// function, printing to the command's stdout. verb takes the hub as a client (a client.Reader,
// client.Client or client.WithWatch) or as its REST configuration.
func runVerb[H, O any](cmd *cobra.Command, conn *cli.Connection, o *O, ns *string,
	verb func(ctx context.Context, hub H, w io.Writer, o O) error, checks ...func() error) error {
	if v, ok := any(o).(interface{ Validate() error }); ok {
		checks = append([]func() error{v.Validate}, checks...)
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	hub, namespace, err := connect[H](conn)
	if err != nil {
		return err
	}
	if ns != nil {
		*ns = namespace
	}
	return verb(cmd.Context(), hub, cmd.OutOrStdout(), *o)
}

// connect returns the hub as a verb takes it, H, and the namespace to use: the hub's REST
// configuration, or a client of drover's types (the connection's client.WithWatch, which
// every client interface a verb takes is a part of).
func connect[H any](conn *cli.Connection) (H, string, error) {
	var (
		hub H
		ns  string
		err error
	)
	switch p := any(&hub).(type) {
	case **rest.Config:
		*p, ns, err = conn.Resolve()
	case *client.Reader:
		*p, ns, err = conn.Client()
	case *client.Client:
		*p, ns, err = conn.Client()
	case *client.WithWatch:
		*p, ns, err = conn.Client()
	default:
		err = fmt.Errorf("failed to connect to the hub: no connection gives a %s", reflect.TypeFor[H]())
	}
	return hub, ns, err
}

// argAt returns args[i], or "" when the command was given fewer arguments.
func argAt(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}
