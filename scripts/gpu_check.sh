#!/usr/bin/env bash
# Runs on a lent GPU machine, in a checkout that carries the bundle of scripts/gpu_bundle.sh
# (.gpu/, unpacked here on first use), in stages:
#   tests  every suite with its CUDA cases (parity with the CPU, gradcheck on the GPU, golden
#          PyTorch files on CUDA, every positional scheme, the char LM and checkpoint resume on
#          the GPU, count24 on the GPU, the NCCL engine as one rank where the build has NCCL)
#   bench  the GPU benchmarks against their PyTorch twins on the same GPU: matmul, the
#          transformer step (float32, then under bf16 autocast), the posattn thesis step (2-D
#          SIREN + span t=0.1, B 20, 32x32), the charlm step at the shakespeare_gpu size, then the
#          GPU fused kernels: the attention layer at span fractions (bench_attention_paths) and
#          the thesis and charlm steps on them
#   apps   the apps on the GPU: one epoch of the posattn thesis model (2-D SIREN + span t=0.1) on
#          the bundle's CIFAR-10 batch (data.train_batches=1: 8,000 training and 2,000 validation
#          images; the 80-epoch time on all 40,000 is extrapolated from its time per image), then
#          the same epoch on the GPU fused kernels (-Dmodel.attention=fused), then
#          one epoch of the paper's CCT (configs/cct/full.yaml with grid APE) on the same batch
#          (8,000 training images; the 300-epoch time on 45,000 is extrapolated from it), then the
#          charlm shakespeare_gpu preset for at most POSGRAD_CHARLM_MINUTES (default 4), then 3 epochs
#          of the seqtasks and treetasks quick presets (the encoder-decoder, APE) with greedy decoding
#   smoke  here, without a GPU: every bench and app command of the stages above at toy sizes on
#          the CPU, and each suite's test list, so that the bundle and this script are known to
#          work before GPU time is spent on them. With POSGRAD_GPU_CHECK_BIN=build/bin it runs a
#          local build's programs instead of the bundle's (the gpu_check_smoke CTest test), with
#          the data folder POSGRAD_DATA_DIR or ../shared/data (not searched when
#          POSGRAD_DATA_SEARCH=off); the app commands are skipped, with the reason, without it
# PyTorch: python3 on PATH, or /usr/bin/python3 when only it has torch. Logs go to $OUT (the
# device tool's folder) or gpu-results/, at most 8 files: summary.txt (appended as each step
# ends, so a run killed at its time limit keeps what it finished), tests.log, bench.log, apps.log,
# and the three app runs' metrics.
# Usage: scripts/gpu_check.sh [tests|bench|apps|all|smoke]...      (default: all)
# Through the device tool (10 minutes a call): `tests bench apps` fit one call on an H100/H200 with
# POSGRAD_CHARLM_MINUTES=1.5; POSGRAD_GPU_SUITE_SECONDS (default 300) limits each suite, and
# POSGRAD_GPU_APPS (default "posattn posattn_fused cct charlm seqtasks treetasks") picks the apps stage's runs and
# POSGRAD_GPU_BENCHES (default "matmul transformer posattn charlm attention") the bench stage's.
set -uo pipefail
cd "$(dirname "$0")/.."
stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(all)
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
summary=$out/summary.txt
say() { echo "$*" | tee -a "$summary"; }
wants() {  # wants STAGE: true when STAGE (or all) was asked for
  local s
  for s in "${stages[@]}"; do
    [[ $s == "$1" || ($s == all && $1 != smoke) ]] && return 0
  done
  return 1
}
for s in "${stages[@]}"; do
  case $s in tests|bench|apps|all|smoke) ;; *) echo "gpu_check: unknown stage '$s' (tests, bench, apps, all, smoke)" >&2; exit 2 ;; esac
done

