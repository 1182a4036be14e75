// posgrad-data fetch and verify against a local HTTP server on 127.0.0.1 (never an outside
// address): success, resumed and refused downloads, checksum mismatches, 404, nothing listening,
// an HTML page, corrupt and malicious archives, a size cap, a full disk (a file-size limit) while
// unpacking, and verify on the shared data. Most cases run the built program with a catalogue of
// the test's own files (--catalogue); a few call the library directly.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <fcntl.h>
#include <arpa/inet.h>
#include <csignal>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datasets/checksum.h"
#include "datasets/fetch/fetch.h"
#include "datasets/fetch/transfer_progress.h"
#include "datasets/fetch/verify.h"
#include "tests/datasets/http_test_server.h"
#include "tests/datasets/tar_gz_writer.h"
#include "tests/datasets/test_util.h"

using namespace posgrad;
using namespace posgrad::fetch;
using posgrad::test::HttpTestServer;
using posgrad::test::TarGzWriter;
using posgrad::test::TempDir;
namespace fs = std::filesystem;

namespace {

const fs::path kProgram = fs::path(POSGRAD_BIN_DIR) / "posgrad-data";

struct Run {
  int status = -1;    // exit status, -1 when killed by a signal
  std::string output; // stdout and stderr together
  double seconds = 0;
};

// Runs posgrad-data with `args` (no shell), optionally under a file-size limit (RLIMIT_FSIZE).
Run run_program(const std::vector<std::string>& args, const fs::path& log, rlim_t file_size_limit = 0) {
  // Everything the child needs is made before fork: the server thread may hold malloc's lock.
  std::vector<char*> argv{const_cast<char*>(kProgram.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const rlimit limit{file_size_limit, file_size_limit};
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (file_size_limit > 0) ::setrlimit(RLIMIT_FSIZE, &limit);
    ::execv(kProgram.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  Run r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.output = test::read_text(log);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("posgrad-data exit " << r.status << ":\n" << r.output);
  return r;
}

// The last non-empty line of the output: the program's error line.
std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

// Every file and folder under dir, relative ("" when dir does not exist).
std::vector<std::string> tree(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
    out.push_back(it->path().lexically_relative(dir).string());  // fs::relative would follow links
  std::sort(out.begin(), out.end());
  BOOST_TEST_MESSAGE("tree of " << dir.string() << ": " << fmt::format("{}", fmt::join(out, " ")));
  return out;
}

std::string some_text(size_t n) {
  std::string s;
  for (size_t i = 0; s.size() < n; ++i) s += "line " + std::to_string(i * 7919 % 100003) + " of the test corpus\n";
  s.resize(n);
  return s;
}

// A catalogue with one plain file "notes.txt" (SHA-256 of `published`) into folder "notes/".
// Its catalogue URL is never contacted: the cases give the local server's with --base-url.
const char* kCatalogueUrl = "https://mirror.invalid/data/";

nlohmann::json plain_dataset(const std::string& published, int64_t max_bytes = 1 << 24) {
  return {{"name", "notes"},
          {"urls", {kCatalogueUrl}},
          {"files", {{{"name", "notes.txt"}, {"sha256", sha256_hex(published)}, {"max_bytes", max_bytes}}}},
          {"known_files", {{{"path", "notes.txt"}, {"sha256", sha256_hex(published)}}}}};
}

// A catalogue with one archive "set.tar.gz" (MD5 of `archive`) unpacked from its folder "set/".
nlohmann::json archive_dataset(const std::string& archive, int64_t max_unpacked_bytes = 1 << 24) {
  return {{"name", "set"},
          {"urls", {kCatalogueUrl}},
          {"files", {{{"name", "set.tar.gz"}, {"md5", md5_hex(archive)}, {"max_bytes", 1 << 24}}}},
          {"unpack", "tar.gz"},
          {"archive_folder", "set"},
          {"max_unpacked_bytes", max_unpacked_bytes}};
}

fs::path write_catalogue(const TempDir& dir, const nlohmann::json& dataset) {
  const fs::path file = dir / "catalogue.json";
  test::write_text(file, nlohmann::json::array({dataset}).dump(2));
  return file;
}

// Fetch with a catalogue from the test's server (--base-url); the data folder is dir/data.
Run fetch_with(const TempDir& dir, const nlohmann::json& dataset, const std::string& name, const std::string& base_url,
               rlim_t file_size_limit = 0) {
  const std::vector<std::string> args{"--catalogue", write_catalogue(dir, dataset).string(), "fetch", name, "--dir",
                                      (dir / "data").string(), "--base-url", base_url};
  return run_program(args, dir / "log.txt", file_size_limit);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fetch)

// The task's acceptance case: the built-in tinyshakespeare entry from a local server.
BOOST_AUTO_TEST_CASE(tinyshakespeare_from_a_local_server,
                     *boost::unit_test::precondition(test::data_present("tinyshakespeare"))) {
  TempDir dir;
  HttpTestServer server;
  server.serve("input.txt", test::read_text(test::data_dir() / "tinyshakespeare" / "input.txt"), "text/plain");
  const Run r = run_program({"fetch", "tinyshakespeare", "--dir", (dir / "data").string(), "--base-url",
                             server.base_url()},
                            dir / "log.txt");
  BOOST_TEST(r.status == 0);
  BOOST_TEST(sha256_file(dir / "data" / "tinyshakespeare" / "input.txt") ==
             "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed");
  BOOST_TEST(tree(dir / "data") == (std::vector<std::string>{"tinyshakespeare", "tinyshakespeare/input.txt"}));
  BOOST_TEST(contains(r.output, "SHA-256 OK"));
  const Run again = run_program({"verify", "--dir", (dir / "data").string()}, dir / "log2.txt");
  BOOST_TEST(again.status == 0);
}

// The same command against a file whose checksum differs: refused, nothing left behind.
BOOST_AUTO_TEST_CASE(tinyshakespeare_checksum_mismatch_leaves_nothing) {
  TempDir dir;
  HttpTestServer server;
  server.serve("input.txt", "First Citizen:\nNot the published text.\n", "text/plain");
  const Run r = run_program({"fetch", "tinyshakespeare", "--dir", (dir / "data").string(), "--base-url",
                             server.base_url()},
                            dir / "log.txt");
  BOOST_TEST(r.status == 1);
  const std::string error = last_line(r.output);
  BOOST_TEST(contains(error, "posgrad-data: error: tinyshakespeare: input.txt: SHA-256 mismatch"));
  BOOST_TEST(contains(error, "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"));
  BOOST_TEST(contains(error, "nothing was kept"));
  BOOST_TEST(!fs::exists(dir / "data"), "the data folder the fetch created is removed again");
}

BOOST_AUTO_TEST_CASE(plain_file_success_and_second_fetch_is_a_no_op) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(200000);
  server.serve("notes.txt", text, "text/plain");
  const Run r = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(r.status == 0);
  BOOST_TEST(test::read_text(dir / "data" / "notes" / "notes.txt") == text);
  BOOST_TEST(tree(dir / "data") == (std::vector<std::string>{"notes", "notes/notes.txt"}));
  BOOST_TEST(contains(r.output, "notes: 1 file in"));
  const Run again = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(again.status == 0);
  BOOST_TEST(contains(again.output, "already in"));
  BOOST_TEST(server.requests().size() == 1u, "the second fetch downloads nothing");
}

BOOST_AUTO_TEST_CASE(a_folder_already_there_that_does_not_verify_is_left_alone) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(1000);
  server.serve("notes.txt", text);
  fs::create_directories(dir / "data" / "notes");
  test::write_text(dir / "data" / "notes" / "notes.txt", "edited");
  const Run r = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), "is already there but does not verify"));
  BOOST_TEST(contains(last_line(r.output), "notes/notes.txt"));
  BOOST_TEST(contains(last_line(r.output), "move it away"));
  BOOST_TEST(test::read_text(dir / "data" / "notes" / "notes.txt") == "edited");
  BOOST_TEST(server.requests().empty());
}

