package codec

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// MaxRequestBytes is the largest request body Handler accepts.
const MaxRequestBytes = 32 << 20

// corsAllowHeaders are the request headers the Temporal Web UI sends to a codec server.
const corsAllowHeaders = "Content-Type, X-Namespace, Authorization, Authorization-Extras"

// Handler is the codec server HTTP handler. It answers POST {prefix}/encode and
// POST {prefix}/decode per the Temporal codec server protocol: the body is a
// Payloads message in protobuf JSON ({"payloads":[{"metadata":{...},"data":"..."}]}),
// and so is the answer. Only the last path segment is checked, so the handler
// can be mounted under any prefix; all namespaces share the keys.
//
// For the Temporal Web UI, which calls it from the browser, it sets CORS headers
// for requests whose Origin is in allowedOrigins (exact match such as
// "http://localhost:8233"; "*" allows any origin), allows credentials and the
// headers the UI sends (Content-Type, X-Namespace, Authorization,
// Authorization-Extras), and answers OPTIONS preflight. Requests carrying an
// Origin that is not allowed get 403; requests without Origin (CLI, SDK) are
// served. It panics if k is nil.
func Handler(k *Keyring, allowedOrigins []string) http.Handler {
	h := &handler{codec: NewCodec(k), origins: make(map[string]bool)}
	for _, o := range allowedOrigins {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "*" {
			h.anyOrigin = true
		} else if o != "" {
			h.origins[o] = true
		}
	}
	return h
}

type handler struct {
	codec     *Codec
	origins   map[string]bool
	anyOrigin bool
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" {
		w.Header().Add("Vary", "Origin")
		if !h.anyOrigin && !h.origins[origin] {
			http.Error(w, fmt.Sprintf("origin %s is not allowed to use this codec server; add it to the codec server's allowed origins", origin), http.StatusForbidden)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Credentials", "true")
	}
	op := path.Base(r.URL.Path)
	if op != "encode" && op != "decode" {
		http.Error(w, fmt.Sprintf("no codec operation at %s; POST to .../encode or .../decode", r.URL.Path), http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodOptions:
		w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", corsAllowHeaders)
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "POST, OPTIONS")
		http.Error(w, fmt.Sprintf("method %s is not supported; use POST", r.Method), http.StatusMethodNotAllowed)
		return
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("request body is over %d bytes; send fewer payloads per request", MaxRequestBytes), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var in commonpb.Payloads
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &in); err != nil {
		http.Error(w, `request body is not a Payloads message in protobuf JSON ({"payloads":[{"metadata":{...},"data":"<base64>"}]}): `+err.Error(), http.StatusBadRequest)
		return
	}
	var out []*commonpb.Payload
	if op == "encode" {
		out, err = h.codec.Encode(in.GetPayloads())
	} else {
		out, err = h.codec.Decode(in.GetPayloads())
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := protojson.Marshal(&commonpb.Payloads{Payloads: out})
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if len(out) == 0 {
		resp = []byte(`{"payloads":[]}`)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
}
