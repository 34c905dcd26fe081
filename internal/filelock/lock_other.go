//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package filelock

import "os"

// Supported reports whether locks exclude anyone on this platform: this one has no flock,
// so a lock protects nothing.
const Supported = false

// flock does nothing here.
func flock(*os.File, bool) error { return nil }
