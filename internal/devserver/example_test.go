package devserver_test

import (
	"context"
	"fmt"
	"log"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald/internal/devserver"
)

// Start a server on a database file, with the UI, and dial it.
func ExampleStart() {
	srv, err := devserver.Start(context.Background(), devserver.Options{
		DBFile: "/var/tmp/herald/dev.db",
		SearchAttributes: map[string]enums.IndexedValueType{
			"HeraldStatus": enums.INDEXED_VALUE_TYPE_KEYWORD,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()

	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("Temporal UI at", srv.UIAddress())
}
