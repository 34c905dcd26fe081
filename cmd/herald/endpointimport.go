package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

func newEndpointImportCmd(g *globals) *cobra.Command {
	var (
		parallelism int
		every       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Register or change many endpoints from a JSON Lines file",
		Long: `Register or change many endpoints at once, from FILE (or standard input with -): JSON
Lines, one endpoint per line, each line a JSON object with the endpoint's "id" and the
fields of a single put (the body of PUT /v1/endpoints/{id}: url, tenant, secret, types,
headers, timeout, schedule, attempts, max_in_flight, rate_limit, breaker, ...). Blank
lines are skipped. For example:

  {"id":"acme-orders","tenant":"acme","url":"https://acme.example.com/hooks","types":["order.*"]}
  {"id":"globex","tenant":"globex","url":"https://globex.example.com/webhooks","timeout":"10s"}

Each line is put as herald endpoint put would put it, many at a time (--parallelism).
A line that is not valid JSON or is refused does not stop the others: its line number and
the reason are printed, and the command exits with status 1 once every line has been
tried. Fix the failed lines and run the same import again: it is safe to repeat, as a line
that would change nothing on a registered endpoint is not sent and counts as unchanged.

A new endpoint without a secret gets a generated signing secret, printed once with its
line number: give each line a "secret" to choose them yourself. When the command
returns, a send to a tenant reaches every endpoint it registered.

Progress goes to standard error: a bar on a terminal, else a line every
--progress-interval. Lines go to Herald in calls of at most 10,000; a file of any size can
be imported. At the end, a summary: registered, updated, unchanged and failed lines, and
the rate. With -o json, the summary is one JSON object listing the failed lines and the
generated secrets.`,
		Example: `  herald endpoint import endpoints.jsonl
  generate-endpoints | herald endpoint import -
  herald endpoint import endpoints.jsonl -o json > import-result.json`,
		Args: exactArgs(1, "give the JSON Lines file to import, or - to read standard input"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if parallelism < 1 || parallelism > maxImportParallelism {
				return fmt.Errorf("%w: --parallelism %d: give 1 to %d", errUsage, parallelism, maxImportParallelism)
			}
			if every <= 0 {
				return fmt.Errorf("%w: --progress-interval %s: give a positive duration, e.g. 5s", errUsage, every)
			}
			in, total, closeIn, err := openImport(cmd, args[0])
			if err != nil {
				return err
			}
			defer closeIn()
			ctx, stop := untilInterrupt(cmd)
			defer stop()
			c, err := g.dial(ctx, nil)
			if err != nil {
				return err
			}
			defer c.Close()
			s := starter.New(c, g.starterOptions(func(o *starter.Options) { o.BulkParallelism = parallelism }))
			bar := newProgress(cmd.ErrOrStderr(), "lines", total, every)
			sum, err := importEndpoints(ctx, s, in, bar, func(l importLine) {
				if g.output != "json" {
					printImportLine(cmd.OutOrStdout(), l)
				}
			})
			bar.finish()
			if g.output == "json" {
				if perr := printJSON(cmd.OutOrStdout(), sum); perr != nil {
					return perr
				}
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "Registered %d, updated %d, unchanged %d, failed %d of %d lines in %s (%.1f lines/s)\n",
					sum.Created, sum.Updated, sum.Unchanged, sum.Failed, sum.Lines, time.Duration(sum.Seconds*float64(time.Second)).Round(10*time.Millisecond), sum.RatePerSecond)
			}
			if err != nil {
				return explainCodec(err)
			}
			if sum.Failed > 0 {
				return fmt.Errorf("%d of %d lines failed (listed above with their line numbers): fix them and run the same import again; the lines done are left unchanged", sum.Failed, sum.Lines)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&parallelism, "parallelism", 32, fmt.Sprintf("puts sent at once (1..%d)", maxImportParallelism))
	f.DurationVar(&every, "progress-interval", 5*time.Second, "how often progress is printed when standard error is not a terminal")
	return cmd
}

// maxImportParallelism bounds --parallelism: past a few dozen, puts only queue at the server.
const maxImportParallelism = 256

// importLine is a line of an import worth reporting: one that failed, or one that
// registered an endpoint with a generated secret.
type importLine struct {
	Line   int    `json:"line"`
	ID     string `json:"id,omitempty"`
	Error  string `json:"error,omitempty"`
	Secret string `json:"secret,omitempty"`
}

// importSummary is what an import did.
type importSummary struct {
	Lines         int          `json:"lines"`
	Created       int          `json:"created"`
	Updated       int          `json:"updated"`
	Unchanged     int          `json:"unchanged"`
	Failed        int          `json:"failed"`
	Seconds       float64      `json:"seconds"`
	RatePerSecond float64      `json:"rate_per_second"`
	Errors        []importLine `json:"errors"`
	Secrets       []importLine `json:"secrets"`
}

// openImport opens the import's input: standard input for "-", else the file, whose
// non-blank lines it counts first (for the progress bar; 0 for standard input).
func openImport(cmd *cobra.Command, path string) (io.Reader, int, func(), error) {
	if path == "-" {
		return cmd.InOrStdin(), 0, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%w: %v (give a readable JSON Lines file, or - for standard input)", starter.ErrInvalid, err)
	}
	total, err := countLines(f)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return f, total, func() { f.Close() }, nil
}

// countLines counts r's lines that hold more than white space.
func countLines(r io.Reader) (int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	n, blank := 0, true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(bytes.TrimSpace(chunk)) > 0 {
			blank = false
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return 0, err
		}
		if !blank {
			n++
		}
		if err != nil {
			return n, nil
		}
		blank = true
	}
}

