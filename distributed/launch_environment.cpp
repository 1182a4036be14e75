// LaunchEnvironment: see launch_environment.h.
#include "distributed/launch_environment.h"

#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "tensor/error.h"

extern char** environ;

namespace posgrad::distributed {

namespace {

struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
};

constexpr LauncherVariables kLaunchers[] = {
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"pmi", "PMI_RANK", "PMI_SIZE", nullptr},
};

int parse_count(const std::map<std::string, std::string>& variables, const char* name, int minimum) {
  const std::string& text = variables.at(name);
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < minimum || value > 1'000'000)
    fail("the launcher's variable {}='{}' is not a whole number of at least {}", name, text, minimum);
  return static_cast<int>(value);
}

}  // namespace

LaunchEnvironment launch_environment(const std::map<std::string, std::string>& variables) {
  for (const auto& l : kLaunchers) {
    if (!variables.contains(l.rank) || !variables.contains(l.size)) continue;
    LaunchEnvironment env;
    env.launcher = l.launcher;
    env.rank = parse_count(variables, l.rank, 0);
    env.size = parse_count(variables, l.size, 1);
    if (env.rank >= env.size)
      fail("the launcher's variables say rank {} ({}) of {} ({}): a rank must be below the size", env.rank, l.rank,
           env.size, l.size);
    env.local_rank = l.local_rank && variables.contains(l.local_rank) ? parse_count(variables, l.local_rank, 0) : 0;
    return env;
  }
  return {};
}

LaunchEnvironment launch_environment() {
  std::map<std::string, std::string> variables;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    variables.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return launch_environment(variables);
}

}  // namespace posgrad::distributed
