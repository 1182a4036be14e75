# The programs the GPU bundle carries (scripts/gpu_bundle.sh builds and packs them) and that
# scripts/gpu_check.sh runs: the test suites with CUDA cases, count24, the apps, the GPU benchmarks.
# Sourced by both scripts; not a command.
gpu_programs=(test_tensor test_autograd test_nn test_attention test_apps test_distributed checkpoint_writer
              count24 posattn charlm cct seqtasks treetasks posgrad-sweep
              bench_gpu_matmul bench_transformer bench_posattn_step bench_charlm_step bench_attention_paths)
