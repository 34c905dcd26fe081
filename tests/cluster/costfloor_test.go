package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // the floor process's profiles, on its own port only
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// floorProcessEnv, set in the environment of this test binary, makes it run the floor as
// a process of its own (floorMain) instead of the tests. Its value is a floorSpec in JSON.
//
// The floor-proc load measures the engine doing a delivery's I/O in the process layout
// Herald has: the sender and the receiver in this process, the ingress and the worker in
// another (Herald's: `herald worker --api-listen`). floor-webhook runs all four in this
// one process, which saves it the second process's wake-ups on every request.
const floorProcessEnv = "HERALD_COST_FLOOR_PROCESS"

// floorProc is the process name of the floor process (its CPU group in the cost figures).
const floorProc = "cost-floor"

// floorSpec is what the floor process serves and where it connects.
type floorSpec struct {
	// Listen is the ingress's address (host:port).
	Listen string `json:"listen"`
	// Address and Namespace are the Temporal frontend's.
	Address   string `json:"address"`
	Namespace string `json:"namespace"`
	// Receiver is where the floor's activity POSTs each event.
	Receiver string `json:"receiver"`
	// Plain dials without gRPC compression (else the SDK's default, gzip).
	Plain bool `json:"plain"`
	// PprofPort, unless 0, serves net/http/pprof on 127.0.0.1.
	PprofPort int `json:"pprof_port"`
}

// floorProcAddr is the floor process's ingress address; floorProcReceiver is where its
// activity POSTs (empty: BenchmarkCost runs no floor process).
var floorProcAddr, floorProcReceiver string

// floorMain runs the floor as a process: its worker, and its ingress on spec's address,
// until SIGTERM. It returns the process's exit code.
func floorMain(spec string) int {
	var s floorSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", floorProcessEnv, err)
		return 2
	}
	f := &floor{seen: map[string]bool{}}
	if err := f.dial(s.Address, s.Namespace, s.Plain); err != nil {
		fmt.Fprintln(os.Stderr, "floor process:", err)
		return 1
	}
	defer f.stop()
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor process:", err)
		return 1
	}
	go http.Serve(ln, f.ingressHandler(s.Receiver))
	if s.PprofPort != 0 {
		go http.ListenAndServe("127.0.0.1:"+strconv.Itoa(s.PprofPort), http.DefaultServeMux)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	return 0
}

// startFloorProc (re)starts the floor process, with gRPC compression off when plain, and
// waits until its ingress accepts connections. It does nothing when no floor process is
// wanted (floorProcReceiver empty).
func (c *cluster) startFloorProc(plain bool) error {
	if floorProcReceiver == "" {
		return nil
	}
	if c.running(floorProc) {
		if err := c.kill(floorProc, syscall.SIGTERM); err != nil {
			return err
		}
	}
	port, err := profilePort(floorProc)
	if err != nil {
		return err
	}
	spec, err := json.Marshal(floorSpec{Listen: floorProcAddr, Address: c.address, Namespace: c.namespace,
		Receiver: floorProcReceiver, Plain: plain, PprofPort: port})
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), floorProcessEnv+"="+string(spec))
	if err := c.spawn(floorProc, cmd); err != nil {
		return err
	}
	return awaitListening("the floor process's ingress", floorProcAddr, time.Minute)
}
