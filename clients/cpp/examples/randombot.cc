// randombot: a capicua bot in C++ that plays a random legal action. Every kind of decision
// (a tile on an end, DEFER, REDEAL or KEEP) is one of the request's legal actions, so
// picking a random id among them plays them all. Build it and run it against a server:
//
//   cmake -S clients/cpp -B build/cpp-bot && cmake --build build/cpp-bot -j 2
//   CAPICUA_SERVER=127.0.0.1:50051 CAPICUA_TOKEN=<bot token> build/cpp-bot/randombot
//
// It plays every seat its token holds, in any number of matches at once, on one Play
// stream. How the stream ends says what comes next (the lifecycle table in
// docs/protocol.md, "How a Play stream ends"): OK stops (exit 0: a seat token whose match
// ended); ABORTED (another process took over the token), UNAUTHENTICATED,
// PERMISSION_DENIED, FAILED_PRECONDITION, INVALID_ARGUMENT and UNIMPLEMENTED stop (exit 2,
// but exit 0 for MATCH_FINISHED: a spent seat token); anything else is reconnected to with
// backoff. SIGINT, SIGTERM and --matches N (N matches ended) close the stream cleanly:
// exit 0.
#include <getopt.h>
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "capicua/v1/errors.pb.h"
#include "capicua/v1/play.grpc.pb.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace {

namespace pb = capicua::v1;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr char kClientName[] = "capicua-cpp-randombot/0.1.0";
constexpr Clock::duration kFirstBackoff = 100ms;  // doubled after each failed attempt...
constexpr Clock::duration kMaxBackoff = 10s;      // ...up to this, ±20% jitter; reset by Welcome
constexpr Clock::duration kConnectTimeout = 30s;  // no Welcome ever within this: a wrong address
constexpr Clock::duration kCloseGrace = 2s;       // after a half-close, the server's time to end
constexpr int kMaxReceiveBytes = 64 << 20;        // replies up to 64 MiB (docs/protocol.md)

std::mutex log_mu;  // the signal thread logs too

// Log writes one line to stderr: "randombot: 12:00:01 what happened".
void Log(const std::string& line) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[16];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", &local);
  std::lock_guard<std::mutex> hold(log_mu);
  std::fprintf(stderr, "randombot: %s %s\n", stamp, line.c_str());
}

// Fail says what is wrong with how the bot was started, in one line: exit 2.
[[noreturn]] void Fail(const std::string& line) {
  Log(line);
  std::exit(2);
}

// Stream endings that no reconnect can fix (OK and MATCH_FINISHED are handled apart).
const std::map<grpc::StatusCode, std::string> kStopCodes = {
    {grpc::StatusCode::UNAUTHENTICATED, "check the token"},
    {grpc::StatusCode::PERMISSION_DENIED, "check the token"},
    {grpc::StatusCode::ABORTED, "another client holds the token now (is the bot running twice?)"},
    {grpc::StatusCode::FAILED_PRECONDITION, "the token cannot play"},
    {grpc::StatusCode::INVALID_ARGUMENT, "the server refused what this client sent"},
    {grpc::StatusCode::UNIMPLEMENTED, "is it a capicua server?"},
};

std::string CodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {  // by code number, 0 to 16
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
      "UNAUTHENTICATED"};
  const int index = static_cast<int>(code);
  return index >= 0 && index <= 16 ? kNames[index] : "CODE_" + std::to_string(index);
}

// ReasonOf returns the ErrorInfo reason of a google.rpc.Status ("" without one).
std::string ReasonOf(const google::rpc::Status& status) {
  for (const auto& detail : status.details()) {
    google::rpc::ErrorInfo info;
    if (detail.UnpackTo(&info)) {
      return info.reason();
    }
  }
  return "";
}

// A call's final status with the google.rpc.Status the server put in its trailers.
struct Ended {
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
  std::string reason;  // ErrorInfo.reason: SHUTTING_DOWN, STREAM_REPLACED, ...
};

Ended EndedOf(const grpc::Status& status) {
  google::rpc::Status details;
  Ended ended{status.error_code(), status.error_message(), ""};
  if (!status.error_details().empty() && details.ParseFromString(status.error_details())) {
    ended.reason = ReasonOf(details);
  }
  return ended;
}

