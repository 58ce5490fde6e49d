"""C++ protocol buffers with the system protoc (rules_proto would have to be downloaded).

fgl_cc_proto_library(name, srcs, deps) runs protoc on `srcs` (paths relative to the workspace
root, so imports read "fl/proto/message.proto") and compiles the generated code into a
cc_library linked against the system libprotobuf. `deps` are other fgl_cc_proto_library targets
whose .proto files `srcs` import. With grpc = True, services also get gRPC stubs
(grpc_cpp_plugin from Debian's protobuf-compiler-grpc) and the library links libgrpc++.
"""

def fgl_cc_proto_library(name, srcs, deps = [], visibility = None, grpc = False):
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    native.filegroup(
        name = name + "_srcs",
        srcs = srcs + [d + "_srcs" for d in deps],
        visibility = visibility,
    )
    native.genrule(
        name = name + "_genproto",
        srcs = srcs + [d + "_srcs" for d in deps],
        outs = outs,
        cmd = " ".join([
            "protoc",
            "--proto_path=.",
            "--cpp_out=$(GENDIR)",
        ] + ([
            "--grpc_out=$(GENDIR)",
            "--plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin)",
        ] if grpc else []) + ["$(location %s)" % s for s in srcs]),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = ["//third_party:protobuf"] + (["//third_party:grpc"] if grpc else []) + deps,
        visibility = visibility,
    )
