package tests

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/starter"
)

// keyed is a stack whose worker encrypts with its own keys.
type keyed struct {
	*testkit.Stack
	keys *codec.Keyring
}

// startKeyed starts a stack (its own server) whose worker and starter hold keys.
func startKeyed(t *testing.T, keys *codec.Keyring) keyed {
	t.Helper()
	stk, err := testkit.Start(context.Background(), testkit.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stk.Stop)
	return keyed{Stack: stk, keys: keys}
}

// producer dials the stack's server with other keys (nil: plain text) and returns a starter.
func (k keyed) producer(t *testing.T, keys *codec.Keyring) (client.Client, *starter.Client) {
	t.Helper()
	c, err := client.DialContext(context.Background(), client.Options{
		HostPort: k.Server.FrontendAddress(), Namespace: k.Server.Namespace(), Logger: sdklog.NewStructuredLogger(quiet),
		DataConverter: codec.DataConverter(keys), FailureConverter: codec.FailureConverter(keys),
		Identity: codec.Identity("test-producer", keys),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, starter.New(c, starter.Options{PayloadKeyID: activeKey(keys)})
}

func activeKey(k *codec.Keyring) string {
	if k == nil {
		return ""
	}
	return k.ActiveKeyID()
}

func newKeys(t *testing.T, name string) *codec.Keyring {
	t.Helper()
	k, err := codec.GenerateKeyFile(t.TempDir() + "/" + name + ".key")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEndpointListWithWrongKey: a client whose keys cannot read the endpoints' answers
// gets an error that says so, not a list of empty rows.
func TestEndpointListWithWrongKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stk := startKeyed(t, newKeys(t, "worker"))
	rcv := newReceiver(t, status(200))
	if _, err := stk.Starter.PutEndpoint(ctx, putReq("keys-list", rcv.URL)); err != nil {
		t.Fatal(err)
	}
	if list, err := stk.Starter.ListEndpoints(ctx, ""); err != nil || len(list) != 1 || list[0].URL != rcv.URL {
		t.Fatalf("with the worker's keys: %+v, %v", list, err)
	}
	for _, tc := range []struct {
		name string
		keys *codec.Keyring
	}{
		{"another key", newKeys(t, "other")},
		{"no keys", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := stk.producer(t, tc.keys)
			list, err := s.ListEndpoints(ctx, "")
			if err == nil {
				t.Fatalf("ListEndpoints = %+v, nil; want an error about the keys", list)
			}
			if !codec.IsUndecryptable(err) {
				t.Fatalf("error %v does not say the payloads cannot be decrypted", err)
			}
			if tc.keys != nil && (!errors.Is(err, codec.ErrUndecryptable) || !strings.Contains(err.Error(), stk.keys.ActiveKeyID())) {
				t.Fatalf("error %v does not name the missing key %s", err, stk.keys.ActiveKeyID())
			}
		})
	}
}
