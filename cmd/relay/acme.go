package main

import (
	"fmt"
	"net"
	"strings"
)

// checkACMEHost accepts a DNS name with at least one dot: no scheme, port, path or IP address
// (the certificate names the host the page is opened at).
func checkACMEHost(host string) (string, error) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "" || strings.ContainsAny(h, ":/@ ") || !strings.Contains(h, ".") || net.ParseIP(h) != nil {
		return "", fmt.Errorf("--acme-host %q must be a DNS name such as voicebox.example.com (no scheme, port or IP address)", host)
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("--acme-host %q is not a DNS name", host)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("--acme-host %q is not a DNS name (letters, digits and '-' between dots)", host)
			}
		}
	}
	return h, nil
}
