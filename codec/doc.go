// Package codec keeps Herald's data unreadable in Temporal's store.
//
// Every payload Herald hands to Temporal (event bodies, endpoint secrets,
// activity results) and every failure message and stack trace is encrypted
// with AES-256-GCM before it leaves the process, so the server's history holds
// only ciphertext. A worker or client is wired like this:
//
//	keys, err := codec.KeyringFromEnvOrFile(os.Getenv("HERALD_CODEC_KEYS"), keyFile)
//	...
//	opts := client.Options{
//		DataConverter:    codec.DataConverter(keys),
//		FailureConverter: codec.FailureConverter(keys),
//	}
//
// Both converters must be set: the data converter alone leaves failure
// messages in plain text.
//
// Handler serves the Temporal codec server protocol, so an operator who runs it
// with the keys can point the Temporal Web UI at it and read decoded payloads in
// the browser. The handler decrypts for anyone who can reach it: serve it on
// loopback or behind authentication.
//
// Not encrypted, because the server must read them: workflow and activity ids,
// types, task queues and search attributes. Keep secrets out of those.
//
// # Key file
//
// A key file (or the HERALD_CODEC_KEYS value) is UTF-8 text with one key per
// line:
//
//	# Herald codec keys. The first key encrypts; every key decrypts.
//	20260701-3fa9c2:<base64 of 32 random bytes>
//	20260115-77d01b:<base64 of 32 random bytes>
//
// Each key line is "<id>:<base64>": the id is 1 to 64 characters from
// [A-Za-z0-9._-], and the base64 (standard alphabet, padding optional) decodes
// to exactly 32 bytes. Blank lines and lines starting with '#' are ignored.
// Several keys may also share a line separated by commas, which suits an
// environment variable: HERALD_CODEC_KEYS="new:...,old:...". The first key is
// the active key; ids must be unique.
//
// To rotate, put a new key first and keep the old ones below it: new payloads
// use the new key and history written with the old ones still decodes. Remove an
// old key only when no open workflow or retained history still needs it.
package codec
