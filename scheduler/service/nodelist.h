// Slurm hostlist expressions from node names: the inverse of adapters/topology/hostlist.h's
// ExpandHostlist. Adjacent names with the same prefix share one bracket group, consecutive
// numbers form ranges, zero padding is kept:
//   node0 node1 node2 node5   -> node[0-2,5]
//   dgx008 dgx009 dgx010      -> dgx[008-010]
//   su1-n1 su1-n2 su2-n1      -> su1-n[1-2],su2-n1
// Order is preserved, so ExpandHostlist(FormatHostlist(names)) == names for any names without
// the characters , [ ] or whitespace (what Slurm accepts as host names).
// Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

namespace phalanx::service {

std::string FormatHostlist(const std::vector<std::string>& names);

}  // namespace phalanx::service
