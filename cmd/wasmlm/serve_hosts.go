package main

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/wasmlm/wasmlm/httpapi"
)

// hostNames reads the -allow-host names; "*" (any name) is nil.
func hostNames(allowed []string) (map[string]bool, error) {
	names := map[string]bool{}
	for _, a := range allowed {
		if a == "*" {
			return nil, nil
		}
		name := httpapi.HostName(a)
		if name == "" || strings.ContainsAny(a, "/@ ") {
			return nil, fmt.Errorf("-allow-host %q is not a host name", a)
		}
		names[name] = true
	}
	return names, nil
}

// hostPolicy is the Host allow-list of a server listening on addr, for
// httpapi.Options.AllowHost; names are the -allow-host names (nil: any
// name, so no check). Without it, a page of any site could reach a server on
// 127.0.0.1 by DNS rebinding: its own name, resolved again to 127.0.0.1,
// makes the server its own origin. So the server answers to:
//   - "localhost" and names under .localhost, which browsers resolve to
//     loopback themselves, never through DNS;
//   - IP addresses: loopback ones when it listens on a loopback address,
//     any when it listens beyond (a browser that sends an address as Host
//     connected to that address: no name was resolved, nothing rebound);
//   - the -allow-host names, with any port.
//
// A name such as myhost.lan, through which a server on the LAN is reached,
// needs -allow-host: the check cannot tell it from an attacker's.
func hostPolicy(addr net.Addr, names map[string]bool) func(string) bool {
	if names == nil {
		return nil
	}
	loopbackOnly := true
	if tcp, ok := addr.(*net.TCPAddr); ok {
		loopbackOnly = tcp.IP.IsLoopback()
	}
	return func(name string) bool {
		if ip := net.ParseIP(name); ip != nil {
			return !loopbackOnly || ip.IsLoopback() || names[name]
		}
		// No Host at all (HTTP/1.0) comes from no browser.
		return name == "" || name == "localhost" || strings.HasSuffix(name, ".localhost") || names[name]
	}
}

// corsOrigin checks -cors: "", "*", or an origin as browsers send it,
// scheme://host[:port] (a trailing slash, which the Origin header never
// has, is dropped).
func corsOrigin(origin string) (string, error) {
	if origin == "" || origin == "*" {
		return origin, nil
	}
	origin = strings.TrimSuffix(origin, "/")
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf(`-cors %q is not "*" or an origin such as https://app.example:8443`, origin)
	}
	return origin, nil
}
