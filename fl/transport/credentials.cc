#include "fl/transport/credentials.h"

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/io/file.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl::transport {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const std::string& what) {
  if (path.empty()) return std::string();
  absl::StatusOr<std::string> text = graph::io::ReadFileBytes(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat(what, " ", path, ": ", text.status().message()));
  if (!absl::StrContains(*text, "-----BEGIN ")) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": not a PEM file"));
  }
  return text;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  if (tls.cert.empty() || tls.key.empty()) {
    return absl::InvalidArgumentError("TLS on the server needs both --tls_cert and --tls_key");
  }
  grpc::SslServerCredentialsOptions options(
      tls.ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                     : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  FGL_ASSIGN_OR_RETURN(std::string cert, ReadPem(tls.cert, "--tls_cert"));
  FGL_ASSIGN_OR_RETURN(std::string key, ReadPem(tls.key, "--tls_key"));
  FGL_ASSIGN_OR_RETURN(options.pem_root_certs, ReadPem(tls.ca, "--tls_ca"));
  options.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  if (tls.ca.empty()) return absl::InvalidArgumentError("TLS on a client needs --tls_ca to verify the server");
  if (tls.cert.empty() != tls.key.empty()) {
    return absl::InvalidArgumentError("a client certificate needs both --tls_cert and --tls_key");
  }
  grpc::SslCredentialsOptions options;
  FGL_ASSIGN_OR_RETURN(options.pem_root_certs, ReadPem(tls.ca, "--tls_ca"));
  FGL_ASSIGN_OR_RETURN(options.pem_cert_chain, ReadPem(tls.cert, "--tls_cert"));
  FGL_ASSIGN_OR_RETURN(options.pem_private_key, ReadPem(tls.key, "--tls_key"));
  return grpc::SslCredentials(options);
}

bool IsLoopback(const std::string& address) {
  std::string host = address;
  if (absl::StartsWith(host, "[")) {
    host = host.substr(1, host.find(']') == std::string::npos ? std::string::npos : host.find(']') - 1);
  } else if (size_t colon = host.rfind(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

absl::StatusOr<std::map<int, std::string>> LoadTokens(const std::string& path) {
  FGL_ASSIGN_OR_RETURN(std::string text, graph::io::ReadFileBytes(path));
  std::map<int, std::string> tokens;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    int id = -1;
    if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &id) || id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": expected \"client_id token\""));
    }
    if (!tokens.emplace(id, std::string(fields[1])).second) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": client ", id, " listed twice"));
    }
  }
  if (tokens.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens"));
  return tokens;
}

}  // namespace fgl::fl::transport
