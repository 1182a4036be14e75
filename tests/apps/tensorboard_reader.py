#!/usr/bin/env python3
"""The tensorboard_reader CTest test: a short count24 run's TensorBoard event files read back with
TensorBoard's own reader (the tensorboard Python package's EventAccumulator, installed by
scripts/install_deps.sh). Checks that every number of every metrics.jsonl record with a "step" is a
scalar tagged by its key with that step and value (as a 32-bit float: TensorBoard keeps scalars as
float), and no other scalar; that the figure figures/count24.png is an image with its bytes and
size; and that the resolved config is the text "config" (config.yaml as a Markdown code block).
Then the same for the run resumed from its step-30 checkpoint (as if killed after logging step
60), where TensorBoard must show the resumed session's values for steps 40-60, not the first's.

Deliberately does not: start a TensorBoard server, or check posattn, charlm and sweeps (the
tensorboard_apps suite of test_apps checks their tags).

Usage: tensorboard_reader.py COUNT24_EXECUTABLE SCRATCH_FOLDER
"""
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import tensorboard
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def as_float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def numbers(tag, value, out):
    """The scalars RunDir writes for one field: numbers by key, nested ones by their path."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        out[tag] = float(value)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            numbers(f"{tag}/{i}", item, out)
    elif isinstance(value, dict):
        for key, item in value.items():
            numbers(f"{tag}/{key}", item, out)


def run_count24(args):
    done = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if done.returncode != 0:
        sys.exit(f"count24 failed ({done.returncode}): {' '.join(args)}\n{done.stdout}{done.stderr}")


def check_run(run, event_file_count, label):
    """What TensorBoard reads from `run` against its metrics.jsonl, figure and config; the failures."""
    expected = {}  # tag -> [(step, value)]
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if not isinstance(record.get("step"), int):
            continue
        fields = {}
        for key, value in record.items():
            if key != "step":
                numbers(key, value, fields)
        for tag, value in fields.items():
            expected.setdefault(tag, []).append((record["step"], as_float32(value)))

    failures = []
    event_files = sorted(p.name for p in run.iterdir() if p.name.startswith("events.out.tfevents."))
    if len(event_files) != event_file_count:
        return [f"{label}: expected {event_file_count} event files in {run}, found {event_files}"]
    reader = EventAccumulator(str(run), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    reader.Reload()
    tags = reader.Tags()
    if sorted(tags["scalars"]) != sorted(expected):
        failures.append(f"{label}: scalar tags {sorted(tags['scalars'])}, metrics.jsonl has {sorted(expected)}")
    checked = 0
    for tag in sorted(set(tags["scalars"]) & set(expected)):
        got = [(e.step, e.value) for e in reader.Scalars(tag)]
        if got != expected[tag]:
            failures.append(f"{label}: scalar '{tag}': TensorBoard read {got}, metrics.jsonl has {expected[tag]}")
        checked += len(got)
    # loss, lr, epoch and time_s at the 6 logged steps; test_accuracy, test_loss, attention_on_2s_4s
    # at the 2 evaluations (steps 30 and 60).
    if checked != 4 * 6 + 3 * 2:
        failures.append(f"{label}: {checked} scalar values read, want 30")

    figure = (run / "figures" / "count24.png").read_bytes()
    images = reader.Images("figures/count24") if "figures/count24" in tags["images"] else []
    if len(images) != 1 or images[0].encoded_image_string != figure or images[0].step != 60:
        failures.append(f"{label}: image 'figures/count24': {len(images)} images, want one at step 60 with the PNG's bytes")
    else:
        width, height = struct.unpack(">II", figure[16:24])
        if (images[0].width, images[0].height) != (width, height):
            failures.append(f"{label}: image size {images[0].width}x{images[0].height}, the PNG is {width}x{height}")

    config = "".join("    " + line for line in (run / "config.yaml").read_text().splitlines(keepends=True))
    texts = reader.Tensors("config") if "config" in tags["tensors"] else []
    if "config" not in reader.PluginTagToContent("text"):
        failures.append(f"{label}: the text plugin has no tag 'config'")
    if len(texts) != 1 or texts[0].tensor_proto.string_val[0].decode() != config:
        failures.append(f"{label}: text 'config' is not config.yaml as a Markdown code block")
    print(f"tensorboard_reader: {label}: {checked} scalar values of {len(expected)} tags, {len(images)} image, "
          f"{len(texts)} text read from {', '.join(event_files)}")
    return failures


def main():
    count24, scratch = Path(sys.argv[1]), Path(sys.argv[2])
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    run, resumed = scratch / "run", scratch / "resumed"
    run_count24([str(count24), "--out", str(run), "-Dtrain.steps=60", "-Dtrain.log_every=10",
                 "-Dtrain.eval_every=30", "-Dtrain.checkpoint_every=30", "-Ddata.train_size=2000",
                 "-Ddata.test_size=500"])
    failures = check_run(run, 1, "a run")

    # The same run as if killed after logging step 60 but before its step-60 checkpoint: the
    # resumed run logs steps 40-60 again (new time_s values) in a second event file, whose
    # session restart makes TensorBoard drop the first file's steps 31-60, as metrics.jsonl does.
    shutil.copytree(run, resumed)
    shutil.rmtree(resumed / "checkpoints" / "step-000000060")
    (resumed / "checkpoints" / "latest").write_text("step-000000030\n")
    (resumed / "summary.json").unlink()
    run_count24([str(count24), "--resume", str(resumed)])
    failures += check_run(resumed, 2, "a resumed run")

    for f in failures:
        print("FAIL", f)
    print(f"tensorboard_reader: read by tensorboard {tensorboard.__version__}: "
          f"{'FAILED' if failures else 'every scalar, the figure and the config as written'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
