// Package netguard keeps Herald from being turned against its own network (SSRF).
//
// Endpoint URLs come from customers, so by default Herald refuses to connect to any
// address that is not globally reachable unicast: loopback, private, link-local (which
// includes cloud metadata services), shared CGNAT space, multicast, broadcast,
// unspecified, documentation and benchmarking ranges, and IPv6 forms that embed such an
// IPv4 address. Operators allow specific ranges with Policy.Allow.
//
// The check runs twice: CheckURL at registration (no DNS), and Policy.Dialer's Control
// hook on the address actually dialled, after DNS resolution, so a name that resolves
// or rebinds to a forbidden address is refused before any packet is sent.
package netguard
