// Command envoy-descriptors writes the FileDescriptorSet of Envoy's ext_authz v3 filter
// config (envoy.extensions.filters.http.ext_authz.v3.ExtAuthz) and every file it imports,
// transitively, as compiled into github.com/envoyproxy/go-control-plane (pinned in go.mod).
// The exoledge tests load it with protobufjs to check the rendered EnvoyFilter.
//
//	cd operators/exoledge/tools/envoy-descriptors
//	go run . ../../test/fixtures/envoy-ext-authz.binpb
package main

import (
	"fmt"
	"os"
	"sort"

	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: envoy-descriptors <out.binpb>")
		os.Exit(2)
	}
	root := (&extauthzv3.ExtAuthz{}).ProtoReflect().Descriptor().ParentFile()
	seen := map[string]protoreflect.FileDescriptor{}
	var visit func(protoreflect.FileDescriptor)
	visit = func(f protoreflect.FileDescriptor) {
		if _, ok := seen[f.Path()]; ok {
			return
		}
		seen[f.Path()] = f
		imports := f.Imports()
		for i := 0; i < imports.Len(); i++ {
			visit(imports.Get(i).FileDescriptor)
		}
	}
	visit(root)
	// Dependencies before dependents (protobuf's order for a FileDescriptorSet), then by path.
	paths := make([]string, 0, len(seen))
	for p := range seen {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var set descriptorpb.FileDescriptorSet
	done := map[string]bool{}
	var emit func(string)
	emit = func(p string) {
		if done[p] {
			return
		}
		done[p] = true
		f := seen[p]
		imports := f.Imports()
		for i := 0; i < imports.Len(); i++ {
			emit(imports.Get(i).Path())
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	for _, p := range paths {
		emit(p)
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(&set)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1], out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d files, %d bytes\n", len(set.File), len(out))
}
