package main

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// inheritedSocket checks that fd is an AF_UNIX socket of type sotype and wraps it in a
// *net.UnixConn (which owns a duplicate; the returned *os.File owns fd itself). Errors
// name the fd, what it is for, and what it is instead.
func inheritedSocket(fd int, sotype int, what string) (*net.UnixConn, *os.File, error) {
	domain, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_DOMAIN)
	if err != nil {
		return nil, nil, fmt.Errorf("fd %d (%s) is not an inherited socket: %v", fd, what, err)
	}
	typ, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
	if err != nil {
		return nil, nil, fmt.Errorf("fd %d (%s): SO_TYPE: %v", fd, what, err)
	}
	if domain != syscall.AF_UNIX || typ != sotype {
		return nil, nil, fmt.Errorf("fd %d (%s) is a socket of domain %d type %d, not AF_UNIX %s",
			fd, what, domain, typ, sotypeName(sotype))
	}
	syscall.CloseOnExec(fd)
	file := os.NewFile(uintptr(fd), what)
	c, err := net.FileConn(file)
	if err != nil {
		file.Close()
		return nil, nil, fmt.Errorf("fd %d (%s): %v", fd, what, err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		file.Close()
		return nil, nil, fmt.Errorf("fd %d (%s) is not a unix socket", fd, what)
	}
	return uc, file, nil
}

func sotypeName(t int) string {
	switch t {
	case syscall.SOCK_STREAM:
		return "SOCK_STREAM"
	case syscall.SOCK_SEQPACKET:
		return "SOCK_SEQPACKET"
	}
	return fmt.Sprintf("type %d", t)
}