BOOST_AUTO_TEST_CASE(a_dropped_connection_is_resumed_with_a_range_request) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(300000);
  server.serve("notes.txt", text);
  server.drop_after("notes.txt", 120000, 1);
  const Run r = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(r.status == 0);
  BOOST_TEST(test::read_text(dir / "data" / "notes" / "notes.txt") == text);
  const auto requests = server.requests();
  BOOST_REQUIRE(requests.size() == 2u);
  BOOST_TEST(requests[1] == "GET /notes.txt Range: bytes=120000-");
}

BOOST_AUTO_TEST_CASE(a_server_that_keeps_dropping_is_refused_then_a_rerun_resumes) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(300000);
  server.serve("notes.txt", text);
  server.drop_after("notes.txt", 1000, 100);
  const Run r = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(r.status == 1);
  const std::string error = last_line(r.output);
  BOOST_TEST(contains(error, server.base_url() + "notes.txt"));
  BOOST_TEST(contains(error, "the connection broke after 4000 bytes"));
  BOOST_TEST(contains(error, "(4 attempts); rerun the same command to resume"));
  BOOST_TEST(!fs::exists(dir / "data" / "notes"), "an incomplete download never looks complete");
  BOOST_TEST(tree(dir / "data") ==
             (std::vector<std::string>{".posgrad-data", ".posgrad-data/notes", ".posgrad-data/notes/notes.txt.part"}));
  const auto kept = fs::file_size(dir / "data" / ".posgrad-data" / "notes" / "notes.txt.part");
  BOOST_TEST(kept == 4000u, "four attempts of 1000 bytes each");

  server.drop_after("notes.txt", 0, 0);
  const Run rerun = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(rerun.status == 0);
  BOOST_TEST(test::read_text(dir / "data" / "notes" / "notes.txt") == text);
  BOOST_TEST(server.requests().back() == "GET /notes.txt Range: bytes=4000-");
  BOOST_TEST(tree(dir / "data") == (std::vector<std::string>{"notes", "notes/notes.txt"}));
}

