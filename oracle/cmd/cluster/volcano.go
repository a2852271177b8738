//go:build tools

package main

// The CRDs the cluster installs are the files of the volcano.sh/volcano
// module (config/crd/volcano/bases); this import keeps that module in the
// module graph, at the release the oracle pins, for `go list -m` to find.
import _ "volcano.sh/volcano/pkg/scheduler"
