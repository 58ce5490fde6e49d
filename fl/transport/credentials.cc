#include "fl/transport/credentials.h"

#include <fcntl.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/escaping.h"
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

absl::StatusOr<int> PortOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || address.find(']', colon) != std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("'", address, "' is not host:port"));
  }
  return port;
}

absl::StatusOr<std::string> DefaultRunTokensPath(int port) {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const char* home = std::getenv("HOME");
  std::string dir;
  if (runtime != nullptr && runtime[0] == '/') {
    dir = absl::StrCat(runtime, "/fgl");
  } else if (home != nullptr && home[0] == '/') {
    dir = absl::StrCat(home, "/.cache/fgl/run_tokens");
  } else {
    return absl::FailedPreconditionError(
        "neither $XDG_RUNTIME_DIR nor $HOME is set: name the per-run tokens file (--run_tokens_file) "
        "or give tokens (--tokens_file)");
  }
  return absl::StrCat(dir, "/transport-", port, ".tokens");
}

absl::StatusOr<std::map<int, std::string>> GenerateTokens(int num_clients) {
  std::map<int, std::string> tokens;
  for (int k = 0; k < num_clients; ++k) {
    char bytes[32];
    if (getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
      return absl::UnavailableError(absl::StrCat("getrandom: ", std::strerror(errno)));
    }
    tokens[k] = absl::BytesToHexString(absl::string_view(bytes, sizeof(bytes)));
  }
  return tokens;
}

absl::Status WriteTokensFile(const std::string& path, const std::map<int, std::string>& tokens) {
  // mkdir -p with 0700 for what it creates; an existing directory keeps its mode (the file's own
  // 0600 is what protects the tokens).
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::UnavailableError(absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
    }
  }
  std::string text = "# per-run tokens of one fgl server (client_id token); join reads them\n";
  for (const auto& [id, token] : tokens) absl::StrAppend(&text, id, " ", token, "\n");
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
  bool ok = fchmod(fd, 0600) == 0;  // whatever the umask
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  const int saved = errno;
  ok = close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(ok ? errno : saved);
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", why));
  }
  return absl::OkStatus();
}

}  // namespace fgl::fl::transport