// A run killed after its download was complete (while unpacking) leaves the checked file in the
// staging folder; the next run uses it instead of downloading it again.
BOOST_AUTO_TEST_CASE(a_complete_download_left_by_a_killed_run_is_reused) {
  TempDir dir;
  HttpTestServer server;  // serves nothing: any request would be a 404
  const std::string archive = TarGzWriter().file("set/a.bin", "contents").finish();
  fs::create_directories(dir / "data" / ".posgrad-data" / "set" / "ready");
  test::write_text(dir / "data" / ".posgrad-data" / "set" / "set.tar.gz", archive);
  test::write_text(dir / "data" / ".posgrad-data" / "set" / "ready" / "half-written.bin", "x");
  const Run r = fetch_with(dir, archive_dataset(archive), "set", server.base_url());
  BOOST_TEST(r.status == 0);
  BOOST_TEST(contains(r.output, "set.tar.gz already downloaded"));
  BOOST_TEST(server.requests().empty());
  BOOST_TEST(tree(dir / "data") == (std::vector<std::string>{"set", "set/a.bin"}));
}

// While one fetch runs (here: the test holds its lock), a second one into the same folder stops.
BOOST_AUTO_TEST_CASE(a_second_fetch_of_the_same_dataset_stops_at_once) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(1000);
  server.serve("notes.txt", text);
  const fs::path staging = dir / "data" / ".posgrad-data" / "notes";
  fs::create_directories(staging);
  test::write_text(staging / "notes.txt.part", "the first run's bytes");
  const int fd = ::open(staging.c_str(), O_RDONLY | O_DIRECTORY);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  const Run r = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), "notes: another posgrad-data is fetching it into"));
  BOOST_TEST(server.requests().empty());
  BOOST_TEST(test::read_text(staging / "notes.txt.part") == "the first run's bytes", "the first run's files are untouched");
  ::close(fd);
  const Run after = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(after.status == 1, "the .part is not a prefix of the file: refused by its checksum");
  BOOST_TEST(contains(last_line(after.output), "SHA-256 mismatch"));
}

// A dataset of several files (like MNIST): when the second one breaks off, the first, complete
// and checked, is kept with the second's .part, and the rerun downloads only what is missing.
BOOST_AUTO_TEST_CASE(a_rerun_downloads_only_what_is_missing) {
  TempDir dir;
  HttpTestServer server;
  const std::string first = some_text(20000), second = some_text(90000);
  server.serve("first.bin", first);
  server.serve("second.bin", second);
  server.drop_after("second.bin", 1000, 100);
  const nlohmann::json spec = {
      {"name", "pair"},
      {"urls", {kCatalogueUrl}},
      {"files",
       {{{"name", "first.bin"}, {"sha256", sha256_hex(first)}, {"max_bytes", 1 << 20}},
        {{"name", "second.bin"}, {"sha256", sha256_hex(second)}, {"max_bytes", 1 << 20}}}}};
  const Run r = fetch_with(dir, spec, "pair", server.base_url());
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), "pair: second.bin could not be downloaded"));
  BOOST_TEST(tree(dir / "data") == (std::vector<std::string>{".posgrad-data", ".posgrad-data/pair",
                                                             ".posgrad-data/pair/first.bin",
                                                             ".posgrad-data/pair/second.bin.part"}));
  server.drop_after("second.bin", 0, 0);
  const size_t before = server.requests().size();
  const Run rerun = fetch_with(dir, spec, "pair", server.base_url());
  BOOST_TEST(rerun.status == 0);
  const auto requests = server.requests();
  BOOST_REQUIRE(requests.size() == before + 1);
  BOOST_TEST(requests.back() == "GET /second.bin Range: bytes=4000-");
  BOOST_TEST(tree(dir / "data") == (std::vector<std::string>{"pair", "pair/first.bin", "pair/second.bin"}));
}

