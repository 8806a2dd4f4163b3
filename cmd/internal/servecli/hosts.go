package servecli

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/wasmlm/wasmlm/httpapi"
)

// HostNames reads the -allow-host names; "*" (any name) is nil.
func HostNames(allowed []string) (map[string]bool, error) {
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

// HostPolicy is the Host allow-list of a server listening on addr, for
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
func HostPolicy(addr net.Addr, names map[string]bool) func(string) bool {
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

// CORSOrigin checks -cors and writes it as browsers write the Origin header
// (the URL standard's serialisation of an origin), since the handler
// compares the two as strings: "", "*", or scheme://host[:port] with the
// scheme and host in lower case, no port when it is the scheme's default
// (80 for http, 443 for https), an IPv6 address in its shortest form, and
// a trailing "/" dropped. A path, a query, a fragment, user info, a scheme
// other than http and https, no host, or a port beyond 65535 is an error
// naming it: no browser sends such an origin. A name is otherwise left as
// given: an internationalised one must be given in its punycode (xn--)
// form, the one browsers send.
func CORSOrigin(origin string) (string, error) {
	if origin == "" || origin == "*" {
		return origin, nil
	}
	bad := func(why string) error {
		return fmt.Errorf(`-cors %q is not "*" or an origin (scheme://host[:port], such as https://app.example:8443): %s`, origin, why)
	}
	if strings.Contains(origin, ",") {
		return "", bad("it takes one origin, not a list (give \"*\" for several)")
	}
	if lower := strings.ToLower(origin); !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return "", bad("it does not start with http:// or https://")
	}
	u, err := url.Parse(origin) // lowers the scheme
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // not "parse" and the value again
	}
	switch {
	case err != nil:
		return "", bad(err.Error())
	case u.User != nil:
		return "", bad("it has user info (name@ or name:password@)")
	case u.Host == "" || u.Hostname() == "":
		return "", bad("it has no host")
	case u.Path != "" && u.Path != "/":
		return "", bad(fmt.Sprintf("it has a path (%s)", u.EscapedPath()))
	case u.RawQuery != "" || u.ForceQuery || strings.Contains(origin, "?"):
		return "", bad("it has a query (?...)")
	case u.Fragment != "" || strings.Contains(origin, "#"):
		return "", bad("it has a fragment (#...)")
	case strings.Contains(u.Host, "%"):
		return "", bad("its host has a % (an IPv6 zone?)")
	}
	host := strings.ToLower(u.Hostname())
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is6() {
		host = "[" + ip.String() + "]"
	}
	if p := u.Port(); p != "" {
		port, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return "", bad(fmt.Sprintf("its port %s is beyond 65535", p))
		}
		if def := map[string]uint64{"http": 80, "https": 443}[u.Scheme]; port != def {
			host += ":" + strconv.FormatUint(port, 10)
		}
	}
	return u.Scheme + "://" + host, nil
}
