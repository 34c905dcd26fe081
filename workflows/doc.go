// Package workflows holds Herald's Temporal workflows: one delivery workflow per event
// (the retry ladder's timers), one endpoint workflow per endpoint (its configuration and
// the limiter that protects it), the stats shards and the bulk replay workflow. Workflows only
// move messages and set timers; every decision comes from package policy, every HTTP
// detail from package activities, and every name and message on the wire from package
// herald.
package workflows