source scripts/gpu_programs.sh
programs=("${gpu_programs[@]}")
original_ld_path=${LD_LIBRARY_PATH-}
ld_path=$original_ld_path
if [[ -n ${POSGRAD_GPU_CHECK_BIN-} ]]; then
  # The programs of a local build instead of the bundle (the gpu_check_smoke test: build/bin).
  bin=$(realpath "$POSGRAD_GPU_CHECK_BIN")
  data=${POSGRAD_DATA_DIR:-}
  [[ -z $data && ${POSGRAD_DATA_SEARCH:-on} != off ]] && data=$PWD/../shared/data
  [[ -n $data ]] && data=$(realpath -m "$data")
else
  # The bundle: unpacked once (python3's tarfile reads xz; the machine may lack the xz tool).
  if [[ ! -d .gpu/bin ]]; then
    [[ -f .gpu/payload.tar.xz ]] || { echo "gpu_check: no .gpu/ here: run scripts/gpu_bundle.sh and carry .gpu" >&2; exit 2; }
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .gpu/payload.tar.xz .gpu ||
      { echo "gpu_check: cannot unpack .gpu/payload.tar.xz" >&2; exit 2; }
  fi
  bin=$PWD/.gpu/bin
  data=$PWD/.gpu/data
  # RUNPATH finds the programs' own libraries, not theirs (cairo's pixman, fontconfig...): the path.
  ld_path="$PWD/.gpu/lib${ld_path:+:$ld_path}"
  # The tests find golden files and the count24 binary under the paths they were built with.
  src=$(cat .gpu/source_dir)
  if [[ "$src" != "$PWD" && ! -e "$src" ]]; then
    mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
  fi
  if [[ ! -e "$src/build-gpu/bin" ]]; then
    mkdir -p "$src/build-gpu" && ln -s "$bin" "$src/build-gpu/bin"
  fi
  # cuBLAS and the CUDA runtime come from this machine: found by the loader, or searched for.
  for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
    if ! LD_LIBRARY_PATH=$ld_path ldd "$bin/test_tensor" | grep -q "$lib => /"; then
      found=$(find /usr/local /usr/lib /opt -name "$lib" 2>/dev/null | head -1)
      [[ -n "$found" ]] && ld_path="$(dirname "$found")${ld_path:+:$ld_path}"
    fi
  done
  # NCCL (loaded at run time by the NCCL engine, not carried: over 200 MB): the machine's own, in
  # the loader's cache or searched for (PyTorch's wheels carry one); without it those tests skip.
  if ! ldconfig -p 2>/dev/null | grep -q "libnccl.so.2 "; then
    found=$(find /usr/local /usr/lib /opt $(python3 -c 'import site; print(*site.getsitepackages())' 2>/dev/null) \
              -name libnccl.so.2 2>/dev/null | head -1)
    [[ -n "$found" ]] && ld_path="$(dirname "$found")${ld_path:+:$ld_path}"
  fi
  # The machine's own C++ runtime unless it is older than the one the bundle was built with.
  if LD_LIBRARY_PATH=$ld_path ldd "$bin/test_tensor" 2>&1 | grep -q "version .* not found"; then
    ld_path="$PWD/.gpu/fallback${ld_path:+:$ld_path}"
  fi
fi
missing=$(for p in "${programs[@]}"; do
            [[ -x $bin/$p ]] || { echo "$p: not in $bin"; continue; }
            LD_LIBRARY_PATH=$ld_path ldd "$bin/$p" 2>&1 | grep "not found" | sed "s|^|$p: |"
          done)
[[ -z "$missing" ]] || { echo "gpu_check: programs or libraries not found:"; echo "$missing"; exit 2; }
# PyTorch twins run with this machine's own environment (not the bundle's library path), under
# the first of python3 on PATH and Debian's /usr/bin/python3 that has torch.
torch_python=$(command -v python3)
for py in $(command -v python3) /usr/bin/python3; do
  if env LD_LIBRARY_PATH="$original_ld_path" "$py" -c 'import torch' 2>/dev/null; then torch_python=$py; break; fi
