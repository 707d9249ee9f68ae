package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// A protector keeps one new UDP socket out of the VPN. It runs after the socket is created
// and before it is bound, so no datagram leaves a socket that is not protected yet.
type protector interface {
	protect(fd int) error
	describe() string
}

// errProtect marks every protect failure: the helper cannot run with sockets that would
// loop into its own tunnel, so a failure ends it (exitProtect) instead of being retried.
var errProtect = errors.New("protect failed")

func newProtector(o options) protector {
	switch o.protect {
	case protectByMark:
		return markProtector{mark: o.fwmark}
	case protectBySocket:
		return socketProtector{path: o.protectPath, timeout: protectTimeout}
	}
	return noProtector{}
}

// markProtector sets SO_MARK; a policy rule routes that mark by the main table, as
// Android's netd does for protected sockets. Needs CAP_NET_ADMIN.
type markProtector struct{ mark uint32 }

func (p markProtector) protect(fd int) error {
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_MARK, int(p.mark)); err != nil {
		return fmt.Errorf("%w: setsockopt SO_MARK 0x%x: %v (it needs CAP_NET_ADMIN)", errProtect, p.mark, err)
	}
	return nil
}

func (p markProtector) describe() string { return fmt.Sprintf("SO_MARK 0x%x", p.mark) }

// protectTimeout bounds one protect exchange: the Java service answers at once, so a
// silent server is a dead or wedged service.
const protectTimeout = 5 * time.Second

// socketProtector speaks shadowsocks-android's protect_path protocol: connect to the
// service's unix stream socket, send the fd (SCM_RIGHTS) with one data byte, read one byte
// back; 0 means VpnService.protect(fd) succeeded. One connection per socket.
type socketProtector struct {
	path    string
	timeout time.Duration
}

func (p socketProtector) protect(fd int) error {
	c, err := net.DialTimeout("unix", p.path, p.timeout)
	if err != nil {
		return fmt.Errorf("%w: cannot reach the protect socket: %v", errProtect, err)
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	if err := uc.SetDeadline(time.Now().Add(p.timeout)); err != nil {
		return fmt.Errorf("%w: %v", errProtect, err)
	}
	if _, _, err := uc.WriteMsgUnix([]byte{0}, syscall.UnixRights(fd), nil); err != nil {
		return fmt.Errorf("%w: sending the socket to %s: %v", errProtect, p.path, err)
	}
	var answer [1]byte
	if _, err := io.ReadFull(uc, answer[:]); err != nil {
		return fmt.Errorf("%w: no answer from %s: %v", errProtect, p.path, err)
	}
	if answer[0] != 0 {
		return fmt.Errorf("%w: %s refused to protect the socket (answer %d)", errProtect, p.path, answer[0])
	}
	return nil
}

func (p socketProtector) describe() string { return "the protect socket " + p.path }

type noProtector struct{}

func (noProtector) protect(int) error { return nil }
func (noProtector) describe() string  { return "nothing (--no-protect)" }
