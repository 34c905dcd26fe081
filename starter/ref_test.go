package starter

import (
	"errors"
	"testing"
)

func TestRefResolve(t *testing.T) {
	for _, tc := range []struct {
		ref      Ref
		wfID     string
		delivery bool
		want     Ref // after resolve
		err      bool
	}{
		{ref: Ref{EventID: "e1"}, wfID: "delivery:e1", want: Ref{Tenant: "default", EventID: "e1"}},
		{ref: Ref{Tenant: "acme", EventID: "e1"}, wfID: "delivery@acme:e1", want: Ref{Tenant: "acme", EventID: "e1"}},
		{ref: Ref{Tenant: "acme", EventID: "e1", Endpoint: "ep"}, wfID: "delivery+ep@acme:e1", delivery: true,
			want: Ref{Tenant: "acme", EventID: "e1", Endpoint: "ep"}},
		{ref: Ref{WorkflowID: "delivery@acme:e:1"}, wfID: "delivery@acme:e:1", delivery: true,
			want: Ref{Tenant: "acme", EventID: "e:1", WorkflowID: "delivery@acme:e:1"}},
		{ref: Ref{WorkflowID: "delivery+ep@acme:e1"}, wfID: "delivery+ep@acme:e1", delivery: true,
			want: Ref{Tenant: "acme", EventID: "e1", Endpoint: "ep", WorkflowID: "delivery+ep@acme:e1"}},
		{ref: Ref{}, err: true},
		{ref: Ref{WorkflowID: "endpoint:ep"}, err: true},
		{ref: Ref{WorkflowID: "delivery:e1", EventID: "e1"}, err: true},
		{ref: Ref{EventID: "e1", Endpoint: "bad endpoint"}, err: true},
	} {
		got, wfID, err := tc.ref.resolve()
		if tc.err {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%+v: error %v, want ErrInvalid", tc.ref, err)
			}
			continue
		}
		if err != nil || wfID != tc.wfID || got != tc.want || got.delivery() != tc.delivery {
			t.Errorf("%+v: %+v %q %v (delivery %v), want %+v %q (delivery %v)", tc.ref, got, wfID, err, got.delivery(), tc.want, tc.wfID, tc.delivery)
		}
	}
}