done
twin_python="env LD_LIBRARY_PATH=$original_ld_path $torch_python"
# posgrad's programs: the bundle's libraries and fonts, 4 OpenMP threads for the host side.
fonts=()
[[ -f $PWD/.gpu/fonts/fonts.conf && -z ${POSGRAD_GPU_CHECK_BIN-} ]] && fonts=(FONTCONFIG_FILE="$PWD/.gpu/fonts/fonts.conf")
run_posgrad() { env LD_LIBRARY_PATH="$ld_path" "${fonts[@]}" POSGRAD_PYTHON="$twin_python" OMP_NUM_THREADS=4 "$@"; }

if wants smoke; then
  device=cpu
  say "gpu_check smoke $(date -u +%FT%TZ): the stages' commands at toy sizes on the CPU"
else
  device=cuda
  {
    echo "gpu_check ${stages[*]} $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || true
    cat .gpu/build_info
  } | tee -a "$summary"
fi
runs=$(mktemp -d)  # the app runs' folders (their checkpoints are not copied back)

# step NAME LOG COMMAND...: runs a step, appends its output to LOG, says how it ended.
failed=0
no_summary() { say "$1: its run's summary could not be read (above)"; failed=$((failed + 1)); }
# image_run_summary APP RUN IMAGES EPOCHS NOTE METRIC...: an image classifier's run, its time per
# training image and the given metrics of its last epoch, and the time IMAGES x EPOCHS would take.
image_run_summary() {
  python3 - "$@" <<'EOF' | tee -a "$summary" || no_summary "$1"
import json, sys
app, run, images, epochs, note, *metrics = sys.argv[1:]
s = json.load(open(run + "/summary.json"))
m = [json.loads(l) for l in open(run + "/metrics.jsonl") if l.strip()][-1]
per_image = m["time_per_sample_s"]
last = ", ".join(f"{key} {m[key]:.4f}" for key in metrics)
print(f"    {app}: {s['train_images']} training images, {per_image * 1e3:.3f} ms per training image, {last}")
print(f"    {app}: {epochs} epochs of {int(images):,} training images = "
      f"{per_image * int(images) * int(epochs) / 3600:.2f} h of training steps ({note})")
EOF
}
step() {
  local name=$1 log=$2 start=$SECONDS rc
  shift 2
  echo "=== $name: $*" >> "$log"
  "$@" >> "$log" 2>&1
  rc=$?
  say "$name: exit $rc in $((SECONDS - start)) s"
  [[ $rc -eq 0 ]] || failed=$((failed + 1))
  return $rc
}

if wants tests; then
  # The six suites side by side (the GPU machine has 16 cores; GPU time is the scarce thing), each
  # with its own log and a time limit, then their logs appended to tests.log in a fixed order.
  suite_limit=${POSGRAD_GPU_SUITE_SECONDS:-300}
  suites=(tensor autograd nn attention apps distributed)
  start=$SECONDS
  for suite in "${suites[@]}"; do
    (run_posgrad timeout "$suite_limit" "$bin/test_$suite" --log_level=test_suite --report_level=short \
       > "$out/.test_$suite.log" 2>&1; echo $? > "$out/.test_$suite.rc") &
  done
  wait
  for suite in "${suites[@]}"; do
    rc=$(cat "$out/.test_$suite.rc")
    { echo "=== test_$suite (limit ${suite_limit} s)"; cat "$out/.test_$suite.log"; } >> "$out/tests.log"
    say "test_$suite: exit $rc$([[ $rc == 124 ]] && echo " (killed at its ${suite_limit} s limit)")"
    grep -E "test cases? out of" "$out/.test_$suite.log" | sed 's/^ */    /' | tee -a "$summary"
    if [[ $rc -ne 0 ]]; then
      failed=$((failed + 1))
      grep -E "error: |fatal error|exception" "$out/.test_$suite.log" | head -15 | sed 's/^/    /' | tee -a "$summary"
    fi
    rm -f "$out/.test_$suite.log" "$out/.test_$suite.rc"
  done
  say "tests: the six suites side by side in $((SECONDS - start)) s"
fi

if wants smoke; then
  for suite in tensor autograd nn attention apps distributed; do
    step "test_$suite --list_content" "$out/tests.log" run_posgrad "$bin/test_$suite" --list_content
  done
