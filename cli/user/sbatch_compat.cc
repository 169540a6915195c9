#include "sbatch_compat.h"

#include "util/strings.h"

namespace phalanx::cli {
namespace {

constexpr Unsupported kSbatchUnsupported[] = {
    // Refused: the job would run, but not as asked.
    {"clusters", 'M', true, true, "Phalanx schedules one cluster: the job would run on this one"},
    {"cluster", 0, true, true, "Phalanx schedules one cluster: the job would run on this one"},
    {"reservation", 0, true, true, "Phalanx has no advance reservations: the job would run outside it"},
    {"deadline", 0, true, true, "not enforced: the job could run after its deadline"},
    {"input", 'i', true, true, "jobs read /dev/null: a job reading this file would run without its input"},
    {"uid", 0, true, true, "jobs run as their submitter"},
    {"gid", 0, true, true, "jobs run with their submitter's groups"},
    {"gpus-per-task", 0, true, true, "GPUs are per job or per node (-G, --gpus-per-node): the GPU count would differ"},
    {"ntasks-per-gpu", 0, true, true, "GPUs are per job or per node (-G, --gpus-per-node): the GPU count would differ"},
    {"gpus-per-socket", 0, true, true,
     "GPUs are per job or per node (-G, --gpus-per-node): the GPU count would differ"},
    {"burst-buffer", 0, true, true, "no burst buffers: the data would not be staged"},
    {"bb", 0, true, true, "no burst buffers: the data would not be staged"},
    {"bbf", 0, true, true, "no burst buffers: the data would not be staged"},
    {"nodefile", 'F', true, true, "give the nodes with -w/--nodelist"},
    {"het-job", 0, true, true, "heterogeneous jobs are not supported"},
    // Ignored with a warning: the job runs as it would, less a hint or an accounting detail.
    {"time-min", 0, true, false, "jobs are not shortened to fit"},
    {"nice", 0, true, false, "the priority class decides the order"},
    {"licenses", 'L', true, false, "licenses are not counted"},
    {"mem-per-cpu", 0, true, false, "memory is not modelled (--mem and --mem-per-gpu are recorded)"},
    {"cpus-per-gpu", 0, true, false, "CPUs are not modelled (-c is recorded)"},
    {"mincpus", 0, true, false, "CPUs are not modelled"},
    {"switches", 0, true, false, "use --topology (node, nvlink, leaf, spine) for the block"},
    {"get-user-env", 0, false, false, "the job gets the environment gsub exports (--export)"},
    {"hint", 0, true, false, "CPU binding is not managed"},
    {"distribution", 'm', true, false, "tasks are not distributed: one process per node"},
    {"cpu-bind", 0, true, false, "CPU binding is not managed"},
    {"mem-bind", 0, true, false, "memory binding is not managed"},
    {"gpu-bind", 0, true, false, "GPU binding: CUDA_VISIBLE_DEVICES lists the job's GPUs on each node"},
    {"gpu-freq", 0, true, false, "GPU clocks are not managed"},
    {"cpu-freq", 0, true, false, "CPU clocks are not managed"},
    {"kill-on-invalid-dep", 0, true, false, "a failed dependency ends the job"},
    {"no-kill", 'k', false, false, "a failed node requeues or fails the job"},
    {"wckey", 0, true, false, "no workload keys"},
    {"overcommit", 'O', false, false, "tasks are not counted against CPUs"},
    {"oversubscribe", 's', false, false, "GPUs are never shared (use --exclusive for whole nodes)"},
    {"contiguous", 0, false, false, "the placement chooses the nodes (see --topology)"},
    {"spread-job", 0, false, false, "the placement chooses the nodes (see --topology)"},
    {"use-min-nodes", 0, false, false, "the placement chooses the nodes (see --topology)"},
    {"tmp", 0, true, false, "disk is not modelled"},
    {"profile", 0, true, false, "no profiling plugin"},
    {"acctg-freq", 0, true, false, "accounting is sampled by phalanxd's history"},
    {"propagate", 0, false, false, "resource limits are the agent's"},
    {"quiet", 'Q', false, false, "gsub prints one line"},
    {"verbose", 'v', false, false, "gsub prints one line"},
    {"core-spec", 'S', true, false, "CPUs are not modelled"},
    {"thread-spec", 0, true, false, "CPUs are not modelled"},
    {"sockets-per-node", 0, true, false, "CPUs are not modelled"},
    {"cores-per-socket", 0, true, false, "CPUs are not modelled"},
    {"threads-per-core", 0, true, false, "CPUs are not modelled"},
    {"ntasks-per-core", 0, true, false, "CPUs are not modelled"},
    {"ntasks-per-socket", 0, true, false, "CPUs are not modelled"},
    {"extra-node-info", 'B', true, false, "CPUs are not modelled"},
    {"network", 0, true, false, "the fabric is the topology's"},
    {"power", 0, true, false, "power is not managed"},
    {"prefer", 0, true, false, "soft constraints are not supported (-C is a hard one)"},
    {"container", 0, true, false, "containers are not managed: run one in the script"},
    {"export-file", 0, true, false, "use --export"},
    {"ignore-pbs", 0, false, false, "#PBS lines are never read"},
    {"mcs-label", 0, true, false, "no MCS labels"},
    {"delay-boot", 0, true, false, "nodes are not rebooted"},
    {"reboot", 0, false, false, "nodes are not rebooted"},
    {"immediate", 'I', false, false, "the job waits in the queue"},
    {"batch", 0, true, false, "node features: use -C/--constraint"},
    {"tres-per-task", 0, true, false, "trackable resources are not modelled"},
    {"x11", 0, false, false, "no X11 forwarding"},
};

bool TakesValue(const OptionSpec& spec) { return !spec.value.empty(); }

}  // namespace

const Unsupported* FindUnsupported(std::string_view name, char short_name) {
  for (const Unsupported& u : kSbatchUnsupported) {
    if ((!name.empty() && u.name == name) || (short_name != 0 && u.short_name == short_name)) return &u;
  }
  return nullptr;
}

Result<ParsedOptions> ParseSbatchWords(const std::vector<std::string>& words, const std::string& where,
                                       std::span<const OptionSpec> specs, std::vector<std::string>& warnings) {
  std::vector<std::string> known;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.size() < 2 || w[0] != '-' || w == "--") return Fail(where, "#SBATCH takes options only, not " + Quote(w));
    std::string name;
    char short_name = 0;
    bool inline_value = false;
    if (w.starts_with("--")) {
      const size_t eq = w.find('=');
      name = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      inline_value = eq != std::string::npos;
    } else {
      short_name = w[1];
      inline_value = w.size() > 2;
    }
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : specs) {
      if ((!name.empty() && s.name == name) || (short_name != 0 && s.short_name == short_name)) spec = &s;
    }
    if (spec != nullptr) {
      known.push_back(w);
      if (TakesValue(*spec) && !inline_value && i + 1 < words.size()) known.push_back(words[++i]);
      continue;
    }
    const std::string shown = name.empty() ? std::string("-") + short_name : "--" + name;
    const Unsupported* u = FindUnsupported(name, short_name);
    const bool value_follows =
        !inline_value && i + 1 < words.size() && !words[i + 1].starts_with("-") && (u == nullptr || u->takes_value);
    if (value_follows) ++i;
    if (u != nullptr && u->refuse) {
      return Fail(where,
                  "#SBATCH " + shown +
                      ": not supported by Phalanx, and ignoring it would run the job wrongly: " + std::string(u->why));
    }
    warnings.push_back(where + ": #SBATCH " + shown + ": ignored: " +
                       (u != nullptr ? "not supported by Phalanx: " + std::string(u->why)
                                     : std::string("not an sbatch option gsub knows")));
  }
  PHX_ASSIGN_OR_RETURN(auto parsed, ParseOptions(known, specs, Positionals::kInterleaved, where));
  if (!parsed.positional.empty()) return Fail(where, "#SBATCH takes options only, not " + Quote(parsed.positional[0]));
  return parsed;
}

}  // namespace phalanx::cli
