package codec

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestIdentityAdvertisesKeyIDs(t *testing.T) {
	two := mustKeyring(t, keyLine("k1", 1, 32)+"\n"+keyLine("k2", 2, 32))
	for _, tc := range []struct {
		name     string
		identity string
		want     []string
		ok       bool
	}{
		{"two keys", Identity("1@host", two), []string{"k1", "k2"}, true},
		{"plain text", Identity("1@host", nil), []string{}, true},
		{"default base", Identity("", two), []string{"k1", "k2"}, true},
		{"not advertised", "1@host@herald", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := IdentityKeyIDs(tc.identity)
			if ok != tc.ok || !slices.Equal(got, tc.want) {
				t.Fatalf("IdentityKeyIDs(%q) = %v, %v; want %v, %v", tc.identity, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestIsUndecryptable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("query: %w", &MissingKeyError{KeyID: "k9"}), true},
		{fmt.Errorf("decrypt: %w: key altered", ErrUndecryptable), true},
		{errors.New("payload item 0: encoding binary/encrypted: payload encoding is not supported"), true},
		{errors.New("connection refused"), false},
		{nil, false},
	} {
		if got := IsUndecryptable(tc.err); got != tc.want {
			t.Errorf("IsUndecryptable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