// Describe says a status as the docs do: "UNAVAILABLE / SHUTTING_DOWN: the message".
std::string Describe(grpc::StatusCode code, const std::string& reason, const std::string& message) {
  std::string text = CodeName(code);
  if (!reason.empty()) text += " / " + reason;
  if (!message.empty()) text += ": " + message;
  return text;
}

// OutcomeText: "NORMAL, side 1 won (44-105): side 1 reached 105 of 100".
std::string OutcomeText(const pb::MatchEnded& ended) {
  if (!ended.has_outcome()) return "no outcome";
  const pb::Outcome& outcome = ended.outcome();
  std::string termination = pb::Termination_Name(outcome.termination());
  const std::string prefix = "TERMINATION_";
  if (termination.rfind(prefix, 0) == 0) termination.erase(0, prefix.size());
  std::string winner =
      outcome.has_winner() ? "side " + std::to_string(outcome.winner()) + " won" : "no winner";
  std::string scores;
  for (int i = 0; i < outcome.scores_size(); ++i) {
    scores += (i ? "-" : "") + std::to_string(outcome.scores(i));
  }
  return termination + ", " + winner + " (" + scores + "): " + outcome.reason();
}

// -- settings: flags, else the environment every capicua client reads ----------------------

struct Settings {
  std::string server;
  std::string token;
  std::string token_from;  // where the token came from: "--token", "$CAPICUA_TOKEN", ...
  bool ask_forced = false;
  int matches = 0;  // stop after this many matches ended (0: never)
  bool tls = false;
  std::string tls_ca, tls_cert, tls_key;  // PEM file paths (docs/tls.md)
};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool EnvFlag(const char* name) {
  std::string value;
  for (char c : Env(name)) {
    if (c != ' ' && c != '\t') {
      value += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return !(value.empty() || value == "0" || value == "false" || value == "no");
}

std::string ReadFile(const std::string& path, const char* option) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) Fail(std::string(option) + " " + path + ": cannot read it");
  return text.str();
}

const char kUsage[] =
    "usage: randombot [--server HOST:PORT] [--token TOKEN] [--matches N] [--ask-forced]\n"
    "                 [--tls] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]\n"
    "env: CAPICUA_SERVER (default 127.0.0.1:50051); the token in CAPICUA_TOKEN, else\n"
    "CAPICUA_BOT_TOKEN or CAPICUA_SEAT_TOKEN; CAPICUA_TLS=1, CAPICUA_TLS_CA,\n"
    "CAPICUA_TLS_CERT, CAPICUA_TLS_KEY\n";
const char kSeeHelp[] = " (randombot --help lists the options)";

// MatchCount reads --matches N.
int MatchCount(const std::string& value) {
  char* end = nullptr;
  const long n = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || n < 0 || n > 1000000) {
    Fail("--matches needs N >= 0, got \"" + value + "\"");
  }
  return static_cast<int>(n);
}

// Flags reads the command line (anything it does not know: one line, exit 2).
Settings Flags(int argc, char** argv) {
  Settings s;
  const option options[] = {
      {"server", required_argument, nullptr, 's'}, {"token", required_argument, nullptr, 't'},
      {"matches", required_argument, nullptr, 'm'}, {"ask-forced", no_argument, nullptr, 'f'},
      {"tls", no_argument, nullptr, 'T'}, {"tls-ca", required_argument, nullptr, 'C'},
      {"tls-cert", required_argument, nullptr, 'c'}, {"tls-key", required_argument, nullptr, 'k'},
      {"help", no_argument, nullptr, 'h'}, {nullptr, 0, nullptr, 0}};
  opterr = 0;  // one line of our own instead of getopt's
  for (int opt; (opt = getopt_long(argc, argv, "", options, nullptr)) != -1;) {
    const std::string value = optarg ? optarg : "";
    switch (opt) {
      case 's': s.server = value; break;
      case 't': s.token = value; s.token_from = "--token"; break;
      case 'm': s.matches = MatchCount(value); break;
      case 'f': s.ask_forced = true; break;
      case 'T': s.tls = true; break;
      case 'C': s.tls_ca = value; break;
      case 'c': s.tls_cert = value; break;
      case 'k': s.tls_key = value; break;
      case 'h': std::fputs(kUsage, stdout); std::exit(0);
      default:
        Fail(std::string("unknown option or missing value: ") + argv[optind - 1] + kSeeHelp);
    }
  }
  if (optind < argc) Fail(std::string("unexpected argument: ") + argv[optind] + kSeeHelp);
  return s;
}

