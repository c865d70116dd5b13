package outbox_test

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// A shop's receiving endpoint, as docs/integration.md shows it: the official Standard Webhooks
// library checks the signature; the event id makes a repeated delivery harmless.
func Example_receiver() {
	wh, err := standardwebhooks.NewWebhook(os.Getenv("SHOP_SECKILL_WEBHOOK_SECRET")) // whsec_..., from POST /admin/webhooks
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("POST /hooks/seckill", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil || wh.Verify(body, r.Header) != nil { // signature and a timestamp within 5 min
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		var ev struct {
			ID, Type string
			Data     struct{ Order struct{ ID, Status string } }
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		// Handle ev once per ev.ID (at least once: the same id may come again), then
		// answer 2xx; anything else is retried, 410 unsubscribes.
		log.Printf("%s %s: order %s is %s", ev.ID, ev.Type, ev.Data.Order.ID, ev.Data.Order.Status)
		w.WriteHeader(http.StatusNoContent)
	})
}
