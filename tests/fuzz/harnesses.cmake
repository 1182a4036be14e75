# The fuzz harnesses: tests/fuzz/fuzz_<name>.cpp each, one per parser of outside bytes. Read by
# tests/fuzz/CMakeLists.txt (the clang/libFuzzer build of scripts/fuzz.sh) and by the replay block
# of tests/CMakeLists.txt (the ordinary build), so both build the same list.
set(POSGRAD_FUZZ_HARNESSES
  settings_yaml
  settings_override
  safetensors
  checkpoint
  mnist_idx
  cifar10
  char_corpus
  hook_options
  tree_text)