// Parse: the flags, and for what they leave out the variables every capicua client reads.
Settings Parse(int argc, char** argv) {
  Settings s = Flags(argc, argv);
  if (s.server.empty()) s.server = Env("CAPICUA_SERVER");
  if (s.server.empty()) s.server = "127.0.0.1:50051";
  // The arena and `capicua bot check` set CAPICUA_TOKEN; people set one of the other two.
  for (const char* name : {"CAPICUA_TOKEN", "CAPICUA_BOT_TOKEN", "CAPICUA_SEAT_TOKEN"}) {
    if (s.token.empty()) {
      s.token = Env(name);
      s.token_from = std::string("$") + name;
    }
  }
  if (s.token.empty()) {
    Fail("no token: set CAPICUA_TOKEN (a bot token from `capicua match register-bot NAME`)");
  }
  // Any TLS flag replaces the CAPICUA_TLS* variables, as in the Python and Node clients.
  if (!s.tls && s.tls_ca.empty() && s.tls_cert.empty() && s.tls_key.empty()) {
    s.tls = EnvFlag("CAPICUA_TLS");
    s.tls_ca = Env("CAPICUA_TLS_CA");
    s.tls_cert = Env("CAPICUA_TLS_CERT");
    s.tls_key = Env("CAPICUA_TLS_KEY");
  }
  s.tls = s.tls || !s.tls_ca.empty() || !s.tls_cert.empty() || !s.tls_key.empty();
  if (s.tls_cert.empty() != s.tls_key.empty()) {
    Fail("a client certificate needs both --tls-cert and --tls-key "
         "($CAPICUA_TLS_CERT, $CAPICUA_TLS_KEY)");
  }
  return s;
}

// Credentials: TLS (the given CA, else the system's; a client certificate for mutual TLS),
// or plaintext, for loopback and trusted networks only (docs/tls.md).
std::shared_ptr<grpc::ChannelCredentials> Credentials(const Settings& s) {
  if (!s.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!s.tls_ca.empty()) ssl.pem_root_certs = ReadFile(s.tls_ca, "--tls-ca");
  if (!s.tls_cert.empty()) {
    ssl.pem_cert_chain = ReadFile(s.tls_cert, "--tls-cert");
    ssl.pem_private_key = ReadFile(s.tls_key, "--tls-key");
  }
  return grpc::SslCredentials(ssl);
}

// Channel: keepalive as docs/protocol.md asks (pings at most every 20 s, also without
// calls), replies up to 64 MiB, and the channel's own reconnects on the streams' backoff.
std::shared_ptr<grpc::Channel> Channel(const Settings& s) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 10000);
  args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
  return grpc::CreateCustomChannel(s.server, Credentials(s), args);
}

// -- the bot -----------------------------------------------------------------------------

// How one stream ended.
struct Ending {
  Ended ended;
  bool welcomed = false;  // the stream got its Welcome
  bool stopping = false;  // ServerStopping came first
  bool replaced = false;  // an in-stream STREAM_REPLACED error (how older servers said it)
};

// One Play call, shared by the session (which writes) and its reading thread. Guarded by
// Bot::mu_.
struct Stream {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<pb::PlayRequest, pb::PlayResponse>> call;
  bool opened = false;      // call is set and Hello sent: the session may write
  bool reads_done = false;  // Read said the call is over: Finish has its status
  std::deque<pb::PlayResponse> inbox;  // received, not yet handled
};

class Bot {
 public:
  Bot(Settings settings, std::shared_ptr<grpc::Channel> channel)
      : settings_(std::move(settings)),
        stub_(pb::PlayService::NewStub(channel)),
        rng_(std::random_device{}()) {}

  // Run plays stream after stream until one ending says stop; returns the exit code.
  int Run();

