package outbox

import "net/http"

// WrapTransport lets a test watch d's attempts from the sender's side.
func (d *Deliverer) WrapTransport(wrap func(http.RoundTripper) http.RoundTripper) {
	d.client.Transport = wrap(d.client.Transport)
}
