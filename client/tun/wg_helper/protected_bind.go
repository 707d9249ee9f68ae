package main

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"syscall"

	"golang.zx2c4.com/wireguard/conn"
)

// protectedBind is wireguard-go's conn.Bind on two UDP sockets (IPv4 and IPv6, one port),
// each protected before it is bound: the protector runs from net.ListenConfig's Control
// hook, so wireguard-go never holds a socket it could send on unprotected. Endpoints are
// wireguard-go's own conn.StdNetEndpoint.
//
// A protect failure is fatal: it is reported on `fatal` (once) as well as returned from
// Open, because wireguard-go only logs a failed re-bind (a UAPI listen_port change) and
// would run on without sockets.
type protectedBind struct {
	protector protector
	fatal     chan<- error
	fixedMark uint32 // the --fwmark, which a UAPI fwmark may not change; 0 if none

	mu   sync.Mutex
	v4   *net.UDPConn
	v6   *net.UDPConn
	mark uint32 // a UAPI fwmark, applied to both sockets when set
}

var _ conn.Bind = (*protectedBind)(nil)

func newProtectedBind(p protector, fixedMark uint32, fatal chan<- error) *protectedBind {
	return &protectedBind{protector: p, fixedMark: fixedMark, fatal: fatal}
}

func (b *protectedBind) listen(network string, port int) (*net.UDPConn, int, error) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var perr error
		if err := rc.Control(func(fd uintptr) { perr = b.protector.protect(int(fd)) }); err != nil {
			return err
		}
		return perr
	}}
	pc, err := lc.ListenPacket(context.Background(), network, net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		return nil, 0, err
	}
	uc := pc.(*net.UDPConn)
	return uc, uc.LocalAddr().(*net.UDPAddr).Port, nil
}

// Open binds both families on one port (a random one, retried, when uport is 0). A family
// the kernel lacks (EAFNOSUPPORT) is left out.
func (b *protectedBind) Open(uport uint16) ([]conn.ReceiveFunc, uint16, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.v4 != nil || b.v6 != nil {
		return nil, 0, conn.ErrBindAlreadyOpen
	}
	for tries := 0; ; tries++ {
		v4, port, err := b.listen("udp4", int(uport))
		if err != nil && !errors.Is(err, syscall.EAFNOSUPPORT) {
			return nil, 0, b.failed(err)
		}
		v6, port6, err := b.listen("udp6", port)
		if uport == 0 && errors.Is(err, syscall.EADDRINUSE) && tries < 100 {
			if v4 != nil {
				v4.Close()
			}
			continue
		}
		if err != nil && !errors.Is(err, syscall.EAFNOSUPPORT) {
			if v4 != nil {
				v4.Close()
			}
			return nil, 0, b.failed(err)
		}
		if v4 == nil {
			port = port6
		}
		if v4 == nil && v6 == nil {
			return nil, 0, syscall.EAFNOSUPPORT
		}
		b.v4, b.v6 = v4, v6
		if b.mark != 0 {
			if err := b.applyMarkLocked(b.mark); err != nil {
				b.closeLocked()
				return nil, 0, err
			}
		}
		var fns []conn.ReceiveFunc
		if v4 != nil {
			fns = append(fns, receiveFrom(v4))
		}
		if v6 != nil {
			fns = append(fns, receiveFrom(v6))
		}
		return fns, uint16(port), nil
	}
}

// failed reports a protect failure on the fatal channel; other errors are only returned.
func (b *protectedBind) failed(err error) error {
	if errors.Is(err, errProtect) {
		select {
		case b.fatal <- err:
		default:
		}
	}
	return err
}

func receiveFrom(c *net.UDPConn) conn.ReceiveFunc {
	return func(buf []byte) (int, conn.Endpoint, error) {
		n, addr, err := c.ReadFromUDP(buf)
		if err != nil {
			return 0, nil, err
		}
		return n, (*conn.StdNetEndpoint)(addr), nil
	}
}

func (b *protectedBind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closeLocked()
}

func (b *protectedBind) closeLocked() error {
	var err1, err2 error
	if b.v4 != nil {
		err1 = b.v4.Close()
		b.v4 = nil
	}
	if b.v6 != nil {
		err2 = b.v6.Close()
		b.v6 = nil
	}
	if err1 != nil {
		return err1
	}
	return err2
}

// errMarkFixed: with --fwmark the mark is the sockets' protection; a UAPI fwmark may
// repeat it but not change it.
var errMarkFixed = errors.New("the fwmark is fixed by --fwmark")

// SetMark applies a UAPI fwmark to both sockets (and to those of later Opens). Under
// --fwmark, 0 keeps that mark and any other value but the same one is refused.
func (b *protectedBind) SetMark(mark uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fixedMark != 0 {
		if mark != 0 && mark != b.fixedMark {
			return errMarkFixed
		}
		return nil
	}
	b.mark = mark
	return b.applyMarkLocked(mark)
}

func (b *protectedBind) applyMarkLocked(mark uint32) error {
	for _, c := range []*net.UDPConn{b.v4, b.v6} {
		if c == nil {
			continue
		}
		rc, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_MARK, int(mark))
		}); err != nil {
			return err
		}
		if serr != nil {
			return serr
		}
	}
	return nil
}

func (b *protectedBind) Send(buf []byte, ep conn.Endpoint) error {
	addr, ok := ep.(*conn.StdNetEndpoint)
	if !ok {
		return conn.ErrWrongEndpointType
	}
	ua := (*net.UDPAddr)(addr)
	b.mu.Lock()
	c := b.v6
	if ua.IP.To4() != nil {
		c = b.v4
	}
	b.mu.Unlock()
	if c == nil {
		return syscall.EAFNOSUPPORT
	}
	_, err := c.WriteToUDP(buf, ua)
	return err
}

func (b *protectedBind) ParseEndpoint(s string) (conn.Endpoint, error) {
	return conn.NewStdNetBind().ParseEndpoint(s)
}
