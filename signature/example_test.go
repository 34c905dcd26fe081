package signature_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/heraldhq/herald/signature"
)

func ExampleHeaders() {
	secret, err := signature.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	sent := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)

	h := http.Header{}
	if err := signature.Headers(h, "msg_p5jXN8AQM9LWM0D4loKWxJek", sent, body, secret); err != nil {
		panic(err)
	}
	fmt.Println(h.Get(signature.HeaderSignature))
	fmt.Println(secret) // redacted

	v := signature.NewVerifier(secret)
	v.Now = func() time.Time { return sent.Add(time.Minute) }
	fmt.Println(v.Verify(h, body))
	fmt.Println(v.Verify(h, []byte(`{"test": 1}`)))
	// Output:
	// v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
	// whsec_[REDACTED]
	// <nil>
	// verify: no matching signature: 1 v1 signature(s) in webhook-signature, none made by the 1 configured secret(s) over this id, timestamp and body
}
