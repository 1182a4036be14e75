// BinaryTree's bracketed text form: printing, reading back (any whitespace), and one clear error
// line naming the position for each kind of malformed text; depth and size.
#include <boost/test/unit_test.hpp>

#include <string>

#include "datasets/transduction/binary_tree.h"
#include "tests/test_support.h"

using namespace posgrad;

BOOST_AUTO_TEST_SUITE(binary_tree)

BOOST_AUTO_TEST_CASE(text_form_round_trip) {
  const BinaryTree tree = BinaryTree::binary(
      11, BinaryTree::binary(12, BinaryTree::leaf(1), BinaryTree::leaf(2)), BinaryTree::leaf(3));
  BOOST_TEST(to_text(tree) == "(11 (12 1 2) 3)");
  BOOST_TEST((parse_tree("(11 (12 1 2) 3)") == tree));
  BOOST_TEST((parse_tree("  (11\n(12 1\t2)   3 )  ") == tree));
  BOOST_TEST((parse_tree("(11(12 1 2)3)") == tree));
  BOOST_TEST((parse_tree("7") == BinaryTree::leaf(7)));
  BOOST_TEST(to_text(parse_tree(" 0 ")) == "0");
  BOOST_TEST(tree.depth() == 2);
  BOOST_TEST(tree.size() == 5);
  BOOST_TEST(BinaryTree::leaf(4).depth() == 0);
  BOOST_TEST(tree.left().label == 12);
  BOOST_TEST(tree.right().label == 3);
  test::check_error([] { BinaryTree::leaf(5).left(); }, {"leaf 5 has no left child"});
}

BOOST_AUTO_TEST_CASE(malformed_text_names_the_position) {
  test::check_error([] { parse_tree(""); }, {"tree text: position 0", "expected a label or '('", "end of the text"});
  test::check_error([] { parse_tree("(11 1"); }, {"position 5", "expected a label or '('"});
  test::check_error([] { parse_tree("(11 1 2 3)"); }, {"position 8", "expected ')'", "found '3'"});
  test::check_error([] { parse_tree("(11 1 2)x"); }, {"position 8", "expected the end of the text", "found 'x'"});
  test::check_error([] { parse_tree("12a"); }, {"position 2", "after a label", "found 'a'"});
  test::check_error([] { parse_tree("(-1 1 2)"); }, {"position 1", "expected a label", "found '-'"});
  test::check_error([] { parse_tree("( )"); }, {"position 2", "expected a label"});
  test::check_error([] { parse_tree("(1 2 3)\x01"); }, {"position 7", "found byte 0x01"});
  test::check_error([] { parse_tree("99999999999999999999"); }, {"position 0", "too large"});
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "(1 ";
  test::check_error([&] { parse_tree(deep); }, {"position 768", "nesting deeper than 256"});
  // A message is one line.
  try {
    parse_tree("(1\n2\n");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find('\n') == std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
