// The train.autocast setting (see autocast_setting.h).
#include "apps/common/autocast_setting.h"

namespace posgrad::apps {

void add_autocast_setting(Settings& s, std::string& value) {
  s.add("train.autocast", value,
        "none, or bf16: float32 matmuls (training and evaluation) multiply bf16 operands with float32 weights "
        "(bf16 tensor cores on a GPU; on the CPU the same numbers, slower)")
      .choices({"none", "bf16"});
}

}  // namespace posgrad::apps