  // Halt asks the bot to stop (any thread): the stream is half-closed, the server ends it OK.
  void Halt(const std::string& why) {
    std::lock_guard<std::mutex> hold(mu_);
    if (halted_) return;
    halted_ = true;
    Log(why);
    cv_.notify_all();
  }

 private:
  Ending Session(std::optional<Clock::time_point> give_up);
  std::optional<int> ExitCode(const Ending& e);
  void Read(Stream& stream);
  void Handle(const pb::PlayResponse& msg, Ending& ending);
  void Void(const std::string& match, uint64_t turn);
  void Answer(Stream& stream);
  Clock::duration Backoff(int failures);
  std::string Stopped() { return "stopped after " + std::to_string(ended_.size()) + " match(es)"; }

  const Settings settings_;
  std::unique_ptr<pb::PlayService::Stub> stub_;
  std::mt19937_64 rng_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool halted_ = false;  // SIGINT, SIGTERM or --matches: close the stream, exit 0

  // Per match: which requests are void. A match has one open request at a time, so a
  // request is over once it is withdrawn, a later request of its match arrives (a higher
  // turn_id), or the match ends. The maps are kept across reconnects; the requests to
  // answer are not: after a reconnect only what the new stream sends is answered.
  std::map<std::string, uint64_t> latest_;     // the highest turn_id requested
  std::map<std::string, uint64_t> withdrawn_;  // the highest turn_id withdrawn
  std::set<std::string> ended_;                // MatchEnded arrived
  std::vector<pb::DecisionRequest> pending_;   // received on this stream, not void: to answer
};

int Bot::Run() {
  const Clock::time_point start = Clock::now();
  bool ever_welcomed = false;
  int failures = 0;
  std::string why;  // how the last stream ended
  for (;;) {
    std::optional<Clock::time_point> give_up;  // before the first Welcome ever: start+30 s
    if (!ever_welcomed) give_up = start + kConnectTimeout;
    Ending e = Session(give_up);
    if (e.welcomed) ever_welcomed = true, failures = 0;
    if (std::optional<int> code = ExitCode(e)) return *code;
    const Ended& end = e.ended;
    if (end.code != grpc::StatusCode::CANCELLED || why.empty()) {  // CANCELLED: our give-up timer
      why = Describe(end.code, end.reason, end.message);
    }
    // Anything else (UNAVAILABLE, SHUTTING_DOWN, SLOW_CONSUMER, INTERNAL, a drop; OK after
    // ServerStopping from an older server): reconnect after 0.1 s, 0.2 s, ... 10 s.
    Clock::duration delay = Backoff(++failures);
    Clock::duration left = kConnectTimeout - (Clock::now() - start);
    if (!ever_welcomed && left <= Clock::duration::zero()) {
      Log("no capicua server answered at " + settings_.server + " within 30 s (" + why +
          "): giving up");
      return 2;
    } else if (!ever_welcomed && delay > left) {
      delay = left;  // one last attempt when the time is up
    }
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", std::chrono::duration<double>(delay).count());
    Log("the stream ended (" + why + "); reconnecting in " + seconds + " s");
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, delay, [this] { return halted_; })) {
      Log(Stopped());
      return 0;
    }
  }
}

// ExitCode: how the bot ends after a stream that ended so (the lifecycle table), or nothing
// when it reconnects.
std::optional<int> Bot::ExitCode(const Ending& e) {
  const Ended& end = e.ended;
  {
    std::lock_guard<std::mutex> hold(mu_);
    if (halted_) {
      Log(Stopped());
      return 0;
    }
  }
  auto stop = kStopCodes.find(end.code);
  if (e.replaced) {
    Log("stopping: the stream was replaced; " + kStopCodes.at(grpc::StatusCode::ABORTED));
    return 2;
  } else if (end.code == grpc::StatusCode::OK && !e.stopping) {  // a seat token's match ended
    Log("the server ended the stream after " + std::to_string(ended_.size()) +
        " match(es): stopping");
    return 0;
  } else if (end.reason == "MATCH_FINISHED") {  // a spent seat token (row 10)
    Log("the seat token is spent: " + end.message);
    return 0;
  } else if (stop != kStopCodes.end()) {  // never reconnect: the same answer would come
    Log("stopping: " + Describe(end.code, end.reason, end.message) + " (" + settings_.server +
        ", token from " + settings_.token_from + "); " + stop->second);
    return 2;
  }
  return std::nullopt;
}

