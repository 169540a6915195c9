#include "test_client.h"

#include <functional>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

namespace phalanx::http::testing {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::asio::ip::tcp;
using error_code = boost::system::error_code;

}  // namespace

void TestClient::Run() {
  io_->restart();
  io_->run();
}

Status TestClient::Connect(std::string_view host, uint16_t port, std::chrono::milliseconds timeout) {
  error_code ec;
  auto address = boost::asio::ip::make_address(std::string(host), ec);
  if (ec) return Fail(std::string(host), ec.message());
  host_ = std::string(host) + ":" + std::to_string(port);
  stream_.expires_after(timeout);
  stream_.async_connect(tcp::endpoint(address, port), [&](error_code e) { ec = e; });
  Run();
  if (ec) return Fail(host_, "connect: " + ec.message());
  return {};
}

Status TestClient::Write(std::string_view bytes, std::chrono::milliseconds timeout) {
  error_code ec;
  stream_.expires_after(timeout);
  boost::asio::async_write(stream_, boost::asio::buffer(bytes.data(), bytes.size()),
                           [&](error_code e, size_t) { ec = e; });
  Run();
  if (ec) return Fail(host_, "write: " + ec.message());
  return {};
}

Status TestClient::Send(std::string_view method, std::string_view target, std::string_view body,
                        const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string request = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\n";
  request += "Host: " + host_ + "\r\n";
  bool has_length = false;
  for (const auto& [name, value] : headers) {
    request += name + ": " + value + "\r\n";
    if (beast::iequals(name, "content-length") || beast::iequals(name, "transfer-encoding")) {
      has_length = true;
    }
  }
  if (!has_length && (!body.empty() || method == "POST" || method == "PUT")) {
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n";
  request += body;
  return Write(request);
}

Result<ClientResponse> TestClient::Read(bool head, std::chrono::milliseconds timeout) {
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  parser.skip(head);
  error_code ec;
  stream_.expires_after(timeout);
  bhttp::async_read(stream_, buffer_, parser, [&](error_code e, size_t) { ec = e; });
  Run();
  if (ec) return Fail(host_, "read: " + ec.message());
  return parser.release();
}

Result<ClientResponse> TestClient::Fetch(std::string_view method, std::string_view target, std::string_view body,
                                         const std::vector<std::pair<std::string, std::string>>& headers) {
  PHX_RETURN_IF_ERROR(Send(method, target, body, headers));
  return Read(method == "HEAD");
}

Status TestClient::WaitClosed(std::chrono::milliseconds timeout) {
  char scratch[4096];
  error_code ec;
  stream_.expires_after(timeout);
  std::function<void()> read_more;
  read_more = [&] {
    stream_.async_read_some(boost::asio::buffer(scratch), [&](error_code e, size_t) {
      if (e) {
        ec = e;
        return;
      }
      read_more();
    });
  };
  read_more();
  Run();
  if (ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset) return {};
  return Fail(host_, "not closed: " + ec.message());
}

Result<ClientResponse> HttpGet(std::string_view host, uint16_t port, std::string_view target) {
  TestClient client;
  PHX_RETURN_IF_ERROR(client.Connect(host, port));
  return client.Fetch("GET", target);
}

}  // namespace phalanx::http::testing
