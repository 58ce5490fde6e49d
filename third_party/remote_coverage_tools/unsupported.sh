#!/bin/sh
echo "remote_coverage_tools: 'bazel coverage' needs Bazel's coverage tools, which cannot be downloaded offline; fgl does not support it." >&2
exit 1