BOOST_AUTO_TEST_CASE(a_server_that_ignores_range_restarts_the_file) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(300000);
  server.serve("notes.txt", text);
  server.drop_after("notes.txt", 50000, 1);
  server.ignore_range(true);
  const Run r = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(r.status == 0);
  BOOST_TEST(test::read_text(dir / "data" / "notes" / "notes.txt") == text);
}

BOOST_AUTO_TEST_CASE(not_found_is_one_line_naming_the_url) {
  TempDir dir;
  HttpTestServer server;
  const Run r = fetch_with(dir, plain_dataset("x"), "notes", server.base_url());
  BOOST_TEST(r.status == 1);
  const std::string error = last_line(r.output);
  BOOST_TEST(contains(error, server.base_url() + "notes.txt: HTTP 404 (not found)"));
  BOOST_TEST(contains(error, "--base-url"));
  BOOST_TEST(!fs::exists(dir / "data"));
}

// A server error (503) is tried again after a pause; one that lasts is one line naming it.
BOOST_AUTO_TEST_CASE(a_server_error_is_tried_again) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(5000);
  server.serve("notes.txt", text);
  server.fail_with("notes.txt", 503, 1);
  const Run r = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(r.status == 0);
  BOOST_TEST(server.requests().size() == 2u);
  BOOST_TEST(test::read_text(dir / "data" / "notes" / "notes.txt") == text);

  TempDir dir2;
  server.fail_with("notes.txt", 500, 100);
  const Run lasting = fetch_with(dir2, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(lasting.status == 1);
  BOOST_TEST(contains(last_line(lasting.output), "notes.txt: HTTP 500 (a server error) (4 attempts)"));
  BOOST_TEST(lasting.seconds > 6.5, "pauses of 1, 2 and 4 s");
  BOOST_TEST(!fs::exists(dir2 / "data"));
}

BOOST_AUTO_TEST_CASE(nothing_listening_fails_fast_and_says_so) {
  TempDir dir;
  const std::string url = "http://127.0.0.1:" + std::to_string(test::unused_local_port()) + "/";
  const Run r = fetch_with(dir, plain_dataset("x"), "notes", url);
  BOOST_TEST(r.status == 1);
  BOOST_TEST(r.seconds < 5.0);
  const std::string error = last_line(r.output);
  BOOST_TEST(contains(error, url + "notes.txt"));
  BOOST_TEST(contains(error, "onnect"));  // libcurl: "Failed to connect ... Couldn't connect to server"
  BOOST_TEST(contains(error, "check the address and the network"));
  BOOST_TEST(!fs::exists(dir / "data"));
}

BOOST_AUTO_TEST_CASE(an_html_page_instead_of_the_file_is_refused) {
  TempDir dir;
  HttpTestServer server;
  server.serve("set.tar.gz", "<!DOCTYPE html><html><body>Please log in</body></html>", "text/html; charset=utf-8");
  const Run r = fetch_with(dir, archive_dataset("the real archive"), "set", server.base_url());
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), server.base_url() + "set.tar.gz: the server sent an HTML page"));
  BOOST_TEST(!fs::exists(dir / "data"));
}

BOOST_AUTO_TEST_CASE(a_file_over_its_size_cap_is_refused) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(100000);
  server.serve("notes.txt", text);
  const Run r = fetch_with(dir, plain_dataset(text, 50000), "notes", server.base_url());
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), "larger than its cap of 50000 bytes"));
  BOOST_TEST(!fs::exists(dir / "data"));
}

BOOST_AUTO_TEST_CASE(plain_http_needs_an_explicit_base_url) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(1000);
  server.serve("notes.txt", text);
  nlohmann::json http_catalogue = plain_dataset(text);
  http_catalogue["urls"] = {server.base_url()};
  const Run refused = run_program({"--catalogue", write_catalogue(dir, http_catalogue).string(), "fetch", "notes",
                                   "--dir", (dir / "data").string()},
                                  dir / "log.txt");
  BOOST_TEST(refused.status == 1);
  BOOST_TEST(contains(last_line(refused.output), server.base_url() + "notes.txt: plain HTTP"));
  BOOST_TEST(contains(last_line(refused.output), "only HTTPS is used unless an http:// --base-url is given"));
  BOOST_TEST(server.requests().empty());
  BOOST_TEST(!fs::exists(dir / "data"));
  // The same address as an explicit --base-url is used.
  const Run given = fetch_with(dir, http_catalogue, "notes", server.base_url());
  BOOST_TEST(given.status == 0);
}

