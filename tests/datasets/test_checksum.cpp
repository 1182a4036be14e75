// Digests through libcrypto: the FIPS 180-4 SHA-256 and RFC 1321 MD5 test vectors, chunked
// updates, agreement with the `sha256sum` tool on a file written here, verify errors, and the
// shared data's SHA256SUMS when present.
#include <boost/test/unit_test.hpp>
#include <cstdio>

#include "datasets/checksum.h"
#include "test_util.h"

using namespace posgrad;
using posgrad::test::expect_error;
using posgrad::test::TempDir;

BOOST_AUTO_TEST_SUITE(checksum)

BOOST_AUTO_TEST_CASE(known_vectors) {
  BOOST_TEST(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  BOOST_TEST(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  BOOST_TEST(sha256_hex(std::string(1000000, 'a')) ==
             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // RFC 1321, appendix A.5
  BOOST_TEST(md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
  BOOST_TEST(md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
  BOOST_TEST(md5_hex("message digest") == "f96b697d7cb7938d525a2f31aaf161d0");
  BOOST_TEST(md5_hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890") ==
             "57edf4a22be3c955ac49da2e2107b67a");
}

BOOST_AUTO_TEST_CASE(a_digest_is_finished_once) {
  Digest d(DigestKind::Sha256);
  d.update("abc");
  BOOST_TEST(d.hex() == sha256_hex("abc"));
  expect_error([&] { d.hex(); }, {"SHA-256", "twice"});
  expect_error([&] { d.update("more"); }, {"SHA-256", "update after hex()"});
}

BOOST_AUTO_TEST_CASE(chunked_updates_match_one_shot) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  const std::string expected = sha256_hex(data);
  for (size_t chunk : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 200u}) {
    Digest h(DigestKind::Sha256);
    for (size_t at = 0; at < data.size(); at += chunk) h.update(std::string_view(data).substr(at, chunk));
    BOOST_TEST(h.hex() == expected);
  }
  // Padding edge cases: lengths around a block boundary.
  for (size_t n : {55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u}) BOOST_TEST(sha256_hex(std::string(n, 'x')).size() == 64u);
}

BOOST_AUTO_TEST_CASE(agrees_with_sha256sum_tool) {
  TempDir dir;
  std::string content = "posgrad checksum test\n";
  for (int i = 0; i < 5000; ++i) content += static_cast<char>((i * 131) % 256);
  test::write_text(dir / "small.bin", content);
  const std::string ours = sha256_file(dir / "small.bin");
  BOOST_TEST(ours == sha256_hex(content));
  FILE* pipe = ::popen(("sha256sum '" + (dir / "small.bin").string() + "' 2>/dev/null").c_str(), "r");
  char buf[65] = {};
  const bool have_tool = pipe != nullptr && std::fread(buf, 1, 64, pipe) == 64;
  if (pipe != nullptr) ::pclose(pipe);
  if (!have_tool) {
    BOOST_TEST_MESSAGE("sha256sum not available: compared with the built-in vectors only");
    return;
  }
  BOOST_TEST(ours == std::string(buf, 64));
  verify_sha256(dir / "small.bin", std::string(buf, 64));
  std::string upper(buf, 64);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  verify_sha256(dir / "small.bin", upper);  // case-insensitive
}

BOOST_AUTO_TEST_CASE(mismatch_and_sums_file) {
  TempDir dir;
  test::write_text(dir / "a.txt", "abc");
  test::write_text(dir / "b.txt", "not abc");
  expect_error([&] { verify_sha256(dir / "b.txt", sha256_hex("abc")); }, {"b.txt", "SHA-256 mismatch", sha256_hex("abc")});
  expect_error([&] { verify_sha256(dir / "c.txt", sha256_hex("abc")); }, {"c.txt", "file not found"});
  verify_file_digest(DigestKind::Md5, dir / "a.txt", "900150983CD24FB0D6963F7D28E17F72");
  expect_error([&] { verify_file_digest(DigestKind::Md5, dir / "b.txt", md5_hex("abc")); }, {"b.txt", "MD5 mismatch"});
  test::write_text(dir / "SHA256SUMS", sha256_hex("abc") + "  a.txt\n" + sha256_hex("abc") + "  b.txt\n" +
                                           sha256_hex("abc") + " *c.txt\n");
  const auto results = verify_sha256sums(dir / "SHA256SUMS");
  BOOST_REQUIRE(results.size() == 3u);
  BOOST_TEST(results[0].ok());
  BOOST_TEST(!results[1].ok());
  BOOST_TEST(results[1].problem == "SHA-256 mismatch");
  BOOST_TEST(results[2].problem.find("file not found") != std::string::npos);
  test::write_text(dir / "BAD", "nonsense line\n");
  expect_error([&] { verify_sha256sums(dir / "BAD"); }, {"BAD:1", "not a sha256sum line"});
}

BOOST_AUTO_TEST_CASE(real_data_checksums, *boost::unit_test::precondition(test::data_present("."))) {
  const auto sums = test::data_dir() / "SHA256SUMS";
  if (!std::filesystem::exists(sums)) {
    BOOST_TEST_MESSAGE("no SHA256SUMS in the data folder: nothing to verify");
    return;
  }
  const auto results = verify_sha256sums(sums);
  BOOST_TEST(!results.empty());
  for (const auto& r : results) BOOST_TEST(r.ok(), r.file.string() << ": " << r.problem);
}

BOOST_AUTO_TEST_SUITE_END()
