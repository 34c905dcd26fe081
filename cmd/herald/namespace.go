package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/heraldhq/herald"
)

func newNamespaceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "namespace", Short: "Prepare a Temporal namespace for Herald"}
	var retention time.Duration
	setup := &cobra.Command{
		Use:   "setup [--retention 72h]",
		Short: "Create the namespace if it is missing and register Herald's search attributes",
		Long: `Create the namespace (--namespace) on the Temporal cluster at --address if it does not
exist, then register Herald's search attributes in it (HeraldStatus, HeraldEndpoint,
HeraldEventType, HeraldCircuit, HeraldDisabled, HeraldEventId, HeraldTenant, all Keyword, and
HeraldSubscriptions, a KeywordList): the missing ones, so rerun it
after upgrading to a release that adds one. Safe to run on every start: what exists is
kept, and an existing namespace keeps its retention.

It does what deploy/temporal/scripts/setup-namespace.sh does with the temporal CLI, for
hosts that have herald but not that CLI. It fails at once when the frontend does not
answer: the script retries it until the cluster is up.`,
		Example:     `  herald namespace setup --address temporal.internal:7233 --namespace herald --retention 168h`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotationNoKeys: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if retention < 24*time.Hour {
				return fmt.Errorf("%w: --retention %s: Temporal keeps closed workflows at least 24h; give 24h or more", errUsage, retention)
			}
			ctx := cmd.Context()
			c, err := g.dial(ctx, nil)
			if err != nil {
				return err
			}
			defer c.Close()
			return setupNamespace(ctx, c, g.namespace, retention, cmd.OutOrStdout().Write)
		},
	}
	setup.Flags().DurationVar(&retention, "retention", 72*time.Hour, "how long Temporal keeps closed workflows of a namespace it creates")
	cmd.AddCommand(setup)
	return cmd
}

// setupNamespace creates namespace ns with retention when it is missing, waits until the
// frontend knows it, and registers Herald's search attributes that it lacks.
func setupNamespace(ctx context.Context, c client.Client, ns string, retention time.Duration, write func([]byte) (int, error)) error {
	say := func(format string, a ...any) { _, _ = write(fmt.Appendf(nil, format+"\n", a...)) }
	svc := c.WorkflowService()
	_, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	var notFound *serviceerror.NamespaceNotFound
	switch {
	case err == nil:
		say("namespace %s exists", ns)
	case errors.As(err, &notFound):
		_, err := svc.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(retention),
		})
		var exists *serviceerror.NamespaceAlreadyExists
		if err != nil && !errors.As(err, &exists) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		say("created namespace %s (retention %s)", ns, retention)
	default:
		return fmt.Errorf("describe namespace %s: %w", ns, err)
	}
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return fmt.Errorf("list search attributes of %s: %w (a namespace just created takes a moment to reach every service: retry)", ns, err)
	}
	missing := herald.SearchAttributeTypes()
	for name, typ := range list.GetCustomAttributes() {
		want, ok := missing[name]
		if !ok {
			continue
		}
		if typ != want {
			return fmt.Errorf("search attribute %s exists in %s as %s, Herald needs %s: remove it or use another namespace", name, ns, typ, want)
		}
		delete(missing, name)
	}
	if len(missing) > 0 {
		_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: missing})
		if err != nil {
			return fmt.Errorf("register search attributes in %s: %w", ns, err)
		}
	}
	say("search attributes %s registered in %s", strings.Join(herald.SearchAttributeNames, ", "), ns)
	return nil
}
