package analytics

// SetDefaultEndpoint points the clients New makes at url, so that v2's programs run
// unchanged against a test receiver; it returns a func that restores the default.
func SetDefaultEndpoint(url string) (restore func()) {
	old := defaultEndpoint
	defaultEndpoint = url
	return func() { defaultEndpoint = old }
}
