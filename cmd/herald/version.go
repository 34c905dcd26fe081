package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
)

// versionInfo is what herald version prints.
type versionInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Herald's version",
		Long: `Print the release of this herald binary (and the Go it was built with). Workers show
the same version in their Temporal identity, so the Web UI's list of a task queue's
pollers tells which release each worker runs.`,
		Example:     "  herald version\n  herald version -o json",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotationNoKeys: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionInfo{Version: herald.Version, Go: runtime.Version()}
			if g.output == "json" {
				return printJSON(cmd.OutOrStdout(), v)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "herald %s (%s)\n", v.Version, v.Go)
			return err
		},
	}
}
