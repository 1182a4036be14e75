// AttentionPath: which implementation computes an attention call, and the one rule that picks it.
// There are two implementations of the same numbers:
//
//   reference  dense [B, H, Nq, N] scores from autograd primitives: any device, keeps the
//              probabilities for figures, dropout on the probabilities; the oracle of the fused op.
//   fused      one autograd op over the hooks' tables (attention/fused/): CPU, never builds the
//              score matrix, skips the keys outside the key box.
//
// A layer holds the requested path (`auto`, `reference` or `fused`); choose_attention_path turns
// it into the one that runs, given why the fused op could not run this call (a tensor off the
// CPU, a hook without tables, attention dropout in training, probabilities kept for figures).
// Every attention layer asks this function; the apps' `model.attention` setting takes the names
// and help below.
//
// Deliberately not here: the implementations (multi_head_attention.cpp, fused/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace posgrad {

enum class AttentionPath {
  Auto,       // fused when it can run on the CPU, else reference
  Reference,  // always the dense reference
  Fused,      // always the fused op; an Error naming the reason when it cannot run
};

// "auto", "reference", "fused", in that order (the choices of model.attention).
const std::vector<std::string>& attention_path_names();
AttentionPath attention_path_from_name(const std::string& name);  // an Error listing the names
std::string attention_path_name(AttentionPath path);
// One line for --help: what each name does.
std::string attention_path_help();

// Reference or Fused: the path that runs. `fused_blocker` says why the fused op cannot run this
// call ("" when it can); Fused requested with a blocker is an Error naming `layer` and the blocker.
AttentionPath choose_attention_path(AttentionPath requested, const std::string& fused_blocker, std::string_view layer);

}  // namespace posgrad