// HTTPS is verified: a server with a self-signed certificate (made and served by the openssl
// command-line tool on 127.0.0.1) is refused, and nothing is downloaded from it.
struct openssl_tool_present {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    if (std::system("openssl version > /dev/null 2>&1") == 0) return true;
    boost::test_tools::assertion_result r(false);
    r.message() << "skipped: the openssl command-line tool is not installed";
    return r;
  }
};

BOOST_AUTO_TEST_CASE(a_certificate_that_does_not_verify_is_refused,
                     *boost::unit_test::precondition(openssl_tool_present())) {
  TempDir dir;
  const std::string text = some_text(1000);
  test::write_text(dir / "notes.txt", text);
  const std::string make_cert = "cd '" + dir.path().string() +
                                "' && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1 "
                                "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 > openssl.log 2>&1";
  BOOST_REQUIRE(std::system(make_cert.c_str()) == 0);
  const int port = test::unused_local_port();
  const std::string accept = "127.0.0.1:" + std::to_string(port);
  const pid_t server = ::fork();
  if (server == 0) {
    if (::chdir(dir.path().c_str()) != 0) ::_exit(127);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execlp("openssl", "openssl", "s_server", "-accept", accept.c_str(), "-cert", "cert.pem", "-key", "key.pem",
             "-WWW", "-quiet", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait (at most 10 s) until it accepts connections.
  bool listening = false;
  for (int i = 0; i < 200 && !listening; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listening = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (!listening) ::usleep(50000);
  }
  BOOST_REQUIRE_MESSAGE(listening, "openssl s_server did not start");
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/";
  const Run r = fetch_with(dir, plain_dataset(text), "notes", url);
  ::kill(server, SIGTERM);
  ::waitpid(server, nullptr, 0);
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), url + "notes.txt: SSL certificate problem"));
  BOOST_TEST(!fs::exists(dir / "data"));
}

BOOST_AUTO_TEST_CASE(an_archive_is_unpacked_from_its_top_folder) {
  TempDir dir;
  HttpTestServer server;
  const std::string archive = TarGzWriter()
                                  .folder("set/")
                                  .file("set/a.bin", some_text(5000))
                                  .file("set/sub/b.txt", "bee\n")
                                  .symlink("set/sub/to_a", "../a.bin")
                                  .finish();
  server.serve("set.tar.gz", archive);
  nlohmann::json spec = archive_dataset(archive);
  spec["known_files"] = {{{"path", "a.bin"}, {"sha256", sha256_hex(some_text(5000))}}};
  const Run r = fetch_with(dir, spec, "set", server.base_url());
  BOOST_TEST(r.status == 0);
  BOOST_TEST(tree(dir / "data") == (std::vector<std::string>{"set", "set/a.bin", "set/sub", "set/sub/b.txt",
                                                             "set/sub/to_a"}));
  BOOST_TEST(test::read_text(dir / "data" / "set" / "sub" / "to_a") == some_text(5000));
}

BOOST_AUTO_TEST_CASE(an_archive_with_a_file_that_does_not_verify_leaves_nothing) {
  TempDir dir;
  HttpTestServer server;
  const std::string archive = TarGzWriter().file("set/a.bin", "changed").finish();
  server.serve("set.tar.gz", archive);
  nlohmann::json spec = archive_dataset(archive);
  spec["known_files"] = {{{"path", "a.bin"}, {"sha256", sha256_hex("original")}}};
  const Run r = fetch_with(dir, spec, "set", server.base_url());
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), "set: a.bin: SHA-256 mismatch after unpacking"));
  BOOST_TEST(!fs::exists(dir / "data"));
}

BOOST_AUTO_TEST_CASE(a_corrupt_archive_is_refused) {
  TempDir dir;
  HttpTestServer server;
  std::string archive = TarGzWriter().file("set/a.bin", some_text(100000)).finish();
  archive.resize(archive.size() / 2);  // its published checksum is of these bytes: only unpacking sees it
  server.serve("set.tar.gz", archive);
  const Run r = fetch_with(dir, archive_dataset(archive), "set", server.base_url());
  BOOST_TEST(r.status == 1);
  const std::string error = last_line(r.output);
  BOOST_TEST(contains(error, "set.tar.gz"));
  BOOST_TEST((contains(error, "corrupt") || contains(error, "not a readable tar.gz")));
  BOOST_TEST(!fs::exists(dir / "data"));
}

