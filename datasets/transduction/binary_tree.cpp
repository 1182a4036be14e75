// BinaryTree and its text form (see binary_tree.h).
#include "datasets/transduction/binary_tree.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "tensor/error.h"

namespace posgrad {

BinaryTree BinaryTree::leaf(int64_t label) { return BinaryTree{label, {}}; }

BinaryTree BinaryTree::binary(int64_t label, BinaryTree left, BinaryTree right) {
  BinaryTree tree{label, {}};
  tree.children.reserve(2);
  tree.children.push_back(std::move(left));
  tree.children.push_back(std::move(right));
  return tree;
}

const BinaryTree& BinaryTree::left() const {
  if (is_leaf()) fail("BinaryTree: leaf {} has no left child", label);
  return children[0];
}

const BinaryTree& BinaryTree::right() const {
  if (is_leaf()) fail("BinaryTree: leaf {} has no right child", label);
  return children[1];
}

int64_t BinaryTree::depth() const {
  return is_leaf() ? 0 : 1 + std::max(children[0].depth(), children[1].depth());
}

int64_t BinaryTree::size() const { return is_leaf() ? 1 : 1 + children[0].size() + children[1].size(); }

namespace {

void append_text(const BinaryTree& tree, std::string& out) {
  if (tree.is_leaf()) {
    out += std::to_string(tree.label);
    return;
  }
  out += '(';
  out += std::to_string(tree.label);
  out += ' ';
  append_text(tree.children[0], out);
  out += ' ';
  append_text(tree.children[1], out);
  out += ')';
}

// A recursive-descent reader over the text; `at` is the offset of the next unread character.
class TreeTextReader {
 public:
  explicit TreeTextReader(std::string_view text) : text_(text) {}

  BinaryTree read_whole() {
    BinaryTree tree = read_tree(0);
    skip_spaces();
    if (at_ < text_.size()) error("expected the end of the text after a complete tree");
    return tree;
  }

 private:
  BinaryTree read_tree(int64_t nesting) {
    skip_spaces();
    if (at_ >= text_.size()) error("expected a label or '('");
    if (text_[at_] != '(') return BinaryTree::leaf(read_label());
    if (nesting >= kMaxTreeTextNesting) error(fmt::format("nesting deeper than {} levels", kMaxTreeTextNesting));
    ++at_;
    skip_spaces();
    const int64_t label = read_label();
    BinaryTree left = read_tree(nesting + 1);
    BinaryTree right = read_tree(nesting + 1);
    skip_spaces();
    if (at_ >= text_.size() || text_[at_] != ')') error("expected ')' after the two children of a node");
    ++at_;
    return BinaryTree::binary(label, std::move(left), std::move(right));
  }

  int64_t read_label() {
    if (at_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[at_])))
      error("expected a label (a non-negative integer)");
    const size_t start = at_;
    int64_t value = 0;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
      const int64_t digit = text_[at_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
        at_ = start;
        error("label too large for a 64-bit integer");
      }
      value = value * 10 + digit;
      ++at_;
    }
    if (at_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[at_])) && text_[at_] != '(' &&
        text_[at_] != ')')
      error("expected a space, '(' or ')' after a label");
    return value;
  }

  void skip_spaces() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }

  [[noreturn]] void error(const std::string& what) const {
    std::string found = "found the end of the text";
    if (at_ < text_.size()) {
      const auto c = static_cast<unsigned char>(text_[at_]);
      found = std::isprint(c) ? fmt::format("found '{}'", text_[at_]) : fmt::format("found byte 0x{:02x}", c);
    }
    fail("tree text: position {}: {}, {}", at_, what, found);
  }

  std::string_view text_;
  size_t at_ = 0;
};

}  // namespace

std::string to_text(const BinaryTree& tree) {
  std::string out;
  append_text(tree, out);
  return out;
}

BinaryTree parse_tree(std::string_view text) { return TreeTextReader(text).read_whole(); }

}  // namespace posgrad
