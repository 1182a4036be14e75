#!/usr/bin/env bash
# The "docs" CTest test: every command and code listing in README.md and docs/**.md (less the
# files in tests/docs/excluded.txt) is run, compiled or found in the source it quotes.
#   ```cpp        a program or a snippet: built by the docs_snippets_build test (the doc_snippets
#                 target, tests/docs/doc_snippets.cmake) and run here; it must exit 0.
#                 A listing whose first line is `// <path>` must appear in that file, line by line
#                 (leading and trailing blanks aside) and contiguously.
#   ```sh, ```console and inline command spans (tests/docs/extract_blocks.sh says which spans):
#                 a command that runs a built program (build/bin/<x>, after optional VAR=value
#                 settings) is run in a scratch folder that mirrors the source tree, with build/bin
#                 the build's bin folder; it must exit 0. Commands that cannot run inside CTest are
#                 in NOT_RUN below with the reason or the test that covers them. Any other command
#                 fails this test.
#   ```text       a layout or a formula: not code. A fence with no or another language fails.
# A command that reads a data set (NEEDS_DATA below) is skipped, with the reason, when the data
# folder lacks it; the docs_without_data test runs this check with the data hidden.
# Commands that read a data set: "glob pattern|folder inside the data folder|data set". When the
# data folder (POSGRAD_DATA_DIR, else ../shared/data beside the source tree unless
# POSGRAD_DATA_SEARCH=off) lacks that folder, the command is skipped with the reason; so is every
# other command of the same program, as they read the runs the training commands write. The
# docs_without_data test runs this check with the data hidden, so a command that needs data and
# is not listed here fails there. --help needs no data and always runs.
NEEDS_DATA=(
  "build/bin/posattn *|cifar10|CIFAR-10"
  "build/bin/posgrad-sweep configs/posattn/*|cifar10|CIFAR-10"
  "build/bin/charlm *|tinyshakespeare|Tiny Shakespeare"
  "build/bin/cct *|cifar10|CIFAR-10"
  "build/bin/posgrad-data verify*|.|a data folder"
)

# Long programs get quick settings appended (QUICK_ARGS below: later options override earlier
# ones); POSGRAD_DOCS_AS_WRITTEN=1 in the environment runs every command exactly as written.
# It does not check prose, links, or inline code that is not a command.
#
# Usage: check_docs.sh SOURCE_DIR BIN_DIR SNIPPET_BIN_DIR BENCH_BUILT(ON|OFF)
set -uo pipefail
src=$(cd "$1" && pwd)
bin=$(realpath -m "$2")
snippet_bin=$(realpath -m "$3")
bench_built=$4
here=$(cd "$(dirname "$0")" && pwd)

