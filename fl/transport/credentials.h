// TLS and per-client tokens for the transport. Without certificate files both sides talk
// plaintext, which the binaries allow only on loopback addresses.
#ifndef FGL_FL_TRANSPORT_CREDENTIALS_H_
#define FGL_FL_TRANSPORT_CREDENTIALS_H_

#include <map>
#include <memory>
#include <string>

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"

namespace fgl::fl::transport {

// PEM files. Server: cert + key, and `ca` to require client certificates signed by it.
// Client: `ca` verifies the server; cert + key present a client certificate.
struct TlsFiles {
  std::string cert, key, ca;
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const TlsFiles& tls);
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const TlsFiles& tls);

// True for 127.0.0.0/8, ::1 and localhost (host:port form).
bool IsLoopback(const std::string& address);

// "client_id token" per line ('#' comments); errors name the file and line. Ids must be unique.
absl::StatusOr<std::map<int, std::string>> LoadTokens(const std::string& path);

}  // namespace fgl::fl::transport

#endif  // FGL_FL_TRANSPORT_CREDENTIALS_H_
