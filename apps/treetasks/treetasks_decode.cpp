// The decode job of the treetasks app (see treetasks_decode.h).
#include "apps/treetasks/treetasks_decode.h"

#include <deque>
#include <set>

#include <fmt/ranges.h>

#include "apps/common/cli.h"
#include "apps/common/run_checkpoints.h"
#include "apps/transduction_common/decode_inputs.h"
#include "apps/treetasks/treetasks_experiment.h"
#include "datasets/transduction/tree_operations.h"
#include "nn/checkpoint.h"

namespace posgrad::treetasks_app {

namespace {

// Every node's label must be of its kind: a leaf label at a leaf, an operator at a binary node.
void check_labels(const BinaryTree& tree, const TreeLabels& labels, const std::string& task, const std::string& where) {
  const std::set<int64_t> leaves(labels.leaves.begin(), labels.leaves.end());
  const std::set<int64_t> operators(labels.operators.begin(), labels.operators.end());
  const auto range = [](const std::vector<int64_t>& v) { return fmt::format("{}..{}", v.front(), v.back()); };
  std::vector<const BinaryTree*> stack{&tree};
  while (!stack.empty()) {
    const BinaryTree* node = stack.back();
    stack.pop_back();
    if (node->is_leaf() && !leaves.count(node->label))
      fail("{}: leaf label {} is not a leaf of {} ({})", where, node->label, task, range(labels.leaves));
    if (!node->is_leaf() && !operators.count(node->label))
      fail("{}: label {} of a binary node is not an operator of {} ({})", where, node->label, task, range(labels.operators));
    for (const auto& child : node->children) stack.push_back(&child);
  }
}

}  // namespace

TreePair typed_pair(TreeTask task, const BinaryTree& input, int64_t vocab_size, const std::string& where) {
  check_tree_depth(input);  // "tree of depth D is deeper than ... (max_depth 16)"
  const std::string name = tree_task_name(task);
  const TreeLabels labels = tree_task_labels(task, vocab_size);
  switch (task) {
    case TreeTask::Copy:
      check_labels(input, labels, name, where);
      return {input, input};
    case TreeTask::Rotate:
      check_labels(input, labels, name, where);
      return {input, rotate_tree(input)};
    case TreeTask::C3:
      check_labels(input, labels, name, where);
      return {input, c3_step(input)};
    case TreeTask::TreeOps: {
      const int64_t first_meta = tree_ops_meta_token(vocab_size, 0);
      if (input.is_leaf() || input.label < first_meta || input.label > vocab_size - 1 || !input.left().is_leaf())
        fail("{}: a tree-ops input is (op ptr x): an op token {}..{} over a leaf ptr and the tree x", where, first_meta,
             vocab_size - 1);
      check_labels(input.right(), labels, name, where);
      return tree_ops_pair(input.right(), input.left().label, input.label - first_meta, vocab_size);
    }
  }
  fail("typed_pair: unknown task");
}

std::optional<BinaryTree> tree_from_labels(const std::vector<int64_t>& labels, bool depth_first,
                                           const std::function<bool(int64_t)>& is_operator) {
  if (labels.empty()) return std::nullopt;
  // Build the heap shape first: the position of every label, then link children to parents.
  std::vector<int64_t> heap;
  std::deque<int64_t> pending{1};
  for (int64_t label : labels) {
    if (pending.empty()) return std::nullopt;  // labels left over after a complete tree
    const int64_t at = depth_first ? pending.back() : pending.front();
    if (depth_first) pending.pop_back(); else pending.pop_front();
    heap.push_back(at);
    if (is_operator(label)) {
      if (at > (int64_t{1} << 40)) return std::nullopt;
      if (depth_first) {
        pending.push_back(2 * at + 1);
        pending.push_back(2 * at);
      } else {
        pending.push_back(2 * at);
        pending.push_back(2 * at + 1);
      }
    }
  }
  if (!pending.empty()) return std::nullopt;  // an operator without its children
  std::map<int64_t, int64_t> label_at;
  for (size_t i = 0; i < heap.size(); ++i) label_at[heap[i]] = labels[i];
  const std::function<BinaryTree(int64_t)> build = [&](int64_t at) {
    const int64_t label = label_at.at(at);
    if (!is_operator(label)) return BinaryTree::leaf(label);
    return BinaryTree::binary(label, build(2 * at), build(2 * at + 1));
  };
  return build(1);
}

void decode(TreetasksSettings& c, apps::Settings& settings, const std::string& run_dir, const std::string& which,
            const std::vector<std::string>& inputs, const std::string& file) {
  apps::load_run_settings(settings, run_dir);
  const TreeTask task = parse_tree_task(c.task);
  const TreeTaskSettings task_config = task_settings(c);
  // Every tree is read and checked before anything is decoded.
  std::vector<std::pair<std::string, TreePair>> pairs;
  const auto add = [&](const std::string& text, const std::string& where) {
    BinaryTree input;
    try {
      input = parse_tree(text);
    } catch (const Error& e) {
      fail("{}: {}", where, e.what());
    }
    pairs.emplace_back(text, typed_pair(task, input, task_config.vocab_size, where));
  };
  for (const auto& [text, where] :
       transduction_app::decode_inputs(inputs, file, "a tree with --input \"(11 (12 1 2) 3)\" or a file of trees with --file"))
    add(text, where);
  std::vector<TransductionExample> examples;
  for (const auto& [text, pair] : pairs) examples.push_back(tree_example(pair, task_config.output_order));

  const transduction_app::TransductionExperiment x = [&] {  // the model and its matcher, without the data
    TreetasksSettings small = c;
    small.parts.train = small.parts.dev = small.parts.test = 1;
    return experiment(small);
  }();
  Generator gen(x.seed);
  EncoderDecoder model(x.model, gen);
  model.load_state_dict(load_checkpoint(apps::run_checkpoint_folder(run_dir, which)).model);
  const TreeGreedyDecoding decoding = tree_decoding(c, 0);
  int64_t correct = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const TransductionExample& e = examples[i];
    const TransductionBatch batch = make_transduction_batch(examples, {static_cast<int64_t>(i)});
    std::vector<int64_t> labels;
    if (tree_positions(c)) {
      TreeGreedyDecoding options = decoding;
      options.max_nodes = 2 * static_cast<int64_t>(e.target.size());
      labels = greedy_decode_tree(model, batch.source, batch.source_padding(), batch.source_heap, options)[0].labels;
    } else {
      labels = greedy_decode(model, batch.source, batch.source_padding(),
                             Tensor::from_vector<int64_t>({e.target[0]}, {1}),
                             {.steps = static_cast<int64_t>(e.target.size()) - 1})
                   .to_vector<int64_t>();
    }
    const bool right = labels == e.target;
    correct += right;
    const std::vector<int64_t> output(labels.begin() + 1, labels.end());  // after SOS
    const auto tree = tree_from_labels(output, decoding.depth_first, decoding.is_operator);
    fmt::print("input    {}\noutput   {}\ncorrect  {}\n", to_text(pairs[i].second.input),
               tree ? to_text(*tree) : fmt::format("{} (labels in {}-first order, not a tree)", fmt::join(output, " "), c.order),
               right ? "yes" : fmt::format("no (expected {})", to_text(pairs[i].second.output)));
  }
  if (examples.size() > 1) fmt::print("{} of {} correct\n", correct, examples.size());
}

}  // namespace posgrad::treetasks_app