# Commands found in the docs that this test does not run: "glob pattern|why, or what covers it".
NOT_RUN=(
  "scripts/demo.sh|a full build; the scripts_order test checks what it runs, and its count24 command runs here"
  "scripts/test.sh|runs this test; the scripts_order test checks that it builds every suite and fails when no test ran"
  "scripts/install_deps.sh*|installs Debian packages as root"
  "tensorboard --logdir*|a web server that runs until stopped; the tensorboard_reader test reads a count24 run's event files with TensorBoard's own reader"
  "apt-get install*|installs Debian packages as root"
  "sudo apt-get install*|installs Debian packages as root"
  "build-avx2/bin/bench_*|the AVX2 build folder of docs/benchmarks.md (a second build of the library for x86-64-v3); the same benchmark from build/bin runs here"
  "scripts/gpu_bundle.sh*|a full CUDA build into build-gpu, by hand before a GPU session (docs/benchmarks.md)"
  "scripts/gpu_check.sh*|runs on a lent GPU machine with the bundle of scripts/gpu_bundle.sh"
  "cmake -S . -B build*|the plain_configure tests configure the project the same way, into a scratch folder"
  "cmake --build build*|scripts/test.sh builds every target before CTest runs"
  "cmake --install build*|the install_consumer test installs into a scratch prefix and builds a consumer"
  "/usr/bin/python3 tools/golden_*.py|regenerates a golden file with PyTorch; the golden suites check the committed files"
  "/usr/bin/python3 bench/*_torch.py*|a PyTorch twin alone; the bench_* commands run it unless --no-torch"
  "scripts/fuzz.sh*|a clang build and minutes of fuzzing; the fuzz_replay_* tests replay every committed input"
  "nice -n 19 scripts/fuzz.sh*|a clang build and hours of fuzzing; the fuzz_replay_* tests replay every committed input"
  "nice -n 10 scripts/fuzz.sh*|a clang build and minutes of fuzzing; the fuzz_replay_* tests replay every committed input"
  "build-fuzz/bin/*|the clang fuzz build of scripts/fuzz.sh; the fuzz_replay_* tests run the same harnesses"
  "mpirun *|launches several ranks (and needs --allow-run-as-root in a root container); the distributed_mpi test and test_apps' data_parallel_apps suite run the suite and the apps under mpirun -np 2"
  "bench/data_parallel.sh*|minutes of training per layout (1 process x 2 threads against 2 ranks); the data_parallel_apps suite runs the same apps under mpirun"
  ".ci/run|CI itself: scripts/test.sh (this test) and then scripts/test_sanitized.sh"
  "scripts/test_sanitized.sh*|the sanitizer build and every test under ASan+UBSan: CI's second stage"
  "build-asan/bin/*|a program of the sanitizer build of scripts/test_sanitized.sh (CI's second stage)"
  "export *SAN_OPTIONS=*|sets the sanitizers' run-time options for a build-asan/ program (CI's second stage sets them)"
  "build/bin/posattn --config configs/posattn/[12]d_*|the full thesis protocol (32x32, 80 epochs: a GPU); the posattn_app test trains every quick preset"
  "build/bin/posgrad-sweep configs/posattn/sweeps/ex*|a thesis sweep (5 seeds x 80 epochs at 32x32: a GPU); the sweep test runs a tiny sweep and loads every sweep file"
  "build/bin/bench_posattn_step *--checkpoint runs/*|needs a trained 2-D + span run of the quick sweep (runs/ is not in the scratch folder); the twins and the step run here without --checkpoint"
  "build/bin/posgrad-sweep configs/posattn/sweeps/2d_vs_1d*|a thesis sweep (5 seeds x 80 epochs at 32x32: a GPU); the sweep test runs a tiny sweep and loads every sweep file"
  "build/bin/posgrad-sweep configs/cct/*|the quick CCT sweep (21 runs of 1.3 to 3.2 minutes each); the cct_app test trains every scheme preset, the sweep test runs a tiny sweep and loads every sweep file"
  "build/bin/posgrad-sweep configs/seqtasks/*|a quick sequence-task sweep (21 runs of up to 10 minutes each); the seqtasks_app test trains every scheme preset, the sweep test runs a tiny sweep and loads every sweep file"
  "build/bin/charlm spans runs/sweeps/*|needs a dynamic-span run of the Table 3 sweep (runs/ is not in the scratch folder); docs/experiments/charlm.md's charlm spans on the dynamic-span run it trains runs here, and the charlm_app test checks the job"
  "build/bin/posgrad-sweep configs/charlm/*|a charlm sweep (27 runs of 3 to 15 minutes); the charlm_app test trains the presets (the dynamic span included), the sweep test tables and draws a sweep over a grid setting"
  "build/bin/posgrad-sweep configs/treetasks/*|a quick tree-task sweep (runs of up to 10 minutes each); the treetasks_app test trains every scheme preset, the sweep test runs a tiny sweep and loads every sweep file"
  "build/bin/posgrad-data fetch *|downloads from the internet; test_datasets' fetch suite runs fetch against a local server (tinyshakespeare_from_a_local_server and the failure cases)"
)