// Backoff: 0.1 s before the first reconnect, doubled after each failed attempt up to 10 s,
// each wait ±20 % so that many bots of a restarted server do not come back in step.
Clock::duration Bot::Backoff(int failures) {
  Clock::duration delay = kFirstBackoff;
  for (int i = 1; i < failures && delay < kMaxBackoff; ++i) delay *= 2;
  if (delay > kMaxBackoff) delay = kMaxBackoff;
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return std::chrono::duration_cast<Clock::duration>(delay * jitter(rng_));
}

// Read opens the call, says Hello, and hands every message to the session. It runs on a
// thread of its own: gRPC's blocking API allows one reader and one writer at a time, and the
// session writes only once `opened` is set (after Hello).
void Bot::Read(Stream& stream) {
  auto call = stub_->Play(&stream.context);  // blocks until sent or failed (or cancelled)
  pb::PlayRequest hello;
  hello.mutable_hello()->set_ask_forced(settings_.ask_forced);
  hello.mutable_hello()->set_client(kClientName);
  call->Write(hello);  // a failed write shows as the call's status
  auto* reader = call.get();
  {
    std::lock_guard<std::mutex> hold(mu_);
    stream.call = std::move(call);
    stream.opened = true;
  }
  for (pb::PlayResponse msg; reader->Read(&msg); msg.Clear()) {
    std::lock_guard<std::mutex> hold(mu_);
    stream.inbox.push_back(std::move(msg));
    cv_.notify_all();
  }
  std::lock_guard<std::mutex> hold(mu_);
  stream.reads_done = true;
  cv_.notify_all();
}

// Session opens one Play stream and plays on it until it ends. give_up: the time by which a
// stream that got no Welcome is cancelled.
Ending Bot::Session(std::optional<Clock::time_point> give_up) {
  Stream stream;
  stream.context.AddMetadata("authorization", "Bearer " + settings_.token);
  pending_.clear();
  std::thread reader([this, &stream] { Read(stream); });
  Ending e;
  bool closing = false;    // halted: half-closed, waiting for the server to end the call
  bool cancelled = false;  // TryCancel called: the call ends CANCELLED at once
  Clock::time_point close_by;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    std::optional<Clock::time_point> wake;  // when to cancel the call if nothing came
    if (!cancelled && closing) wake = close_by;
    if (!cancelled && !closing && give_up && !e.welcomed) wake = give_up;
    auto ready = [&] {
      return !stream.inbox.empty() || stream.reads_done || (halted_ && !closing);
    };
    if (wake ? !cv_.wait_until(lock, *wake, ready) : (cv_.wait(lock, ready), false)) {
      stream.context.TryCancel();  // no Welcome in time, or no end in time after closing
      cancelled = true;
    }
    if (halted_ && !closing) {  // half-close: the server ends the call OK
      closing = true;
      close_by = Clock::now() + kCloseGrace;
      pending_.clear();
      if (stream.opened) {
        lock.unlock();
        stream.call->WritesDone();
        lock.lock();
      } else {  // still opening: give up the attempt
        stream.context.TryCancel();
        cancelled = true;
      }
    }
    // Take every message already here before answering: a withdrawal, a newer request or
    // the match's end in the backlog voids older requests, never to be answered.
    std::deque<pb::PlayResponse> batch;
    batch.swap(stream.inbox);
    const bool over = stream.reads_done;
    lock.unlock();
    for (const auto& msg : batch) Handle(msg, e);
    if (over) {  // nothing is answered on a stream that ended
      reader.join();
      e.ended = EndedOf(stream.call->Finish());
      return e;
    }
    lock.lock();
    // Messages that came meanwhile may void a request: they are handled first, then answered.
    if (!closing && !halted_ && stream.inbox.empty()) {
      lock.unlock();
      Answer(stream);
      lock.lock();
    }
  }
}

