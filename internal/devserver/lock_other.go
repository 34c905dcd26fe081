//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package devserver

import "os"

// flock does nothing here: this platform has no flock, so a database file is
// not protected against a second server.
func flock(*os.File) error { return nil }
