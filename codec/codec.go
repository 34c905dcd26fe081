package codec

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

const (
	// Encoding is the metadata "encoding" value of a payload this package encrypted.
	Encoding = "binary/encrypted"
	// MetadataKeyID is the metadata key naming the id of the key that encrypted a payload.
	MetadataKeyID = "encryption-key-id"
	// MetadataCipher is the metadata key naming the cipher of an encrypted payload.
	MetadataCipher = "encryption-cipher"
	// Cipher is the MetadataCipher value this package writes and reads.
	Cipher = "AES-256-GCM"
)

// Codec is an AES-256-GCM converter.PayloadCodec. Encode replaces each payload
// with one whose metadata carries Encoding, the active key id and Cipher, and
// whose data is a 12-byte random nonce followed by the sealed serialized
// original payload; the key id is authenticated as additional data.
type Codec struct {
	keys *Keyring
}

var _ converter.PayloadCodec = (*Codec)(nil)

// NewCodec returns a Codec using k. It panics if k is nil.
func NewCodec(k *Keyring) *Codec {
	if k == nil {
		panic("codec.NewCodec: nil Keyring; load keys with LoadKeyring or ParseKeyring")
	}
	return &Codec{keys: k}
}

// Encode encrypts every payload with the active key, except a null (encoding binary/null,
// no data): it carries nothing to hide, and the server removes a memo field only when it is
// upserted to a plain null. It does not modify p.
func (c *Codec) Encode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id := c.keys.ActiveKeyID()
	aead, _ := c.keys.aead(id)
	out := make([]*commonpb.Payload, len(p))
	for i, pl := range p {
		if pl == nil {
			continue
		}
		if string(pl.GetMetadata()[converter.MetadataEncoding]) == converter.MetadataEncodingNil && len(pl.GetData()) == 0 {
			out[i] = pl
			continue
		}
		plain, err := proto.Marshal(pl)
		if err != nil {
			return p, fmt.Errorf("encrypt payload %d: serialize: %w", i, err)
		}
		data := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(data); err != nil {
			return p, fmt.Errorf("encrypt payload %d: nonce: %w", i, err)
		}
		data = aead.Seal(data, data, plain, []byte(id))
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(Encoding),
				MetadataKeyID:              []byte(id),
				MetadataCipher:             []byte(Cipher),
			},
			Data: data,
		}
	}
	return out, nil
}

// Decode decrypts payloads whose encoding is Encoding with the key named in
// their metadata; payloads without the encrypted encoding pass through
// unchanged. It does not modify p.
func (c *Codec) Decode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(p))
	for i, pl := range p {
		if pl == nil || string(pl.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = pl
			continue
		}
		dec, err := c.decodeOne(pl)
		if err != nil {
			return p, fmt.Errorf("decrypt payload %d: %w", i, err)
		}
		out[i] = dec
	}
	return out, nil
}

func (c *Codec) decodeOne(pl *commonpb.Payload) (*commonpb.Payload, error) {
	md := pl.GetMetadata()
	if ci, ok := md[MetadataCipher]; ok && string(ci) != Cipher {
		return nil, fmt.Errorf("cipher %q is not supported (only %s); it was written by other software", ci, Cipher)
	}
	id := string(md[MetadataKeyID])
	if id == "" {
		return nil, fmt.Errorf("metadata has no %q; the payload is corrupt or was not written by Herald", MetadataKeyID)
	}
	aead, ok := c.keys.aead(id)
	if !ok {
		return nil, &MissingKeyError{KeyID: id, Have: c.keys.KeyIDs()}
	}
	data := pl.GetData()
	if len(data) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("ciphertext is %d bytes, shorter than nonce and tag; the payload is truncated or corrupt", len(data))
	}
	nonce, sealed := data[:aead.NonceSize()], data[aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, sealed, []byte(id))
	if err != nil {
		return nil, fmt.Errorf("%w: key %q failed to authenticate the ciphertext: the payload was altered, or key %q holds different bytes than the key that encrypted it", ErrUndecryptable, id, id)
	}
	dec := &commonpb.Payload{}
	if err := proto.Unmarshal(plain, dec); err != nil {
		return nil, fmt.Errorf("decrypted bytes are not a payload: %w", err)
	}
	return dec, nil
}

// ErrUndecryptable marks errors of payloads this process holds no key to decrypt (a
// MissingKeyError, or a key whose bytes differ from the one that encrypted the payload).
var ErrUndecryptable = errors.New("payload cannot be decrypted")

// MissingKeyError is the error of a payload encrypted with a key the keyring lacks.
type MissingKeyError struct {
	// KeyID names the key that encrypted the payload (from its metadata).
	KeyID string
	// Have are the ids of the keys this process holds.
	Have []string
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("key %q is not in the keyring (have %s); add the key that encrypted it to the key file or HERALD_CODEC_KEYS", e.KeyID, strings.Join(e.Have, ", "))
}

// Unwrap makes errors.Is(err, ErrUndecryptable) hold.
func (e *MissingKeyError) Unwrap() error { return ErrUndecryptable }

// IsUndecryptable reports whether err comes from an encrypted payload this process cannot
// read: a key it lacks or holds different bytes of, or no keys at all.
func IsUndecryptable(err error) bool {
	return err != nil && (errors.Is(err, ErrUndecryptable) || strings.Contains(err.Error(), Encoding))
}

// PayloadKeyID returns the id of the key that encrypted p, or "" if p is not encrypted.
func PayloadKeyID(p *commonpb.Payload) string {
	if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
		return ""
	}
	return string(p.GetMetadata()[MetadataKeyID])
}

// DataConverter wraps the default data converter with the codec. In workflow code, a
// payload encrypted with a key k lacks fails the workflow task (retried by Temporal until a
// worker with the key runs it) instead of the workflow; see WaitingForKey. A nil k
// returns the default data converter unchanged (no encryption), matching
// KeyringFromEnvOrFile's (nil, nil) for "no keys configured".
func DataConverter(k *Keyring) converter.DataConverter {
	if k == nil {
		return converter.GetDefaultDataConverter()
	}
	return keyedConverter{converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), NewCodec(k))}
}

// FailureConverter encodes failure messages and stack traces into a payload
// that DataConverter(k) encrypts, so they are encrypted too. A nil k returns
// the default failure converter (no encryption).
func FailureConverter(k *Keyring) converter.FailureConverter {
	if k == nil {
		return temporal.GetDefaultFailureConverter()
	}
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          DataConverter(k),
		EncodeCommonAttributes: true,
	})
}
