package server

import (
	"cmp"
	"crypto/rand"
	"slices"
	"time"
)

// MaxSignedOutSessions bounds how many signed-out sessions a tokens file remembers. A
// signed-out session is remembered until it would have expired (at most the session
// lifetime, Options.SessionTTL, after it began), so the list holds the sign-outs of one
// session lifetime; about 60 bytes each, 10,000 of them are under 1 MB. A sign-out that
// finds the list full replaces the session key instead: every session ends (everyone signs
// in again, and unopened portal links no longer open), and the list starts empty.
const MaxSignedOutSessions = 10000

// MaxSignedOutPerToken bounds how many of the signed-out sessions one token leaves: past
// it, that token's session closest to expiring is forgotten (it could open again, but only
// for someone who signs in with that same token anyway). So no token holder can fill the
// list and, through the key replacement above, sign everyone else out.
const MaxSignedOutPerToken = 100

// signedOutSession is a session ended by signing out, kept until it would have expired.
type signedOutSession struct {
	Nonce     string    `json:"nonce"`
	TokenID   string    `json:"token_id,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// signedOut reports whether the session with nonce was ended by signing out.
func (s *TokenStore) signedOut(nonce string) bool {
	_ = s.reload(false) // on a read error, keep the last good list
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended[nonce]
}

// endSession records the session with nonce, of token tokenID, which expires at expires, as
// signed out, on every server sharing the file. It forgets the sessions that have expired
// by now and the token's oldest past MaxSignedOutPerToken; when the list is full it
// replaces the session key (see MaxSignedOutSessions).
func (s *TokenStore) endSession(nonce, tokenID string, expires, now time.Time) error {
	if nonce == "" || !now.Before(expires) {
		return nil // nothing to end: no session, or one that has expired
	}
	max, perToken := cmp.Or(s.maxSignedOut, MaxSignedOutSessions), cmp.Or(s.maxSignedOutPerToken, MaxSignedOutPerToken)
	return s.update(func(f *tokensFile) error {
		for _, e := range f.SignedOut {
			if e.Nonce == nonce {
				return nil // ended already
			}
		}
		kept, oldest, mine := f.SignedOut[:0], -1, 0
		for _, e := range f.SignedOut {
			if !now.Before(e.ExpiresAt) {
				continue
			}
			if e.TokenID == tokenID {
				mine++
				if oldest < 0 || e.ExpiresAt.Before(kept[oldest].ExpiresAt) {
					oldest = len(kept)
				}
			}
			kept = append(kept, e)
		}
		if mine >= perToken {
			kept = slices.Delete(kept, oldest, oldest+1)
		}
		if len(kept) >= max {
			key := make([]byte, 32)
			if _, err := rand.Read(key); err != nil {
				return err
			}
			f.SessionKey, f.SignedOut = key, nil
			return nil
		}
		f.SignedOut = append(kept, signedOutSession{Nonce: nonce, TokenID: tokenID, ExpiresAt: expires.UTC()})
		return nil
	})
}
