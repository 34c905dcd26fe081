package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/filelock"
)

// DefaultTokensFile is where tokens are kept unless told otherwise.
const DefaultTokensFile = ".herald/tokens.json"

// tokenPrefix starts every bearer token, so a leaked one is easy to recognise.
const tokenPrefix = "hrld_"

// Token is one stored token: who it speaks for, never the token itself (only its SHA-256).
type Token struct {
	// ID names the token in listings and revocations, e.g. tok_1a2b3c4d.
	ID string `json:"id"`
	// Hash is the hex SHA-256 of the token.
	Hash string `json:"hash"`
	// Operator tokens see and do everything.
	Operator bool `json:"operator,omitempty"`
	// Tenant limits a tenant token to the endpoints of that tenant.
	Tenant string `json:"tenant,omitempty"`
	// Note is a free-form reminder of what the token is for.
	Note      string    `json:"note,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// Who says what a token may see: "operator" or "tenant acme".
func (t Token) Who() string {
	if t.Operator {
		return "operator"
	}
	return "tenant " + t.Tenant
}

// tokensFile is the on-disk form of a TokenStore.
type tokensFile struct {
	// SessionKey signs the dashboard's session cookies; every serve instance sharing the file
	// accepts the others' sessions.
	SessionKey []byte  `json:"session_key"`
	Tokens     []Token `json:"tokens"`
	// UsedLinks are the portal links opened already and not yet expired: a link opens
	// once, on whichever server sharing the file (see portallink.go).
	UsedLinks []usedLink `json:"used_portal_links,omitempty"`
	// SignedOut are the dashboard sessions ended by signing out and not yet expired
	// (signout.go).
	SignedOut []signedOutSession `json:"signed_out_sessions,omitempty"`
}

// TokenStore holds the tokens of a tokens file. It rereads the file when it changes, so a
// token created or revoked by `herald token` takes effect in running servers at once; several
// servers must share one file (the session key in it signs their cookies).
//
// Every change holds an exclusive lock on the file's sibling PATH.lock from the read to the
// rename of the new file, so writers in any number of processes take turns and none loses
// another's change.
type TokenStore struct {
	path string

	mu     sync.Mutex
	read   os.FileInfo // the file as last read; nil when it did not exist
	file   tokensFile
	byHash map[string]Token
	byID   map[string]Token
	// ended holds the nonces of file.SignedOut.
	ended map[string]bool
	// maxSignedOut bounds file.SignedOut; 0 means MaxSignedOutSessions.
	maxSignedOut int
	// maxSignedOutPerToken bounds one token's entries; 0 means MaxSignedOutPerToken.
	maxSignedOutPerToken int
}

// OpenTokenStore opens the tokens file at path. A missing file is an empty store: it will be
// read once `herald token create` writes it.
func OpenTokenStore(path string) (*TokenStore, error) {
	if path == "" {
		return nil, errors.New("tokens file path is empty: give one with --tokens-file")
	}
	s := &TokenStore{path: path}
	if err := s.reload(true); err != nil {
		return nil, err
	}
	return s, nil
}

// Path is the tokens file's path.
func (s *TokenStore) Path() string { return s.path }

// reload rereads the file if it changed since the last read (or always when force is set).
// s.mu must not be held.
func (s *TokenStore) reload(force bool) error {
	fi, err := os.Stat(s.path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(err, os.ErrNotExist) {
		s.file, s.byHash, s.byID, s.ended, s.read = tokensFile{}, map[string]Token{}, map[string]Token{}, map[string]bool{}, nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	if !force && s.read != nil && unchanged(s.read, fi) {
		return nil
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	var f tokensFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("tokens file %s is not valid: %v (recreate it with herald token create)", s.path, err)
	}
	s.file, s.read = f, fi
	s.byHash, s.byID = map[string]Token{}, map[string]Token{}
	for _, t := range f.Tokens {
		if herald.ReservedTenant(t.Tenant) {
			continue // a token for a reserved tenant, written before the name was reserved, opens nothing
		}
		s.byHash[t.Hash] = t
		s.byID[t.ID] = t
	}
	s.ended = make(map[string]bool, len(f.SignedOut))
	for _, e := range f.SignedOut {
		s.ended[e.Nonce] = true
	}
	return nil
}

// unchanged reports whether the file is the one last read. Every change renames a new file
// into place, so a change is a new inode even when the size and the modification time (whose
// granularity may be coarse) are the same.
func unchanged(read, now os.FileInfo) bool {
	return os.SameFile(read, now) && read.ModTime().Equal(now.ModTime()) && read.Size() == now.Size()
}

// hashToken is the stored form of a token.
func hashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// Lookup returns the token whose secret is tok.
func (s *TokenStore) Lookup(tok string) (Token, bool) {
	tok = strings.TrimSpace(tok)
	if !strings.HasPrefix(tok, tokenPrefix) {
		return Token{}, false
	}
	_ = s.reload(false) // on a read error, keep the last good tokens
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.byHash[hashToken(tok)]
	return t, ok
}

// ByID returns the token with id (for sessions, which name their token by id).
func (s *TokenStore) ByID(id string) (Token, bool) {
	_ = s.reload(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.byID[id]
	return t, ok
}

// sessionKey is the key that signs session cookies; nil while the file has none.
func (s *TokenStore) sessionKey() []byte {
	_ = s.reload(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.file.SessionKey
}

// List returns the tokens (never their secrets), oldest first.
func (s *TokenStore) List() ([]Token, error) {
	if err := s.reload(false); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Token(nil), s.file.Tokens...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Create makes a new token for an operator (tenant empty and operator true) or a tenant,
// stores its hash and returns the token itself, which is shown once and never stored.
func (s *TokenStore) Create(operator bool, tenant, note string) (string, Token, error) {
	if operator == (tenant != "") {
		return "", Token{}, errors.New("give either --operator or --tenant NAME, not both or neither")
	}
	if tenant != "" {
		if err := herald.ValidateGrantedTenant(tenant); err != nil {
			return "", Token{}, err
		}
	}
	secret := make([]byte, 32)
	idb := make([]byte, 5)
	if _, err := rand.Read(secret); err != nil {
		return "", Token{}, err
	}
	if _, err := rand.Read(idb); err != nil {
		return "", Token{}, err
	}
	tok := tokenPrefix + base64.RawURLEncoding.EncodeToString(secret)
	t := Token{ID: "tok_" + hex.EncodeToString(idb), Hash: hashToken(tok), Operator: operator, Tenant: tenant, Note: note, CreatedAt: time.Now().UTC().Truncate(time.Second)}
	err := s.update(func(f *tokensFile) error {
		f.Tokens = append(f.Tokens, t)
		return nil
	})
	if err != nil {
		return "", Token{}, err
	}
	return tok, t, nil
}

// Revoke removes the token with id; sessions signed in with it end at once.
func (s *TokenStore) Revoke(id string) error {
	return s.update(func(f *tokensFile) error {
		for i, t := range f.Tokens {
			if t.ID == id {
				f.Tokens = append(f.Tokens[:i], f.Tokens[i+1:]...)
				return nil
			}
		}
		return fmt.Errorf("no token %s in %s: see the ids with herald token list", id, s.path)
	})
}

// update rewrites the file with fn's change, atomically (write to a temporary file, rename),
// with mode 0600, creating the session key when the file has none. It holds the file's lock
// from reading the current tokens to the rename, so concurrent writers, in this process or
// others, never lose each other's changes.
func (s *TokenStore) update(fn func(*tokensFile) error) error {
	lock, err := filelock.Acquire(s.path + ".lock")
	if err != nil {
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	defer lock.Unlock()
	if err := s.reload(true); err != nil {
		return err
	}
	s.mu.Lock()
	f := tokensFile{SessionKey: s.file.SessionKey, Tokens: append([]Token(nil), s.file.Tokens...), UsedLinks: append([]usedLink(nil), s.file.UsedLinks...),
		SignedOut: append([]signedOutSession(nil), s.file.SignedOut...)}
	s.mu.Unlock()
	if len(f.SessionKey) == 0 {
		f.SessionKey = make([]byte, 32)
		if _, err := rand.Read(f.SessionKey); err != nil {
			return err
		}
	}
	if err := fn(&f); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".tokens-*.json")
	if err != nil {
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	return s.reload(true)
}
