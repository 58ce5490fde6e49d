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

// The port of a "host:port" or "[v6]:port" address.
absl::StatusOr<int> PortOf(const std::string& address);

// Per-run tokens: a server started without a tokens file makes one random token per client and
// writes them (LoadTokens' format, mode 0600) where `join` on the same host and user finds them:
// $XDG_RUNTIME_DIR/fgl (private to the user by definition), else ~/.cache/fgl/run_tokens, one
// file per port. So a loopback run is authenticated without anyone handling a secret.
absl::StatusOr<std::string> DefaultRunTokensPath(int port);
// 32 random bytes in hex per client id in [0, num_clients), from the kernel's CSPRNG.
absl::StatusOr<std::map<int, std::string>> GenerateTokens(int num_clients);
// Writes `tokens` to `path` readable by the owner only (never world-readable, not even while being
// written: a fresh 0600 file renamed into place); creates the missing directories with mode 0700.
absl::Status WriteTokensFile(const std::string& path, const std::map<int, std::string>& tokens);

}  // namespace fgl::fl::transport

#endif  // FGL_FL_TRANSPORT_CREDENTIALS_H_