# Settings appended to a program's documented training command so that it runs in seconds (not
# to its eval/sample/decode jobs, --resume or --help). The posattn runs (and the documented
# sweeps, all of posattn presets) read one of CIFAR-10's five training batches and pool the images
# to 8 x 8: in the sanitizer build (CI's second stage) a run of a 16 x 16 preset took 15 s, the
# 8 x 8 run from one batch 2 s (docs/reliability/sanitizers.md, "Times").
posattn_quick="-Ddata.small_dataset=200 -Ddata.train_batches=1 -Ddata.image_size=8 -Dtrain.max_steps=2"
declare -A QUICK_ARGS=(
  [count24]="-Dtrain.steps=300"
  [posattn]=$posattn_quick
  [posgrad-sweep]=$posattn_quick
  [bench_sgemm]="--sizes 128 --reps 1 --no-torch"
  [bench_transformer]="--batch 2 --tokens 16 --width 32 --heads 2 --ff 64 --layers 1 --reps 1 --warmup 0 --no-torch"
  [bench_posattn_step]="--batch 1 --side 8 --reps 1 --warmup 0 --twins none"
  [soak_train]="--steps 300 --warmup 100 --sample-every 100"
  [bench_attention_paths]="--cases 1d64,2d8 --reps 1 --warmup 0 --no-torch"
  [charlm]="-Dtrain.steps=4 -Dtrain.warmup=1 -Dtrain.log_every=2 -Dtrain.eval_every=4 -Dtrain.eval_blocks=2 -Dmodel.layers=1 -Dmodel.width=32 -Dmodel.heads=2 -Dmodel.ff_width=64"
  [cct]="-Ddata.small_dataset=300 -Dtrain.max_steps=2 -Dmodel.layers=1 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dtrain.batch_size=16"
  [seqtasks]="-Ddata.length_mean=6 -Ddata.length_stddev=1 -Ddata.train=32 -Ddata.dev=8 -Ddata.test=8 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dmodel.encoder_layers=1 -Dmodel.decoder_layers=1 -Dtrain.batch_size=16 -Dtrain.max_steps=2"
  [treetasks]="-Ddata.depth_mean=3 -Ddata.train=32 -Ddata.dev=8 -Ddata.test=8 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dmodel.encoder_layers=1 -Dmodel.decoder_layers=1 -Dtrain.batch_size=16 -Dtrain.max_steps=2"
  [bench_conv2d]="--batch 2 --channels 8 --reps 1 --warmup 0 --rounds 1 --no-torch"
  [bench_charlm_step]="--batch 2 --segment 16 --max-span 64 --layers 1 --width 32 --heads 2 --ff 64 --reps 1 --warmup 0 --generate 5 --context 32 --no-torch"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# The files to check.
declare -A excluded=()
while IFS= read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  excluded[${line%%:*}]=1
  echo "excluded ${line}"
done < "$here/excluded.txt"
docs=()
for f in "$src"/README.md "$src"/docs/*.md "$src"/docs/*/*.md; do
  rel=${f#"$src/"}
  [[ -n ${excluded[$rel]-} ]] || docs+=("$rel")
done
echo "checking ${docs[*]}"
"$here/extract_blocks.sh" "$work/blocks" "$src" "${docs[@]}" || exit 1

# The apps look for the data in ../shared/data beside their working folder, which the scratch
# folder below does not have: point them at the source tree's neighbour (CI's layout).
if [[ -z ${POSGRAD_DATA_DIR:-} && ${POSGRAD_DATA_SEARCH:-on} != off && -d $src/../shared/data ]]; then
  POSGRAD_DATA_DIR=$(cd "$src/../shared/data" && pwd)
  export POSGRAD_DATA_DIR
fi
echo "data folder: ${POSGRAD_DATA_DIR:-none (commands that need a data set are skipped)}"

# Why `cmd` cannot run here for want of data (printed), or nothing when it can.
missing_data() {
  local cmd=$1 word=$1 entry pattern rest folder
  [[ " $cmd " == *" --help "* ]] && return
  while [[ $word =~ ^[A-Z_][A-Z0-9_]*=[^[:space:]]*[[:space:]]+(.*)$ ]]; do word=${BASH_REMATCH[1]}; done
  for entry in "${NEEDS_DATA[@]}"; do
    pattern=${entry%%|*}
    rest=${entry#*|}
    folder=${rest%%|*}
    # shellcheck disable=SC2053  # the pattern is a glob on purpose
    if [[ $word == $pattern && ! -d ${POSGRAD_DATA_DIR:-/nonexistent}/$folder ]]; then
      echo "needs ${rest#*|}: no $folder/ in the data folder ${POSGRAD_DATA_DIR:-(none found)}; set POSGRAD_DATA_DIR"
      return
    fi
  done
}

# A scratch folder that looks like the source tree, with the build's programs in build/bin.
run_dir="$work/run"
mkdir -p "$run_dir/build"
for entry in "$src"/* "$src"/.[!.]*; do
  name=$(basename "$entry")
  [[ -e $entry && $name != build && $name != runs && $name != .git ]] && ln -s "$entry" "$run_dir/$name"
done
ln -s "$bin" "$run_dir/build/bin"

# Runs one command line in the scratch folder; prints why it failed.
run_command() {
  local where=$1 cmd=$2 log="$work/log"
  local word=$cmd
  while [[ $word =~ ^[A-Z_][A-Z0-9_]*=[^[:space:]]*[[:space:]]+(.*)$ ]]; do word=${BASH_REMATCH[1]}; done
  word=${word%%[[:space:]]*}
  local program=${word#build/bin/}
  if [[ ! -x $bin/$program ]]; then
    if [[ $program == bench_* && $bench_built == OFF ]]; then
      echo "skip $where: $cmd (benchmarks not built: POSGRAD_BENCH=OFF)"
    else
      fail "$where: $cmd: $bin/$program was not built"
    fi
    return
  fi
  local why_not
  why_not=$(missing_data "$cmd")
  if [[ -n $why_not ]]; then
    echo "skip $where: $cmd ($why_not)"
    return
  fi
  local quick=""
  [[ ${POSGRAD_DOCS_AS_WRITTEN:-0} == 1 ]] || quick=${QUICK_ARGS[$program]-}
  # Jobs that train nothing take no training settings (and --resume refuses any).
  [[ " $cmd " =~ [[:space:]](eval|sample|decode|figures|--resume|--help|--table-only|--dry-run)[[:space:]] ]] && quick=""
  local start=$SECONDS
  if (cd "$run_dir" && timeout 900 bash -c "$cmd $quick") > "$log" 2>&1; then
    echo "ran  $where: $cmd${quick:+   [+ $quick]} ($((SECONDS - start)) s)"
  else
    fail "$where: $cmd${quick:+ $quick} exited with $? ; its output ends with:"
    tail -n 15 "$log" | sed 's/^/    /'
  fi
}

declare -A done_commands=()
check_command() {
  local where=$1 cmd=$2 entry pattern
  # The command without its leading VAR=value settings.
  local word=$cmd
  while [[ $word =~ ^[A-Z_][A-Z0-9_]*=[^[:space:]]*[[:space:]]+(.*)$ ]]; do word=${BASH_REMATCH[1]}; done
  for entry in "${NOT_RUN[@]}"; do
    pattern=${entry%%|*}
    # shellcheck disable=SC2053  # the pattern is a glob on purpose
    if [[ $word == $pattern ]]; then
      echo "not run $where: $cmd (${entry#*|})"
      return
    fi
  done
  if [[ $word != build/bin/* ]]; then
    fail "$where: '$cmd' is neither run (a build/bin program) nor listed in NOT_RUN of tests/docs/check_docs.sh"
    return
  fi
  # shellcheck disable=SC2016  # a literal "$(" is what is looked for
  if [[ $cmd =~ [\|\;\>\<\`] || $cmd == *'$('* ]]; then
    fail "$where: '$cmd': pipes, redirections and substitutions are not run by this test; write plain commands"
    return
  fi
  if [[ -n ${done_commands[$cmd]-} ]]; then
    echo "ran  $where: $cmd (above, at ${done_commands[$cmd]})"
    return
  fi
  done_commands[$cmd]=$where
  run_command "$where" "$cmd"
}

# Lines of a file, leading and trailing blanks removed, into the array named $2.
trimmed_lines() {
  local -n into=$2
  into=()
  local l
  while IFS= read -r l || [[ -n $l ]]; do
    l=${l#"${l%%[![:space:]]*}"}
    into+=("${l%"${l##*[![:space:]]}"}")
  done < "$1"
}

check_listing() {
  local where=$1 listing=$2 path=$3
  if [[ ! -f $src/$path ]]; then fail "$where: the listing names $path, which does not exist"; return; fi
  local -a want have
  trimmed_lines "$listing" want
  trimmed_lines "$src/$path" have
  local n=${#want[@]} m=${#have[@]} i j
  for ((i = 0; i + n <= m; ++i)); do
    for ((j = 0; j < n; ++j)); do [[ ${have[i + j]} == "${want[j]}" ]] || break; done
    if ((j == n)); then echo "found $where: listing of $n lines at $path:$((i + 1))"; return; fi
  done
  # Say which line of the listing is the first that does not occur in the file at all, if any.
  local missing=""
  for ((j = 0; j < n; ++j)); do
    local found=0
    for ((i = 0; i < m; ++i)); do [[ ${have[i]} == "${want[j]}" ]] && { found=1; break; }; done
    ((found)) || { missing="; its line $((j + 1)) is not in the file: ${want[j]}"; break; }
  done
  fail "$where: the listing is not in $path as written$missing"
}

while IFS=$'\t' read -r id file line kind detail; do
  where="$file:$line"
  case "$kind" in
    cpp-program|cpp-snippet)
      exe="$snippet_bin/doc_$id"
      if [[ ! -x $exe ]]; then
        fail "$where: the C++ block was not built ($exe); the docs_snippets_build test builds it"
      elif (cd "$run_dir" && timeout 900 "$exe") > "$work/log" 2>&1; then
        echo "ran  $where: C++ $kind doc_$id"
      else
        fail "$where: C++ $kind doc_$id exited with $?; its output ends with:"
        tail -n 15 "$work/log" | sed 's/^/    /'
      fi ;;
    cpp-listing)
      check_listing "$where" "$work/blocks/$id.txt" "$detail" ;;
    commands)
      while IFS= read -r command_line; do
        # "a && b" runs both: each part is checked on its own.
        rest=$command_line
        while [[ $rest == *' && '* ]]; do
          check_command "$where" "${rest%% && *}"
          rest=${rest#* && }
        done
        check_command "$where" "$rest"
      done < "$work/blocks/$id.txt" ;;
    text) ;;
    *)
      fail "$where: a fence with language '${detail}': tag every fence cpp, sh, console or text" ;;
  esac
done < "$work/blocks/blocks.tsv"

echo "docs: $(wc -l < "$work/blocks/blocks.tsv") blocks and command spans in ${#docs[@]} files, $failures failure(s)"
[[ $failures -eq 0 ]]
