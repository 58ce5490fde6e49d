"""C++ protocol buffers with the system protoc (rules_proto would have to be downloaded).

fgl_cc_proto_library(name, srcs, deps) runs protoc on `srcs` (paths relative to the workspace
root, so imports read "fl/proto/message.proto") and compiles the generated code into a
cc_library linked against the system libprotobuf. `deps` are other fgl_cc_proto_library targets
whose .proto files `srcs` import.
"""

def fgl_cc_proto_library(name, srcs, deps = [], visibility = None):
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
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
        ] + ["$(location %s)" % s for s in srcs]),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = ["//third_party:protobuf"] + deps,
        visibility = visibility,
    )
