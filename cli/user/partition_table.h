// ginfo's partition views (sinfo's habits): one line per partition and node state (the default,
// and -o FORMAT), per partition (-s), or the reasons of drained and down nodes (-R).
//
// Format letters (sinfo -o): %P PARTITION (a trailing "*" marks the default), %a AVAIL (up,
// down, drain, inact), %l TIMELIMIT (D-HH:MM:SS or infinite), %L DEFAULTTIME, %D NODES,
// %t STATE (idle, mix, alloc, drng, drain, down; "*" = agent not connected), %T STATE (the same,
// long names), %N NODELIST, %G GPUS, %f FREE (GPUs), %E REASON, %u USER, %H TIMESTAMP,
// %g GROUPS (allow_groups, "all"), %m MAX_GPUS (per job). Widths as gq's: "%.6D" right-justifies
// in 6 terminal columns (util/printable.h: CJK and emoji take two).
// Thread-safety: pure functions (times use the process's time zone, TZ).
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "core/common/result.h"
#include "phalanx/v1/phalanx.pb.h"

namespace phalanx::cli {

inline constexpr std::string_view kDefaultPartitionFormat = "%P  %a  %.l  %.D  %t  %N";
inline constexpr std::string_view kLongPartitionFormat = "%P  %a  %.l  %.L  %.m  %g  %.D  %t  %.G  %.f  %N";
inline constexpr std::string_view kReasonFormat = "%E  %u  %H  %N";

struct PartitionFilter {
  std::set<std::string> partitions;  // empty: all
  std::set<std::string> nodes;       // empty: all
  std::set<std::string> states;      // node states as %t prints them without "*"; empty: all
};

// Checks the letters of `format`; fails naming an unknown "%X".
Status CheckPartitionFormat(std::string_view format);

// One line per (partition, node state) in partition order, then state order; a header first
// unless !header.
std::string FormatPartitionTable(const v1::PartitionListResponse& parts, const v1::ListNodesResponse& nodes,
                                 const PartitionFilter& filter, std::string_view format, bool header);
// sinfo -s: PARTITION AVAIL TIMELIMIT NODES(A/I/O/T) NODELIST (allocated or mixed / idle /
// other / total).
std::string FormatPartitionSummary(const v1::PartitionListResponse& parts, const v1::ListNodesResponse& nodes,
                                   const PartitionFilter& filter, bool header);
// sinfo -R: REASON USER TIMESTAMP NODELIST, one line per (reason, user, time) of the drained and
// down nodes.
std::string FormatReasons(const v1::ListNodesResponse& nodes, const PartitionFilter& filter, bool header);

}  // namespace phalanx::cli
