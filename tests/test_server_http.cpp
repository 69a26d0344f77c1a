// tests/test_server_http.cpp — the HTTP layer's pieces without sockets: the head scanner (as
// bytes trickle in), the head parse and target forms, the wire format of answers, the bound on
// error bodies, CORS origins, and the connection registry's eviction order. The sockets, TLS and
// deadlines are tested end to end in tests/python/test_http_*.py and test_hostile_clients.py.
#include <gtest/gtest.h>

#include <string>

#include "server/api_error.h"
#include "server/http_cors.h"
#include "server/http_head.h"
#include "server/http_registry.h"
#include "server/http_wire.h"

namespace fg::server {
namespace {

using Result = HeadScanner::Result;

Result scan_all(const std::string& bytes, size_t max = 1024) {
  HeadScanner s(max);
  return s.scan(bytes);
}

TEST(HttpHead, ScannerFindsTheEndAsBytesTrickleIn) {
  const std::string head = "\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\nNEXT";
  HeadScanner s(1024);
  Result r = Result::kNeedMore;
  size_t fed = 0;
  while (r == Result::kNeedMore && fed < head.size()) r = s.scan(std::string_view(head).substr(0, ++fed));
  ASSERT_EQ(r, Result::kComplete);
  EXPECT_EQ(s.head_begin(), 2u);  // the empty line before the request line is skipped
  EXPECT_EQ(head.substr(s.head_end()), "NEXT");
}

TEST(HttpHead, ScannerRefusesWhatBeastWouldAcceptOrMisread) {
  EXPECT_EQ(scan_all("GET / HTTP/1.1\r\nHost: x\r\nA: b\r\n  folded\r\n\r\n"), Result::kBad);
  EXPECT_EQ(scan_all("GET / HTTP/1.1\r\nHost: x\r\nA: b\r\n\tfolded\r\n\r\n"), Result::kBad);
  EXPECT_EQ(scan_all("GET / HTTP/1.1\r\n Host: x\r\n\r\n"), Result::kBad);
  EXPECT_EQ(scan_all("GET / HTTP/1.1\nHost: x\n\n"), Result::kBad);
  EXPECT_EQ(scan_all("GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n"), Result::kBad);
  EXPECT_EQ(scan_all("GET / HTTP/1.1\r\nHost: x\r\n"), Result::kNeedMore);
}

TEST(HttpHead, ScannerTellsALongRequestLineFromLongHeaders) {
  EXPECT_EQ(scan_all("GET /" + std::string(2000, 'a'), 1024), Result::kLineTooLong);
  EXPECT_EQ(scan_all("GET / HTTP/1.1\r\nX: " + std::string(2000, 'a'), 1024), Result::kTooLarge);
  EXPECT_EQ(scan_all(std::string(2000, '\r') + "\n", 1024), Result::kBad);
}

TEST(HttpHead, ParseServesTargetFormsAsPaths) {
  EXPECT_EQ(target_path("/v1/completions?x=1"), "/v1/completions");
  EXPECT_EQ(target_path("http://host:8000/v1/completions"), "/v1/completions");
  EXPECT_EQ(target_path("HTTPS://host"), "/");
  EXPECT_EQ(target_path("http://host?q"), "/");
  EXPECT_EQ(target_path("*"), "*");
  EXPECT_FALSE(target_path("http:///x").has_value());
  EXPECT_FALSE(target_path("v1/completions").has_value());
  EXPECT_FALSE(target_path("host:443").has_value());
}

TEST(HttpHead, ParseAppliesHostVersionAndRootPath) {
  HttpRequest req;
  HeadInfo info = parse_head("POST http://h/api/v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n", "/api", req);
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/v1/x");
  EXPECT_EQ(info.content_length, 5u);
  EXPECT_TRUE(info.keep_alive);
  EXPECT_EQ(req.header("content-length"), "5");

  info = parse_head("GET /api HTTP/1.0\r\n\r\n", "/api", req);  // HTTP/1.0 needs no Host
  EXPECT_EQ(req.path, "/");
  EXPECT_FALSE(info.keep_alive);
  info = parse_head("GET /apix HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "/api", req);
  EXPECT_EQ(req.path, "/apix");
  EXPECT_TRUE(info.keep_alive);

  const auto status_of = [](const std::string& head) {
    HttpRequest r;
    try {
      parse_head(head, "", r);
    } catch (const ApiError& e) {
      return e.status();
    }
    return 200;
  };
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\n\r\n"), 400);                       // no Host
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);  // two
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nBad Name: v\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET * HTTP/1.1\r\nHost: a\r\n\r\n"), 400);  // '*' is for OPTIONS
  EXPECT_EQ(status_of("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"), 200);
  HttpRequest r;
  EXPECT_TRUE(parse_head("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", "", r).transfer_encoding);
  EXPECT_TRUE(parse_head("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", "", r).expect_continue);
}

TEST(HttpWire, HeadsFollowTheRequestVersion) {
  HttpResponse r = HttpResponse::json(200, nlohmann::json{{"a", 1}});
  WireHead w;
  w.content_length = r.body.size();
  w.request_id = "id1";
  EXPECT_EQ(response_head(r, w),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\nX-Request-Id: id1\r\n\r\n");
  w.version = 10;
  w.framing = BodyFraming::kClose;
  EXPECT_EQ(response_head(r, w), "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                                 "X-Request-Id: id1\r\n\r\n");
  w.framing = BodyFraming::kLength;
  EXPECT_NE(response_head(r, w).find("Connection: keep-alive\r\n"), std::string::npos);
  w.version = 11;
  w.framing = BodyFraming::kChunked;
  w.keep_alive = false;
  EXPECT_NE(response_head(r, w).find("Transfer-Encoding: chunked\r\nConnection: close\r\n"), std::string::npos);
  HttpResponse none;
  none.status = 204;
  EXPECT_EQ(response_head(none, WireHead{}), "HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_EQ(chunk("hello, world!!!!!"), "11\r\nhello, world!!!!!\r\n");
  EXPECT_EQ(chunk(""), "");
  EXPECT_NE(busy_response().find("HTTP/1.1 503 "), std::string::npos);
}

TEST(HttpErrors, BodiesStayUnderOneKibibyte) {
  const std::string huge(4'000'000, 'x');
  EXPECT_LE(ApiError(400, "bad: " + huge, huge, huge).body().dump().size(), 1024u);
  const std::string controls(10'000, '\x01');
  const std::string body = ApiError(400, controls, controls).body().dump();
  EXPECT_LE(body.size(), 1024u);
  // Cut at a character boundary: the dump of a cut multi-byte text is still valid UTF-8.
  std::string euros;
  for (int i = 0; i < 1000; ++i) euros += "\xe2\x82\xac";
  EXPECT_NO_THROW((void)ApiError(400, euros).body().dump());
  EXPECT_EQ(ApiError(400, "short", "p").body()["error"]["message"], "short");
}

TEST(HttpCors, OriginsAsJsonOrCommaList) {
  EXPECT_EQ(parse_allowed_origins(R"(["https://a.example", "*"])"),
            (std::vector<std::string>{"https://a.example", "*"}));
  EXPECT_EQ(parse_allowed_origins(" https://a.example ,https://b.example,"),
            (std::vector<std::string>{"https://a.example", "https://b.example"}));
  EXPECT_THROW(parse_allowed_origins("[1, 2]"), Error);
  EXPECT_THROW(parse_allowed_origins("[\"a\""), Error);

  CorsPolicy cors({"https://a.example"});
  HttpRequest req;
  req.headers = {{"Origin", "https://a.example"}, {"Access-Control-Request-Method", "POST"}};
  HttpResponse res;
  cors.preflight(req, "POST, OPTIONS", res);
  cors.decorate(req, res);
  EXPECT_EQ(res.headers.front(), (std::pair<std::string, std::string>{"Access-Control-Allow-Methods", "POST, OPTIONS"}));
  req.headers[0].second = "https://b.example";
  HttpResponse other;
  cors.preflight(req, "POST", other);
  cors.decorate(req, other);
  EXPECT_TRUE(other.headers.empty());
}

class FakeMember : public ConnectionRegistry::Member, public std::enable_shared_from_this<FakeMember> {
 public:
  void evict() override { evicted = true; }
  void drain() override {}
  std::shared_ptr<Member> self() override { return shared_from_this(); }
  bool evicted = false;
};

TEST(HttpRegistry, TheOldestIdleConnectionMakesRoomAndBusyOnesNever) {
  ConnectionRegistry registry(2);
  auto a = std::make_shared<FakeMember>(), b = std::make_shared<FakeMember>(), c = std::make_shared<FakeMember>();
  ASSERT_TRUE(registry.reserve());
  registry.add(*a);
  ASSERT_TRUE(registry.reserve());
  registry.add(*b);
  EXPECT_FALSE(registry.reserve());  // both busy
  registry.set_idle(*b);
  registry.set_idle(*a);  // b is the oldest idle
  ASSERT_TRUE(registry.reserve());
  EXPECT_TRUE(b->evicted);
  EXPECT_FALSE(a->evicted);
  EXPECT_FALSE(registry.set_busy(*b));  // it must close
  registry.add(*c);
  registry.remove(*b);
  EXPECT_EQ(registry.open(), 2u);  // a and c: b's slot went to c
  EXPECT_TRUE(registry.set_busy(*a));
  EXPECT_FALSE(registry.reserve());
  registry.remove(*a);
  EXPECT_TRUE(registry.reserve());
  EXPECT_EQ(registry.members().size(), 1u);
}

}  // namespace
}  // namespace fg::server
