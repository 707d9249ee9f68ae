#include "server_testbed/http3_session.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <string_view>

#include "quic/http3.hpp"
#include "quic/time.hpp"
#include "server_testbed/content_type.hpp"

namespace quicstep::server_testbed {

namespace {

// Generated bodies point into this buffer; at most kMaxUnacked of a stream is in flight.
constexpr std::size_t kDynChunk = 16 * 1024;
constexpr std::uint64_t kMaxUnacked = 1 << 20;
const std::array<std::uint8_t, kDynChunk>& dyn_buffer() {
  static const auto buf = [] {
    std::array<std::uint8_t, kDynChunk> b{};
    b.fill('q');
    return b;
  }();
  return buf;
}

Http3Session* session_of(void* user_data) { return static_cast<Http3Session*>(user_data); }
Http3Session::Request* req_of(void* p) { return static_cast<Http3Session::Request*>(p); }

int cb_acked(nghttp3_conn*, int64_t, uint64_t n, void* ud, void* sud) {
  if (sud) session_of(ud)->on_acked(req_of(sud), n);
  return 0;
}
int cb_stream_close(nghttp3_conn*, int64_t id, uint64_t, void* ud, void*) {
  session_of(ud)->on_stream_close(id);
  return 0;
}
int cb_recv_data(nghttp3_conn*, int64_t id, const uint8_t*, size_t n, void* ud, void*) {
  session_of(ud)->consume(id, n);
  return 0;
}
int cb_deferred_consume(nghttp3_conn*, int64_t id, size_t n, void* ud, void*) {
  session_of(ud)->consume(id, n);
  return 0;
}
int cb_begin_headers(nghttp3_conn* h3, int64_t id, void* ud, void*) {
  auto* req = session_of(ud)->begin_request(id);
  nghttp3_conn_set_stream_user_data(h3, id, req);
  return 0;
}
int cb_recv_header(nghttp3_conn*, int64_t, int32_t token, nghttp3_rcbuf* name,
                   nghttp3_rcbuf* value, uint8_t, void*, void* sud) {
  (void)name;
  auto* req = req_of(sud);
  if (!req) return 0;
  const nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
  const std::string text(reinterpret_cast<const char*>(v.base), v.len);
  if (token == NGHTTP3_QPACK_TOKEN__PATH) req->path = text;
  if (token == NGHTTP3_QPACK_TOKEN__METHOD) req->method = text;
  return 0;
}
int cb_end_stream(nghttp3_conn*, int64_t, void* ud, void* sud) {
  if (!sud) return 0;
  return session_of(ud)->on_end_stream(req_of(sud)) == 0 ? 0 : NGHTTP3_ERR_CALLBACK_FAILURE;
}
int cb_stop_sending(nghttp3_conn*, int64_t id, uint64_t code, void* ud, void*) {
  return ngtcp2_conn_shutdown_stream_read(session_of(ud)->quic(), id, code) == 0
             ? 0 : NGHTTP3_ERR_CALLBACK_FAILURE;
}
int cb_reset_stream(nghttp3_conn*, int64_t id, uint64_t code, void* ud, void*) {
  return ngtcp2_conn_shutdown_stream_write(session_of(ud)->quic(), id, code) == 0
             ? 0 : NGHTTP3_ERR_CALLBACK_FAILURE;
}
nghttp3_ssize cb_read_data(nghttp3_conn*, int64_t, nghttp3_vec* vec, size_t veccnt,
                           uint32_t* flags, void* ud, void* sud) {
  return session_of(ud)->read_body(req_of(sud), vec, veccnt, flags);
}

// N of "/bytes/N", whole string consumed; nullopt otherwise.
std::optional<std::uint64_t> bytes_request(std::string_view path) {
  constexpr std::string_view prefix = "/bytes/";
  if (path.substr(0, prefix.size()) != prefix) return std::nullopt;
  path.remove_prefix(prefix.size());
  if (path.empty() || path.size() > 19) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : path) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

std::shared_ptr<const std::vector<std::uint8_t>> read_file(const std::string& htdocs,
                                                           std::string path,
                                                           std::uint64_t max_body) {
  if (htdocs.empty() || path.empty() || path[0] != '/' || path.find("..") != std::string::npos) {
    return nullptr;
  }
  if (path.back() == '/') path += "index.html";
  std::ifstream in(htdocs + path, std::ios::binary | std::ios::ate);
  if (!in) return nullptr;
  const auto size = static_cast<std::uint64_t>(in.tellg());
  if (size > max_body) return nullptr;
  auto body = std::make_shared<std::vector<std::uint8_t>>(size);
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(body->data()), static_cast<std::streamsize>(size))) {
    return nullptr;
  }
  return body;
}

}  // namespace

Http3Session::Http3Session(ngtcp2_conn* conn, const Http3Options& options,
                           WorkerCounters& counters)
    : conn_(conn), options_(options), counters_(counters) {}

Http3Session::~Http3Session() {
  if (h3_) nghttp3_conn_del(h3_);
}

