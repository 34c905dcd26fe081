package codec

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

const secret = "whsec_TOPSECRET_7f3a"

func mustKeyring(t *testing.T, lines ...string) *Keyring {
	t.Helper()
	k, err := ParseKeyring(strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func samplePayloads() []*commonpb.Payload {
	return []*commonpb.Payload{
		{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`{"secret":"` + secret + `"}`)},
		{Metadata: map[string][]byte{"encoding": []byte("binary/null")}},
		{Metadata: map[string][]byte{"encoding": []byte("binary/plain"), "extra": []byte("x")}, Data: bytes.Repeat([]byte{0, 1, 2}, 1000)},
		{},
	}
}

func clonePayloads(p []*commonpb.Payload) []*commonpb.Payload {
	out := make([]*commonpb.Payload, len(p))
	for i := range p {
		out[i] = proto.Clone(p[i]).(*commonpb.Payload)
	}
	return out
}

func equalPayloads(a, b []*commonpb.Payload) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// leavesInput returns f(in), failing the test if f fails or changes in; what names f.
func leavesInput(t *testing.T, what string, f func([]*commonpb.Payload) ([]*commonpb.Payload, error), in []*commonpb.Payload) []*commonpb.Payload {
	t.Helper()
	orig := clonePayloads(in)
	out, err := f(in)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !equalPayloads(in, orig) {
		t.Fatalf("%s modified its input", what)
	}
	return out
}

func TestCodecRoundTrip(t *testing.T) {
	k := mustKeyring(t, keyLine("k1", 1, 32))
	c := NewCodec(k)
	in := samplePayloads()
	orig := clonePayloads(in)
	enc := leavesInput(t, "Encode", c.Encode, in)
	if len(enc) != len(in) {
		t.Fatalf("Encode returned %d payloads, want %d", len(enc), len(in))
	}
	for i, p := range enc {
		if i == 1 {
			continue // a null stays as it is (TestCodecLeavesNull)
		}
		if got := string(p.Metadata["encoding"]); got != Encoding {
			t.Errorf("payload %d encoding = %q, want %q", i, got, Encoding)
		}
		if got := string(p.Metadata[MetadataKeyID]); got != "k1" {
			t.Errorf("payload %d key id = %q, want k1", i, got)
		}
		wire, _ := proto.Marshal(p)
		if bytes.Contains(wire, []byte(secret)) || bytes.Contains(wire, []byte("json/plain")) {
			t.Errorf("encrypted payload %d still contains plaintext", i)
		}
	}
	again, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(again[0].Data, enc[0].Data) {
		t.Errorf("two encryptions of the same payload are identical; nonce is not random")
	}

	dec := leavesInput(t, "Decode", c.Decode, enc)
	if !equalPayloads(dec, orig) {
		t.Fatalf("Decode(Encode(p)) != p:\n got %v\nwant %v", dec, orig)
	}
}

func TestCodecRotation(t *testing.T) {
	oldLine, newLine := keyLine("old", 1, 32), keyLine("new", 2, 32)
	before := NewCodec(mustKeyring(t, oldLine))
	after := NewCodec(mustKeyring(t, newLine, oldLine))

	oldEnc, err := before.Encode(samplePayloads())
	if err != nil {
		t.Fatal(err)
	}
	dec, err := after.Decode(oldEnc)
	if err != nil {
		t.Fatalf("rotated keyring cannot decode old payloads: %v", err)
	}
	if !equalPayloads(dec, samplePayloads()) {
		t.Fatalf("old payload decoded to different data")
	}

	newEnc, err := after.Encode(samplePayloads())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(newEnc[0].Metadata[MetadataKeyID]); got != "new" {
		t.Errorf("rotated keyring encrypts with %q, want new", got)
	}
	mixed := []*commonpb.Payload{oldEnc[0], newEnc[0]}
	dec, err = after.Decode(mixed)
	if err != nil {
		t.Fatalf("decode mixed old/new payloads: %v", err)
	}
	want := samplePayloads()[0]
	if !proto.Equal(dec[0], want) || !proto.Equal(dec[1], want) {
		t.Errorf("mixed decode = %v, want both %v", dec, want)
	}
}

func TestCodecDecodeFailures(t *testing.T) {
	k1, k2 := keyLine("k1", 1, 32), keyLine("k2", 2, 32)
	twin := keyLine("twin", 1, 32) // same bytes as k1: only the authenticated key id tells them apart
	c := NewCodec(mustKeyring(t, k1, k2, twin))
	enc, err := c.Encode(samplePayloads()[:1])
	if err != nil {
		t.Fatal(err)
	}
	good := enc[0]

	tests := []struct {
		name    string
		codec   *Codec
		mutate  func(p *commonpb.Payload)
		wantErr string
	}{
		{name: "flipped nonce byte", mutate: func(p *commonpb.Payload) { p.Data[0] ^= 1 }, wantErr: `key "k1" failed to authenticate`},
		{name: "flipped ciphertext byte", mutate: func(p *commonpb.Payload) { p.Data[20] ^= 0x80 }, wantErr: `key "k1" failed to authenticate`},
		{name: "flipped tag byte", mutate: func(p *commonpb.Payload) { p.Data[len(p.Data)-1] ^= 1 }, wantErr: `key "k1" failed to authenticate`},
		{name: "appended byte", mutate: func(p *commonpb.Payload) { p.Data = append(p.Data, 0) }, wantErr: "failed to authenticate"},
		{name: "key id swapped to another known key", mutate: func(p *commonpb.Payload) { p.Metadata[MetadataKeyID] = []byte("k2") }, wantErr: `key "k2" failed to authenticate`},
		{name: "key id relabelled to a key with the same bytes", mutate: func(p *commonpb.Payload) { p.Metadata[MetadataKeyID] = []byte("twin") }, wantErr: `key "twin" failed to authenticate`},
		{name: "truncated", mutate: func(p *commonpb.Payload) { p.Data = p.Data[:10] }, wantErr: "shorter than nonce and tag"},
		{name: "unknown key id", mutate: func(p *commonpb.Payload) { p.Metadata[MetadataKeyID] = []byte("gone") }, wantErr: `key "gone" is not in the keyring (have k1, k2, twin)`},
		{name: "no key id", mutate: func(p *commonpb.Payload) { delete(p.Metadata, MetadataKeyID) }, wantErr: `metadata has no "encryption-key-id"`},
		{name: "unknown cipher", mutate: func(p *commonpb.Payload) { p.Metadata[MetadataCipher] = []byte("ROT13") }, wantErr: `cipher "ROT13" is not supported`},
		{name: "same id, other key bytes", codec: NewCodec(mustKeyring(t, keyLine("k1", 7, 32))), mutate: func(*commonpb.Payload) {}, wantErr: `key "k1" failed to authenticate`},
		{name: "keyring without the key", codec: NewCodec(mustKeyring(t, k2)), mutate: func(*commonpb.Payload) {}, wantErr: `key "k1" is not in the keyring (have k2)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := proto.Clone(good).(*commonpb.Payload)
			tt.mutate(p)
			dc := c
			if tt.codec != nil {
				dc = tt.codec
			}
			plain := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte("1")}
			_, err := dc.Decode([]*commonpb.Payload{plain, p})
			if err == nil {
				t.Fatalf("Decode succeeded, want error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "decrypt payload 1") {
				t.Fatalf("Decode error = %q, want containing %q and the payload index", err, tt.wantErr)
			}
		})
	}
	// The untouched payload still decodes: the table's failures are the mutations'.
	if _, err := c.Decode([]*commonpb.Payload{good}); err != nil {
		t.Fatalf("untouched payload: %v", err)
	}
}

func TestCodecPassThrough(t *testing.T) {
	c := NewCodec(mustKeyring(t, keyLine("k1", 1, 32)))
	in := []*commonpb.Payload{
		{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"hello"`)},
		{Metadata: map[string][]byte{"encoding": []byte("binary/zlib")}, Data: []byte{1, 2, 3}},
		{Data: []byte("no metadata")},
		nil,
	}
	out, err := c.Decode(in)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	for i := range in {
		if out[i] != in[i] {
			t.Errorf("payload %d was replaced; unencrypted payloads must pass through unchanged", i)
		}
	}
}

func TestNewCodecNilPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("NewCodec(nil) did not panic")
		}
	}()
	NewCodec(nil)
}

type event struct {
	ID     string
	Secret string
	Body   []byte
}

func TestDataConverterHidesPlaintext(t *testing.T) {
	k := mustKeyring(t, keyLine("k1", 1, 32))
	value := event{ID: "evt_1", Secret: secret, Body: []byte(`{"card":"` + secret + `"}`)}

	// Sanity: without the codec the known string is visible, so the check below can fail.
	plainPayload, err := converter.GetDefaultDataConverter().ToPayload(value)
	if err != nil {
		t.Fatal(err)
	}
	plainWire, _ := proto.Marshal(plainPayload)
	if !bytes.Contains(plainWire, []byte(secret)) {
		t.Fatalf("default converter output does not contain the secret; the test cannot detect a leak")
	}

	dc := DataConverter(k)
	single, err := dc.ToPayload(value)
	if err != nil {
		t.Fatalf("ToPayload: %v", err)
	}
	multi, err := dc.ToPayloads("first", value)
	if err != nil {
		t.Fatalf("ToPayloads: %v", err)
	}
	for name, m := range map[string]proto.Message{"ToPayload": single, "ToPayloads": multi} {
		wire, _ := proto.Marshal(m)
		if bytes.Contains(wire, []byte(secret)) || bytes.Contains(wire, []byte("evt_1")) {
			t.Errorf("%s output contains plaintext", name)
		}
	}
	if got := string(single.Metadata["encoding"]); got != Encoding {
		t.Errorf("encoding = %q, want %q", got, Encoding)
	}

	var back event
	if err := dc.FromPayload(single, &back); err != nil {
		t.Fatalf("FromPayload: %v", err)
	}
	if back.Secret != secret || back.ID != value.ID || !bytes.Equal(back.Body, value.Body) {
		t.Errorf("FromPayload = %+v, want %+v", back, value)
	}
	var first string
	var second event
	if err := dc.FromPayloads(multi, &first, &second); err != nil {
		t.Fatalf("FromPayloads: %v", err)
	}
	if first != "first" || second.Secret != secret {
		t.Errorf("FromPayloads = %q, %+v", first, second)
	}
	if s := dc.ToString(single); !strings.Contains(s, secret) {
		t.Errorf("ToString = %q, want the decoded value", s)
	}
	// A payload written before encryption was enabled still reads.
	var legacy event
	if err := dc.FromPayload(plainPayload, &legacy); err != nil || legacy.Secret != secret {
		t.Errorf("plain payload: %+v, %v", legacy, err)
	}

	var wrong event
	other := DataConverter(mustKeyring(t, keyLine("k2", 2, 32)))
	if err := other.FromPayload(single, &wrong); err == nil || !strings.Contains(err.Error(), `key "k1" is not in the keyring`) {
		t.Errorf("FromPayload with the wrong keyring error = %v", err)
	}
	if DataConverter(nil) != converter.GetDefaultDataConverter() {
		t.Errorf("DataConverter(nil) is not the default data converter")
	}
}