BOOST_AUTO_TEST_CASE(archive_entries_that_leave_the_folder_are_refused) {
  struct Case {
    std::string what, archive, message;
  };
  const std::vector<Case> cases{
      {"dot-dot", TarGzWriter().file("set/ok.txt", "ok").file("set/../../escaped.txt", "x").finish(), "climbs out with '..'"},
      {"absolute", TarGzWriter().file("/tmp/posgrad_escaped.txt", "x").finish(), "has an absolute name"},
      {"link out", TarGzWriter().symlink("set/link", "../../..").file("set/link/escaped.txt", "x").finish(),
       "is a link to \"../../..\", outside the folder"},
      {"absolute link", TarGzWriter().symlink("set/etc", "/etc").finish(), "is a link to \"/etc\", outside the folder"},
      // d/e/up points at d (inside); d/e/up/../.. reads as "d" but climbs from d's parent: outside.
      {"link climbing through a link",
       TarGzWriter().folder("set/d/e/").symlink("set/d/e/up", "..").symlink("set/l", "d/e/up/../..").finish(),
       "is a link to \"d/e/up/../..\", outside the folder"},
      {"folder through a link", TarGzWriter().folder("set/sub/").symlink("set/in", "sub").folder("set/in/x/").finish(),
       "entry \"set/in/x/\" is inside a link"},
      {"link made twice", TarGzWriter().symlink("set/a", "b").symlink("set/a", "c").finish(), "appears twice"},
      {"outside the top folder", TarGzWriter().file("other/x.txt", "x").finish(), "is not inside set/"}};
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      TempDir dir;
      HttpTestServer server;
      server.serve("set.tar.gz", c.archive);
      const Run r = fetch_with(dir, archive_dataset(c.archive), "set", server.base_url());
      BOOST_TEST(r.status == 1);
      BOOST_TEST(contains(last_line(r.output), "set.tar.gz: entry"));
      BOOST_TEST(contains(last_line(r.output), c.message));
      BOOST_TEST(contains(last_line(r.output), "nothing was kept. The archive matched its published checksum: please report this"));
      BOOST_TEST(!fs::exists(dir / "data"), "nothing left behind");
      BOOST_TEST(!fs::exists(dir / "escaped.txt"));
      BOOST_TEST(!fs::exists("/tmp/posgrad_escaped.txt"));
    }
  }
}

BOOST_AUTO_TEST_CASE(an_unpacked_entry_over_its_cap_is_refused) {
  TempDir dir;
  HttpTestServer server;
  const std::string archive = TarGzWriter().file("set/big.bin", std::string(300000, 'z')).finish();
  server.serve("set.tar.gz", archive);
  const Run r = fetch_with(dir, archive_dataset(archive, 100000), "set", server.base_url());
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), "entry \"set/big.bin\" is larger than its cap of 100000 bytes"));
  BOOST_TEST(!fs::exists(dir / "data"));
}

// A full disk while unpacking, made with a file-size limit (RLIMIT_FSIZE, 1 MB) on the program: the
// 4 MB entry of a small archive cannot be written.
BOOST_AUTO_TEST_CASE(a_full_disk_while_unpacking_is_one_clear_line) {
  TempDir dir;
  HttpTestServer server;
  const std::string archive = TarGzWriter().file("set/small.txt", "fits\n").file("set/big.bin", std::string(4 << 20, 'z')).finish();
  BOOST_REQUIRE(archive.size() < 200000u);
  server.serve("set.tar.gz", archive);
  const Run r = fetch_with(dir, archive_dataset(archive), "set", server.base_url(), 1 << 20);
  BOOST_TEST(r.status == 1, "exits with an error, not killed by SIGXFSZ");
  const std::string error = last_line(r.output);
  BOOST_TEST(contains(error, "cannot write"));
  BOOST_TEST(contains(error, "big.bin"));
  BOOST_TEST(contains(error, "File too large"));
  BOOST_TEST(contains(error, "rerun"));
  BOOST_TEST(!fs::exists(dir / "data"));
}