int Http3Session::setup() {
  if (h3_) return 0;
  if (ngtcp2_conn_get_max_local_streams_uni(conn_) < 3) return -1;
  nghttp3_callbacks callbacks{};
  callbacks.acked_stream_data = cb_acked;
  callbacks.stream_close = cb_stream_close;
  callbacks.recv_data = cb_recv_data;
  callbacks.deferred_consume = cb_deferred_consume;
  callbacks.begin_headers = cb_begin_headers;
  callbacks.recv_header = cb_recv_header;
  callbacks.stop_sending = cb_stop_sending;
  callbacks.end_stream = cb_end_stream;
  callbacks.reset_stream = cb_reset_stream;
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  if (nghttp3_conn_server_new(&h3_, &callbacks, &settings, nghttp3_mem_default(), this) != 0) {
    return -1;
  }
  const auto* params = ngtcp2_conn_get_local_transport_params(conn_);
  nghttp3_conn_set_max_client_streams_bidi(h3_, params->initial_max_streams_bidi);
  return quic::bind_http3_streams(conn_, h3_);
}

Http3Session::Request* Http3Session::begin_request(std::int64_t stream_id) {
  auto req = std::make_unique<Request>();
  req->stream_id = stream_id;
  auto* raw = req.get();
  requests_[stream_id] = std::move(req);
  return raw;
}

int Http3Session::on_end_stream(Request* req) {
  if (options_.think > 0) {
    thinking_.emplace_back(quic::now() + options_.think, req->stream_id);
    return 0;
  }
  return serve(req);
}

ngtcp2_tstamp Http3Session::next_answer() const {
  return thinking_.empty() ? UINT64_MAX : thinking_.front().first;
}

void Http3Session::answer_due(ngtcp2_tstamp now) {
  while (!thinking_.empty() && thinking_.front().first <= now) {
    const auto it = requests_.find(thinking_.front().second);
    thinking_.pop_front();
    // A stream closed while its request waited (reset by the client) has nothing to answer;
    // a response that cannot be submitted resets its stream.
    if (it != requests_.end() && serve(it->second.get()) != 0) {
      ngtcp2_conn_shutdown_stream(conn_, it->first, NGHTTP3_H3_INTERNAL_ERROR);
    }
  }
}

int Http3Session::serve(Request* req) {
  WorkerCounters::add(counters_.requests);
  if (req->method != "GET" && req->method != "HEAD") return respond(req, 405, 0, false);
  std::string path = req->path.substr(0, req->path.find('?'));
  if (auto n = bytes_request(path)) {
    if (*n > options_.max_body) return respond(req, 404, 0, false);
    req->dyn_left = *n;
    return respond(req, 200, *n, req->method == "GET");
  }
  if (auto body = read_file(options_.htdocs, path, options_.max_body)) {
    req->file = std::move(body);
    return respond(req, 200, req->file->size(), req->method == "GET",
                   content_type(path.back() == '/' ? path + "index.html" : path));
  }
  return respond(req, 404, 0, false);
}

int Http3Session::respond(Request* req, int status, std::uint64_t length, bool body,
                          std::string_view type) {
  const std::string status_text = std::to_string(status);
  const std::string length_text = std::to_string(length);  // also for HEAD
  const std::array<nghttp3_nv, 4> nva{quic::header(":status", status_text),
                                      quic::header("server", "quicstep-server"),
                                      quic::header("content-length", length_text),
                                      quic::header("content-type", type)};
  nghttp3_data_reader reader{cb_read_data};
  const bool has_body = body && length > 0;
  return nghttp3_conn_submit_response(h3_, req->stream_id, nva.data(), nva.size(),
                                      has_body ? &reader : nullptr) == 0 ? 0 : -1;
}

nghttp3_ssize Http3Session::read_body(Request* req, nghttp3_vec* vec, std::size_t veccnt,
                                      std::uint32_t* flags) {
  if (req == nullptr || veccnt == 0) return 0;
  if (req->file) {
    if (req->file_given) return 0;
    vec[0].base = const_cast<std::uint8_t*>(req->file->data());
    vec[0].len = req->file->size();
    req->file_given = true;
    *flags |= NGHTTP3_DATA_FLAG_EOF;
    return 1;
  }
  if (req->unacked >= kMaxUnacked) return NGHTTP3_ERR_WOULDBLOCK;
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kDynChunk, req->dyn_left));
  vec[0].base = const_cast<std::uint8_t*>(dyn_buffer().data());
  vec[0].len = n;
  req->dyn_left -= n;
  req->unacked += n;
  if (req->dyn_left == 0) *flags |= NGHTTP3_DATA_FLAG_EOF;
  return 1;
}

void Http3Session::on_acked(Request* req, std::uint64_t n) {
  req->unacked -= std::min(req->unacked, n);
  if (!req->file && req->dyn_left > 0 && req->unacked < kMaxUnacked / 2) {
    nghttp3_conn_resume_stream(h3_, req->stream_id);
  }
}

void Http3Session::on_stream_close(std::int64_t stream_id) {
  requests_.erase(stream_id);
  if (ngtcp2_is_bidi_stream(stream_id)) ngtcp2_conn_extend_max_streams_bidi(conn_, 1);
}

void Http3Session::consume(std::int64_t stream_id, std::size_t n) {
  ngtcp2_conn_extend_max_stream_offset(conn_, stream_id, n);
  ngtcp2_conn_extend_max_offset(conn_, n);
}

}  // namespace quicstep::server_testbed
