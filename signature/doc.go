// Package signature signs and verifies webhooks the Standard Webhooks way
// (https://www.standardwebhooks.com).
//
// Every request carries three headers: webhook-id (the event id, unchanged across
// retries), webhook-timestamp (Unix seconds of the attempt) and webhook-signature,
// a space-separated list of "v1,<base64 HMAC-SHA256>" entries, one per signing
// secret. The HMAC covers "{webhook-id}.{webhook-timestamp}.{raw body}" and is keyed
// by the bytes a "whsec_" secret encodes. Signing with two secrets lets a receiver
// rotate its secret without dropping a delivery.
package signature
