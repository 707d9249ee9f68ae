package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
)

// seqpacketPair returns the helper's end as a packetTun and the engine's end as a raw fd.
func seqpacketPair(t *testing.T, mtu int) (*packetTun, int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET, 0)
	if err != nil {
		t.Fatal(err)
	}
	file := os.NewFile(uintptr(fds[0]), "packets")
	c, err := net.FileConn(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fds[1]) })
	return newPacketTun(c.(*net.UnixConn), file, mtu), fds[1]
}

func TestPacketTunReadsOneMessagePerPacket(t *testing.T) {
	dev, engine := seqpacketPair(t, 1420)
	defer dev.Close()
	for _, p := range [][]byte{{0x45, 1, 2, 3}, bytes.Repeat([]byte{0x60}, 1400)} {
		if err := syscall.Sendmsg(engine, p, nil, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 2000)
	for _, want := range []int{4, 1400} {
		n, err := dev.Read(buf, 16)
		if err != nil || n != want {
			t.Fatalf("Read = %d, %v; want %d", n, err, want)
		}
	}
	if buf[16] != 0x60 {
		t.Errorf("the packet is not at the offset")
	}
}

func TestPacketTunDropsATruncatedPacket(t *testing.T) {
	dev, engine := seqpacketPair(t, 1420)
	defer dev.Close()
	syscall.Sendmsg(engine, make([]byte, 100), nil, nil, 0)
	syscall.Sendmsg(engine, []byte{0x45, 9}, nil, nil, 0)
	buf := make([]byte, 60)
	n, err := dev.Read(buf, 10) // room for 50 bytes
	if err != nil || n != 2 || buf[11] != 9 {
		t.Fatalf("Read = %d, %v; want the second packet", n, err)
	}
	if dev.TruncatedPackets() != 1 {
		t.Errorf("truncated = %d, want 1", dev.TruncatedPackets())
	}
}

func TestPacketTunWritesOneMessage(t *testing.T) {
	dev, engine := seqpacketPair(t, 1420)
	defer dev.Close()
	pkt := append(make([]byte, 32), 0x45, 0, 0, 20)
	if n, err := dev.Write(pkt, 32); err != nil || n != 4 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	got := make([]byte, 100)
	n, _, err := syscall.Recvfrom(engine, got, 0)
	if err != nil || !bytes.Equal(got[:n], pkt[32:]) {
		t.Fatalf("engine got %x, %v", got[:n], err)
	}
}

func TestPacketTunEngineCloseEndsReads(t *testing.T) {
	dev, engine := seqpacketPair(t, 1420)
	defer dev.Close()
	syscall.Close(engine)
	_, err := dev.Read(make([]byte, 100), 0)
	if !errors.Is(err, os.ErrClosed) || !dev.EngineClosed() {
		t.Fatalf("Read after the engine closed = %v, EngineClosed %v", err, dev.EngineClosed())
	}
}

func TestPacketTunCloseWakesARead(t *testing.T) {
	dev, _ := seqpacketPair(t, 1420)
	done := make(chan error)
	go func() {
		_, err := dev.Read(make([]byte, 100), 0)
		done <- err
	}()
	dev.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close = %v", err)
	}
	if _, ok := <-dev.Events(); ok {
		t.Errorf("events channel still open")
	}
	if dev.EngineClosed() {
		t.Errorf("our own Close is not the engine's")
	}
}
