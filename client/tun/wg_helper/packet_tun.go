package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.zx2c4.com/wireguard/tun"
)

// packetTun is wireguard-go's tun.Device over the engine's SOCK_SEQPACKET socket (fd 3):
// one message is one IP packet, in both directions, with no header. Reads and writes go
// through Go's poller, so Close wakes a blocked Read.
//
// An empty message is indistinguishable from the engine closing its end (both read as 0
// bytes), so the engine never sends one; either way the device closes and the helper exits.
type packetTun struct {
	conn       *net.UnixConn
	file       *os.File
	mtu        int
	events     chan tun.Event
	closeOnce  sync.Once
	peerClosed atomic.Bool   // the engine closed its end (a 0-byte read)
	truncated  atomic.Uint64 // messages longer than wireguard-go's buffer, dropped
}

var _ tun.Device = (*packetTun)(nil)

// newPacketTun takes ownership of conn (the packet socket) and file (the same socket, for
// File()).
func newPacketTun(conn *net.UnixConn, file *os.File, mtu int) *packetTun {
	return &packetTun{conn: conn, file: file, mtu: mtu, events: make(chan tun.Event, 1)}
}

// errEngineClosed wraps os.ErrClosed so that wireguard-go closes the device without
// logging a read error: the engine ending the conversation is a normal exit.
var errEngineClosed = fmt.Errorf("the engine closed the packet socket (fd 3): %w", os.ErrClosed)

func (t *packetTun) Read(buf []byte, offset int) (int, error) {
	for {
		n, _, flags, _, err := t.conn.ReadMsgUnix(buf[offset:], nil)
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			t.peerClosed.Store(true)
			return 0, errEngineClosed
		}
		if err != nil {
			return 0, err
		}
		if flags&syscall.MSG_TRUNC != 0 {
			// A packet cut short would be sent as a different packet: drop it.
			t.truncated.Add(1)
			continue
		}
		return n, nil
	}
}

func (t *packetTun) Write(buf []byte, offset int) (int, error) {
	return t.conn.Write(buf[offset:])
}

func (t *packetTun) File() *os.File           { return t.file }
func (t *packetTun) Flush() error             { return nil }
func (t *packetTun) MTU() (int, error)        { return t.mtu, nil }
func (t *packetTun) Name() (string, error)    { return "qs-channel", nil }
func (t *packetTun) Events() chan tun.Event   { return t.events }
func (t *packetTun) EngineClosed() bool       { return t.peerClosed.Load() }
func (t *packetTun) TruncatedPackets() uint64 { return t.truncated.Load() }

func (t *packetTun) Close() error {
	var err error
	t.closeOnce.Do(func() {
		err = t.conn.Close()
		t.file.Close()
		close(t.events)
	})
	return err
}
