package analytics

import outbound "outbound.invalid/bindings/go"

// SetDefaultEndpoint points the clients New makes at url, so that v2's programs run
// unchanged against a test receiver; it returns a func that restores the default.
func SetDefaultEndpoint(url string) (restore func()) {
	old := defaultEndpoint
	defaultEndpoint = url
	return func() { defaultEndpoint = old }
}

// CoreConfig is the settings the client's fields give package outbound's client.
func CoreConfig(c *Client) outbound.Config { return c.config() }
