package herald

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heraldhq/herald/signature"
)

func TestParseEndpointLines(t *testing.T) {
	in := strings.Join([]string{
		`{"id":"a-1","url":"https://a.example.com/hooks","tenant":"acme","types":["order.*"]}`,
		``,
		`{"id":"a-2","url":"https://a.example.com/hooks","timeout":"5s","headers":{"x-team":"billing"}}`,
		`{"id":"a-3","url":`,
		`{"id":"a-4","url":"https://a","colour":"red"}`,
		`{"id":"a-5","url":"https://a","timeout":5000000000}`,
		`{"url":"https://a"}`,
		`{"id":"bad id!","url":"https://a"}`,
		`{"id":"a-6","secret":"nope"}`,
		`{"id":"a-7"} {"id":"a-8"}`,
		"\xff",
		`   {"id":"a-9","url":"https://a"}   ` + "\r",
	}, "\n")
	got, err := ParseEndpointLines(strings.NewReader(in), 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line int
		id   string
		err  string
	}{
		{1, "a-1", ""}, {3, "a-2", ""}, {4, "", "not the JSON"}, {5, "a-4", "unknown field"},
		{6, "a-5", "unit"}, {7, "", "id is missing"}, {8, "", "endpoint id"}, {9, "a-6", "secret"},
		{10, "", "data after"}, {11, "", "UTF-8"}, {12, "a-9", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines parsed, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Line != w.line || g.Request.ID != w.id {
			t.Errorf("result %d: line %d id %q, want line %d id %q", i, g.Line, g.Request.ID, w.line, w.id)
		}
		switch {
		case w.err == "" && g.Err != nil:
			t.Errorf("line %d: %v", g.Line, g.Err)
		case w.err != "" && (g.Err == nil || !strings.Contains(g.Err.Error(), w.err)):
			t.Errorf("line %d: error %v, want one saying %q", g.Line, g.Err, w.err)
		}
	}
	if r := got[0].Request; r.Tenant != "acme" || len(r.Types) != 1 || r.URL != "https://a.example.com/hooks" {
		t.Errorf("line 1 read as %+v", r)
	}
	if r := got[1].Request; r.Overrides == nil || r.Overrides.Timeout.Std().Seconds() != 5 || r.Headers == nil || (*r.Headers)[0].Name != "X-Team" {
		t.Errorf("line 3 read as %+v", r)
	}
}

func TestParseEndpointLinesBounds(t *testing.T) {
	// A line over the bound is that line's error; the lines around it are read.
	long := `{"id":"x","url":"https://a/` + strings.Repeat("a", MaxEndpointLineBytes) + `"}`
	in := `{"id":"before","url":"https://a"}` + "\n" + long + "\n" + `{"id":"after","url":"https://a"}`
	got, err := ParseEndpointLines(strings.NewReader(in), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Err != nil || got[2].Err != nil || got[1].Err == nil || got[1].Line != 2 || got[2].Line != 3 {
		t.Fatalf("got %+v", got)
	}
	// More lines than the bound: the whole input is refused.
	many := strings.Repeat(`{"id":"x","url":"https://a"}`+"\n", 11)
	if _, err := ParseEndpointLines(strings.NewReader(many), 10); !errors.Is(err, ErrTooManyLines) {
		t.Fatalf("11 lines with a bound of 10: %v, want ErrTooManyLines", err)
	}
	if got, err := ParseEndpointLines(strings.NewReader(many), 11); err != nil || len(got) != 11 {
		t.Fatalf("11 lines with a bound of 11: %d, %v", len(got), err)
	}
}

// FuzzParseEndpointLines: whatever the input, parsing never panics; every non-blank line
// gives one result, in order, with its line number; a line read without error names a
// valid id and values that pass their checks; no error's text grows with the input.
func FuzzParseEndpointLines(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","url":"https://a.example.com"}`,
		`{"id":"a","url":"https://a","tenant":"acme","types":["order.*","*"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`,
		`{"id":"a","timeout":"5s","schedule":["1s","1m"],"attempts":3,"jitter":0.2,"breaker":{"consecutive_failures":5}}`,
		`{"id":"a","headers":{"X-A":"b"},"max_in_flight":4,"rate_limit":0,"clear_overrides":true}`,
		"{\"id\":\"a\"}\r\n\n{\"id\":\"b\"}\n",
		`{"id":"a","auth":{"basic":{"username":"u","password":"p"}},"clear_auth":true}`,
		`{"id":"a","auth":{"oauth2":{"token_url":"https://t.example/token","client_id":"c","client_secret":"s","scopes":["a"]}}}`,
		`{"id":"a","auth":{"client_cert":{"cert_pem":"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n","key_pem":"x"}}}`,
		`{"id":"a","timeout":5}`, `{"id":"a","bogus":1}`, `[1,2]`, `null`, `"x"`, "\x00\xff", "{\"id\":\"" + strings.Repeat("é", 200) + "\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseEndpointLines(bytes.NewReader(in), 50)
		lines := bytes.Split(in, []byte("\n"))
		nonBlank := 0
		for _, l := range lines {
			if len(bytes.TrimSpace(l)) > 0 || len(bytes.TrimSuffix(l, []byte("\r"))) > MaxEndpointLineBytes {
				nonBlank++
			}
		}
		if err != nil {
			if !errors.Is(err, ErrTooManyLines) || nonBlank <= 50 {
				t.Fatalf("error %v with %d non-blank lines", err, nonBlank)
			}
			return
		}
		if len(got) != nonBlank {
			t.Fatalf("%d results for %d non-blank lines", len(got), nonBlank)
		}
		prev := 0
		for _, p := range got {
			if p.Line <= prev || p.Line > len(lines) {
				t.Fatalf("line number %d after %d, of %d lines", p.Line, prev, len(lines))
			}
			prev = p.Line
			if p.Request.ID != "" {
				if err := ValidateEndpointID(p.Request.ID); err != nil {
					t.Fatalf("line %d names the invalid id %q", p.Line, p.Request.ID)
				}
			}
			if p.Err != nil {
				if msg := p.Err.Error(); len(msg) > maxLineError+100 || !utf8.ValidString(msg) {
					t.Fatalf("line %d: error of %d bytes (valid UTF-8: %v)", p.Line, len(msg), utf8.ValidString(msg))
				}
				continue
			}
			r := p.Request
			if r.ID == "" {
				t.Fatalf("line %d read without its id", p.Line)
			}
			if r.Overrides != nil {
				if err := r.Overrides.ValidateChange(); err != nil {
					t.Fatalf("line %d: overrides that fail their check: %v", p.Line, err)
				}
			}
			if r.Headers != nil {
				if _, err := NormalizeHeaders(*r.Headers); err != nil {
					t.Fatalf("line %d: headers that fail their check: %v", p.Line, err)
				}
			}
			if r.Auth != nil {
				if err := r.Auth.Validate(); err != nil {
					t.Fatalf("line %d: authentication that fails its check: %v", p.Line, err)
				}
			}
			if r.Secret != "" {
				if _, err := signature.ParseSecret(string(r.Secret)); err != nil {
					t.Fatalf("line %d: secret %q: %v", p.Line, r.Secret, err)
				}
			}
		}
	})
}
