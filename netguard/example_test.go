package netguard_test

import (
	"fmt"
	"net/netip"

	"github.com/heraldhq/herald/netguard"
)

func ExamplePolicy_Check() {
	allow, err := netguard.ParseCIDRs([]string{"10.20.0.0/16"})
	if err != nil {
		panic(err)
	}
	p := netguard.Policy{Allow: allow}
	for _, ip := range []string{"10.20.0.7", "10.0.0.5", "::ffff:169.254.169.254", "93.184.216.34"} {
		fmt.Println(ip, "=>", p.Check(netip.MustParseAddr(ip)))
	}
	// Output:
	// 10.20.0.7 => <nil>
	// 10.0.0.5 => address 10.0.0.5 is private (RFC 1918); allow it with --allow-cidr 10.0.0.5/32
	// ::ffff:169.254.169.254 => address ::ffff:169.254.169.254 is IPv4-mapped 169.254.169.254, which is link-local (cloud metadata service); allow it with --allow-cidr 169.254.169.254/32
	// 93.184.216.34 => <nil>
}

func ExamplePolicy_CheckURL() {
	p := netguard.Policy{RequireHTTPS: true}
	for _, raw := range []string{
		"https://hooks.example.com/in",
		"http://hooks.example.com/in",
		"https://user:pw@hooks.example.com/in",
		"https://[fd00::5]/in",
	} {
		_, err := p.CheckURL(raw)
		fmt.Println(err)
	}
	// Output:
	// <nil>
	// endpoint URL "http://hooks.example.com/in": plain http is not allowed on this server; use https://
	// endpoint URL "https://user:xxxxx@hooks.example.com/in": contains a user name or password; remove it: Herald authenticates with the webhook signature
	// endpoint URL "https://[fd00::5]/in": address fd00::5 is unique local (RFC 4193); allow it with --allow-cidr fd00::5/128
}
