package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// protection says how the helper keeps its UDP sockets out of the VPN it serves: exactly
// one of them is chosen on the command line, so that a helper is never started with
// sockets that would loop back into the TUN by accident.
type protection int

const (
	protectByMark   protection = iota + 1 // SO_MARK (Linux; a policy rule sends the mark to the main table)
	protectBySocket                       // shadowsocks-android's protect_path protocol (Android)
	protectNone                           // tests and namespaces without a VPN route
)

// options is the helper's whole configuration: the WireGuard settings themselves arrive
// over the UAPI on fd 4.
type options struct {
	mtu         int        // the packet socket's MTU, the channel's (wg-quick's MTU)
	protect     protection // how sockets are protected
	fwmark      uint32     // protectByMark: the mark, 1-0xffffffff
	protectPath string     // protectBySocket: the protect server's socket path
	verbose     bool       // wireguard-go's verbose log lines
}

const (
	defaultMTU = 1420  // wg-quick's default
	minMTU     = 1280  // IPv6's minimum: the channel carries IPv6 too
	maxMTU     = 65535 // an IPv4 total length
	// sun_path holds 108 bytes with the terminating NUL.
	maxSocketPath = 107
)

const usageText = `usage: qs-wg-helper (--fwmark N | --protect-socket PATH | --no-protect) [--mtu N] [--verbose]

QUICstep's WireGuard channel, run by the TUN engine. It inherits two sockets:
  fd 3  SOCK_SEQPACKET, one IP packet per message each way (the channel's TUN)
  fd 4  SOCK_STREAM, WireGuard's UAPI (set=1 / get=1), answered with errno=N
and exits when either closes, or on SIGTERM.

  --fwmark N             protect UDP sockets with SO_MARK N (1-0xffffffff, decimal or 0x-hex)
  --protect-socket PATH  protect each UDP socket by sending it to PATH (SCM_RIGHTS, one byte;
                         the answer is one byte, 0 = protected)
  --no-protect           do not protect the UDP sockets (tests only)
  --mtu N                the channel's MTU (1280-65535, default 1420)
  --verbose              wireguard-go's verbose log lines on stderr
`

// parseOptions reads the command line. Errors quote the bad value; each is a usage error.
func parseOptions(args []string) (options, error) {
	o := options{mtu: defaultMTU}
	fs := flag.NewFlagSet("qs-wg-helper", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var mtu, fwmark, protectPath string
	var noProtect bool
	fs.StringVar(&mtu, "mtu", "", "")
	fs.StringVar(&fwmark, "fwmark", "", "")
	fs.StringVar(&protectPath, "protect-socket", "", "")
	fs.BoolVar(&noProtect, "no-protect", false, "")
	fs.BoolVar(&o.verbose, "verbose", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, errors.New(strings.TrimPrefix(err.Error(), "flag provided but not defined: "))
	}
	if fs.NArg() != 0 {
		return o, fmt.Errorf("unexpected argument `%s'", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	if set["mtu"] {
		n, err := strconv.ParseUint(mtu, 10, 32)
		if err != nil || n < minMTU || n > maxMTU {
			return o, fmt.Errorf("--mtu is not a number in %d-%d: `%s'", minMTU, maxMTU, mtu)
		}
		o.mtu = int(n)
	}
	chosen := 0
	if set["fwmark"] {
		chosen++
		n, err := parseMark(fwmark)
		if err != nil || n == 0 {
			return o, fmt.Errorf("--fwmark is neither a decimal nor a 0x-hex number in 1-0xffffffff: `%s'", fwmark)
		}
		o.protect, o.fwmark = protectByMark, uint32(n)
	}
	if set["protect-socket"] {
		chosen++
		if protectPath == "" || len(protectPath) > maxSocketPath || strings.IndexByte(protectPath, 0) >= 0 {
			return o, fmt.Errorf("--protect-socket is not a socket path of 1-%d bytes: `%s'", maxSocketPath, protectPath)
		}
		o.protect, o.protectPath = protectBySocket, protectPath
	}
	if noProtect {
		chosen++
		o.protect = protectNone
	}
	if chosen != 1 {
		return o, errors.New("exactly one of --fwmark, --protect-socket and --no-protect is needed")
	}
	return o, nil
}

// parseMark reads a decimal or 0x-hex 32-bit number, the whole string (no sign, no
// underscores, no octal: strconv's base 0 would take all three).
func parseMark(s string) (uint32, error) {
	base, digits := 10, s
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		base, digits = 16, s[2:]
	}
	if digits == "" || strings.IndexAny(digits, "+-_") >= 0 {
		return 0, strconv.ErrSyntax
	}
	n, err := strconv.ParseUint(digits, base, 32)
	return uint32(n), err
}
