// qs-wg-helper: QUICstep's WireGuard channel as a process of its own, started by the TUN
// engine (docs/DESIGN.md, "Processes and the protocols between them"). WireGuard itself is
// Debian's wireguard-go library; this program only connects it to the engine's sockets:
// packets on fd 3 (packet_tun.go), the UAPI on fd 4 (device.IpcHandle), and UDP sockets
// protected before use (protected_bind.go, protect.go).
//
// Built with CGO_ENABLED=0: a static Go binary makes no glibc thread calls, which Android's
// seccomp filter traps in a static glibc process.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"golang.zx2c4.com/wireguard/device"
)

// Exit codes, for the engine's supervisor and its logs.
const (
	exitOK       = 0 // SIGTERM/SIGINT, or the engine closed fd 3 or fd 4
	exitFailure  = 1 // the device stopped for another reason
	exitUsage    = 2 // a bad command line
	exitBadFd    = 3 // fd 3 or fd 4 missing, or not the socket it must be
	exitProtect  = 4 // a UDP socket could not be protected (the socket refused it, or unreachable)
	exitUAPIDrop = 5 // wireguard-go ended the UAPI conversation on an unknown operation
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	logger := log.New(os.Stderr, "qs-wg-helper: ", log.Ldate|log.Ltime|log.Lmicroseconds)
	opts, err := parseOptions(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(os.Stdout, usageText)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "qs-wg-helper: %v\n%s", err, usageText)
		return exitUsage
	}
	// Before anything can block: a SIGTERM during start-up is still a clean exit.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)

	packets, packetsFile, err := inheritedSocket(3, syscall.SOCK_SEQPACKET, "packets")
	if err != nil {
		logger.Print(err)
		return exitBadFd
	}
	uapi, uapiFile, err := inheritedSocket(4, syscall.SOCK_STREAM, "UAPI")
	if err != nil {
		logger.Print(err)
		return exitBadFd
	}
	uapiFile.Close() // uapi holds its own duplicate

	fatal := make(chan error, 1)
	prot := newProtector(opts)
	fixedMark := uint32(0)
	if opts.protect == protectByMark {
		fixedMark = opts.fwmark
	}
	tunDev := newPacketTun(packets, packetsFile, opts.mtu)
	dev := device.NewDevice(tunDev, newProtectedBind(prot, fixedMark, fatal), wgLogger(logger, opts.verbose))
	logger.Printf("started: MTU %d, UDP sockets protected by %s", opts.mtu, prot.describe())
	if err := dev.Up(); err != nil {
		logger.Printf("cannot bring the device up: %v", err)
		if errors.Is(err, errProtect) {
			return exitProtect
		}
		return exitFailure
	}

	uapiEnded := make(chan *uapiConn, 1)
	go func() {
		c := &uapiConn{Conn: uapi}
		dev.IpcHandle(c)
		uapiEnded <- c
	}()

	code := exitOK
	select {
	case s := <-signals:
		logger.Printf("exiting on %v", s)
	case err := <-fatal:
		logger.Printf("exiting: %v", err)
		code = exitProtect
	case c := <-uapiEnded:
		if c.readFailed.Load() {
			logger.Print("exiting: the engine closed the UAPI socket (fd 4)")
		} else {
			logger.Print("exiting: the UAPI conversation ended on an unknown operation")
			code = exitUAPIDrop
		}
	case <-dev.Wait():
		if tunDev.EngineClosed() {
			logger.Print("exiting: the engine closed the packet socket (fd 3)")
		} else {
			logger.Print("exiting: the device stopped")
			code = exitFailure
		}
	}
	if n := tunDev.TruncatedPackets(); n != 0 {
		logger.Printf("dropped %d packets longer than the buffer", n)
	}
	dev.Close()
	return code
}

// wgLogger sends wireguard-go's lines to stderr with the helper's prefix (its own
// NewLogger writes to stdout).
func wgLogger(l *log.Logger, verbose bool) *device.Logger {
	errorf := func(format string, args ...any) { l.Printf("wireguard: "+format, args...) }
	verbosef := device.DiscardLogf
	if verbose {
		verbosef = func(format string, args ...any) { l.Printf("wireguard (verbose): "+format, args...) }
	}
	return &device.Logger{Verbosef: verbosef, Errorf: errorf}
}
