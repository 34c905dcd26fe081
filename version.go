package herald

// Version is Herald's release, in semantic versioning without a leading v. A build can
// set it with the linker:
//
//	go build -ldflags "-X github.com/heraldhq/herald.Version=0.1.1" ./cmd/herald
//
// `herald version` prints it, and every worker shows it in its Temporal identity.
var Version = "0.1.0"