// importEndpoints puts every line of in, starter.MaxPutEndpoints lines per call, reporting
// progress to bar and each failed line, and each generated secret, to report as soon as it
// is known. It stops at an input it cannot read, or when ctx ends (the lines not sent by
// then fail).
func importEndpoints(ctx context.Context, s *starter.Client, in io.Reader, bar *progress, report func(importLine)) (importSummary, error) {
	sum := importSummary{Errors: []importLine{}, Secrets: []importLine{}}
	start := time.Now()
	defer func() {
		sum.Seconds = time.Since(start).Seconds()
		if sum.Seconds > 0 {
			sum.RatePerSecond = float64(sum.Lines) / sum.Seconds
		}
	}()
	put := func(chunk []herald.ParsedLine) error {
		var reqs []herald.PutEndpointRequest
		var at []int
		for i, p := range chunk {
			if p.Err != nil {
				l := importLine{Line: p.Line, ID: p.Request.ID, Error: p.Err.Error()}
				sum.Failed++
				sum.Errors = append(sum.Errors, l)
				report(l)
				continue
			}
			reqs = append(reqs, p.Request)
			at = append(at, i)
		}
		base := sum.Lines + len(chunk) - len(reqs)
		results, err := s.PutEndpoints(ctx, reqs, func(done int) { bar.set(base + done) })
		if err != nil {
			return err
		}
		sum.Lines += len(chunk)
		for k, res := range results {
			p := chunk[at[k]]
			switch res.Outcome {
			case starter.BulkCreated:
				sum.Created++
			case starter.BulkUpdated:
				sum.Updated++
			case starter.BulkUnchanged:
				sum.Unchanged++
			default:
				l := importLine{Line: p.Line, ID: p.Request.ID, Error: res.Err.Error()}
				sum.Failed++
				sum.Errors = append(sum.Errors, l)
				report(l)
				continue
			}
			if res.Result.SecretGenerated {
				l := importLine{Line: p.Line, ID: p.Request.ID, Secret: string(res.Result.Endpoint.Secret)}
				sum.Secrets = append(sum.Secrets, l)
				report(l)
			}
		}
		bar.set(sum.Lines)
		return nil
	}
	var chunk []herald.ParsedLine
	for p, err := range herald.EndpointLines(in) {
		if err != nil {
			if perr := put(chunk); perr != nil {
				return sum, perr
			}
			return sum, fmt.Errorf("read the input: %w (the lines before it were imported)", err)
		}
		chunk = append(chunk, p)
		if len(chunk) == starter.MaxPutEndpoints {
			if err := put(chunk); err != nil {
				return sum, err
			}
			chunk = nil
		}
	}
	if len(chunk) == 0 && sum.Lines == 0 {
		return sum, fmt.Errorf("%w: the input holds no line: give one endpoint per line, e.g. {\"id\":\"acme\",\"url\":\"https://acme.example.com/hooks\"}", starter.ErrInvalid)
	}
	return sum, put(chunk)
}

// printImportLine prints a failed line, or a generated secret, for people.
func printImportLine(w io.Writer, l importLine) {
	id := ""
	if l.ID != "" {
		id = " (" + l.ID + ")"
	}
	if l.Error != "" {
		fmt.Fprintf(w, "line %d%s: %s\n", l.Line, id, l.Error)
		return
	}
	fmt.Fprintf(w, "line %d%s: registered with a generated signing secret (shown once, keep it for the receiver): %s\n", l.Line, id, l.Secret)
}
