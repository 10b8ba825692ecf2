// The module of the capicua Go client: the generated package capicua.dev/go/capicuav1 and
// the example bot capicua.dev/go/examples/randombot. The versions are Debian 12's packages,
// which clients/go/go-offline.sh builds against without a module proxy (GOPATH mode, where
// this file is not read). With a proxy, module mode works too: run `go mod tidy` once (it
// writes go.sum) and `go build ./...` in this folder.
module capicua.dev/go

go 1.19

// google.golang.org/genproto (google.rpc.Status) comes with grpc; `go mod tidy` pins it.
require (
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)