fi

# The benchmarks: GPU sizes, or toy ones for the smoke stage.
if wants bench || wants smoke; then
  log=$out/bench.log
  bench_wanted() { [[ " ${POSGRAD_GPU_BENCHES:-matmul transformer posattn charlm attention} " == *" $1 "* ]]; }
  if [[ $device == cuda ]]; then
    bench_wanted matmul && step bench_gpu_matmul "$log" run_posgrad "$bin/bench_gpu_matmul" --sizes 1024,2048,4096,8192 --reps 30
    bench_wanted transformer && for run in 1 2 3; do
      step "bench_transformer run $run" "$log" run_posgrad "$bin/bench_transformer" --device cuda --batch 64 --tokens 512 \
        --width 256 --heads 8 --ff 1024 --layers 6 --reps 10 --warmup 3
    done
    bench_wanted transformer && for run in 1 2 3; do  # bf16 autocast (tensor/autocast.h) against the twin's torch.autocast
      step "bench_transformer bf16 run $run" "$log" run_posgrad "$bin/bench_transformer" --device cuda --batch 64 \
        --tokens 512 --width 256 --heads 8 --ff 1024 --layers 6 --reps 10 --warmup 3 --autocast bf16
    done
    bench_wanted posattn && for run in 1 2 3; do
      step "bench_posattn_step run $run" "$log" run_posgrad "$bin/bench_posattn_step" --device cuda --batch 20 --side 32 \
        --dims 2 --span 1 --reps 10 --warmup 3 --twins both --twin-reps 10 --twin-warmup 3
    done
    bench_wanted charlm && for run in 1 2 3; do
      step "bench_charlm_step run $run" "$log" run_posgrad "$bin/bench_charlm_step" --device cuda --batch 64 --segment 256 \
        --max-span 1024 --layers 6 --width 384 --heads 6 --ff 1536 --reps 10 --warmup 3 --generate 200
    done
    # The GPU fused kernels (attention/fused/gpu/): the layer at span fractions against dense posgrad
    # and PyTorch's three ways, then the thesis step and the charlm step on them (auto keeps the
    # reference path on a GPU until these have run).
    bench_wanted attention && step "bench_attention_paths cuda" "$log" run_posgrad "$bin/bench_attention_paths" \
      --device cuda --cases 1d4096,2d64 --fractions 1,1/8,1/32 --reps 5 --warmup 2
    bench_wanted attention && step "bench_posattn_step cuda fused" "$log" run_posgrad "$bin/bench_posattn_step" \
      --device cuda --batch 20 --side 32 --dims 2 --span 1 --reps 10 --warmup 3 --path fused --twins none
    bench_wanted attention && step "bench_charlm_step cuda fused" "$log" run_posgrad "$bin/bench_charlm_step" \
      --device cuda --batch 64 --segment 256 --max-span 1024 --layers 6 --width 384 --heads 6 --ff 1536 --reps 10 \
      --warmup 3 --generate 20 --fused --no-torch
  else
    step bench_transformer "$log" run_posgrad "$bin/bench_transformer" --device cpu --batch 2 --tokens 16 --width 16 \
      --heads 2 --ff 32 --layers 1 --reps 1 --warmup 1
    step "bench_transformer bf16" "$log" run_posgrad "$bin/bench_transformer" --device cpu --batch 2 --tokens 16 \
      --width 16 --heads 2 --ff 32 --layers 1 --reps 1 --warmup 1 --autocast bf16
    step bench_posattn_step "$log" run_posgrad "$bin/bench_posattn_step" --device cpu --batch 1 --side 8 --dims 2 --span 1 \
      --reps 1 --warmup 1 --twins both --twin-reps 1 --twin-warmup 1
    step bench_charlm_step "$log" run_posgrad "$bin/bench_charlm_step" --device cpu --batch 2 --segment 16 --max-span 32 \
      --layers 1 --width 16 --heads 2 --ff 32 --reps 1 --warmup 1 --generate 4 --context 8
    step bench_attention_paths "$log" run_posgrad "$bin/bench_attention_paths" --device cpu --cases 1d64,2d8 \
      --fractions 1,1/8 --reps 1 --warmup 0
  fi
  grep -E "median|ratio|pytorch|unavailable|failed|error|^ +(1d|2d)[0-9]" "$log" | sed 's/^/    /' | tee -a "$summary"
