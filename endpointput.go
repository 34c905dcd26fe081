package herald

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"unicode/utf8"

	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/signature"
)

// EndpointPut is one endpoint put as people write it in JSON: the body of PUT
// /v1/endpoints/{id} (see server/openapi.json), and, with the id, one line of a bulk put
// (EndpointLine). Absent fields keep what is stored; Request translates and checks it.
type EndpointPut struct {
	URL    string `json:"url,omitempty"`
	Secret string `json:"secret,omitempty"`
	Tenant string `json:"tenant,omitempty"`
	EndpointChange
	// ClearOverrides returns the endpoint to the worker's defaults before applying the rest.
	ClearOverrides bool `json:"clear_overrides,omitempty"`
	// Auth replaces the parts of the endpoint's authentication to its receiver it gives
	// (EndpointAuth.Merge).
	Auth *EndpointAuth `json:"auth,omitempty"`
	// ClearAuth drops the endpoint's authentication before applying Auth.
	ClearAuth bool `json:"clear_auth,omitempty"`
}

// Request is the put of endpoint id that p describes, with each value checked on its own
// (the secret's form, the settings, the headers); errors name JSON fields. The put as a
// whole is checked where it is sent (PutEndpointRequest.Validate).
func (p EndpointPut) Request(id string) (PutEndpointRequest, error) {
	req := PutEndpointRequest{ID: id, URL: p.URL, Tenant: p.Tenant, ClearOverrides: p.ClearOverrides}
	if p.Secret != "" {
		sec, err := signature.ParseSecret(p.Secret)
		if err != nil {
			return req, fmt.Errorf("secret: %v", err)
		}
		req.Secret = sec
	}
	o, err := p.Overrides()
	if err != nil {
		return req, err
	}
	req.Overrides, req.Types, req.Filter, req.Transform = o, p.Types, p.Filter, p.Transform
	if req.Headers, err = p.HeaderChange(); err != nil {
		return req, fmt.Errorf("headers: %v", err)
	}
	if p.Auth != nil {
		if err := p.Auth.Validate(); err != nil {
			return req, err
		}
	}
	req.Auth, req.ClearAuth = p.Auth, p.ClearAuth
	return req, nil
}

// EndpointLine is one line of a bulk put (JSON Lines): an endpoint put with its id.
type EndpointLine struct {
	ID string `json:"id"`
	EndpointPut
}

// Bounds of a bulk put's JSON Lines.
const (
	// MaxEndpointLineBytes bounds one line, as PUT /v1/endpoints/{id} bounds its body.
	MaxEndpointLineBytes = 64 << 10
	// maxLineError bounds the text of a line's error: a line's own text is never echoed
	// whole.
	maxLineError = 300
)

// ParsedLine is one non-blank line of a bulk put: the put it asks for, or why it cannot be
// read.
type ParsedLine struct {
	// Line is the line's number in the input, from 1 (blank lines count).
	Line int
	// Request is the put, when Err is nil; its ID is set whenever the line names one.
	Request PutEndpointRequest
	// Err says what is wrong with the line.
	Err error
}

// ErrTooManyLines means a bulk put holds more lines than its bound.
var ErrTooManyLines = errors.New("too many lines")

// ParseEndpointLines reads a bulk put: JSON Lines, one EndpointLine per line, blank lines
// skipped. A line that is not valid JSON, names fields a put does not have, gives a
// duration without a unit, has no valid id or a value out of range is that line's error
// (ParsedLine.Err), never the whole input's. It returns an error only when the input cannot
// be read, or holds more than maxLines non-blank lines (ErrTooManyLines; nothing is
// returned then).
func ParseEndpointLines(r io.Reader, maxLines int) ([]ParsedLine, error) {
	var out []ParsedLine
	for p, err := range EndpointLines(r) {
		if err != nil {
			return nil, err
		}
		if len(out) == maxLines {
			return nil, fmt.Errorf("%w: more than %d lines: split the input", ErrTooManyLines, maxLines)
		}
		out = append(out, p)
	}
	return out, nil
}

// EndpointLines reads a bulk put line by line, as ParseEndpointLines does, without holding
// more than a line at a time: each non-blank line is yielded with its number, and an input
// that cannot be read ends the sequence with the error.
func EndpointLines(r io.Reader) iter.Seq2[ParsedLine, error] {
	return func(yield func(ParsedLine, error) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		for n := 1; ; n++ {
			line, tooLong, err := readLine(br, MaxEndpointLineBytes)
			if err != nil && !errors.Is(err, io.EOF) {
				yield(ParsedLine{}, fmt.Errorf("line %d: %w", n, err))
				return
			}
			if len(bytes.TrimSpace(line)) > 0 || tooLong {
				p := ParsedLine{Line: n}
				if tooLong {
					p.Err = fmt.Errorf("the line is longer than %d bytes", MaxEndpointLineBytes)
				} else {
					p.Request, p.Err = parseEndpointLine(line)
				}
				if !yield(p, nil) {
					return
				}
			}
			if errors.Is(err, io.EOF) {
				return
			}
		}
	}
}

// readLine reads the next line without its end (\n or \r\n). A line longer than most is
// read to its end and dropped (tooLong). err is io.EOF at the end of the input.
func readLine(br *bufio.Reader, most int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > most+2 { // room for \r\n
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) > most {
			tooLong, line = true, nil
		}
		return line, tooLong, err
	}
}

// parseEndpointLine reads one line: its JSON, its durations' units, its id and values.
func parseEndpointLine(line []byte) (PutEndpointRequest, error) {
	if !utf8.Valid(line) {
		return PutEndpointRequest{}, errors.New("the line is not UTF-8 text")
	}
	var l EndpointLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return PutEndpointRequest{ID: idOf(line)}, fmt.Errorf("not the JSON of an endpoint put: %s", clip(err.Error()))
	}
	if dec.More() {
		return PutEndpointRequest{ID: idOf(line)}, errors.New("data after the JSON object: give one object per line")
	}
	if err := duration.RequireUnits(line, &l); err != nil {
		var id string
		if ValidateEndpointID(l.ID) == nil {
			id = l.ID
		}
		return PutEndpointRequest{ID: id}, errors.New(clip(err.Error()))
	}
	if l.ID == "" {
		return PutEndpointRequest{}, errors.New(`id is missing: give the endpoint's id, e.g. {"id":"acme-prod","url":"https://..."}`)
	}
	if err := ValidateEndpointID(l.ID); err != nil {
		return PutEndpointRequest{}, errors.New(clip(err.Error()))
	}
	req, err := l.Request(l.ID)
	if err != nil {
		return req, errors.New(clip(err.Error()))
	}
	return req, nil
}

// idOf is the id a line that does not decode as a whole names, if it names a valid one:
// so that its error can say which endpoint it was about.
func idOf(line []byte) string {
	var v struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(line, &v) != nil || ValidateEndpointID(v.ID) != nil {
		return ""
	}
	return v.ID
}

// clip bounds an error's text (maxLineError bytes, cut on a rune boundary): decoders quote
// what they did not expect, which may be a long piece of the line.
func clip(s string) string {
	if len(s) <= maxLineError {
		return s
	}
	cut := maxLineError
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