// The progress line: bytes, share, rate and time left, from an injected clock; in a log (not a
// terminal) at most one line per 10 s, and the final line when done.
BOOST_AUTO_TEST_CASE(progress_shows_bytes_rate_and_eta) {
  BOOST_TEST(format_bytes(999) == "999 B");
  BOOST_TEST(format_bytes(4200000) == "4.2 MB");
  BOOST_TEST(format_bytes(1100000000) == "1.10 GB");
  std::chrono::steady_clock::time_point now{};
  std::FILE* log = std::tmpfile();
  BOOST_REQUIRE(log != nullptr);
  {
    TransferProgress progress("  a.bin", log, [&] { return now; });
    progress.update(0, 4000000);
    now += std::chrono::seconds(5);
    progress.update(500000, 4000000);  // under 10 s since the start: not printed
    now += std::chrono::seconds(5);
    progress.update(1000000, 4000000);  // 1 MB in 10 s: 100 kB/s, 3 MB left: 30 s
    now += std::chrono::seconds(30);
    progress.update(4000000, 4000000);
    progress.finish();  // the log has that line already
  }
  std::rewind(log);
  std::string text;
  for (int c; (c = std::fgetc(log)) != EOF;) text.push_back(static_cast<char>(c));
  std::fclose(log);
  BOOST_TEST(text == "  a.bin  1.0 MB / 4.0 MB (25%)  100.0 kB/s  ETA 0:00:30\n"
                     "  a.bin  4.0 MB / 4.0 MB (100%)  100.0 kB/s\n");
}

// A full disk while downloading (a 1 MB file-size limit, a 3 MB file): the .part is kept, and a
// rerun with space resumes it.
BOOST_AUTO_TEST_CASE(a_full_disk_while_downloading_keeps_the_part_for_a_resume) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(3 << 20);
  server.serve("notes.txt", text);
  const Run r = fetch_with(dir, plain_dataset(text), "notes", server.base_url(), 1 << 20);
  BOOST_TEST(r.status == 1, "exits with an error, not killed by SIGXFSZ");
  const std::string error = last_line(r.output);
  BOOST_TEST(contains(error, "notes.txt.part: File too large; free some space"));
  BOOST_TEST(contains(error, "rerun the same command to resume"));
  BOOST_TEST(!fs::exists(dir / "data" / "notes"));
  const fs::path part = dir / "data" / ".posgrad-data" / "notes" / "notes.txt.part";
  BOOST_REQUIRE(fs::exists(part));
  const auto kept = fs::file_size(part);
  BOOST_TEST(kept <= (1u << 20));
  const Run rerun = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(rerun.status == 0);
  BOOST_TEST(server.requests().back() == "GET /notes.txt Range: bytes=" + std::to_string(kept) + "-");
  BOOST_TEST(test::read_text(dir / "data" / "notes" / "notes.txt") == text);
}

// A data folder that cannot be made (a file is in the way): one line naming it, nothing written.
BOOST_AUTO_TEST_CASE(a_folder_that_cannot_be_made_is_one_line) {
  TempDir dir;
  HttpTestServer server;
  const std::string text = some_text(1000);
  server.serve("notes.txt", text);
  test::write_text(dir / "data", "a file, not a folder");
  const Run r = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), "notes: cannot create the data folder " + (dir / "data").string()));
  BOOST_TEST(contains(last_line(r.output), "give a --dir where you can write"));
  fs::remove(dir / "data");
  fs::create_directories(dir / "data");
  test::write_text(dir / "data" / ".posgrad-data", "a file where the staging folder goes");
  const Run staging = fetch_with(dir, plain_dataset(text), "notes", server.base_url());
  BOOST_TEST(staging.status == 1);
  BOOST_TEST(contains(last_line(staging.output), "notes: cannot create " + (dir / "data" / ".posgrad-data" / "notes").string()));
  BOOST_TEST(contains(last_line(staging.output), "give a --dir where you can write"));
  BOOST_TEST(server.requests().empty());
  BOOST_TEST(tree(dir / "data") == std::vector<std::string>{".posgrad-data"});
}

BOOST_AUTO_TEST_CASE(unknown_dataset_and_bad_base_url) {
  TempDir dir;
  Run r = run_program({"fetch", "imagenet", "--dir", (dir / "data").string()}, dir / "log.txt");
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), "unknown dataset \"imagenet\"; known: cifar10, mnist, tinyshakespeare"));
  // An empty value would silently mean the default: a usage error (exit 2) naming the option.
  r = run_program({"fetch", "mnist", "--dir", ""}, dir / "log.txt");
  BOOST_TEST(r.status == 2);
  BOOST_TEST(contains(r.output, "--dir: an empty path is not a folder or a file"));
  r = run_program({"fetch", "mnist", "--base-url", ""}, dir / "log.txt");
  BOOST_TEST(r.status == 2);
  BOOST_TEST(contains(r.output, "--base-url: empty (leave the option out for the default)"));
  r = run_program({"verify", "--dir", ""}, dir / "log.txt");
  BOOST_TEST(r.status == 2);
  BOOST_TEST(contains(r.output, "--dir: an empty path is not a folder or a file"));
  r = run_program({"fetch", "mnist", "--dir", (dir / "data").string(), "--base-url", "ftp://example/"}, dir / "log.txt");
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(last_line(r.output), "--base-url ftp://example/: must start with https://"));
  BOOST_TEST(!fs::exists(dir / "data"));
}