fi

have_data=1
if wants apps || wants smoke; then
  if [[ -z $data ]]; then
    have_data=0
    say "apps: skipped, no data folder (POSGRAD_DATA_DIR unset, POSGRAD_DATA_SEARCH=off)"
  fi
  for f in cifar10/data_batch_1.bin tinyshakespeare/input.txt; do
    [[ -z $data || -f $data/$f ]] || { have_data=0; say "apps: skipped, no $data/$f (POSGRAD_DATA_DIR)"; }
  done
fi
if (wants apps || wants smoke) && [[ $have_data == 1 ]]; then
  log=$out/apps.log
  app_wanted() { [[ " ${POSGRAD_GPU_APPS:-posattn posattn_fused cct charlm seqtasks treetasks} " == *" $1 "* ]]; }
  # posattn: the thesis arm 2-D SIREN + span t=0.1 for one epoch of the bundle's batch.
  posattn_args=(--config configs/posattn/2d_span_t01.yaml -Ddevice=$device -Ddata.dir="$data" -Ddata.train_batches=1
                -Dtrain.epochs=1)
  [[ $device == cuda ]] || posattn_args+=(-Ddata.image_size=8 -Ddata.small_dataset=200 -Dmodel.layers=1 -Dtrain.max_steps=2)
  app_wanted posattn && step "posattn 2d_span_t01, one epoch" "$log" run_posgrad "$bin/posattn" "${posattn_args[@]}" \
    --out "$runs/posattn"
  if [[ -f $runs/posattn/metrics.jsonl ]]; then
    cp "$runs/posattn/metrics.jsonl" "$out/posattn_metrics.jsonl"
    image_run_summary posattn "$runs/posattn" 40000 80 \
      "the thesis protocol, validation not included; the thesis: 30-40 h on a Titan RTX, our goal 0.5 h" val_acc score_share
  fi
  # posattn_fused: the same epoch on the GPU fused kernels (-Dmodel.attention=fused; auto keeps the
  # reference path on a GPU), its summary line only (the tool returns at most 8 files).
  app_wanted posattn_fused && step "posattn 2d_span_t01, one epoch, fused kernels" "$log" run_posgrad "$bin/posattn" \
    "${posattn_args[@]}" -Dmodel.attention=fused --out "$runs/posattn_fused"
  if app_wanted posattn_fused && [[ -f $runs/posattn_fused/metrics.jsonl ]]; then
    image_run_summary posattn_fused "$runs/posattn_fused" 40000 80 "the thesis protocol on the GPU fused kernels" \
      val_acc score_share
  fi
  # cct: the paper's CCT with grid APE for one epoch of the bundle's batch (1,000 validation and
  # 1,000 test images held out of it: the bundle has no test_batch.bin).
  cct_args=(train --config configs/cct/full.yaml --config configs/cct/schemes/ape_grid.yaml -Ddevice=$device
            -Ddata.dir="$data" -Ddata.train_batches=1 -Ddata.val_images=1000 -Ddata.test_images=1000
            -Dtrain.epochs=1 -Dtrain.warmup_epochs=0 -Dtrain.paper_epochs=[1] --out "$runs/cct")
  [[ $device == cuda ]] || cct_args+=(-Ddata.small_dataset=200 -Ddata.val_images=2000 -Ddata.test_images=2000 -Dmodel.layers=1
                                      -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dtrain.batch_size=32)
  app_wanted cct && step "cct full preset (grid APE), one epoch" "$log" run_posgrad "$bin/cct" "${cct_args[@]}"
  if [[ -f $runs/cct/metrics.jsonl ]]; then
    cp "$runs/cct/metrics.jsonl" "$out/cct_metrics.jsonl"
    image_run_summary cct "$runs/cct" 45000 300 "the paper's recipe with 5,000 held out, evaluation not included" \
      val_acc test_acc
  fi
  # charlm: the shakespeare_gpu preset, stopped by its own clock (it still evaluates and writes its summary).
  charlm_args=(train --config configs/charlm/shakespeare_gpu.yaml -Ddevice=$device -Ddata.data_dir="$data"
               -Dtrain.max_minutes="${POSGRAD_CHARLM_MINUTES:-4}" --out "$runs/charlm")
  [[ $device == cuda ]] || charlm_args+=(-Dmodel.layers=1 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32
                                         -Dmodel.max_span=32 -Dtrain.segment=16 -Dtrain.batch_size=2 -Dtrain.steps=3
                                         -Dtrain.warmup=1 -Dtrain.eval_every=3 -Dtrain.checkpoint_every=3
                                         -Ddata.val_fraction=0.01)
  app_wanted charlm && step "charlm shakespeare_gpu" "$log" run_posgrad "$bin/charlm" "${charlm_args[@]}"
  if [[ -f $runs/charlm/metrics.jsonl ]]; then
    cp "$runs/charlm/metrics.jsonl" "$out/charlm_metrics.jsonl"
    python3 - "$runs/charlm" <<'EOF' | tee -a "$summary" || no_summary charlm
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
per_step = s["train_seconds"] / max(1, s["steps"])
print(f"    charlm: {s['steps']} steps in {s['train_seconds']:.0f} s ({per_step * 1e3:.1f} ms a step, "
      f"{s['train_tokens'] / s['train_seconds']:.0f} tokens/s; the preset's {s['steps_planned']:,} steps: "
      f"{per_step * s['steps_planned'] / 60:.1f} min), "
      f"val_loss {s['val_loss']:.4f} (best {s['best_val_loss']:.4f}, target 1.47), "
      f"stopped by the time limit: {s['stopped_by_time_limit']}, span avg {s['span_avg']:.0f} max {s['span_max']:.0f}")
