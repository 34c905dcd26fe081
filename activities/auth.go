package activities

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/netguard"
)

// tokenTimeout bounds one OAuth2 token request, within the attempt's own timeout.
const tokenTimeout = 10 * time.Second

// credentials is what a worker keeps of its endpoints' authentication: the OAuth2 token
// of each endpoint, until it expires or the receiver refuses it, and the HTTP client of
// each endpoint with a client certificate (a connection pool must never carry one
// endpoint's certificate to another's requests). An entry is for one configuration: a
// put that changes it makes a new one.
type credentials struct {
	net  netguard.Policy
	opts HTTPOptions
	// tokenClient fetches tokens: through the SSRF guard, never following a redirect.
	tokenClient *http.Client

	mu     sync.Mutex
	tokens map[string]tokenEntry // by endpoint id
	certs  map[string]certEntry  // by endpoint id
	fetch  singleflight.Group    // one token request at a time per endpoint and configuration
}

type tokenEntry struct {
	config [sha256.Size]byte
	token  *oauth2.Token
}

type certEntry struct {
	config [sha256.Size]byte
	client *http.Client
}

func newCredentials(p netguard.Policy, o HTTPOptions) *credentials {
	c := &credentials{net: p, opts: o, tokens: map[string]tokenEntry{}, certs: map[string]certEntry{}}
	c.tokenClient = c.client(nil)
	c.tokenClient.Timeout = tokenTimeout
	return c
}

// client is an HTTP client dialing through the SSRF guard, presenting cert (nil: none),
// trusting the options' roots, never following redirects nor using a proxy from the
// environment.
func (c *credentials) client(cert *tls.Certificate) *http.Client {
	t := c.net.Transport()
	t.TLSClientConfig.RootCAs = c.opts.RootCAs
	if cert != nil {
		t.TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	var rt http.RoundTripper = t
	if c.opts.Wrap != nil {
		rt = c.opts.Wrap(rt)
	}
	return &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// certClient is the client of endpoint id, which presents the client certificate cc.
func (c *credentials) certClient(id string, cc herald.ClientCert) (*http.Client, error) {
	if c == nil {
		return nil, errors.New("this destination cannot present client certificates")
	}
	key := fingerprint(cc)
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.certs[id]
	if ok && old.config == key {
		return old.client, nil
	}
	pair, err := tls.X509KeyPair([]byte(cc.CertPEM), []byte(cc.KeyPEM))
	if err != nil {
		return nil, err
	}
	if ok {
		old.client.CloseIdleConnections()
	}
	cl := c.client(&pair)
	c.certs[id] = certEntry{config: key, client: cl}
	return cl, nil
}

// token returns the Authorization value of endpoint id's OAuth2 token: the one kept, if
// it is still valid and is not stale (the value the receiver refused), else a new one
// (fresh).
func (c *credentials) token(ctx context.Context, id string, o herald.OAuth2Auth, stale string) (value string, fresh bool, err error) {
	if c == nil {
		return "", false, errors.New("this destination cannot fetch OAuth2 tokens")
	}
	key := fingerprint(o)
	c.mu.Lock()
	e, ok := c.tokens[id]
	c.mu.Unlock()
	if ok && e.config == key && e.token.Valid() && authorization(e.token) != stale {
		return authorization(e.token), false, nil
	}
	v, err, _ := c.fetch.Do(fmt.Sprintf("%s\x00%x\x00%s", id, key, stale), func() (any, error) {
		c.mu.Lock()
		e, ok := c.tokens[id]
		c.mu.Unlock()
		if ok && e.config == key && e.token.Valid() && authorization(e.token) != stale {
			return e.token, nil // fetched by another attempt meanwhile
		}
		cfg := clientcredentials.Config{ClientID: o.ClientID, ClientSecret: string(o.ClientSecret), TokenURL: o.TokenURL, Scopes: o.Scopes}
		tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, c.tokenClient))
		if err != nil {
			return nil, err
		}
		if err := checkToken(tok); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.tokens[id] = tokenEntry{config: key, token: tok}
		c.mu.Unlock()
		return tok, nil
	})
	if err != nil {
		return "", false, err
	}
	return authorization(v.(*oauth2.Token)), true, nil
}

// maxTokenBytes bounds an access token Herald sends on.
const maxTokenBytes = 8 << 10

// checkToken checks what a token server answered before it goes into a header: a bearer
// token (token_type bearer, in any case, or none) whose access_token is 1 to maxTokenBytes
// visible ASCII characters (RFC 6750's b64token is a subset).
func checkToken(tok *oauth2.Token) error {
	if tok.TokenType != "" && !strings.EqualFold(tok.TokenType, "bearer") {
		return fmt.Errorf("the token server issued a token of type %q; Herald sends bearer tokens", clipType(tok.TokenType))
	}
	if n := len(tok.AccessToken); n == 0 || n > maxTokenBytes {
		return fmt.Errorf("the token server's access_token is %d bytes long; want 1 to %d", n, maxTokenBytes)
	}
	for i := 0; i < len(tok.AccessToken); i++ {
		if c := tok.AccessToken[i]; c < 0x21 || c > 0x7e {
			return errors.New("the token server's access_token has characters a header cannot carry")
		}
	}
	return nil
}

// clipType is a token type as an error may quote it: short, printable.
func clipType(s string) string {
	if len(s) > 20 {
		s = s[:20]
	}
	return strings.ToValidUTF8(s, "?")
}

// authorization is the Authorization header's value for tok.
func authorization(tok *oauth2.Token) string { return tok.Type() + " " + tok.AccessToken }

// fingerprint identifies a configuration (with its secrets) without keeping it.
func fingerprint(v any) [sha256.Size]byte {
	b, _ := json.Marshal(v)
	return sha256.Sum256(b)
}

// tokenFailure is the result of an attempt whose OAuth2 token could not be had: no request
// was sent to the receiver.
func tokenFailure(err error, timeout time.Duration) herald.Result {
	var res herald.Result
	res.Outcome, res.Error = classify(err, timeout)
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		// The token server's answer: its status and error code, never the whole body.
		msg := fmt.Sprintf("token server answered %s", re.Response.Status)
		if re.ErrorCode != "" {
			msg += ": " + re.ErrorCode
		}
		res.Outcome, res.Error = herald.OutcomeNetwork, msg
	}
	res.Error = "oauth2 token: " + res.Error
	return res
}
