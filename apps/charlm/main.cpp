// charlm: character-level language modelling with adaptive attention span (Sukhbaatar et al.
// 2019; spec adaptive_span.md). Jobs:
//   charlm train --config configs/charlm/shakespeare_cpu.yaml [-Dkey=value]... [--out RUN]
//   charlm train --resume RUN            continues a stopped run exactly
//   charlm eval RUN [--file TEXT]         the paper's full-eval protocol on the validation split
//                                         (or on any text file): loss in nats and bits per char
//                                         [-Deval.batch=N]... (eval and sample take -D and --config
//                                         before or after the job: the settings that concern them)
//   charlm sample --checkpoint RUN --prompt "ROMEO:" --tokens 500 --temperature 0.8 --top-k 40 --seed 1
//                 [--figure F.png]      (the attention of the last 40 generated characters;
//                                         the text is written as it is generated)
//   charlm spans RUN [--chars 256 --offset 0 | --text T] [--figure F.png]
//                                         the dynamic span z_t along a passage (the paper's
//                                         Figure 5): its mean at word starts and elsewhere
// Training follows the paper: contiguous streams (datasets/text_streams.h) with the cache of
// previous layer inputs carried and zeroed when the data wraps; loss = mean NLL (nats) + span
// loss; the spans are clamped after every optimizer step; Adagrad with the per-tensor step clip
// and a linear warm-up, or AdamW with warm-up and cosine decay. Logged per step window: loss,
// bpc, the average and largest span (ramp included, as the original logger), the share of
// attention work against full attention (the dense product with S cached keys), each head's
// span. Sampling decodes with a K/V cache: each new token costs O(window), not O(context). The
// run folder also holds vocab.json (the character vocabulary, bytes in id order, and the data
// file's size and CRC-32; every checkpoint holds both too: the model buffer vocab_bytes and the
// position's "data"), which eval, sample and --resume read (eval warns and --resume stops when
// the data file changed since; charlm_text.h), and figures/: span_mask.png (the learned soft
// mask of every head against distance), spans.png (each head's span over training) and
// learning_curves.png. Each checkpoint also holds the cache the run continues from.
//
// Deliberately does not: tokenise beyond bytes or run on several devices.
// Shapes: letters of shape_legend.h.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>


#include "apps/charlm/charlm_run.h"
#include "apps/common/cli.h"

using namespace posgrad;
using namespace posgrad::apps;
using namespace posgrad::charlm;

int main(int argc, char** argv) {
  CharlmSettings c;
  Settings settings;
  declare(settings, c);
  AppCommandLine cli("charlm", "charlm: character-level language modelling with adaptive attention span", settings);
  cli.on_train([&](const TrainRequest& request) { train(c, settings, request); });

  std::string run_dir, which = "best", file;
  cli.add_job("eval", "full-eval protocol (8 streams, cache carried) on the validation split or a file",
              [&](const JobSettings& job) { evaluate_run(c, settings, job, run_dir, which, file); })
      .required_path("run", run_dir, "the run folder")
      .choice("--checkpoint", which, {"best", "latest"}, "which checkpoint")
      .path("--file", file, "score this text file instead of the validation split");

  SampleRequest sample;
  cli.add_job("sample", "generate text from a trained run, one token at a time",
              [&](const JobSettings& job) { sample_run(c, settings, job, sample); })
      .required_path("--checkpoint", sample.run_dir, "the run folder")
      .choice("--which", sample.which, {"best", "latest"}, "which checkpoint")
      .text("--prompt", sample.prompt, "text to start from (every character must be in the vocabulary)")
      .integer("--tokens", sample.tokens, "characters to generate", NumberRange::at_least(0))
      .number("--temperature", sample.temperature, "softmax temperature", NumberRange::above(0))
      .integer("--top-k", sample.top_k, "sample among the k most likely (0: all)", NumberRange::at_least(0))
      .integer("--seed", sample.seed, "sampling seed")
      .path("--figure", sample.figure, "also draw the attention of the last 40 generated characters (PNG path)");

  SpanTextRequest spans;
  cli.add_job("spans", "the dynamic span along a passage of the validation split or a given text (Figure 5)",
              [&](const JobSettings& job) { span_text_run(c, settings, job, spans); })
      .required_path("run", spans.run_dir, "the run folder (trained with model.span = dynamic_span)")
      .choice("--checkpoint", spans.which, {"best", "latest"}, "which checkpoint")
      .non_empty_text("--text", spans.text, "this text instead of the validation split (every character in the vocabulary)")
      .integer("--offset", spans.offset, "where the passage starts in the validation split", NumberRange::at_least(0))
      .integer("--chars", spans.chars, "the passage's length in the validation split", NumberRange::at_least(1))
      .path("--figure", spans.figure, "draw the text coloured by z_t and z_t along it (PNG path)");
  return cli.run(argc, argv);
}