BOOST_AUTO_TEST_CASE(list_names_the_canonical_urls) {
  TempDir dir;
  const Run r = run_program({"list"}, dir / "log.txt");
  BOOST_TEST(r.status == 0);
  BOOST_TEST(contains(r.output, "https://www.cs.toronto.edu/~kriz/"));
  BOOST_TEST(contains(r.output, "cifar-10-binary.tar.gz  MD5 c32a1d4ab5d03f1284b67883e8d87530"));
  BOOST_TEST(contains(r.output, "https://ossci-datasets.s3.amazonaws.com/mnist/"));
  BOOST_TEST(contains(r.output, "train-images-idx3-ubyte.gz  MD5 f68b3c2dcbeaaa9fbdd348bbdeb94873"));
  BOOST_TEST(contains(r.output, "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/"));
}

BOOST_AUTO_TEST_CASE(verify_passes_on_the_shared_data, *boost::unit_test::precondition(test::data_present("."))) {
  TempDir dir;
  const Run r = run_program({"verify", "--dir", test::data_dir().string()}, dir / "log.txt");
  BOOST_TEST(r.status == 0);
  BOOST_TEST(contains(r.output, "mnist/train-images-idx3-ubyte.gz: OK"));
  BOOST_TEST(contains(r.output, "tinyshakespeare/input.txt: OK"));
}

BOOST_AUTO_TEST_CASE(verify_names_a_changed_file) {
  TempDir dir;
  fs::create_directories(dir / "data" / "tinyshakespeare");
  test::write_text(dir / "data" / "tinyshakespeare" / "input.txt", "First Citizen:\n");
  const Run r = run_program({"verify", "--dir", (dir / "data").string()}, dir / "log.txt");
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(r.output, "tinyshakespeare/input.txt: FAILED: SHA-256 mismatch"));
  BOOST_TEST(contains(r.output, "not there"));
  BOOST_TEST(contains(r.output, "posgrad-data fetch cifar10 --dir"));
  BOOST_TEST(contains(last_line(r.output), "1 problem in"));
  // A CIFAR-10 folder with only the test batch: the known files are missing, the test batch (no
  // published SHA-256) is listed as not checked.
  fs::create_directories(dir / "data" / "cifar10");
  test::write_text(dir / "data" / "cifar10" / "test_batch.bin", "x");
  const Run cifar = run_program({"verify", "cifar10", "--dir", (dir / "data").string()}, dir / "log2.txt");
  BOOST_TEST(cifar.status == 1);
  BOOST_TEST(contains(cifar.output, "cifar10/data_batch_1.bin: FAILED: missing\n"));
  BOOST_TEST(contains(cifar.output, "cifar10/test_batch.bin: not checked (no known checksum)"));
  BOOST_TEST(!contains(cifar.output, "tinyshakespeare"), "only the dataset named");
  BOOST_TEST(contains(last_line(cifar.output), "6 problems in"));
}

// MNIST's .gz files are checked by their decompressed contents: the same images recompressed pass.
BOOST_AUTO_TEST_CASE(verify_reads_mnist_through_gzip) {
  TempDir dir;
  const std::string contents = "not mnist, but the test's own bytes";
  test::write_gzip(dir / "a.gz", std::vector<uint8_t>(contents.begin(), contents.end()));
  BOOST_TEST(content_sha256(dir / "a.gz", true) == sha256_hex(contents));
  BOOST_TEST(content_sha256(dir / "a.gz", false) == sha256_file(dir / "a.gz"));
  const std::string longer = some_text(100000);
  test::write_gzip(dir / "c.gz", std::vector<uint8_t>(longer.begin(), longer.end()));
  fs::resize_file(dir / "c.gz", fs::file_size(dir / "c.gz") / 2);  // truncated
  BOOST_TEST(test::throws_with([&] { content_sha256(dir / "c.gz", true); }, "c.gz"));
}

BOOST_AUTO_TEST_SUITE_END()
