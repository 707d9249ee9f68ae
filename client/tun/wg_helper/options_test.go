package main

import (
	"strings"
	"testing"
)

func TestParseOptions(t *testing.T) {
	good := []struct {
		args []string
		want options
	}{
		{[]string{"--no-protect"}, options{mtu: 1420, protect: protectNone}},
		{[]string{"--fwmark", "0x51", "--mtu", "1280"}, options{mtu: 1280, protect: protectByMark, fwmark: 0x51}},
		{[]string{"--fwmark=4294967295"}, options{mtu: 1420, protect: protectByMark, fwmark: 0xffffffff}},
		{[]string{"-protect-socket", "/data/p.sock", "--verbose"},
			options{mtu: 1420, protect: protectBySocket, protectPath: "/data/p.sock", verbose: true}},
	}
	for _, g := range good {
		got, err := parseOptions(g.args)
		if err != nil || got != g.want {
			t.Errorf("parseOptions(%q) = %+v, %v; want %+v", g.args, got, err, g.want)
		}
	}
	bad := []struct {
		args []string
		want string // a part of the error
	}{
		{nil, "exactly one of"},
		{[]string{"--no-protect", "--fwmark", "1"}, "exactly one of"},
		{[]string{"--fwmark", "0"}, "`0'"},
		{[]string{"--fwmark", "0x100000000"}, "`0x100000000'"},
		{[]string{"--fwmark", "-1"}, "`-1'"},
		{[]string{"--fwmark", "1_0"}, "`1_0'"},
		{[]string{"--fwmark", "0o7"}, "`0o7'"},
		{[]string{"--fwmark", "0x"}, "`0x'"},
		{[]string{"--fwmark", ""}, "`'"},
		{[]string{"--no-protect", "--mtu", "1279"}, "--mtu is not a number in 1280-65535: `1279'"},
		{[]string{"--no-protect", "--mtu", "65536"}, "`65536'"},
		{[]string{"--no-protect", "--mtu", "1420x"}, "`1420x'"},
		{[]string{"--protect-socket", ""}, "--protect-socket is not a socket path"},
		{[]string{"--protect-socket", strings.Repeat("a", 108)}, "1-107 bytes"},
		{[]string{"--no-protect", "extra"}, "unexpected argument `extra'"},
		{[]string{"--bogus"}, "-bogus"},
		{[]string{"--mtu"}, "flag needs an argument"},
	}
	for _, b := range bad {
		_, err := parseOptions(b.args)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("parseOptions(%q) error = %v; want it to contain %q", b.args, err, b.want)
		}
	}
}
