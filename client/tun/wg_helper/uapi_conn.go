package main

import (
	"net"
	"sync/atomic"
)

// uapiConn is the UAPI socket (fd 4) as device.IpcHandle sees it, noting whether the
// engine ended the conversation (a read failed: EOF or a reset). IpcHandle also returns,
// closing the socket, on an operation line it does not know; then no read has failed, and
// the helper tells the two apart by that.
type uapiConn struct {
	net.Conn
	readFailed atomic.Bool
}

func (c *uapiConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.readFailed.Store(true)
	}
	return n, err
}