EOF
  fi
  # seqtasks, treetasks: the encoder-decoder on the GPU, 3 epochs of the quick presets (sequence APE
  # on REVERSE, tree APE on ROTATE depth-first), then the test set's perplexity and greedy decoding.
  transduction_runs=(
    "seqtasks --config configs/seqtasks/quick.yaml --config configs/seqtasks/schemes/ape.yaml -Dtask=reverse"
    "treetasks --config configs/treetasks/quick.yaml --config configs/treetasks/schemes/ape_tree.yaml -Dtask=rotate -Dorder=depth")
  for run in "${transduction_runs[@]}"; do
    read -r app preset <<< "$run"
    app_wanted "$app" || continue
    # shellcheck disable=SC2086  # the preset is words
    app_args=(train $preset -Ddevice=$device -Dtrain.epochs=3 -Dtrain.warmup_epochs=1 --out "$runs/$app")
    [[ $device == cuda ]] || app_args+=(-Ddata.train=64 -Ddata.dev=16 -Ddata.test=16 -Dtrain.epochs=1 -Dtrain.warmup_epochs=0)
    step "$app quick preset, 3 epochs" "$log" run_posgrad "$bin/$app" "${app_args[@]}"
    [[ -f $runs/$app/summary.json ]] && python3 - "$app" "$runs/$app" <<'EOF' | tee -a "$summary" || no_summary "$app"
import json, sys
app, run = sys.argv[1:]
s = json.load(open(run + "/summary.json"))
print(f"    {app}: {s['steps']} steps in {s['seconds']:.1f} s ({s['seconds'] / max(1, s['epochs']):.1f} s an epoch), "
      f"best dev_loss {s['best_dev_loss']:.4f}, test ppl {s['test_ppl']:.3f}, greedy exact match {s['test_exact_match']:.4f}")
EOF
  done
fi
rm -rf "$runs"
say "gpu_check: $failed step(s) failed"
[[ $failed -eq 0 ]]
