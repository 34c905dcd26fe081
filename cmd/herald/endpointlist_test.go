package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testkit"
)

func TestEndpointListRefusesBadFlags(t *testing.T) {
	offline(t)
	for _, args := range [][]string{
		{"--limit", "0"}, {"--limit", "501"}, {"--state", "broken"}, {"--tenant", "a' OR 1=1"},
		{"--cursor", "!!"}, {"--cursor", "eyJ9", "--all"},
	} {
		out, err := runHerald(append([]string{"endpoint", "list", nowhere}, args...)...)
		if err == nil || strings.Contains(out+err.Error(), "cannot reach Temporal") {
			t.Errorf("endpoint list %v: %v\n%s; want a usage error before dialing", args, err, out)
		}
	}
}

func TestEndpointListPages(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	offline(t)
	stk, err := testkit.Start(context.Background(), testkit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stk.Stop()
	var want []string
	for i := range 5 {
		id := fmt.Sprintf("cli-list-%d", i)
		if _, err := stk.Starter.PutEndpoint(context.Background(), herald.PutEndpointRequest{ID: id, URL: "http://127.0.0.1:9/hook", Tenant: "acme"}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	if _, err := stk.Starter.PutEndpoint(context.Background(), herald.PutEndpointRequest{ID: "cli-other", URL: "http://127.0.0.1:9/hook", Tenant: "globex"}); err != nil {
		t.Fatal(err)
	}
	at := []string{"--address", stk.Server.FrontendAddress(), "--namespace", stk.Server.Namespace()}
	list := func(args ...string) (string, error) {
		return runHerald(append(append([]string{"endpoint", "list", "--tenant", "acme"}, at...), args...)...)
	}
	rows := regexp.MustCompile(`(?m)^(cli-\S+)\s`)
	ids := func(out string) []string {
		var ids []string
		for _, m := range rows.FindAllStringSubmatch(out, -1) {
			ids = append(ids, m[1])
		}
		return ids
	}
	// Visibility shows a registration a moment after the put returns.
	var out string
	for range 100 {
		if out, err = list("--all"); err != nil || len(ids(out)) == len(want) {
			break
		}
	}
	if err != nil || !sameIDs(ids(out), want) || !strings.HasPrefix(out, "ID ") {
		t.Fatalf("--all: %v\n%s", err, out)
	}

	// Page by page: each page says how to get the next.
	next := regexp.MustCompile(`More endpoints follow: herald (.*)\n`)
	var paged []string
	args := []string{"--limit", "2"}
	for pages := 1; ; pages++ {
		out, err := list(args...)
		if err != nil {
			t.Fatalf("page %d: %v\n%s", pages, err, out)
		}
		paged = append(paged, ids(out)...)
		m := next.FindStringSubmatch(out)
		if m == nil {
			if pages != 3 {
				t.Errorf("5 endpoints in %d pages of 2", pages)
			}
			break
		}
		cmd := strings.Fields(strings.ReplaceAll(m[1], " --address "+stk.Server.FrontendAddress(), ""))
		i := slices.Index(cmd, "--cursor")
		if i < 0 || !slices.Contains(cmd, "--tenant") || !slices.Contains(cmd, "--limit") {
			t.Fatalf("the next page's command %q lacks the listing's flags", m[1])
		}
		args = []string{"--limit", "2", "--cursor", cmd[i+1]}
	}
	if !sameIDs(paged, want) {
		t.Fatalf("pages of 2 list %v, want %v", paged, want)
	}

	out, err = list("--all", "--limit", "2", "-o", "json")
	var listed []herald.EndpointState
	if err != nil || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != len(want) {
		t.Fatalf("-o json --all: %v\n%s", err, out)
	}
	if out, err := list("--state", "open"); err != nil || !strings.Contains(out, "No endpoints match.") {
		t.Fatalf("--state open: %v\n%s", err, out)
	}
}

// sameIDs reports whether got holds each of want exactly once, and nothing else.
func sameIDs(got, want []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)))
}
