package devserver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// ErrPortInUse is wrapped by Start's error when a requested port is already taken.
var ErrPortInUse = errors.New("port already in use")

// FreePort returns a TCP port on ip that nothing listens on.
//
// The port is left in TIME_WAIT so that the kernel does not hand it out to
// another ":0" listener in the meantime, while an explicit bind to it still
// succeeds. This keeps servers started side by side in one process (parallel
// tests) from picking the same port.
func FreePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("free port on %s: %w", ip, err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	// Connect to ourselves and close the accepted side first: the server end
	// of the connection then sits in TIME_WAIT on this port.
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("free port on %s: reserve %d: %w", ip, port, err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		return 0, fmt.Errorf("free port on %s: reserve %d: %w", ip, port, err)
	}
	server.Close()
	return port, nil
}

// checkPortFree reports, as an error wrapping ErrPortInUse, that port on ip is
// taken; what names the port's use in the message ("frontend", "UI").
func checkPortFree(ip string, port int, what string) error {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%s port %d on %s: %w; choose another %s port, or 0 to pick a free one",
			what, port, ip, ErrPortInUse, what)
	case err != nil:
		return fmt.Errorf("%s port %d on %s: cannot listen: %w; check the address, or choose another %s port",
			what, port, ip, err, what)
	}
	return l.Close()
}
