package main

import (
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeProtectServer accepts protect requests on a socket in dir and answers each with
// `answer`, sending the local port of every received socket on `ports`.
func fakeProtectServer(t *testing.T, answer byte, ports chan<- int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "protect.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			b, oob := make([]byte, 1), make([]byte, 64)
			n, oobn, _, _, err := c.ReadMsgUnix(b, oob)
			if err == nil && n == 1 {
				msgs, _ := syscall.ParseSocketControlMessage(oob[:oobn])
				if len(msgs) == 1 {
					fds, _ := syscall.ParseUnixRights(&msgs[0])
					for _, fd := range fds {
						if sa, err := syscall.Getsockname(fd); err == nil && ports != nil {
							switch a := sa.(type) {
							case *syscall.SockaddrInet4:
								ports <- a.Port
							case *syscall.SockaddrInet6:
								ports <- a.Port
							}
						}
						syscall.Close(fd)
					}
				}
			}
			c.Write([]byte{answer})
			c.Close()
		}
	}()
	return path
}

func TestSocketProtectorSendsTheSocketBeforeItIsBound(t *testing.T) {
	ports := make(chan int, 4)
	p := socketProtector{path: fakeProtectServer(t, 0, ports), timeout: time.Second}
	b := newProtectedBind(p, 0, make(chan error, 1))
	fns, port, err := b.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(fns) == 0 || port == 0 {
		t.Fatalf("Open = %d fns, port %d", len(fns), port)
	}
	// Every socket reached the server unbound (port 0): protected before any use.
	for i := 0; i < len(fns); i++ {
		if got := <-ports; got != 0 {
			t.Errorf("socket %d was bound to port %d before it was protected", i, got)
		}
	}
}

func TestRefusedProtectIsFatal(t *testing.T) {
	fatal := make(chan error, 1)
	p := socketProtector{path: fakeProtectServer(t, 1, nil), timeout: time.Second}
	b := newProtectedBind(p, 0, fatal)
	_, _, err := b.Open(0)
	if !errors.Is(err, errProtect) || !strings.Contains(err.Error(), "refused to protect the socket (answer 1)") {
		t.Fatalf("Open = %v", err)
	}
	select {
	case <-fatal:
	default:
		t.Fatal("a refused protect was not reported as fatal")
	}
	if b.v4 != nil || b.v6 != nil {
		t.Error("a socket stayed open")
	}
}

func TestUnreachableProtectSocketIsFatal(t *testing.T) {
	p := socketProtector{path: filepath.Join(t.TempDir(), "none.sock"), timeout: time.Second}
	_, _, err := newProtectedBind(p, 0, make(chan error, 1)).Open(0)
	if !errors.Is(err, errProtect) || !strings.Contains(err.Error(), "cannot reach the protect socket") {
		t.Fatalf("Open = %v", err)
	}
}

func TestSilentProtectServerTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "silent.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			time.Sleep(2 * time.Second)
		}
	}()
	start := time.Now()
	err = socketProtector{path: path, timeout: 200 * time.Millisecond}.protect(0)
	if !errors.Is(err, errProtect) || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("protect = %v", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

func TestBindsSendAndReceiveOverLoopback(t *testing.T) {
	a := newProtectedBind(noProtector{}, 0, make(chan error, 1))
	b := newProtectedBind(noProtector{}, 0, make(chan error, 1))
	_, _, err := a.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fns, portB, err := b.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ep, err := a.ParseEndpoint(net.JoinHostPort("127.0.0.1", strconv.Itoa(int(portB))))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Send([]byte("hello"), ep); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	n, from, err := fns[0](buf)
	if err != nil || string(buf[:n]) != "hello" || from.DstIP().String() != "127.0.0.1" {
		t.Fatalf("receive = %q from %v, %v", buf[:n], from, err)
	}
	b.Close()
	if _, _, err := fns[0](buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("receive after Close = %v, want net.ErrClosed", err)
	}
}

func TestUapiFwmarkCannotChangeTheProtectingMark(t *testing.T) {
	b := newProtectedBind(markProtector{mark: 7}, 7, make(chan error, 1))
	if err := b.SetMark(7); err != nil {
		t.Errorf("SetMark(the same mark) = %v", err)
	}
	if err := b.SetMark(0); err != nil {
		t.Errorf("SetMark(0) = %v", err)
	}
	if err := b.SetMark(8); !errors.Is(err, errMarkFixed) {
		t.Errorf("SetMark(another mark) = %v", err)
	}
}