func TestFailureConverterHidesMessage(t *testing.T) {
	k := mustKeyring(t, keyLine("k1", 1, 32))
	appErr := temporal.NewApplicationError("POST failed: signing secret "+secret+" rejected", "DeliveryError", "detail "+secret)

	// Sanity: the default failure converter leaves the message in plain text.
	plainWire, _ := proto.Marshal(temporal.GetDefaultFailureConverter().ErrorToFailure(appErr))
	if !bytes.Contains(plainWire, []byte(secret)) {
		t.Fatalf("default failure converter output does not contain the secret; the test cannot detect a leak")
	}

	fc := FailureConverter(k)
	f := fc.ErrorToFailure(appErr)
	wire, err := proto.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(wire, []byte(secret)) {
		t.Fatalf("encoded failure contains the secret")
	}
	if f.GetEncodedAttributes() == nil || string(f.GetEncodedAttributes().Metadata["encoding"]) != Encoding {
		t.Fatalf("failure attributes are not encrypted: %v", f.GetEncodedAttributes())
	}

	// Round trip through the wire form.
	var got failurepb.Failure
	if err := proto.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	back := fc.FailureToError(&got)
	var backApp *temporal.ApplicationError
	if !errors.As(back, &backApp) {
		t.Fatalf("FailureToError = %T, want *temporal.ApplicationError", back)
	}
	if !strings.Contains(backApp.Error(), secret) || backApp.Type() != "DeliveryError" {
		t.Errorf("decoded error = %q (type %q), want the original message", backApp.Error(), backApp.Type())
	}
	var detail string
	if err := backApp.Details(&detail); err != nil || detail != "detail "+secret {
		t.Errorf("details = %q, %v", detail, err)
	}

	if FailureConverter(nil) != temporal.GetDefaultFailureConverter() {
		t.Errorf("FailureConverter(nil) is not the default failure converter")
	}
}

// A null (what a memo field is upserted to, to remove it) stays as it is: the server removes
// the field only for a plain null. A null with data is not a null, and is encrypted.
func TestCodecLeavesNull(t *testing.T) {
	c := NewCodec(mustKeyring(t, keyLine("k1", 1, 32)))
	null, err := converter.GetDefaultDataConverter().ToPayload(nil)
	if err != nil {
		t.Fatal(err)
	}
	odd := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("binary/null")}, Data: []byte("x")}
	out, err := c.Encode([]*commonpb.Payload{null, odd})
	if err != nil {
		t.Fatal(err)
	}
	if out[0] != null {
		t.Errorf("null payload encoded as %v, want it unchanged", out[0])
	}
	if got := string(out[1].Metadata["encoding"]); got != Encoding {
		t.Errorf("binary/null payload with data has encoding %q, want %q", got, Encoding)
	}
}