// Answer sends a random legal action for each request still open: a play on an end,
// defer, redeal or keep alike.
void Bot::Answer(Stream& stream) {
  for (const auto& d : pending_) {
    std::uniform_int_distribution<int> pick(0, d.legal_actions_size() - 1);
    pb::PlayRequest reply;
    pb::ActionReply* action = reply.mutable_action();
    action->set_match(d.match());
    action->set_turn_id(d.turn_id());
    action->set_action_id(d.legal_actions(pick(rng_)).id());
    stream.call->Write(reply);  // a broken stream's status comes from Read
  }
  pending_.clear();
}

// Void drops the pending requests of match up to turn (all of them: UINT64_MAX).
void Bot::Void(const std::string& match, uint64_t turn) {
  std::vector<pb::DecisionRequest> kept;
  for (auto& d : pending_) {
    if (d.match() != match || d.turn_id() > turn) kept.push_back(std::move(d));
  }
  pending_.swap(kept);
}

// Handle applies one message of the stream.
void Bot::Handle(const pb::PlayResponse& msg, Ending& e) {
  switch (msg.message_case()) {
    case pb::PlayResponse::kWelcome:
      e.welcomed = true;
      Log("connected to " + settings_.server + " as " + msg.welcome().principal() + " (server " +
          msg.welcome().server_version() + ")");
      break;
    case pb::PlayResponse::kDecision: {
      const pb::DecisionRequest& d = msg.decision();
      const std::string& match = d.match();
      if (ended_.count(match) || d.turn_id() <= withdrawn_[match] || d.turn_id() < latest_[match] ||
          d.legal_actions_size() == 0) {
        break;  // void already: never answered
      }
      latest_[match] = d.turn_id();
      Void(match, d.turn_id() - 1);  // older requests of the match are over
      pending_.push_back(d);
      break;
    }
    case pb::PlayResponse::kDecisionWithdrawn: {
      const pb::DecisionWithdrawn& w = msg.decision_withdrawn();
      uint64_t& highest = withdrawn_[w.match()];
      if (w.turn_id() > highest) highest = w.turn_id();
      Void(w.match(), w.turn_id());
      if (w.reason() == pb::WITHDRAWAL_REASON_TIMED_OUT ||
          w.reason() == pb::WITHDRAWAL_REASON_ILLEGAL_ACTIONS) {
        Log(w.match() + " turn " + std::to_string(w.turn_id()) +
            " withdrawn: " + pb::WithdrawalReason_Name(w.reason()));
      }
      break;
    }
    case pb::PlayResponse::kMatchEnded: {
      const std::string& match = msg.match_ended().match();
      Void(match, UINT64_MAX);
      latest_.erase(match);
      withdrawn_.erase(match);
      if (ended_.insert(match).second) {  // one MatchEnded per seat: one line per match
        Log(match + " ended: " + OutcomeText(msg.match_ended()));
        if (settings_.matches > 0 && static_cast<int>(ended_.size()) >= settings_.matches) {
          Halt(std::to_string(ended_.size()) + " match(es) ended: closing the stream");
        }
      }
      break;
    }
    case pb::PlayResponse::kError: {  // an answer to one ActionReply: the stream stays open
      const google::rpc::Status& error = msg.error();
      std::string reason = ReasonOf(error);
      Log("server error: " + Describe(static_cast<grpc::StatusCode>(error.code()), reason,
                                      error.message()));
      if (reason == "STREAM_REPLACED") e.replaced = true;
      break;
    }
    case pb::PlayResponse::kStopping:
      e.stopping = true;
      Log("the server is stopping: " + msg.stopping().reason());
      break;
    default:  // MatchStarted, EventBatch, HandEnded: the next request carries the full view
      break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Block SIGINT and SIGTERM in every thread (gRPC's too, made later); one thread takes them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Settings settings = Parse(argc, argv);
  auto bot = std::make_unique<Bot>(settings, Channel(settings));
  std::thread([&bot, signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    bot->Halt(std::string(strsignal(sig)) + ": closing the stream");
    sigwait(&signals, &sig);
    Log(std::string(strsignal(sig)) + " again: exiting now");
    std::_Exit(130);
  }).detach();
  int code = bot->Run();
  std::fflush(nullptr);
  std::_Exit(code);  // the signal thread still waits; nothing is left to close
}
