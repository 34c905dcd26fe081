package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/server"
)

func newTokenCmd(g *globals) *cobra.Command {
	var tokensFile string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke the tokens of the HTTP API and dashboard",
		Long: `Tokens let producers and operators (operator tokens: everything) and customers (tenant
tokens: only their tenant's endpoints, events and dead letters) use herald serve. Only a
SHA-256 hash of each token is stored, in the tokens file (mode 0600); the token itself is
printed once, when created. Every herald serve instance must read the same file.`,
	}
	cmd.PersistentFlags().StringVar(&tokensFile, "tokens-file", envOr("HERALD_TOKENS_FILE", server.DefaultTokensFile), "tokens file (env HERALD_TOKENS_FILE)")
	open := func() (*server.TokenStore, error) {
		s, err := server.OpenTokenStore(tokensFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		return s, nil
	}

	var operator bool
	var tenant, note string
	create := &cobra.Command{
		Use:   "create (--operator | --tenant NAME)",
		Short: "Create a token and print it once",
		Example: `  herald token create --operator --note "billing service"
  herald token create --tenant acme`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			tok, t, err := s.Create(operator, tenant, note)
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			if g.output == "json" {
				return printJSON(cmd.OutOrStdout(), map[string]any{"id": t.ID, "operator": t.Operator, "tenant": t.Tenant, "token": tok})
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Created token %s (%s) in %s.\n", t.ID, t.Who(), s.Path())
			fmt.Fprintf(w, "Token (shown once, keep it secret):\n  %s\n", tok)
			return nil
		},
	}
	create.Flags().BoolVar(&operator, "operator", false, "an operator token: every endpoint, event and dead letter")
	create.Flags().StringVar(&tenant, "tenant", "", "a tenant token: only this tenant's endpoints, events and dead letters (herald-ops is reserved)")
	create.Flags().StringVar(&note, "note", "", "what the token is for (shown by list)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens: ids and who they speak for (never the tokens)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			toks, err := s.List()
			if err != nil {
				return err
			}
			if g.output == "json" {
				type row struct {
					ID       string `json:"id"`
					Operator bool   `json:"operator"`
					Tenant   string `json:"tenant,omitempty"`
					Note     string `json:"note,omitempty"`
					Created  string `json:"created_at"`
				}
				rows := []row{}
				for _, t := range toks {
					rows = append(rows, row{t.ID, t.Operator, t.Tenant, t.Note, t.CreatedAt.Format("2006-01-02T15:04:05Z07:00")})
				}
				return printJSON(cmd.OutOrStdout(), rows)
			}
			if len(toks) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "No tokens in %s. Create one: %s\n", s.Path(), tokenCreate(s.Path()))
				return nil
			}
			tw := newTable(cmd.OutOrStdout(), "ID", "FOR", "CREATED", "NOTE")
			for _, t := range toks {
				tw.row(t.ID, t.Who(), fmtTime(t.CreatedAt), t.Note)
			}
			return tw.flush()
		},
	}

	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token; its dashboard sessions end at once",
		Args:  exactArgs(1, "give the token id (see herald token list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			if err := s.Revoke(args[0]); err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Revoked token %s.\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// tokenCreate is the command line that creates an operator token in the tokens file path.
func tokenCreate(path string) string {
	line := "herald token create --operator"
	if path != server.DefaultTokensFile {
		line += " --tokens-file " + shellQuote(path)
	}
	return line
}
