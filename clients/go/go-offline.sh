#!/bin/sh
# Run `go ARGS...` on this client with Debian's Go packages, offline: GOPATH mode
# (GO111MODULE=off) over /usr/share/gocode, where apt puts google.golang.org/grpc,
# google.golang.org/protobuf and google.golang.org/genproto (see docs/writing-a-bot.md, "Go").
# GOPATH mode finds a package by its import path under GOPATH/src, so this folder is linked
# as src/capicua.dev/go in a workspace of its own ($CAPICUA_GOPATH, default a folder under
# /tmp named after this checkout). No module proxy is asked.
#
#   clients/go/go-offline.sh build -o randombot capicua.dev/go/examples/randombot
#   clients/go/go-offline.sh vet capicua.dev/go/capicuav1 capicua.dev/go/examples/randombot
#
# (Name packages by import path: `capicua.dev/go/...` would not follow the link.)
set -eu
here=$(cd "$(dirname "$0")" && pwd -P)
work=${CAPICUA_GOPATH:-${TMPDIR:-/tmp}/capicua-gopath-$(printf %s "$here" | cksum | cut -d' ' -f1)}
mkdir -p "$work/src/capicua.dev"
ln -sfn "$here" "$work/src/capicua.dev/go"
if [ -z "${GOCACHE:-}${HOME:-}${XDG_CACHE_HOME:-}" ]; then
    export GOCACHE="$work/cache" # go needs a build cache, by default under $HOME
fi
GO111MODULE=off GOPATH="$work:/usr/share/gocode" GOFLAGS= GOPROXY=off exec go "$@"
